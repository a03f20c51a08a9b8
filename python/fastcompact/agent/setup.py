"""What a compaction works with, whichever middleware runs it: the config, the models,
the backend, the caller's summarization settings, and the caches of what they resolve
to. :class:`~fastcompact.CompactionMiddleware` holds one and hands it to the plain
functions of the steps (``reading.py``, ``drafting.py``, ``schedule.py``,
``compaction.py``), which share nothing else.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeVar

import fastcompact._core as _core
from fastcompact.api.passes import settings_for
from fastcompact.config import CompactionConfig, ContextSize, Trigger

if TYPE_CHECKING:
    from fastcompact.agent.state import Draft

# Models made per call are keyed by id: the caches keep a few, not every one.
_MODELS_KEPT = 64

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Policy:
    """The constants of the compaction policy, as the core holds them (``src/compaction``;
    ``_core.pass_defaults()["compaction"]`` shows them): the core decides with them, and
    the steps that measure and carry out read the few they need here.

    Examples:
        >>> POLICY.backoff_messages, POLICY.clip_heads[0]
        (10, 4000)
    """

    summary_share: float
    summary_tokens: tuple[float, float]
    request_line_tokens: float
    in_place_tokens: float
    commit_margin: float
    backoff_messages: int
    room_margin: float
    clip_heads: tuple[int, ...]
    sample_messages: int
    words_per_token: float
    estimate_slack: float


POLICY: Final = Policy(**_core.pass_defaults()["compaction"])


@dataclasses.dataclass
class Setup:
    """The middleware's settings, and what it resolved from them once.

    Examples:
        >>> from fastcompact.config import CompactionConfig, ContextSize, Trigger
        >>> setup = Setup(CompactionConfig(trigger=("tokens", 50_000)))
        >>> setup.plan_settings(None, None).resolved["trigger"]
        [('tokens', 50000)]
    """

    config: CompactionConfig
    model: Any = None
    summary_model: Any = None
    backend: Any = None
    summary_prompt: str | None = None
    trim_tokens_to_summarize: int | None = None
    token_counter: Any = None
    counter_takes_tools: bool = False
    # The one file archives go to, in place of `<prefix>/<thread>/<number>.md`: the
    # command line's, named after its output.
    archive_file: str | None = None
    # A saved transcript is compacted (the command line's), not a running agent's view:
    # no later call runs the trigger again, so a compaction commits whenever it makes
    # the view smaller, as a priced one does; and no turn is in progress, so the keep
    # policy's cut stands.
    saved_transcript: bool = False
    # Resolved "provider:name" summary models, shared by every conversation.
    models: dict[str, Any] = dataclasses.field(default_factory=dict)
    # A model's price preset and counting options, by the model's id.
    pricing_by_model: dict[int, tuple[Any, str | None]] = dataclasses.field(default_factory=dict)
    count_options: dict[int, tuple[Any, _core.CountOptions]] = dataclasses.field(default_factory=dict)

    def plan_settings(self, window: int | None, pricing: str | None) -> _core.PlanSettings:
        """The core's reading of the config for ``window`` and ``pricing`` (one cache,
        shared with the notebook helpers)."""
        return settings_for(self.config, window, pricing)

    def archive_path(self, thread: str, number: int, attempt: int = 0) -> str:
        """Where the archive of a thread's compaction ``number`` goes (see
        :func:`archive_path`), or the given file's name."""
        if self.archive_file is not None:
            return file_path(self.archive_file, attempt)
        return archive_path(self.config.history_path_prefix, thread, number, attempt)

    def longest_archive_path(self, draft: Draft) -> str | None:
        """The longest name the archive of ``draft`` may get (a summary names it before
        the archive is written); ``None`` when there is none to write."""
        if self.backend is None or not draft.leaving:
            return None
        return self.archive_path(draft.thread, draft.number, 7)

    def media_folder(self) -> str:
        """Where the media of the archives go."""
        if self.archive_file is not None:
            return media_beside(self.archive_file)
        return media_folder(self.config.history_path_prefix)

    def summary_model_or(self, agent_model: Any) -> Any:
        """The model that writes summaries: the summary model, else the middleware's,
        else the agent's."""
        return self.summary_model or self.model or agent_model


def setup_of(
    model: Any,
    summary_model: Any,
    backend: Any,
    config: CompactionConfig | None,
    summarization: Mapping[str, Any],
) -> Setup:
    """The ``Setup`` of a ``CompactionMiddleware`` built with these arguments (and the
    ``SummarizationMiddleware`` keywords it takes), each checked: a :class:`ValueError`
    names the first that is not what it should be."""
    if config is not None and not isinstance(config, CompactionConfig):
        raise ValueError(f"config: expected a fastcompact.CompactionConfig, got {type(config).__name__}")
    unknown = sorted(set(summarization) - set(SUMMARIZATION_KEYWORDS))
    if unknown:
        raise ValueError(
            f"unexpected keyword {', '.join(map(repr, unknown))}; CompactionMiddleware takes model, "
            f"summary_model, backend, config and {', '.join(SUMMARIZATION_KEYWORDS)}"
        )
    if config is not None and summarization:
        raise ValueError(
            f"give either config= or {', '.join(map(repr, sorted(summarization)))}, not both: "
            "put the settings in the CompactionConfig"
        )
    if config is None and summarization:
        config = config_from_summarization(summarization)
    counter = summarization.get("token_counter")
    if counter is not None and not callable(counter):
        raise ValueError(f"token_counter: expected a callable, got {type(counter).__name__}")
    prompt = summarization.get("summary_prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError(f"summary_prompt: expected a str, got {type(prompt).__name__}")
    if prompt is not None and "{messages}" not in prompt:
        raise ValueError(
            "summary_prompt: it has no {messages} placeholder, so the summarizer would never see "
            "the conversation; put {messages} where the transcript goes"
        )
    trim = summarization.get("trim_tokens_to_summarize")
    if trim is not None and (isinstance(trim, bool) or not isinstance(trim, int) or trim < 1):
        raise ValueError(f"trim_tokens_to_summarize: expected a positive int or None, got {trim!r}")
    if backend is not None and not callable(backend) and not hasattr(backend, "write"):
        raise ValueError(
            "backend: expected a DeepAgents backend (with read and write) or a factory taking the "
            f"runtime, got {type(backend).__name__}"
        )
    for label, value in (("model", model), ("summary_model", summary_model)):
        if value is not None and not isinstance(value, str) and not hasattr(value, "invoke"):
            raise ValueError(
                f"{label}: expected a chat model or a 'provider:name' string, got {type(value).__name__}"
            )
    return Setup(
        # A copy; its settings are resolved per model window in the shared settings
        # cache, which follows any later change to it.
        config=copy.deepcopy(config) if config is not None else CompactionConfig(),
        model=model,
        summary_model=summary_model,
        backend=backend,
        summary_prompt=prompt,
        trim_tokens_to_summarize=trim,
        token_counter=counter,
        counter_takes_tools=counter is not None and takes_tools(counter),
    )


# --- where a thread's archives and media go -------------------------------------------


def archive_path(prefix: str, thread: str, number: int, attempt: int = 0) -> str:
    """``<prefix>/<thread>/<number>.md`` (``-2``, ``-3`` … when the name is taken).

    Examples:
        >>> archive_path("/conversation_history", "t1", 3)
        '/conversation_history/t1/3.md'
        >>> archive_path("/conversation_history/", "t1", 3, attempt=1)
        '/conversation_history/t1/3-2.md'
    """
    suffix = f"-{attempt + 1}" if attempt else ""
    return f"{prefix.rstrip('/')}/{safe_name(thread)}/{number}{suffix}.md"


def media_folder(prefix: str) -> str:
    """Where the media of archived messages go: one folder for every thread, as
    DeepAgents keeps them (a file is named by its content, so a thread shares a file
    only with one that holds the same bytes).

    Examples:
        >>> media_folder("/conversation_history")
        '/conversation_history/media'
    """
    return f"{prefix.rstrip('/')}/media"


def file_path(file: str, attempt: int = 0) -> str:
    """A given archive file's name (``-2``, ``-3`` … before ``.md`` when it is taken).

    Examples:
        >>> file_path("out/run.archive.md"), file_path("out/run.archive.md", attempt=1)
        ('out/run.archive.md', 'out/run.archive-2.md')
    """
    if not attempt:
        return file
    stem = file.removesuffix(".md")
    return f"{stem}-{attempt + 1}.md" if stem != file else f"{file}-{attempt + 1}"


def media_beside(file: str) -> str:
    """Where the media of a given archive file go: ``run.archive.md`` -> ``run.archive.media``.

    Examples:
        >>> media_beside("out/run.archive.md")
        'out/run.archive.media'
    """
    return f"{file.removesuffix('.md')}.media"


def safe_name(name: str) -> str:
    """``name`` as one path segment: any character but letters, digits and ``-_.`` becomes ``_``."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "default"


def kept_by_model(cache: dict[int, tuple[Any, T]], model: Any, make: Callable[[Any], T]) -> T:
    """``make(model)``, remembered in ``cache`` by the model's id while the model lives."""
    found = cache.get(id(model))
    if found is not None:
        kept, made = found
        if kept is model:
            return made
    if len(cache) >= _MODELS_KEPT:
        cache.clear()
    made = make(model)
    cache[id(model)] = (model, made)
    return made


# --- the keywords of the peers' SummarizationMiddleware ----------------------------


class SummarizationOptions(TypedDict, total=False):
    """The keywords of DeepAgents' and LangChain's ``SummarizationMiddleware`` that
    ``CompactionMiddleware`` also takes (typed, so that a misspelt one is an error
    under a type checker, as it is at run time)."""

    trigger: Trigger | Sequence[Trigger] | None
    keep: ContextSize | None
    token_counter: Callable[..., int] | None
    summary_prompt: str | None
    trim_tokens_to_summarize: int | None
    truncate_args_settings: Mapping[str, Any] | None
    history_path_prefix: str | None
    max_tokens_before_summary: int | None
    messages_to_keep: int | None


SUMMARIZATION_KEYWORDS = tuple(SummarizationOptions.__annotations__)


def config_from_summarization(options: Mapping[str, Any]) -> CompactionConfig:
    """A ``CompactionConfig`` from ``SummarizationMiddleware`` keywords: ``trigger`` (a
    size, a dict whose sizes must all be reached, or a list of either), ``keep``,
    ``history_path_prefix``, ``truncate_args_settings`` (DeepAgents' meaning: ``None``
    turns argument truncation off; a dict shortens ``write_file`` / ``edit_file``
    arguments unless it says ``truncate_all_tools``), and LangChain's older
    ``max_tokens_before_summary`` / ``messages_to_keep``.

    Examples:
        >>> cfg = config_from_summarization({"trigger": ("fraction", 0.8), "keep": ("messages", 20)})
        >>> cfg.trigger, cfg.keep
        (('fraction', 0.8), ('messages', 20))
        >>> config_from_summarization({"max_tokens_before_summary": 50_000}).trigger
        ('tokens', 50000)
    """
    from fastcompact.config import TruncateArgsConfig

    fields: dict[str, Any] = {}
    for old, new, kind in (
        ("max_tokens_before_summary", "trigger", "tokens"),
        ("messages_to_keep", "keep", "messages"),
    ):
        value = options.get(old)
        if value is None:
            continue
        if options.get(new) is not None:
            raise ValueError(f"give {new} or {old}, not both")
        fields[new] = (kind, value)
    for name in ("trigger", "keep", "history_path_prefix"):
        if options.get(name) is not None:
            fields[name] = options[name]
    # Sizes may come as lists (from JSON, say); the config takes tuples.
    if isinstance(fields.get("trigger"), list):
        fields["trigger"] = [tuple(t) if isinstance(t, list) else t for t in fields["trigger"]]
    if isinstance(fields.get("keep"), list):
        fields["keep"] = tuple(fields["keep"])
    if "truncate_args_settings" in options:
        settings = options["truncate_args_settings"]
        if settings is None:
            fields["truncate_args"] = TruncateArgsConfig(trigger=None)
        elif isinstance(settings, Mapping):
            known = {"trigger", "keep", "max_length", "truncation_text", "truncate_all_tools"}
            extra = sorted(set(settings) - known)
            if extra:
                raise ValueError(f"truncate_args_settings: unexpected key {', '.join(map(repr, extra))}")
            given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}
            fields["truncate_args"] = TruncateArgsConfig(**{"truncate_all_tools": False, **given})
        else:
            raise ValueError(
                f"truncate_args_settings: expected a dict or None, got {type(settings).__name__}"
            )
    return CompactionConfig(**fields)


def takes_tools(counter: Any) -> bool:
    """Whether a token counter takes a ``tools`` keyword (DeepAgents passes it when so)."""
    import inspect

    try:
        params = inspect.signature(counter).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "tools" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)

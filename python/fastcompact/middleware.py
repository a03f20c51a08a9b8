"""``CompactionMiddleware``: the cheap passes every model call and, when they are not
enough, a summary; ``CompactionToolMiddleware``: the same compaction as a tool.

Everything a conversation needs lives in the graph state (``_summarization_event`` in
DeepAgents' shape, ``_fastcompact`` for counters and the last plan), so one instance
serves many threads, subagents and processes, with any checkpointer.

Example:
    >>> from fastcompact import CompactionMiddleware
    >>> mw = CompactionMiddleware(model="anthropic:claude-sonnet-4-6")
    >>> mw.name
    'SummarizationMiddleware'
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain.tools import ToolRuntime
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command
from typing_extensions import Unpack

from fastcompact import _core, media, steps, storage, summarize
from fastcompact.config import CompactionConfig, ContextSize, Trigger, pricing_of, pricing_of_responses
from fastcompact.helpers import count_tokens, find_cutoff
from fastcompact.passes import Plan, _edit_message, _plan_of, _run, _settings, _view_of
from fastcompact.recall import RECALL_DESCRIPTION, recall
from fastcompact.steps import Io, Steps

if TYPE_CHECKING:
    from fastcompact._core import _Progress

logger = logging.getLogger("fastcompact")

EVENT_KEY = "_summarization_event"
STATE_KEY = "_fastcompact"

# A compaction is committed only if the new view is this far below the trigger.
COMMIT_MARGIN = 0.10
# After a compaction that could not be committed, wait this many new messages.
BACKOFF_MESSAGES = 10
# The fallback summary's share of the window, in characters (about 4 per token).
FALLBACK_SHARE = 0.05
# Characters a token when the fallback must fit what the window leaves: fewer than the
# estimate's 4, so that it fits under a denser tokenizer too.
FALLBACK_CHARS_PER_TOKEN = 3


class WindowTooSmallError(ContextOverflowError):
    """The request cannot fit the model's window, even with everything older than the
    turn in progress summarized and its newest tool results clipped: the system
    prompt, the tool schemas and that turn alone are over it. Raised instead of sending
    a request known to be too large; its message names the sizes and what to change.

    Example:
        >>> e = WindowTooSmallError(window=6_000, system=3_900, tools=2_400, turn=700)
        >>> e.window, e.system + e.tools + e.turn
        (6000, 7000)
    """

    def __init__(self, *, window: int, system: int, tools: int, turn: int) -> None:
        self.window, self.system, self.tools, self.turn = window, system, tools, turn
        super().__init__(
            f"this request needs {system + tools + turn:,} tokens, over the model's {window:,}-token "
            f"window: the system prompt is {system:,} tokens, the tool schemas {tools:,} and the turn "
            f"in progress {turn:,}, with everything older summarized. Use a model with a larger "
            "window (its profile's max_input_tokens), a shorter system prompt or fewer tools."
        )


class CompactionState(AgentState):
    """The graph state the middleware adds: private channels, never shown to the model."""

    _summarization_event: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]
    _fastcompact: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]


def _transformers() -> tuple[Any, ...]:
    try:
        from langchain.agents.middleware.internal_call_transformer import InternalCallTransformer
    except ImportError:  # langchain without stream transformers
        return ()
    return (InternalCallTransformer,)


@dataclasses.dataclass
class _Turn:
    """One model call's reading of the state."""

    raw: list[Any]
    event: dict[str, Any] | None
    prior_cutoff: int
    effective: list[Any]
    view: list[Any]
    plan: Plan
    window: int | None
    counters: dict[str, Any]
    # The price preset the passes were planned with (None: fixed batch sizes).
    pricing: str | None = None


@dataclasses.dataclass
class _Draft:
    """A compaction worked out, before its I/O (summary call, archive, file reads)."""

    state_cutoff: int
    leaving: list[Any]
    span: list[Any]
    kept: list[Any]
    thread: str
    number: int
    previous_summary: str | None
    todos: list[Any]
    reads: list[str]
    use_llm: bool
    forced: bool


@dataclasses.dataclass
class _Outcome:
    view: list[Any]
    update: dict[str, Any]
    committed: bool
    info: dict[str, Any]


def _valid_event(event: Any, n: int) -> dict[str, Any] | None:
    """The prior event when it can be trusted; a malformed one is ignored (the whole raw
    history is sent instead, so nothing is lost)."""
    if event is None:
        return None
    try:
        cutoff = event["cutoff_index"]
        summary = event["summary_message"]
    except (KeyError, TypeError):
        logger.warning("fastcompact: ignoring a malformed %s: %r", EVENT_KEY, event)
        return None
    if not isinstance(cutoff, int) or isinstance(cutoff, bool) or not 0 <= cutoff <= n or summary is None:
        logger.warning("fastcompact: ignoring %s with cutoff_index %r for %d messages", EVENT_KEY, cutoff, n)
        return None
    return dict(event)


def _summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the fallback summary", type(error).__name__, error
    )
    return error


def _now() -> float:
    return time.time()


def _run_metadata() -> Mapping[str, Any]:
    """The LangGraph run's metadata, when running inside a graph."""
    try:
        from langgraph.config import get_config

        found = get_config().get("metadata")
    except (RuntimeError, ImportError):
        return {}
    return found if isinstance(found, Mapping) else {}


def _window(model: Any) -> int | None:
    profile = getattr(model, "profile", None)
    if isinstance(profile, Mapping):
        value = profile.get("max_input_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _thread(counters: dict[str, Any]) -> str:
    """The conversation's name in archive paths: its thread id, else a session id made
    once and kept in state (two conversations without a thread id never share files)."""
    try:
        from langgraph.config import get_config

        thread = get_config().get("configurable", {}).get("thread_id")
    except (RuntimeError, ImportError):
        thread = None
    if thread:
        return str(thread)
    session = counters.get("session")
    if not isinstance(session, str) or not session:
        session = counters["session"] = f"session-{uuid.uuid4().hex[:12]}"
    return session


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

    Example:
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


def _takes_tools(counter: Any) -> bool:
    """Whether a token counter takes a ``tools`` keyword (DeepAgents passes it when so)."""
    import inspect

    try:
        params = inspect.signature(counter).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "tools" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _to_view(raw_index: int, event: Mapping[str, Any] | None, prior: int) -> int:
    """A raw-state index as an index in the effective view (the summary holds slot 0)."""
    if event is None:
        return max(raw_index, 0)
    return max(raw_index - prior + 1, 1)


def _to_raw(view_index: int, event: Mapping[str, Any] | None, prior: int) -> int:
    return view_index if event is None else prior + max(view_index - 1, 0)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _progress(counters: Mapping[str, Any], event: Mapping[str, Any] | None, prior: int) -> _Progress:
    """Where the conversation stands, for the core: usage is valid only from the last
    summary and the last batch that rewrote older messages on (earlier usage counted
    another view); the calibration (offset and ratio) carries over from earlier
    anchors; batched edits before ``settled`` are committed."""
    since = max(_int(counters.get("batch_at")), _int(event.get("created_at_index")) if event else 0)
    ratio, offset = counters.get("ratio"), counters.get("offset")
    settled = _int(counters.get("settled"), -1)
    # The core bounds both (a corrupted state gives the plain estimate).
    return {
        "min_anchor": _to_view(since, event, prior),
        "ratio": float(ratio) if isinstance(ratio, int | float) else 1.0,
        "offset": float(offset) if isinstance(offset, int | float) else 0.0,
        "settled": _to_view(settled, event, prior) if settled >= 0 else None,
        "calls_before": _int(counters.get("calls_before")),
        # Before the first planned call, usage counted the messages as they were, unedited.
        "usage_of_unedited": "last_plan" not in counters,
    }


def _advance(
    counters: dict[str, Any], plan: Plan, event: Mapping[str, Any] | None, prior: int, n_raw: int
) -> None:
    """Record what this turn's plan settled, in raw-state indices."""
    counters["ratio"] = plan.ratio
    counters["offset"] = plan.offset
    counters["settled"] = _to_raw(plan.settled, event, prior)
    if plan.batch_at is not None:
        counters["batch_at"] = n_raw


def _unplanned() -> Plan:
    """The plan of a call that could not be planned: nothing done, nothing due."""
    return Plan(
        edits=[],
        tokens_before=0,
        tokens_after=0,
        passes=[],
        summary_needed=False,
        summary_cutoff=None,
        per_role={},
        per_tool={},
    )


def _sent_size(plan: Plan) -> int:
    """The size of the planned view as the provider will count it: anchored on usage,
    else the estimate."""
    return plan.true_tokens or plan.tokens_after


def _plan_info(plan: Plan) -> dict[str, Any]:
    return {
        "tokens_before": plan.tokens_before,
        "tokens_after": plan.tokens_after,
        "passes": [
            {
                "name": p.name,
                "tokens_before": p.tokens_before,
                "tokens_after": p.tokens_after,
                "edits": p.edits,
                "batched": p.batched,
            }
            for p in plan.passes
        ],
        "summary_needed": plan.summary_needed,
    }


def _emit(payload: dict[str, Any]) -> None:
    """A LangGraph custom stream event, when running inside a graph."""
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()({"fastcompact": payload})
    except Exception:  # outside a graph, or no writer
        pass


class CompactionMiddleware(AgentMiddleware):
    """Keeps an agent inside its context window.

    Every model call: the effective view is rebuilt from the state's last compaction
    event, the core plans the cheap passes, and the model gets the edited view. When
    that is still over the trigger, the older span is archived through ``backend``,
    summarized, and replaced by a summary message (with recently read files and the todo
    list restored); the event goes to the graph state.

    Args:
        model: The model that writes summaries (a chat model or ``"provider:name"``);
            ``None`` uses the agent's own model.
        summary_model: Overrides ``model`` for summaries.
        backend: A DeepAgents backend (or a factory taking the runtime) for the
            history archive and file restoration; ``None`` archives nothing.
        config: A :class:`~fastcompact.CompactionConfig`; fields left out follow the
            DeepAgents defaults for the agent's model.

    It also takes the keywords of DeepAgents' and LangChain's ``SummarizationMiddleware``
    (``trigger``, including dict clauses, ``keep``, ``token_counter``,
    ``summary_prompt``, ``trim_tokens_to_summarize``, ``truncate_args_settings``,
    ``history_path_prefix``, and the older ``max_tokens_before_summary`` and
    ``messages_to_keep``), mapped onto a ``CompactionConfig``; not together with
    ``config=``. A ``token_counter`` replaces the core's count for the summary trigger:
    it runs in Python over the whole view on every call (``count_tokens_approximately``
    takes about 3 ms at 1,000 messages and 34 ms at 10,000), where the core's count
    reads only the messages it has not seen.

    Its ``name`` is ``"SummarizationMiddleware"``, so ``create_deep_agent(middleware=[mw])``
    puts it in place of the built-in summarizer (main agent and general-purpose
    subagent) instead of adding a second one.

    Example:
        >>> from fastcompact import CompactionConfig, CompactionMiddleware
        >>> mw = CompactionMiddleware(config=CompactionConfig(trigger=("tokens", 100_000)))
        >>> mw.config.trigger
        ('tokens', 100000)
    """

    state_schema = CompactionState
    transformers = _transformers()

    def __init__(
        self,
        model: Any = None,
        *,
        summary_model: Any = None,
        backend: Any = None,
        config: CompactionConfig | None = None,
        **summarization: Unpack[SummarizationOptions],
    ) -> None:
        super().__init__()
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
        self.token_counter = counter
        self._counter_takes_tools = counter is not None and _takes_tools(counter)
        prompt = summarization.get("summary_prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise ValueError(f"summary_prompt: expected a str, got {type(prompt).__name__}")
        if prompt is not None and "{messages}" not in prompt:
            raise ValueError(
                "summary_prompt: it has no {messages} placeholder, so the summarizer would never see "
                "the conversation; put {messages} where the transcript goes"
            )
        self.summary_prompt = prompt
        trim = summarization.get("trim_tokens_to_summarize")
        if trim is not None and (isinstance(trim, bool) or not isinstance(trim, int) or trim < 1):
            raise ValueError(f"trim_tokens_to_summarize: expected a positive int or None, got {trim!r}")
        self.trim_tokens_to_summarize = trim
        for label, value in (("model", model), ("summary_model", summary_model)):
            if value is not None and not isinstance(value, str) and not hasattr(value, "invoke"):
                raise ValueError(
                    f"{label}: expected a chat model or a 'provider:name' string, got {type(value).__name__}"
                )
        self.model = model
        self.summary_model = summary_model
        self.backend = backend
        # A copy; its settings are resolved per model window in the shared settings
        # cache, which follows any later change to it.
        self._config = copy.deepcopy(config) if config is not None else CompactionConfig()
        self._pricing_by_model: dict[int, tuple[Any, str | None]] = {}
        self.tools = []
        # Resolved "provider:name" models; shared by every conversation.
        self._models: dict[str, Any] = {}

    @property
    def config(self) -> CompactionConfig:
        """The settings (a copy taken at construction; change them by making a new
        middleware)."""
        return self._config

    def _resolved(self, window: int | None, pricing: str | None = None) -> dict[str, Any]:
        return self._plan_settings(window, pricing).resolved

    def _plan_settings(self, window: int | None, pricing: str | None) -> _core.PlanSettings:
        # The one cache of settings, shared with the helpers.
        return _settings(self._config, window, pricing)

    def _pricing(self, model: Any, messages: Sequence[Any] = ()) -> str | None:
        """The price model batches are decided by: the config's, else the model's
        provider's, else the provider its newest answer (or the run) names."""
        if self._config.pricing is not None:
            return self._config.pricing
        key = id(model)
        found = self._pricing_by_model.get(key)
        if found is None or found[0] is not model:
            if len(self._pricing_by_model) >= 64:  # models made per call: keep a few
                self._pricing_by_model.clear()
            found = self._pricing_by_model[key] = (model, pricing_of(model))
        if found[1] is not None or not messages:
            return found[1]
        return pricing_of_responses(messages, _run_metadata())

    @property
    def name(self) -> str:
        """``"SummarizationMiddleware"``: DeepAgents replaces its built-in by this name."""
        return "SummarizationMiddleware"

    # --- reading the state -------------------------------------------------------

    def _turn(self, request: ModelRequest, window: int | None = None) -> _Turn:
        raw = list(request.messages)
        state = request.state if isinstance(request.state, Mapping) else {}
        event = _valid_event(state.get(EVENT_KEY), len(raw))
        prior = event["cutoff_index"] if event else 0
        effective = [event["summary_message"], *raw[prior:]] if event else raw
        found = state.get(STATE_KEY)
        counters = dict(found) if isinstance(found, Mapping) else {}
        # The agent's window, remembered for the compaction tool (which has no model).
        window = _window(request.model) or window
        counters["window"] = window
        gap_before = counters.get("gap_at")
        now, timestamps = self._clock(counters, raw, prior, event is not None, len(effective))
        if counters.get("gap_at") != gap_before:
            # The gap's clearing rewrites older messages: earlier usage counted another view.
            counters["batch_at"] = len(raw)
        progress = _progress(counters, event, prior)
        pricing = self._pricing(request.model, raw)
        try:
            raw_plan = _run(
                effective,
                self._plan_settings(window, pricing),
                max_input_tokens=window,
                now=now,
                system=request.system_message,
                tools=request.tools,
                timestamps=timestamps,
                model=request.model,
                make_edited=_edit_message,
                progress=progress,
            )
            view, plan = _view_of(raw_plan), _plan_of(raw_plan)
            _advance(counters, plan, event, prior, len(raw))
        except Exception as e:
            # Never take the agent down: the model gets the effective view as it is.
            logger.warning(
                "fastcompact: cannot plan this call (%s: %s); sending the messages unchanged",
                type(e).__name__,
                e,
            )
            view, plan = list(effective), _unplanned()
        turn = _Turn(
            raw=raw,
            event=event,
            prior_cutoff=prior,
            effective=effective,
            view=view,
            plan=plan,
            window=window,
            counters=counters,
            pricing=pricing,
        )
        try:
            self._counted(request, turn)
        except Exception as e:  # a caller's counter must not take the agent down
            logger.warning(
                "fastcompact: the token_counter failed (%s: %s); using the core's count", type(e).__name__, e
            )
        return turn

    def _clock(
        self, counters: dict[str, Any], raw: list[Any], prior: int, summarized: bool, n: int
    ) -> tuple[float, list[float] | None]:
        """The time-gap pass's clock. Messages rarely say when they were sent, so the
        state remembers when the model was last called: a pause longer than the gap
        threshold since then marks the messages before it as idle-old, for good (the
        mark stays, so the cleared view stays the same on later calls)."""
        now = _now()
        threshold = self._config.microcompact.gap_threshold_minutes * 60.0
        last = counters.get("last_call_at")
        if isinstance(last, int | float) and now - last > threshold and self._config.microcompact.enabled:
            counters["gap_at"] = int(counters.get("seen", len(raw)))
        counters["last_call_at"] = now
        counters["seen"] = len(raw)
        gap_at = counters.get("gap_at")
        if not isinstance(gap_at, int):
            return now, None
        # The mark in the effective view (the summary holds slot 0 after a compaction).
        at = gap_at - prior + (1 if summarized else 0)
        if at <= (1 if summarized else 0) or at > n:
            return now, None
        after = threshold + 1.0
        return after, [0.0] * at + [after] * (n - at)

    def _trimmed(self, span: list[Any]) -> list[Any]:
        """The span handed to the summarizer: its newest messages within
        ``trim_tokens_to_summarize`` tokens, when that is set."""
        limit = self.trim_tokens_to_summarize
        if limit is None or not span:
            return span
        start = len(span)
        total = 0
        for i in range(len(span) - 1, -1, -1):
            total += count_tokens([span[i]])
            if total > limit and start < len(span):
                break
            start = i
        return span[start:]

    def _counted(self, request: ModelRequest, turn: _Turn) -> None:
        """With a ``token_counter``, the summary decision follows its count of the view."""
        counter = self.token_counter
        if counter is None:
            return
        system = request.system_message
        messages = [system, *turn.view] if system is not None else list(turn.view)
        tokens = counter(messages, tools=request.tools) if self._counter_takes_tools else counter(messages)
        settings = self._plan_settings(turn.window, turn.pricing)
        due = settings.trigger_fires(len(turn.view), float(tokens), turn.window)
        cut = turn.plan.summary_cutoff
        if due and cut is None:
            cut = find_cutoff(turn.view, settings.resolved["keep"], turn.window, model=request.model)
        turn.plan = dataclasses.replace(
            turn.plan, summary_needed=due, summary_cutoff=cut if due else None, true_tokens=int(tokens)
        )

    def _summarizer(self, request: ModelRequest) -> Any:
        chosen = self.summary_model or self.model or request.model
        if isinstance(chosen, str):
            if chosen not in self._models:
                from langchain.chat_models import init_chat_model

                self._models[chosen] = init_chat_model(chosen)
            return self._models[chosen]
        return chosen

    def _draft(
        self, request: ModelRequest, turn: _Turn, *, forced: bool, cut: int | None = None
    ) -> _Draft | None:
        """Where to cut and what goes where, or ``None`` when nothing can be cut."""
        if cut is None:
            cut = turn.plan.summary_cutoff
        if cut is None and forced:
            cut = find_cutoff(
                turn.view,
                self._resolved(turn.window)["keep"],
                turn.window,
                model=request.model,
            )
        # Something must stay after the summary: at least the newest message.
        if not cut or cut <= 0 or cut >= len(turn.view):
            return None
        state_cutoff = turn.prior_cutoff + cut - 1 if turn.event else cut
        if state_cutoff <= turn.prior_cutoff:
            return None
        state = request.state if isinstance(request.state, Mapping) else {}
        todos = state.get("todos") or []
        restoration = self.config.restoration
        leaving = turn.raw[turn.prior_cutoff : state_cutoff]
        reads = (
            storage.recent_reads(leaving, turn.raw[state_cutoff:], restoration.max_files)
            if restoration.enabled
            else []
        )
        paused_until = turn.counters.get("llm_paused_until") or 0
        return _Draft(
            state_cutoff=state_cutoff,
            leaving=leaving,
            span=turn.view[:cut],
            kept=turn.view[cut:],
            thread=_thread(turn.counters),
            number=int(turn.counters.get("archives", 0)) + 1,
            previous_summary=summarize.summary_text(turn.event["summary_message"]) if turn.event else None,
            todos=list(todos) if isinstance(todos, list) and restoration.restore_plans else [],
            reads=reads,
            use_llm=len(turn.raw) >= paused_until
            and (self.summary_model or self.model or request.model) is not None,
            forced=forced,
        )

    def _true_size(self, request: ModelRequest, turn: _Turn, view: list[Any]) -> int:
        """The size the provider will see of ``view`` with the request's system prompt
        and tools: the estimate calibrated as the conversation's usage says."""
        estimate = count_tokens(view, system=request.system_message, tools=request.tools, model=request.model)
        return math.ceil(turn.plan.offset + estimate * turn.plan.ratio)

    def _over_window(self, turn: _Turn) -> bool:
        return turn.window is not None and _sent_size(turn.plan) > turn.window

    def _candidates(self, request: ModelRequest, turn: _Turn, *, forced: bool) -> list[_Draft]:
        """The compactions to try, keeping less each time: the keep policy's cut; then,
        when the view is over the window, the cut before the turn in progress (its
        newest user message), then the deepest pair-safe cut, which commits whenever it
        makes the view smaller (what is still over is the newest results, clipped
        before sending)."""
        cuts: list[int | None] = [None]
        if forced or self._over_window(turn):
            view = turn.view
            start = next(
                (
                    i
                    for i in range(len(view) - 1, 0, -1)
                    if isinstance(view[i], HumanMessage) and not summarize.is_summary(view[i])
                ),
                None,
            )
            deeper: list[ContextSize] = [("messages", len(view) - start)] if start is not None else []
            for keep in [*deeper, ("messages", 1)]:
                cuts.append(find_cutoff(view, keep, turn.window, model=request.model) or None)
        drafts: list[_Draft] = []
        for cut in cuts:
            draft = self._draft(request, turn, forced=forced, cut=cut)
            if draft is not None and all(d.state_cutoff < draft.state_cutoff for d in drafts):
                drafts.append(draft)
        if len(cuts) > 1 and drafts:
            drafts[-1] = dataclasses.replace(drafts[-1], forced=True)
        return drafts

    def _fallback(self, request: ModelRequest, turn: _Turn, draft: _Draft) -> str:
        """The extractive summary, in a share of the window, and never more than the
        window leaves once the system prompt, the tools and the kept messages are in."""
        budget = int((turn.window or 200_000) * 4 * FALLBACK_SHARE)
        if turn.window is not None:
            frame = summarize.summary_message(
                "", file_path=self._longest_archive_path(draft), todos=draft.todos
            )
            room = turn.window - self._true_size(request, turn, [frame, *draft.kept])
            budget = min(budget, max(room, 0) * FALLBACK_CHARS_PER_TOKEN)
        span = [m for m in draft.span if not summarize.is_summary(m)]
        return summarize.fallback(span, draft.previous_summary, draft.todos, budget)

    def _longest_archive_path(self, draft: _Draft) -> str | None:
        """The longest name the archive of ``draft`` may get (a summary names it)."""
        if self.backend is None or not draft.leaving:
            return None
        return storage.archive_path(self.config.history_path_prefix, draft.thread, draft.number, 7)

    def _finish(
        self,
        request: ModelRequest,
        turn: _Turn,
        draft: _Draft,
        summary: str,
        error: BaseException | None,
        restored: list[tuple[str, str]],
        path: str | None,
        usage: dict[str, int] | None = None,
        *,
        strict: bool = True,
    ) -> _Outcome:
        """Build the summary message, check that it helps, and make the state update.
        It commits when it brings the view under the trigger (with a margin) or under
        the window; a forced draft, not ``strict``, whenever it makes the view smaller."""
        cfg = self.config
        counters = dict(turn.counters)
        if draft.use_llm:
            failures = 0 if error is None else int(counters.get("failures", 0)) + 1
            counters["failures"] = failures
            if failures >= cfg.max_consecutive_failures:
                counters["llm_paused_until"] = len(turn.raw) + cfg.failure_cooldown_messages
                counters["failures"] = 0
        message = summarize.summary_message(
            summary,
            file_path=path,
            restored_files=restored,
            todos=draft.todos,
            suppress_follow_up_questions=cfg.suppress_follow_up_questions,
        )
        view = [message, *draft.kept]
        tokens = self._true_size(request, turn, view)
        # Every trigger clause stays unfired with the margin to spare.
        scale = 1 / (1 - COMMIT_MARGIN)
        settings = self._plan_settings(turn.window, None)
        under_trigger = not settings.trigger_fires(math.ceil(len(view) * scale), tokens * scale, turn.window)
        # A view over the window that a summary brings under it commits even above the
        # trigger: a small window may leave no room below the trigger once the system
        # prompt and tools are in.
        before = _sent_size(turn.plan)
        rescued = turn.window is not None and tokens <= turn.window < before
        fits = tokens < before and (under_trigger or rescued or (draft.forced and not strict))
        info = {
            "summarized_messages": len(draft.leaving),
            "kept_messages": len(draft.kept),
            "tokens_before": turn.plan.tokens_after,
            "tokens_after": tokens,
            "summarizer": "model" if error is None and draft.use_llm else "fallback",
            "error": None if error is None else f"{type(error).__name__}: {error}",
            "summarizer_tokens": usage,
            "file_path": path,
            "restored_files": [p for p, _ in restored],
            "forced": draft.forced,
        }
        if not fits:
            counters["backoff_until"] = len(turn.raw) + BACKOFF_MESSAGES
            logger.warning(
                "fastcompact: a summary would leave %d tokens, neither enough below the trigger nor under "
                "the window; not committed",
                tokens,
            )
            return _Outcome(view=turn.view, update={STATE_KEY: counters}, committed=False, info=info)
        if path is not None:
            counters["archives"] = draft.number
        if under_trigger:
            counters.pop("backoff_until", None)
        else:
            # Still over the trigger: summarize again only when the window needs it, not
            # on every call.
            counters["backoff_until"] = len(turn.raw) + BACKOFF_MESSAGES
        # The calls summarized away still count toward the session's length.
        calls = sum(1 for m in draft.leaving if getattr(m, "type", None) == "ai")
        counters["calls_before"] = _int(turn.counters.get("calls_before")) + calls
        event = {
            "cutoff_index": draft.state_cutoff,
            "summary_message": message,
            "file_path": path,
            "created_at_index": len(turn.raw),
            "fastcompact": {
                **info,
                "failures": counters.get("failures", 0),
                "llm_paused_until": counters.get("llm_paused_until"),
            },
        }
        return _Outcome(view=view, update={EVENT_KEY: event, STATE_KEY: counters}, committed=True, info=info)

    def _settle(
        self,
        request: ModelRequest,
        turn: _Turn,
        draft: _Draft,
        summary: str | None,
        error: BaseException | None,
        usage: dict[str, int] | None,
        restored: list[tuple[str, str]],
    ) -> tuple[_Outcome, str, BaseException | None, list[tuple[str, str]], bool]:
        """The outcome with the model's summary, or with the extractive one when the
        model gave none or one too long to help; and the summary, error and restored
        files used, and whether it met the strict rule. Restored files are dropped
        before a summary is: they are a convenience, and in a small window they alone
        can fill it. A forced draft takes the first choice that fits the window, else
        the first that makes the view smaller."""
        file_sets: list[list[tuple[str, str]]] = [restored, []] if restored else [[]]
        fallback = self._fallback(request, turn, draft)
        given = [(summary, f) for f in file_sets] if summary is not None else []
        choices = given + [(fallback, f) for f in file_sets]
        outcome: _Outcome | None = None
        for strict in (True, False) if draft.forced else (True,):
            for text, files in choices:
                failed = error
                if text is fallback and summary is not None:
                    reason = "the summary would have left the conversation over the trigger or the window"
                    failed = summarize.SummaryError(reason)
                outcome = self._finish(
                    request,
                    turn,
                    draft,
                    text,
                    failed,
                    files,
                    None,
                    usage if text is summary else None,
                    strict=strict,
                )
                if outcome.committed:
                    if failed is not error:
                        logger.warning("fastcompact: %s; used the fallback summary", failed)
                    return outcome, text, failed, files, strict
        assert outcome is not None
        return outcome, fallback, error, [], True

    # --- I/O, sync and async -------------------------------------------------------

    def _compact(self, request: ModelRequest, turn: _Turn, draft: _Draft) -> Steps[_Outcome]:
        """Summarize ``draft``'s span and commit it. The summary call, the restoration
        reads and the archive write are made together (at the same time when async): a
        compaction that gets this far commits (see :meth:`_hopeless`), so the archive is
        never written for nothing."""
        hopeless = self._hopeless(request, turn, draft)
        if hopeless is not None:
            return hopeless
        backend = storage.resolve_backend(self.backend, request.runtime)
        (text, error, usage), restored, path = yield (
            Io.of(lambda: self._summary(request, backend, draft)),
            Io.of(lambda: self._restored(backend, draft)),
            Io.of(lambda: self._archived(backend, turn, draft)),
        )
        outcome, text, error, restored, strict = self._settle(
            request, turn, draft, text, error, usage, restored
        )
        if path is not None and outcome.committed:
            outcome = self._finish(request, turn, draft, text, error, restored, path, usage, strict=strict)
        return outcome

    def _summary(
        self, request: ModelRequest, backend: Any, draft: _Draft
    ) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
        """The model's summary and usage, or the error it failed with."""
        if not draft.use_llm:
            return None, None, None
        try:
            span = yield Io.in_thread(self._with_media_saved, backend, draft, draft.span)
            text, usage = yield from summarize.summarize(
                self._summarizer(request),
                self._trimmed(span),
                custom_instructions=self.config.custom_instructions,
                retries=self.config.ptl_max_retries,
                template=self.summary_prompt,
            )
            return text, None, usage
        except Exception as e:
            return None, _summarizer_failed(e), None

    def _restored(self, backend: Any, draft: _Draft) -> Steps[list[tuple[str, str]]]:
        if backend is None or not draft.reads:
            return []
        r = self.config.restoration
        return (yield from storage.restore_files(backend, draft.reads, r.per_file_chars, r.file_budget_chars))

    def _archived(self, backend: Any, turn: _Turn, draft: _Draft) -> Steps[str | None]:
        if backend is None or not draft.leaving:
            return None
        leaving = yield Io.in_thread(self._with_media_saved, backend, draft, draft.leaving)
        text = storage.archive_text(leaving, turn.prior_cutoff, draft.thread, draft.number)
        prefix = self.config.history_path_prefix
        return (yield from storage.write_archive(backend, prefix, draft.thread, draft.number, text))

    def _with_media_saved(self, backend: Any, draft: _Draft, messages: list[Any]) -> list[Any]:
        """``messages`` with inline media saved beside the archive and referenced by path,
        so that the summary and the archive both name the files (the same media is saved
        once)."""
        if backend is None:
            return messages
        return media.offload(
            backend, storage.media_folder(self.config.history_path_prefix, draft.thread), messages
        )

    def _hopeless(self, request: ModelRequest, turn: _Turn, draft: _Draft) -> _Outcome | None:
        """The uncommitted outcome, when even the extractive summary with nothing
        restored would leave the view over the trigger (then no summary can help, and
        neither the summarizer nor the backend is called); ``None`` otherwise."""
        plain = dataclasses.replace(draft, use_llm=False)
        # The summary will name its archive: measured with the longest name it may get.
        path = self._longest_archive_path(draft)
        outcome = self._finish(
            request,
            turn,
            plain,
            self._fallback(request, turn, draft),
            None,
            [],
            path,
            None,
            strict=not draft.forced,
        )
        return None if outcome.committed else outcome

    def _clipped(
        self, request: ModelRequest, view: list[Any], backend: Any, head_chars: int = storage.CLIP_HEAD_CHARS
    ) -> list[Any] | None:
        """The view with the newest tool results (the run of them it ends with) cut to
        ``head_chars``: a ``read_file`` result points at its file, any other is saved in
        full to ``/large_tool_results/<id>`` (or left to ``recall`` when there is no
        backend). ``None`` when there is nothing to clip."""
        start = len(view)
        while start > 0 and isinstance(view[start - 1], ToolMessage):
            start -= 1
        calls = {
            c.get("id"): c
            for m in view[:start]
            for c in getattr(m, "tool_calls", None) or []
            if isinstance(c, Mapping)
        }
        out = list(view)
        clipped = 0
        for i in range(start, len(view)):
            m = view[i]
            text = m.content if isinstance(m.content, str) else summarize.text_of(m)
            if len(text) <= head_chars:
                continue
            call = calls.get(m.tool_call_id) or {}
            given = call.get("args")
            args: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            read = args.get("file_path") if call.get("name") == "read_file" else None
            saved = None
            if read is None and backend is not None:
                saved = storage.offload_result(backend, m.tool_call_id, text)
            new = storage.clip_text(
                text, m.tool_call_id, read if isinstance(read, str) else None, saved, head_chars
            )
            out[i] = m.model_copy(update={"content": new})
            clipped += 1
        if not clipped:
            return None
        logger.warning(
            "fastcompact: the newest turn did not fit the window; clipped %d tool results", clipped
        )
        return out

    # --- the hooks -----------------------------------------------------------------

    def _wants_summary(self, turn: _Turn) -> bool:
        if self._over_window(turn):
            return True
        backoff = turn.counters.get("backoff_until") or 0
        return turn.plan.summary_needed and turn.plan.summary_cutoff is not None and len(turn.raw) >= backoff

    def _compacted(self, request: ModelRequest, turn: _Turn, *, forced: bool) -> Steps[_Outcome | None]:
        """The first of the candidate compactions that commits, else the last tried
        (``None`` when there is nothing to cut)."""
        outcome = None
        for draft in self._candidates(request, turn, forced=forced):
            outcome = yield from self._compact(request, turn, draft)
            if outcome.committed:
                break
        return outcome

    def _fitted(
        self, request: ModelRequest, turn: _Turn, view: list[Any], size: int
    ) -> Steps[tuple[list[Any], int]]:
        """``view`` as it may be sent, and its size: over the window, its newest tool
        results clipped; still over, a :class:`WindowTooSmallError` (a request known to
        be too large is never sent)."""
        window = turn.window
        if window is None or size <= window:
            return view, size
        backend = storage.resolve_backend(self.backend, request.runtime)
        for head in storage.CLIP_HEADS:
            clipped = yield Io.in_thread(self._clipped, request, view, backend, head)
            if clipped is not None:
                view, size = clipped, self._true_size(request, turn, clipped)
                if size <= window:
                    return view, size
        ratio = turn.plan.ratio
        system = request.system_message
        # What the caller did not pass (the offset) is system text too: later middleware's
        # additions to the prompt, the provider's own framing.
        system_tokens = math.ceil(turn.plan.offset)
        if system is not None:
            system_tokens += math.ceil(ratio * count_tokens([], system=system, model=request.model))
        tools = request.tools
        tools_tokens = math.ceil(ratio * count_tokens([], tools=tools, model=request.model)) if tools else 0
        raise WindowTooSmallError(
            window=window,
            system=system_tokens,
            tools=tools_tokens,
            turn=max(size - system_tokens - tools_tokens, 0),
        )

    def _respond(
        self, response: Any, turn: _Turn, outcome: _Outcome | None, sent: int
    ) -> ExtendedModelResponse:
        info = _plan_info(turn.plan)
        # What the model was sent, after any summary and clipping, and the prices that
        # decided the batches.
        info["tokens_sent"] = sent
        info["pricing"] = turn.pricing
        update: dict[str, Any] = {}
        counters = dict(turn.counters)
        if outcome is not None:
            update.update(outcome.update)
            counters = dict(outcome.update.get(STATE_KEY, counters))
            info["summary"] = outcome.info if outcome.committed else None
        previous = turn.counters.get("last_plan") or {}
        fired_passes = [
            p
            for p, q in zip(info["passes"], previous.get("passes") or [], strict=False)
            if p["edits"] > q["edits"]
        ]
        fired = [p["name"] for p in fired_passes]
        counters["last_plan"] = info
        if any(p["batched"] for p in fired_passes):
            # A batch rewrote older messages: earlier usage counted another view.
            counters["batch_at"] = len(turn.raw)
        update[STATE_KEY] = counters
        logger.debug("fastcompact plan: %s", info)
        if fired or (outcome is not None and outcome.committed):
            _emit({"plan": info, "passes_fired": fired})
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def _model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Steps[Any]:
        """One model call with the compacted view, summarizing first when the passes
        are not enough; ``handler`` is the sync or the async one (its result is awaited
        by the async driver)."""
        turn = self._turn(request)
        outcome = None
        if self._wants_summary(turn):
            outcome = yield from self._compacted(request, turn, forced=False)
        if outcome is not None and outcome.committed:
            view, size = outcome.view, int(outcome.info["tokens_after"])
        else:
            view, size = turn.view, _sent_size(turn.plan)
        view, size = yield from self._fitted(request, turn, view, size)
        try:
            response = yield _handled(handler, request.override(messages=view))
        except Exception as e:
            # The provider says it did not fit: compact once, then let any error through.
            if not summarize.is_prompt_too_long(e) or (outcome is not None and outcome.committed):
                raise
            outcome = yield from self._compacted(request, turn, forced=True)
            committed = outcome is not None and outcome.committed
            # What is left after a summary may still be the newest turn's results alone.
            view = outcome.view if outcome is not None and outcome.committed else view
            backend = storage.resolve_backend(self.backend, request.runtime)
            clipped = yield Io.in_thread(self._clipped, request, view, backend)
            if clipped is None and not committed:
                raise
            view = clipped or view
            response = yield _handled(handler, request.override(messages=view))
            size = self._true_size(request, turn, view)
        return self._respond(response, turn, outcome, size)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        """Send the model the compacted view; summarize first when the passes are not enough."""
        response: ModelResponse | ExtendedModelResponse = steps.run(self._model_call(request, handler))
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        """The async form of :meth:`wrap_model_call`."""
        return await steps.arun(self._model_call(request, handler))


def _handled(handler: Callable[[ModelRequest], Any], request: ModelRequest) -> Io:
    """The handler's call: its result as it is (sync), or awaited (async)."""
    return Io(lambda: handler(request), lambda: handler(request))


def recall_tool() -> Any:
    """The ``recall`` tool: reads the graph state's raw messages."""
    from langchain_core.tools import StructuredTool

    def run(id: str, runtime: ToolRuntime) -> str:
        state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
        try:
            return recall(state, id)
        except KeyError as e:
            return f"{e.args[0]}. Use the id a placeholder names."
        except ValueError as e:  # a message the reader cannot read: say so, never crash
            return f"recall could not read this conversation: {e}"

    return StructuredTool.from_function(func=run, name="recall", description=RECALL_DESCRIPTION)


class CompactionToolMiddleware(AgentMiddleware):
    """Adds a ``compact_conversation`` tool that compacts on request, once the
    conversation has reached half of ``mw``'s trigger. It shares ``mw``'s settings and
    state, and answers "nothing to compact", a line with the counts, or the error.

    Example:
        >>> from fastcompact import CompactionMiddleware, CompactionToolMiddleware
        >>> tool_mw = CompactionToolMiddleware(CompactionMiddleware())
        >>> [t.name for t in tool_mw.tools]
        ['compact_conversation', 'recall']
    """

    state_schema = CompactionState

    def __init__(self, compaction: CompactionMiddleware, *, system_prompt: str | None = None) -> None:
        super().__init__()
        if not isinstance(compaction, CompactionMiddleware):
            raise ValueError(f"expected a CompactionMiddleware, got {type(compaction).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValueError(f"system_prompt: expected a str, got {type(system_prompt).__name__}")
        self.compaction = compaction
        self.system_prompt = system_prompt
        self.tools = [self._tool(), recall_tool()]

    def _prompted(self, request: ModelRequest) -> ModelRequest:
        """The request with ``system_prompt`` (a nudge to compact or recall when it
        helps) after the agent's own system prompt."""
        if not self.system_prompt:
            return request
        system = request.system_message
        text = summarize.text_of(system) if system is not None else ""
        joined = f"{text}\n\n{self.system_prompt}" if text else self.system_prompt
        return request.override(system_message=SystemMessage(joined))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Adds ``system_prompt`` to the model's system prompt, when given."""
        return handler(self._prompted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """The async twin of :meth:`wrap_model_call`."""
        return await handler(self._prompted(request))

    def _tool(self) -> Any:
        from langchain_core.tools import StructuredTool

        def compact_conversation(runtime: ToolRuntime) -> Command[Any]:
            return steps.run(self._run(runtime))

        async def acompact_conversation(runtime: ToolRuntime) -> Command[Any]:
            return await steps.arun(self._run(runtime))

        return StructuredTool.from_function(
            func=compact_conversation,
            coroutine=acompact_conversation,
            name="compact_conversation",
            description=(
                "Summarize the older part of this conversation to free context space. "
                "The full text stays archived. Takes no arguments."
            ),
        )

    def _request(self, runtime: Any) -> tuple[ModelRequest, _Turn, _Draft | None] | None:
        """A model request standing in for the conversation at the tool call, its turn,
        and the compaction draft (``None`` when there is nothing to compact)."""
        mw = self.compaction
        state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
        messages = list(state.get("messages") or [])
        # The AI message that called this tool stays: its answer is not in the state yet.
        raw = messages[:-1] if messages and getattr(messages[-1], "tool_calls", None) else messages
        request = ModelRequest(
            model=mw.summary_model or mw.model,
            messages=raw,
            system_message=None,
            tools=[],
            state=state,
            runtime=runtime,
        )
        known = state.get(STATE_KEY)
        turn = mw._turn(request, known.get("window") if isinstance(known, Mapping) else None)
        # Half the trigger: it would fire on a conversation twice this size.
        tokens = turn.plan.tokens_after
        eligible = mw._plan_settings(turn.window, None).trigger_fires(
            len(turn.view) * 2, tokens * 2.0, turn.window
        )
        if not eligible:
            return request, turn, None
        cut = find_cutoff(turn.view, mw._resolved(turn.window)["keep"], turn.window)
        return request, turn, mw._draft(request, turn, forced=False, cut=cut)

    def _reply(
        self, runtime: Any, turn: _Turn | None, outcome: _Outcome | None, error: BaseException | None
    ) -> Command[Any]:
        call_id = getattr(runtime, "tool_call_id", None) or ""
        if error is not None:
            text = f"Compaction failed: {type(error).__name__}: {error}"
            return Command(update={"messages": [ToolMessage(text, tool_call_id=call_id, status="error")]})
        if outcome is None or not outcome.committed:
            return Command(
                update={"messages": [ToolMessage("Nothing to compact yet.", tool_call_id=call_id)]}
            )
        i = outcome.info
        where = f" The full text is saved at {i['file_path']}." if i["file_path"] else ""
        text = (
            f"Compacted {i['summarized_messages']} messages into a summary, keeping {i['kept_messages']}: "
            f"{i['tokens_before']:,} -> {i['tokens_after']:,} tokens.{where}"
        )
        return Command(update={**outcome.update, "messages": [ToolMessage(text, tool_call_id=call_id)]})

    def _run(self, runtime: Any) -> Steps[Command[Any]]:
        try:
            prepared = self._request(runtime)
            if prepared is None:
                return self._reply(runtime, None, None, None)
            request, turn, draft = prepared
            if draft is None:
                return self._reply(runtime, turn, None, None)
            outcome = yield from self.compaction._compact(request, turn, draft)
        except Exception as e:
            return self._reply(runtime, None, None, e)
        return self._reply(runtime, turn, outcome, None)


class RecallMiddleware(AgentMiddleware):
    """Adds the ``recall`` tool on its own: the full original of a cleared result, a
    shortened argument or a summarized message, from the raw state (``CompactionToolMiddleware``
    adds it too).

    Example:
        >>> [t.name for t in RecallMiddleware().tools]
        ['recall']
    """

    def __init__(self) -> None:
        super().__init__()
        self.tools = [recall_tool()]

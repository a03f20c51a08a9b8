"""The keywords of DeepAgents' and LangChain's ``SummarizationMiddleware`` that
``CompactionMiddleware`` also takes, and the ``CompactionConfig`` they map onto.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from fastcompact.config import CompactionConfig, ContextSize, Trigger


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

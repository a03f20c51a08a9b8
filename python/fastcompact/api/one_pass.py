"""One cheap pass alone, as a notebook calls it: each helper runs its pass (every other
one off) over a list of messages and returns the edited list. A helper takes every
setting of its pass's config class; settings left out take the class's defaults.

Examples:
    >>> from fastcompact.samples import coding_session
    >>> msgs = coding_session(200, seed=1)
    >>> out = clear_observations(msgs, keep_recent=2)
    >>> len(out) == len(msgs)
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from fastcompact.api.counting import _input_error, message_list
from fastcompact.api.parallel import one_result_a_message
from fastcompact.api.passes import apply_edits, plan
from fastcompact.config import (
    ClearingConfig,
    CollapseConfig,
    CompactionConfig,
    ContextSize,
    DedupeConfig,
    MicrocompactConfig,
    TokenBudgetConfig,
    TruncateArgsConfig,
)

__all__ = [
    "budget_tool_results",
    "clear_after_gap",
    "clear_observations",
    "collapse_reads",
    "dedupe_reads",
    "truncate_args",
]


# Every pass off: each helper turns on just its own.
_OFF = CompactionConfig(
    token_budget=TokenBudgetConfig(enabled=False),
    truncate_args=TruncateArgsConfig(trigger=None),
    clearing=ClearingConfig(enabled=False),
    dedupe=DedupeConfig(enabled=False),
    collapse=CollapseConfig(enabled=False),
    microcompact=MicrocompactConfig(enabled=False),
)
_ALWAYS: ContextSize = ("messages", 1)
T = TypeVar("T")


def _run_one(messages: Iterable[Any], cfg: CompactionConfig, **kwargs: Any) -> list[Any]:
    msgs = message_list(messages)
    if not msgs:
        return []
    found = plan(msgs, cfg, **kwargs)
    if found.parallel:
        msgs = one_result_a_message(msgs)
        found = plan(msgs, cfg, **kwargs)
    return apply_edits(msgs, found.edits)


def _config(cls: type[T], settings: Mapping[str, Any], **values: Any) -> T:
    """``cls`` (a pass's config class) with ``values`` and then the caller's own
    ``settings`` of it (a helper takes every setting of its config class); an
    :class:`InputError` for a name the class does not have."""
    names = set(getattr(cls, "__dataclass_fields__", {}))
    unknown = sorted(set(settings) - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise _input_error(unknown[0], f"not a setting of {cls.__name__}; its settings: {known}")
    return cls(**{**values, **settings})


def _given(**values: Any) -> dict[str, Any]:
    """The settings a helper's caller gave (``None``: left to the config's default, the
    one source of every default)."""
    return {k: v for k, v in values.items() if v is not None}


def budget_tool_results(
    messages: Iterable[Any],
    *,
    per_tool_chars: int | None = None,
    per_message_chars: int | None = None,
    file_preview_chars: int | None = None,
    archive_paths: Sequence[str | None] | None = None,
    **settings: Any,
) -> list[Any]:
    """Cut tool results over ``per_tool_chars`` (and turns over ``per_message_chars``)
    to a head and a tail of ``file_preview_chars`` with a marker saying where the whole
    text is: its ``archive_paths`` entry when given, else ``recall`` by the call's id.
    Settings left out take :class:`~fastcompact.TokenBudgetConfig`'s defaults.

    Examples:
        >>> from langchain_core.messages import ToolMessage
        >>> out = budget_tool_results([ToolMessage("x" * 100, tool_call_id="c")], per_tool_chars=50,
        ...                           file_preview_chars=9)
        >>> out[0].content
        'xxxxxx\\n\\n[… 91 characters cut from this result; recall("c") returns it in full …]\\n\\nxxx'
    """
    budget = _config(
        TokenBudgetConfig,
        settings,
        **_given(
            per_tool_chars=per_tool_chars,
            per_message_chars=per_message_chars,
            file_preview_chars=file_preview_chars,
        ),
    )
    return _run_one(messages, replace(_OFF, token_budget=budget), archive_paths=archive_paths)


def truncate_args(
    messages: Iterable[Any],
    *,
    max_length: int | None = None,
    keep: ContextSize = ("messages", 20),
    truncate_all_tools: bool | None = None,
    min_batch_tokens: int = 0,
    **settings: Any,
) -> list[Any]:
    """Shorten string arguments longer than ``max_length`` in tool calls older than
    ``keep`` (only in batches saving ``min_batch_tokens``). Settings left out take
    :class:`~fastcompact.TruncateArgsConfig`'s defaults."""
    cfg = _config(
        TruncateArgsConfig,
        settings,
        trigger=_ALWAYS,
        keep=keep,
        min_batch_tokens=min_batch_tokens,
        **_given(max_length=max_length, truncate_all_tools=truncate_all_tools),
    )
    return _run_one(messages, replace(_OFF, truncate_args=cfg))


def clear_observations(
    messages: Iterable[Any],
    *,
    keep_recent: int | None = None,
    tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] = (),
    clear_at_least: int = 0,
    **settings: Any,
) -> list[Any]:
    """Replace results of ``tools`` older than the newest ``keep_recent`` with a
    one-line placeholder that names the call, so the agent can run it again. Settings
    left out take :class:`~fastcompact.ClearingConfig`'s defaults (the newest 3 stay)."""
    cfg = _config(
        ClearingConfig,
        settings,
        trigger=_ALWAYS,
        exclude_tools=set(exclude_tools),
        clear_at_least=clear_at_least,
        **_given(keep_recent=keep_recent, tools=None if tools is None else set(tools)),
    )
    return _run_one(messages, replace(_OFF, clearing=cfg))


def dedupe_reads(
    messages: Iterable[Any],
    *,
    tools: Iterable[str] | None = None,
    min_batch_tokens: int = 0,
    **settings: Any,
) -> list[Any]:
    """Replace each repeated read's earlier result with a pointer to the newer one
    (``tools`` left out: :class:`~fastcompact.DedupeConfig`'s, ``read_file``)."""
    cfg = _config(
        DedupeConfig,
        settings,
        min_batch_tokens=min_batch_tokens,
        **_given(tools=None if tools is None else set(tools)),
    )
    return _run_one(messages, replace(_OFF, dedupe=cfg))


def collapse_reads(
    messages: Iterable[Any],
    *,
    min_group_size: int | None = None,
    keep_recent_messages: int | None = None,
    collapse_tools: Iterable[str] | None = None,
    **settings: Any,
) -> list[Any]:
    """Fold runs of consecutive read/search results into a one-line note. Settings
    left out take :class:`~fastcompact.CollapseConfig`'s defaults."""
    cfg = _config(
        CollapseConfig,
        settings,
        trigger=_ALWAYS,
        min_batch_tokens=0,
        **_given(
            min_group_size=min_group_size,
            keep_recent_messages=keep_recent_messages,
            collapse_tools=None if collapse_tools is None else set(collapse_tools),
        ),
    )
    return _run_one(messages, replace(_OFF, collapse=cfg))


def clear_after_gap(
    messages: Iterable[Any],
    *,
    gap_threshold_minutes: float | None = None,
    keep_recent: int | None = None,
    now: float | None = None,
    timestamps: Sequence[float | None] | None = None,
    **settings: Any,
) -> list[Any]:
    """Clear results from before the newest idle gap longer than
    ``gap_threshold_minutes`` (between two messages, or between the last one and
    ``now``), except the newest ``keep_recent``. Settings left out take
    :class:`~fastcompact.MicrocompactConfig`'s defaults."""
    cfg = _config(
        MicrocompactConfig,
        settings,
        **_given(gap_threshold_minutes=gap_threshold_minutes, keep_recent=keep_recent),
    )
    return _run_one(messages, replace(_OFF, microcompact=cfg), now=now, timestamps=timestamps)

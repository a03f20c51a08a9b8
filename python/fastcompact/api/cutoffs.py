"""Where to cut a conversation, and what a compaction event leaves: the pair-safe
cutoff for a keep policy, the trigger check, and the indices between the raw state and
the effective view (the summary in slot 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

import fastcompact._core as _core
from fastcompact.api.counting import (
    CountingOptions,
    _as_list,
    _input_error,
    _window,
    counting_options,
    message_list,
    normalize,
)

if TYPE_CHECKING:
    from fastcompact.config import ContextSize, Trigger

__all__ = [
    "effective_messages",
    "find_cutoff",
    "leading_system",
    "partition",
    "should_compact",
    "state_cutoff",
]


def find_cutoff(
    messages: Iterable[Any],
    keep: ContextSize | None = None,
    max_input_tokens: int | None = None,
    **options: Unpack[CountingOptions],
) -> int:
    """Where to cut for a summary: ``messages[:cutoff]`` are summarized, the rest kept.

    A leading system message is part of ``messages[:cutoff]``: to keep it, take the
    three parts from :func:`partition` instead (the system messages, the span to
    summarize and the kept messages), or summarize
    ``messages[leading_system(messages):cutoff]``.

    ``keep`` is ``("messages", n)``, ``("tokens", n)`` or ``("fraction", f)`` of
    ``max_input_tokens``; by default DeepAgents' choice: 10% of the window when
    ``max_input_tokens`` is known, else the last 6 messages. The cutoff never separates
    a tool call from its result (parallel and interleaved calls included), never leaves
    the kept part starting with a tool result, and keeps thinking blocks with their
    turn: it moves earlier (keeping more), or later only when nothing earlier is safe.
    0 means there is nothing to summarize. The other options are those of
    :func:`count_tokens`.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> msgs = [
        ...     HumanMessage("fix the bug"),
        ...     AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}]),
        ...     ToolMessage("print('hi')", tool_call_id="c1"),
        ...     AIMessage("Fixed."),
        ... ]
        >>> find_cutoff(msgs, keep=("messages", 2))  # would start at the ToolMessage
        1
    """
    return _cutoff(messages, keep, max_input_tokens, options, remember=True)


def cutoff_once(
    messages: Iterable[Any],
    keep: ContextSize | None = None,
    max_input_tokens: int | None = None,
    **options: Unpack[CountingOptions],
) -> int:
    """:func:`find_cutoff` on a list built for the occasion (a compaction's view), kept
    out of the conversation cache, as :func:`count_once` counts."""
    return _cutoff(messages, keep, max_input_tokens, options, remember=False)


def _cutoff(
    messages: Iterable[Any],
    keep: ContextSize | None,
    max_input_tokens: int | None,
    options: Mapping[str, Any],
    *,
    remember: bool,
) -> int:
    if keep is None:
        keep = _core.defaults(_window(max_input_tokens))["keep"]
    opts = counting_options(options, "find_cutoff", remember=remember)
    # The core checks the size and names the field in its error.
    return _core.find_cutoff(_as_list(messages), keep, _window(max_input_tokens), opts)


def leading_system(messages: Sequence[Any]) -> int:
    """How many system messages the conversation starts with (in any message shape).

    Examples:
        >>> leading_system([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
        1
    """
    n = 0
    while n < len(messages) and normalize([messages[n]])[0]["role"] == "system":
        n += 1
    return n


def partition(
    messages: Sequence[Any],
    keep: ContextSize | None = None,
    max_input_tokens: int | None = None,
    **options: Unpack[CountingOptions],
) -> tuple[list[Any], list[Any], list[Any]]:
    """The conversation in the three parts a summary treats apart: its leading system
    messages (kept in place), the span to summarize, and the messages kept verbatim.
    The cut is :func:`find_cutoff`'s, never before the system messages; the span is
    empty when there is nothing to summarize. ``[*system, summary, *kept]`` is the
    compacted conversation.

    Examples:
        >>> msgs = [("system", "Be brief."), ("human", "a"), ("ai", "b"), ("human", "c"), ("ai", "d")]
        >>> system, span, kept = partition(msgs, keep=("messages", 2))
        >>> [m[1] for m in system], [m[1] for m in span], [m[1] for m in kept]
        (['Be brief.'], ['a', 'b'], ['c', 'd'])
    """
    msgs = message_list(messages)
    lead = leading_system(msgs)
    cut = max(find_cutoff(msgs, keep, max_input_tokens, **options), lead)
    return msgs[:lead], msgs[lead:cut], msgs[cut:]


def should_compact(
    messages: Iterable[Any],
    trigger: Trigger | Sequence[Trigger] | None = None,
    *,
    max_input_tokens: int | None = None,
    **options: Unpack[CountingOptions],
) -> bool:
    """Whether the conversation has reached a compaction trigger.

    ``trigger`` is one size or a list of them (any fires): ``("messages", n)`` fires at
    ``n`` messages, ``("tokens", n)`` at ``n`` tokens, ``("fraction", f)`` at that share
    of ``max_input_tokens``; a dict of sizes (``{"tokens": 1_000, "messages": 5}``)
    fires when all of them are reached. By default DeepAgents' choice: 85% of the window
    when ``max_input_tokens`` is known, else 170,000 tokens. The other options are those
    of :func:`count_tokens`.

    Examples:
        >>> should_compact(["hello"] * 10, ("messages", 10))
        True
        >>> should_compact(["hello"] * 10, [("tokens", 1_000), ("messages", 50)])
        False
        >>> should_compact(["hello"] * 10, {"tokens": 1_000, "messages": 10})
        False
    """
    if trigger is None:
        trigger = _core.defaults(_window(max_input_tokens))["trigger"]
    opts = counting_options(options, "should_compact")
    return _core.should_compact(_as_list(messages), trigger, _window(max_input_tokens), opts)


def _event_fields(event: Any) -> tuple[Any, int]:
    if not isinstance(event, Mapping):
        raise _input_error("event", f"expected a dict, got {type(event).__name__}")
    if "summary_message" not in event or event["summary_message"] is None:
        raise _input_error("summary_message", "the event has no summary message")
    cutoff = event.get("cutoff_index")
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 0:
        raise _input_error("cutoff_index", f"expected a non-negative int, got {cutoff!r}")
    return event["summary_message"], cutoff


def effective_messages(messages: Sequence[Any], event: Mapping[str, Any] | None) -> list[Any]:
    """The conversation as the model sees it after a compaction event.

    ``event`` is the ``_summarization_event`` of the graph state
    (``{"cutoff_index", "summary_message", "file_path"}``): the result is
    ``[summary_message, *messages[cutoff_index:]]``, or the messages unchanged when
    there is no event. The raw list is never modified.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> raw = ["a", "b", "c", "d"]
        >>> event = {"cutoff_index": 3, "summary_message": HumanMessage("summary"), "file_path": None}
        >>> [getattr(m, "content", m) for m in effective_messages(raw, event)]
        ['summary', 'd']
    """
    if event is None:
        return list(messages)
    summary, cutoff = _event_fields(event)
    if cutoff > len(messages):
        raise _input_error(
            "cutoff_index", f"{cutoff} is beyond the {len(messages)} messages given (a truncated history?)"
        )
    return [summary, *messages[cutoff:]]


def state_cutoff(prior_event: Mapping[str, Any] | None, effective_cutoff: int) -> int:
    """Map a cutoff in the effective view to an index in the raw state messages.

    With no prior event the two are the same; after one, the summary occupies slot 0
    of the effective view, so the raw index is ``prior_cutoff + effective_cutoff - 1``.
    Use the result as the new event's ``cutoff_index``.

    Examples:
        >>> state_cutoff(None, 5)
        5
        >>> state_cutoff({"cutoff_index": 5, "summary_message": "s"}, 4)
        8
    """
    if isinstance(effective_cutoff, bool) or not isinstance(effective_cutoff, int) or effective_cutoff < 0:
        raise _input_error("effective_cutoff", f"expected a non-negative int, got {effective_cutoff!r}")
    prior = None if prior_event is None else _event_fields(prior_event)[1]
    return _core.state_cutoff(prior, effective_cutoff)

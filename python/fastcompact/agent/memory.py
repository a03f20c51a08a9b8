"""The compacted conversation's memory: what stands in for everything a compaction
took out of the view, in layers that each keep a share of the window
(:class:`~fastcompact.MemoryConfig`).

- The requests verbatim, numbered and in order, each followed by a line for every step
  the agent took for it (the newest steps within their share, the newest requests
  within theirs).
- Older requests in short, every one that a model's notes do not name: its opening
  words and every name, number, path and code it holds, under the number
  ``recall("R<n>")`` returns it by. When they outgrow their share they give up their
  answers' heads, then most of their opening words, then consecutive requests on one
  subject share a line that still names each one's terms; never a bare range.

The memory is kept as plain data in the compaction event (under ``fastcompact`` /
``memory``), so a later compaction takes up where the last left off, across restarts
and workers; its text is the summary message's. Every line names the id ``recall``
returns (when the agent has the tool) and the archive file that holds it.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from fastcompact.config import MemoryConfig
    >>> span = [HumanMessage("Check the logs", id="u1"), AIMessage("All clear.", id="a1")]
    >>> m = remember(None, None, span, MemoryOptions(MemoryConfig(), 40_000))
    >>> print(text(m.memory, recall=True).split("\\n\\n", 1)[1])
    ## Requests from R1, verbatim, each followed by the agent's steps
    ### R1
    Check the logs
    - Agent: All clear.
    <BLANKLINE>
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import fastcompact._core as _core
from fastcompact.agent.setup import POLICY
from fastcompact.agent.summarize import is_request, is_summary, summary_text, text_of

if TYPE_CHECKING:
    from fastcompact.config import MemoryConfig

# Under the compaction event's "fastcompact" entry.
MEMORY_KEY = "memory"
# The tool the agent pins its own notes to the ledger with (the core reads its results).
PIN_TOOL = _core.PIN_TOOL
# Widths a token, as the budgets assume when a conversation has not said, and the
# bounds of what one may say (the core's, which holds the budgets to them).
WIDTHS_PER_TOKEN = _core.WIDTHS_PER_TOKEN
WIDTHS_PER_TOKEN_BOUNDS = _core.WIDTHS_PER_TOKEN_BOUNDS


@dataclasses.dataclass(frozen=True)
class Remembered:
    """A memory after a compaction, how many requests left the verbatim layer, and the
    notes to write whole to the notes file when they were cut for space (the memory
    names that file where it cut them)."""

    memory: dict[str, Any]
    folded: int
    notes_to_save: str | None = None


@dataclasses.dataclass(frozen=True)
class Earlier:
    """What an earlier compaction left: its memory, or, when it left none (an event
    made by another summarizer, DeepAgents' say), its summary's text and the archive
    file the event names."""

    memory: dict[str, Any] | None = None
    text: str | None = None
    file: str | None = None


def earlier(event: Mapping[str, Any] | None) -> Earlier:
    """What the compaction ``event`` left (see :class:`Earlier`)."""
    if not event:
        return Earlier()
    ours = event.get("fastcompact")
    found = ours.get(MEMORY_KEY) if isinstance(ours, Mapping) else None
    if isinstance(found, Mapping):
        return Earlier(memory=dict(found))
    file = event.get("file_path")
    return Earlier(
        text=summary_text(event.get("summary_message")), file=file if isinstance(file, str) else None
    )


def earlier_message(message: Any) -> Earlier:
    """What a summary message at a conversation's head left (its text, read back into
    the memory it shows when it is ours); nothing when the message is not a summary."""
    text = summary_text(message)
    return Earlier() if text is None else Earlier(text=text)


def next_number(memory: Mapping[str, Any] | None, before: Sequence[Any]) -> int:
    """The number the next request takes: after the memory's last, else after the
    requests among ``before`` (the messages an earlier summary made elsewhere replaced)."""
    if memory:
        numbers = [r.get("number") for r in memory.get("requests") or []]
        numbers += [h.get("number") for h in memory.get("heads") or []]
        numbers += [r.get("last") for r in memory.get("ranges") or []]
        known = [n for n in numbers if isinstance(n, int)]
        if known:
            return max(known) + 1
    return 1 + sum(1 for m in before if is_request(m))


@dataclasses.dataclass(frozen=True)
class MemoryOptions:
    """What a memory is held to, and where the span it takes in is archived: the
    layers' shares of ``window`` (``config``), where a token of the conversation takes
    ``widths_per_token`` (see :func:`widths_per_token`), within ``room`` widths when
    given; the span's requests numbered from ``first_number`` (default: after the
    memory's last) and archived in ``file``; an earlier summary's archive file
    (``earlier_file``, read with its text when there is no memory); and the messages
    that stay in view (``kept``), whose statements replace what the ledger held."""

    config: MemoryConfig | Mapping[str, float]
    window: int | None
    first_number: int | None = None
    file: str | None = None
    widths_per_token: float = WIDTHS_PER_TOKEN
    room: int | None = None
    earlier_file: str | None = None
    kept: Sequence[Any] = ()


def remember(
    previous: Mapping[str, Any] | None,
    earlier_text: str | None,
    span: Sequence[Any],
    options: MemoryOptions,
    *,
    notes: str | None = None,
    notes_file: str | None = None,
) -> Remembered:
    """``previous`` (or, without one, an earlier summary's text) with ``span`` taken in,
    held to ``options``. With ``notes``, a model's summary of all of it, the newest
    requests stay verbatim within their share and the older ones fold beside the notes;
    notes over their share are cut where it hurts least (what the agent needs to carry
    on stays), naming ``notes_file`` as where they are whole: ``notes_to_save`` is then
    what that file must take."""
    o = options
    messages, number = _taken_in(previous, span, o.first_number)
    memory, folded, to_save = _core.remember(
        previous,
        earlier_text,
        messages,
        number,
        o.file,
        _shares(o.config),
        o.window,
        o.widths_per_token,
        o.room,
        notes,
        o.earlier_file,
        notes_file,
        _binding(o.kept),
    )
    return Remembered(memory=memory, folded=folded, notes_to_save=to_save)


def digest_and_fold(
    previous: Mapping[str, Any] | None, earlier_text: str | None, span: Sequence[Any], options: MemoryOptions
) -> tuple[Remembered, Remembered]:
    """:func:`remember` without notes and beside empty notes (a model's, yet to be
    written), with the span taken in once: the two a price check weighs."""
    o = options
    messages, number = _taken_in(previous, span, o.first_number)
    digest, fold = _core.digest_and_fold(
        previous,
        earlier_text,
        messages,
        number,
        o.file,
        _shares(o.config),
        o.window,
        o.widths_per_token,
        o.room,
        o.earlier_file,
        _binding(o.kept),
    )
    return Remembered(*digest), Remembered(*fold)


def _binding(kept: Sequence[Any]) -> list[Any]:
    """Of the messages that stay in view, those whose words may replace what the ledger
    holds: the user's requests and the pin tool's results."""
    return [m for m in kept if is_request(m) or getattr(m, "name", None) == PIN_TOOL]


def _taken_in(
    previous: Mapping[str, Any] | None, span: Sequence[Any], first_number: int | None
) -> tuple[list[Any], int]:
    """The messages of ``span`` a memory takes in (earlier summaries aside), and the
    number its first request takes (default: after the memory's last)."""
    messages = [m for m in span if not is_summary(m)]
    return messages, first_number if first_number is not None else next_number(previous, [])


def _shares(config: MemoryConfig | Mapping[str, float]) -> dict[str, float]:
    return dict(config) if isinstance(config, Mapping) else dataclasses.asdict(config)


def priced_shares(
    config: MemoryConfig, window: int | None, verbatim_tokens: float | None
) -> dict[str, float]:
    """The layers' shares of ``window`` when a price model says the newest requests pay
    to stay verbatim only up to ``verbatim_tokens`` (see
    :meth:`~fastcompact._core.PlanSettings.verbatim_tokens`): the verbatim layer within
    it, and what a fold keeps verbatim in the same proportion. The notes stand in for
    the requests a fold takes out of the verbatim layer and are read as often; they get
    no more than what the fold keeps verbatim, as search finds the rest (whole in the
    conversation and the notes file). The step lines keep their share: each names the
    recall id of what a pass cleared. Never above the configured shares.

    Examples:
        >>> from fastcompact.config import MemoryConfig
        >>> shares = priced_shares(MemoryConfig(), 40_000, 2_000)
        >>> shares["user_share"], shares["fold_share"], shares["note_share"]
        (0.05, 0.0125, 0.0125)
    """
    shares = dataclasses.asdict(config)
    if verbatim_tokens is None or not window or config.user_share <= 0:
        return shares
    users = min(config.user_share, max(verbatim_tokens, 0.0) / window)
    folded = config.fold_share * (users / config.user_share)
    return {**shares, "user_share": users, "fold_share": folded, "note_share": min(config.note_share, folded)}


def budgets(
    config: MemoryConfig | Mapping[str, float],
    window: int | None,
    widths_per_token: float = WIDTHS_PER_TOKEN,
    room: int | None = None,
) -> dict[str, int]:
    """The layers' budgets in widths (``users``, ``steps``, ``heads``, ``notes``), as
    :func:`remember` holds them.

    Examples:
        >>> from fastcompact.config import MemoryConfig
        >>> budgets(MemoryConfig(), 10_000)["notes"]
        4000
    """
    return _core.memory_budgets(_shares(config), window, widths_per_token, room)


def verbatim_numbers(memory: Mapping[str, Any]) -> list[int]:
    """The numbers of the requests ``memory`` keeps verbatim."""
    return [
        r["number"]
        for r in memory.get("requests") or []
        if isinstance(r.get("number"), int) and isinstance(r.get("text"), str)
    ]


def widths_per_token(span: Sequence[Any]) -> float:
    """How many widths a token of this conversation takes: the width of the text of
    the span's newest messages over its size in exact tokens (``o200k_base``), within
    bounds. The layers' shares are then of the window a provider counts, whatever the
    language; a width alone is only a guess (English prose runs to six a token)."""
    texts = [
        text_of(m)
        for m in list(span)[-POLICY.sample_messages :]
        if getattr(m, "type", None) in ("human", "ai")
    ]
    sample = "\n".join(t for t in texts if t.strip())
    if len(sample) < 400:
        return WIDTHS_PER_TOKEN
    tokens = _core.count_text(sample, "o200k_base")
    if tokens <= 0:
        return WIDTHS_PER_TOKEN
    low, high = WIDTHS_PER_TOKEN_BOUNDS
    return min(max(_core.text_width(sample) / tokens, low), high)


def add_binding_cues(cues: str | os.PathLike[str]) -> int:
    """Teach the ledger of what binds more cue words, for every later compaction in this
    process: a sentence of the user's holding one of them is kept in the ledger, in
    their words. ``cues`` is the text of the lines, or the path of a file holding it (a
    ``pathlib.Path``), in the shape of the built-in list: one line a group,
    ``kind: cue, cue``, with kind one of ``rule``, ``limit``, ``preference``, ``fact``,
    ``goal`` (what it binds) or ``update`` (it replaces an earlier statement); English
    cues match whole words, Chinese and Japanese ones anywhere; blank lines and ``#``
    comments are skipped. A limit and a fact bind only with a value beside their cue.
    Returns how many lines it took. Raises :class:`~fastcompact.InputError` naming the
    first line it cannot read (and then adds nothing).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from fastcompact.config import MemoryConfig
        >>> span = [HumanMessage("Sign every letter off with Tally-ho, per protocol.")]
        >>> def ledger():
        ...     made = remember(None, None, span, MemoryOptions(MemoryConfig(), 40_000))
        ...     return [e["text"] for e in made.memory["ledger"]]
        >>> ledger()
        []
        >>> add_binding_cues("rule: per protocol")
        1
        >>> ledger()
        ['Sign every letter off with Tally-ho, per protocol.']
    """
    from fastcompact.api.counting import text_or_file

    return _core.add_binding_cues(text_or_file(cues, "cues"))


def text(memory: Mapping[str, Any], *, recall: bool) -> str:
    """The memory's text, which names ``recall`` only when the agent has it."""
    return "".join(parts(memory, recall=recall))


def parts(memory: Mapping[str, Any], *, recall: bool) -> tuple[str, ...]:
    """The memory's text in parts, the steadiest first: a compaction that leaves the
    opening parts as they were leaves them to the provider's prompt cache (see
    ``_core.render_memory_parts``)."""
    return tuple(_core.render_memory_parts(memory, recall))

"""The middleware's counters in the graph state (``_fastcompact``) as one typed record.

A checkpointer stores them as a plain dict, and threads saved by earlier releases carry
that dict: :meth:`Counters.from_state` reads it, field by field, and
:meth:`Counters.to_state` writes the same shape back. A value of the wrong kind (a
corrupted or hand-edited state) reads as absent, so the call plans as for a new
conversation instead of failing; keys this release does not know are kept as they
were.

Examples:
    >>> c = Counters.from_state({"window": 200_000, "archives": 2, "future_key": [1]})
    >>> c.archives, c.calls_before
    (2, None)
    >>> c.archives = 3
    >>> c.to_state()
    {'window': 200000, 'archives': 3, 'future_key': [1]}
    >>> Counters.from_state({"archives": "two"}).archives is None
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any


def _count(value: Any) -> int | None:
    """A count or an index: a non-negative int."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: Any) -> float | None:
    """A finite number, kept as stored (an int stays an int, so the dict reads back the
    same)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


def _amount(value: Any) -> float | None:
    """A non-negative number."""
    found = _number(value)
    return found if found is not None and found >= 0 else None


def _window(value: Any) -> int | None:
    found = _count(value)
    return found if found else None


def _plan(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


def _priced_request(value: Any) -> list[Any] | None:
    """The turn in progress as last priced: its request's id and the price."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    request_id, price = value
    return [request_id, price] if _number(price) is not None else None


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclasses.dataclass
class Counters:
    """What the middleware remembers of a conversation between calls. ``None`` is a
    field the state does not hold."""

    # The agent's window, remembered for the compaction tool (which has no model); the
    # one field always written, as it always was.
    window: int | None = None
    # The time-gap clock: when the model was last called, with how many messages, and
    # the raw index an idle gap marked (older messages are idle-old for good).
    last_call_at: float | None = None
    seen: int | None = None
    gap_at: int | None = None
    # The usage calibration carried between calls, the raw index usage is valid from
    # after a batch rewrote older messages, and the index the batched edits settled to.
    ratio: float | None = None
    offset: float | None = None
    batch_at: int | None = None
    settled: int | None = None
    # The model calls summarized away, and the last call's plan (with what was sent).
    calls_before: int | None = None
    last_plan: dict[str, Any] | None = None
    # The schedule's cycle since the last compaction: the view's size then, the reads
    # paid since for what it has grown by, and the calls made.
    base_size: float | None = None
    grown_reads: float | None = None
    calls_since_compaction: int | None = None
    # The price model's lower bounds in this cycle: the span's own part of the last
    # price, and the turn in progress as last priced ([its request's id, the price]).
    span_price: float | None = None
    kept_price: list[Any] | None = None
    # The memory's size, and what it has cost since its last fold: its reads, over how
    # many calls, and the digests that wrote it anew.
    memory_tokens: float | None = None
    memory_reads: float | None = None
    memory_calls: int | None = None
    memory_rewrites: float | None = None
    memory_digests: int | None = None
    # The summarizer's failures in a row and its rest, the back-off after a compaction
    # that left the view over the trigger, the archives written, and the session's name
    # when the thread has no id.
    failures: int | None = None
    llm_paused_until: int | None = None
    backoff_until: int | None = None
    archives: int | None = None
    session: str | None = None
    # The first user message of parallel tool results the conversation holds, by index:
    # it is read with one message a result from then on (see `fastcompact.api.parallel`),
    # so that every index agrees.
    split_from: int | None = None
    # Keys this release does not know, as they were.
    others: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_state(cls, found: Any) -> Counters:
        """The counters a graph state holds (``None`` or a non-dict: none)."""
        if not isinstance(found, Mapping):
            return cls()
        known = {k: read(found[k]) for k, read in _READERS.items() if k in found}
        others = {k: v for k, v in found.items() if k not in _READERS}
        return cls(**known, others=others)

    def to_state(self) -> dict[str, Any]:
        """The dict the graph state stores: the fields held, and the unknown keys."""
        out: dict[str, Any] = {"window": self.window}
        for name in _READERS:
            value = getattr(self, name)
            if value is not None and name != "window":
                out[name] = value
        out.update(self.others)
        return out

    def copy(self) -> Counters:
        """A copy to change without changing this one (the plan and the priced
        request are replaced, never changed in place)."""
        return dataclasses.replace(self, others=dict(self.others))

    # --- what happened, and how the counters change for it -----------------------
    # Every change to a conversation's counters is one of these; the other modules
    # read the fields and call these to say what happened.

    def window_known(self, window: int | None) -> None:
        """A call saw the agent's model window (remembered for the compaction tool)."""
        self.window = window

    def called(self, now: float, messages: int, gap_seconds: float | None) -> bool:
        """The model is called at ``now`` with ``messages`` in the state. A pause longer
        than ``gap_seconds`` (``None``: no idle-gap pass) since the last call marks the
        messages seen then as idle-old, for good; whether this call marked a new gap.

        Examples:
            >>> c = Counters()
            >>> c.called(0.0, 4, 3600.0), c.called(4000.0, 9, 3600.0), c.gap_at
            (False, True, 4)
        """
        before = self.gap_at
        if (
            self.last_call_at is not None
            and gap_seconds is not None
            and now - self.last_call_at > gap_seconds
        ):
            self.gap_at = self.seen if self.seen is not None else messages
        self.last_call_at = now
        self.seen = messages
        return self.gap_at != before

    def batch_ran(self, raw_messages: int) -> None:
        """A batch of edits rewrote older messages: usage reported before it counted
        another view, so it is valid only from here on."""
        self.batch_at = raw_messages

    def plan_settled(self, ratio: float, offset: float, settled: int | None) -> None:
        """A call's plan calibrated usage (``offset + ratio * estimate``) and settled its
        batched edits up to the raw index ``settled``."""
        self.ratio, self.offset, self.settled = ratio, offset, settled

    def call_planned(self, plan: dict[str, Any]) -> None:
        """A call was planned and sent: its plan, for telemetry and the next call's view of
        which passes fired."""
        self.last_plan = plan

    def parallel_results_at(self, index: int) -> None:
        """A user message of parallel tool results is at ``index``: from now on the
        conversation is read with one message a result."""
        if self.split_from is None:
            self.split_from = index

    def session_named(self, make: Callable[[], str]) -> str:
        """The conversation's session name, made once by ``make`` when it has none."""
        if self.session is None:
            self.session = make()
        return self.session

    def read_grew(self, grown_reads: float, calls: int, size: float) -> None:
        """A call read the view of ``size`` tokens: the reads paid since the last compaction
        for what it has grown by, over ``calls`` calls; and the memory was read once more."""
        self.grown_reads, self.calls_since_compaction = grown_reads, calls
        if self.base_size is None:
            self.base_size = size
        memory = self.memory_tokens
        if memory is not None and memory > 0:
            self.memory_reads = float(self.memory_reads or 0.0) + float(memory)
            self.memory_calls = (self.memory_calls or 0) + 1

    def kept_priced(self, request_id: Any, price: float) -> None:
        """The turn in progress was priced: its request's id and the price of keeping it."""
        self.kept_price = [request_id, price]

    def span_priced(self, price: float) -> None:
        """The span's own part of a compaction's price was worked out: the next calls'
        lower bound in this cycle."""
        self.span_price = price

    def backed_off(self, until: int | None) -> None:
        """A judged compaction leaves no new attempt before the raw index ``until``."""
        self.backoff_until = until

    def summarizer_counted(self, failures: int, rests_until: int | None) -> None:
        """A model summary succeeded or failed: its failures in a row, and its rest."""
        self.failures = failures
        if rests_until is not None:
            self.llm_paused_until = rests_until

    def compaction_committed(
        self,
        *,
        archive_number: int | None,
        size: float,
        memory_tokens: int,
        by_model: bool,
        calls_summarized: int,
    ) -> None:
        """A compaction committed, leaving a view of ``size`` tokens with a memory of
        ``memory_tokens``: the schedule's cycle starts again, and the memory's costs since
        its last fold (a model summary folds it; a digest writes it anew)."""
        if archive_number is not None:
            self.archives = archive_number
        self.base_size, self.grown_reads, self.calls_since_compaction = size, 0.0, 0
        self.span_price = self.kept_price = None
        self.memory_tokens = memory_tokens
        if by_model:
            self.memory_reads, self.memory_calls = 0.0, 0
            self.memory_rewrites, self.memory_digests = 0.0, 0
        else:
            self.memory_rewrites = float(self.memory_rewrites or 0.0) + memory_tokens
            self.memory_digests = (self.memory_digests or 0) + 1
        self.calls_before = (self.calls_before or 0) + calls_summarized


_READERS: dict[str, Callable[[Any], Any]] = {
    "window": _window,
    "last_call_at": _number,
    "seen": _count,
    "gap_at": _count,
    "ratio": _number,
    "offset": _number,
    "batch_at": _count,
    "settled": _count,
    "calls_before": _count,
    "last_plan": _plan,
    "base_size": _number,
    "grown_reads": _amount,
    "calls_since_compaction": _count,
    "span_price": _number,
    "kept_price": _priced_request,
    "memory_tokens": _number,
    "memory_reads": _number,
    "memory_calls": _count,
    "memory_rewrites": _number,
    "memory_digests": _count,
    "failures": _count,
    "llm_paused_until": _count,
    "backoff_until": _count,
    "archives": _count,
    "session": _name,
    "split_from": _count,
}

"""A compaction worked out, before its I/O: where the cut falls, what leaves the view and
what stays, and how it is to be summarized. The schedule (``schedule.py``) and the steps
of a compaction (``compaction.py``) both work on it.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Draft:
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
    # The summarizer is resting after failures (the digest stands in for it).
    paused: bool = False
    # Due by the price model (it commits whenever it makes the view smaller), rather
    # than by the trigger.
    priced: bool = False
    # The digest of the span, once made (pricing, the hopeless check and the fallback
    # all use the same one).
    digest: str | None = None

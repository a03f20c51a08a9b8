"""A compaction worked out, before its I/O: where the cut falls, what leaves the view and
what stays, the memory it extends, and how it is to be summarized. The schedule
(``schedule.py``) and the steps of a compaction (``compaction.py``) both work on it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fastcompact.storage import Read


@dataclasses.dataclass
class Draft:
    """A compaction worked out, before its I/O (summary call, archive, file reads)."""

    state_cutoff: int
    leaving: list[Any]
    span: list[Any]
    kept: list[Any]
    thread: str
    number: int
    todos: list[Any]
    reads: list[Read]
    use_llm: bool
    forced: bool
    # The memory the last compaction left (or, when it left none, its summary's text and
    # the archive file it names), and the number the span's first request takes.
    memory: dict[str, Any] | None = None
    earlier_text: str | None = None
    earlier_file: str | None = None
    first_number: int = 1
    # Whether the agent has the `recall` tool (the memory names it only then).
    recall: bool = True
    # The summarizer is resting after failures (the digest stands in for it).
    paused: bool = False
    # Due by the price model (it commits whenever it makes the view smaller), rather
    # than by the trigger.
    priced: bool = False
    # The memory's room in the window, in widths (None: no window known), and the widths
    # a token of this conversation takes.
    room: int | None = None
    widths_per_token: float = 4.0
    # The digest of the span, once made (pricing, the hopeless check and the fallback
    # all use the same one).
    digest: Summary | None = None


@dataclasses.dataclass(frozen=True)
class Summary:
    """What stands in for the span: the memory and its text, whether a model's notes
    are in it, how many requests left the verbatim layer, and the notes the archive
    file must take whole when they were cut for space."""

    text: str
    memory: dict[str, Any]
    by_model: bool = False
    folded: int = 0
    notes_to_save: str | None = None

"""The ``pin`` tool the agent is given beside ``recall``: a note of its own (a decision,
a correction it inferred, a plan) pinned to the ledger of what binds, so that it stays
in view through every compaction beside what the user said still holds; and unpinned by
its number once it no longer holds. The pins live in the conversation itself (the
tool's results, which the memory reads), so they survive restarts and many workers.

Examples:
    >>> from langchain_core.messages import ToolMessage
    >>> pinned(
    ...     [
    ...         ToolMessage("Pinned P1: use Postgres", tool_call_id="a", name="pin"),
    ...         ToolMessage("Pinned P2: ship Friday", tool_call_id="b", name="pin"),
    ...         ToolMessage("Unpinned P1.", tool_call_id="c", name="pin"),
    ...     ]
    ... )
    ({2: 'ship Friday'}, 2)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from langchain.tools import ToolRuntime

import fastcompact._core as _core

PIN_TOOL = _core.PIN_TOOL
PIN_DESCRIPTION = (
    "Keep a short note of yours (a decision, a correction, the plan) in view through every "
    'compaction: note="..."; unpin="P3" drops one that no longer holds.'
)


def pinned(messages: Iterable[Any]) -> tuple[dict[int, str], int]:
    """The notes pinned and not unpinned among ``messages`` (by number), and the
    highest number used so far."""
    held: dict[int, str] = {}
    highest = 0
    for m in messages:
        if getattr(m, "name", None) != PIN_TOOL or not isinstance(getattr(m, "content", None), str):
            continue
        change = _core.pin_change(m.content)
        if change is None:
            continue
        number, note = change
        highest = max(highest, number)
        if note is None:
            held.pop(number, None)
        else:
            held[number] = note
    return held, highest


def pin_tool() -> Any:
    """The ``pin`` tool: numbers a new note after every pin the conversation holds."""
    from langchain_core.tools import StructuredTool

    def run(runtime: ToolRuntime, note: str | None = None, unpin: str | None = None) -> str:
        state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
        held, highest = pinned(state.get("messages") or [])
        if unpin is not None and unpin.strip():
            found = re.fullmatch(r"\s*P?(\d+)\s*", unpin, re.IGNORECASE)
            number = int(found.group(1)) if found else None
            if number is None or number not in held:
                listed = ", ".join(f"P{n}" for n in sorted(held)) or "none"
                return f"No pin {unpin.strip()!r} is held (held: {listed})."
            return _core.unpinned_result(number)
        if note is None or not note.strip():
            return 'Give note="..." to pin, or unpin="P3" to let a pin go.'
        return _core.pinned_result(highest + 1, " ".join(note.split()))

    return StructuredTool.from_function(func=run, name=PIN_TOOL, description=PIN_DESCRIPTION)

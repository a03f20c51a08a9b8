"""Fitting what is sent into the window: the turn in progress, when it alone is over,
has its newest tool results clipped (each pointing at its full text); a request still
over is never sent, and :class:`WindowTooSmallError` names the sizes instead. A tool
result whose call is not in the view goes as a user message, which a provider takes.
"""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage, ToolMessage

from fastcompact.agent import storage, summarize
from fastcompact.agent.setup import POLICY
from fastcompact.agent.state import CallInput, Turn, true_size
from fastcompact.agent.steps import Io, Steps
from fastcompact.api.counting import count_tokens

logger = logging.getLogger("fastcompact")


class WindowTooSmallError(ContextOverflowError):
    """The request cannot fit the model's window, even with everything older than the
    turn in progress summarized and its newest tool results clipped: the system
    prompt, the tool schemas and that turn alone are over it. Raised instead of sending
    a request known to be too large; its message names the sizes and what to change.

    The memory of what came before (the summary message) is counted apart from the turn
    (``memory``): it was pressed to the least it can be before this was raised.

    Examples:
        >>> e = WindowTooSmallError(window=6_000, system=3_900, tools=2_400, turn=600, memory=100)
        >>> e.window, e.system + e.tools + e.turn + e.memory
        (6000, 7000)
    """

    def __init__(self, *, window: int, system: int, tools: int, turn: int, memory: int = 0) -> None:
        self.window, self.system, self.tools, self.turn = window, system, tools, turn
        self.memory = memory
        kept = (
            f", the memory of what came before {memory:,} (pressed to the least it can be)" if memory else ""
        )
        super().__init__(
            f"this request needs {system + tools + turn + memory:,} tokens, over the model's "
            f"{window:,}-token window: the system prompt is {system:,} tokens, the tool schemas {tools:,}, "
            f"the turn in progress {turn:,}{kept}, with everything older summarized. Use a model with "
            "a larger window (its profile's max_input_tokens), a shorter system prompt or fewer tools."
        )


def clipped(view: list[Any], backend: Any, head_chars: int = POLICY.clip_heads[0]) -> list[Any] | None:
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
    count = 0
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
        path = read if isinstance(read, str) else None
        new = storage.clip_text(text, m.tool_call_id, path, saved, head_chars)
        out[i] = m.model_copy(update={"content": new})
        count += 1
    if not count:
        return None
    # A step of fitting, not a fault: logged for the curious, not warned.
    logger.info(
        "fastcompact: the newest turn did not fit the window; clipped %d tool %s",
        count,
        "result" if count == 1 else "results",
    )
    return out


def fitted(
    request: CallInput, turn: Turn, view: list[Any], size: int, backend: Any
) -> Steps[tuple[list[Any], int]]:
    """``view`` as it may be sent, and its size: over the window, its newest tool
    results clipped (saved whole on ``backend``, a backend or a factory of one); still
    over, a :class:`WindowTooSmallError` (a request known to be too large is never
    sent)."""
    window = turn.window
    if window is None or size <= window:
        return view, size
    resolved = storage.resolve_backend(backend, request.runtime)
    for head in POLICY.clip_heads:
        cut = yield Io.in_thread(clipped, view, resolved, head)
        if cut is not None:
            view, size = cut, true_size(request, turn, cut)
            if size <= window:
                return view, size
    raise too_small(request, turn, size, view)


def answered(view: list[Any]) -> list[Any]:
    """``view`` with each tool result whose call is in no earlier message (a provider
    refuses the request) sent as a user message that says so, with a warning naming
    it; the state keeps it as it was.

    Examples:
        >>> import warnings
        >>> from langchain_core.messages import ToolMessage
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     sent = answered([ToolMessage("42 rows", tool_call_id="lost-1")])
        >>> sent[0].type, "lost-1" in str(caught[0].message)
        ('human', True)
    """
    calls: set[str] = set()
    out = list(view)
    for i, m in enumerate(view):
        calls.update(str(c.get("id")) for c in getattr(m, "tool_calls", None) or [])
        if not isinstance(m, ToolMessage) or m.tool_call_id in calls:
            continue
        name = f" of {m.name}" if m.name else ""
        warnings.warn(
            f"fastcompact: the tool result {m.id or i!r}{name} answers call {m.tool_call_id!r}, which is in "
            "no earlier message; it is sent as a user message, which the provider takes",
            stacklevel=2,
        )
        out[i] = HumanMessage(
            content=f"[The result{name} of call {m.tool_call_id}, whose call is not in this conversation:]\n"
            f"{summarize.text_of(m)}",
            id=m.id,
        )
    return out


def too_small(
    request: CallInput, turn: Turn, size: int, view: list[Any] | None = None
) -> WindowTooSmallError:
    """The error for a request of ``size`` tokens that cannot be made to fit (its
    messages ``view``, the turn's when not given), with the sizes of its parts."""
    window = turn.window or 0
    ratio = turn.plan.ratio
    system = request.system_message
    # What the caller did not pass (the offset) is system text too: later middleware's
    # additions to the prompt, the provider's own framing.
    system_tokens = math.ceil(turn.plan.offset)
    if system is not None:
        system_tokens += math.ceil(ratio * count_tokens([], system=system, model=request.model))
    tools = request.tools
    tools_tokens = math.ceil(ratio * count_tokens([], tools=tools, model=request.model)) if tools else 0
    estimate = true_size(request, turn, list(turn.view))
    if size > estimate > 0:
        # The provider counted more than the estimate: each part, in proportion.
        system_tokens = math.ceil(system_tokens * size / estimate)
        tools_tokens = math.ceil(tools_tokens * size / estimate)
    sent = turn.view if view is None else view
    memory = 0
    if sent and summarize.is_summary(sent[0]):
        memory = math.ceil(ratio * count_tokens([sent[0]], model=request.model))
        if size > estimate > 0:
            memory = math.ceil(memory * size / estimate)
    rest = max(size - system_tokens - tools_tokens, 0)
    return WindowTooSmallError(
        window=window,
        system=system_tokens,
        tools=tools_tokens,
        turn=max(rest - memory, 0),
        memory=min(memory, rest),
    )


def reported_size(error: BaseException, window: int | None, estimate: int) -> int:
    """The size a provider's "too long" error names (the first count of tokens over
    the window in its message), else ``estimate``, and never under the window: the
    provider said it was over."""
    counts = [int(n.replace(",", "")) for n in re.findall(r"(\d[\d,]*)\s*tokens", str(error))]
    over = [n for n in counts if window is None or n > window]
    size = over[0] if over else estimate
    return max(size, (window or 0) + 1)

"""Shared strategies and oracles for the test suite."""

from __future__ import annotations

from typing import Any

import fastcompact
import pytest
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty token cache of the default bounds (1 GiB, any
    number of conversations)."""
    fastcompact.set_cache_capacity(2**32, bytes=2**30)
    fastcompact.clear_cache()
    yield
    fastcompact.set_cache_capacity(2**32, bytes=2**30)
    fastcompact.clear_cache()


def _type(m: Any) -> str:
    return m.type if hasattr(m, "type") else m.get("type", m.get("role"))


def call_ids(m: Any) -> list[str]:
    if _type(m) != "ai":
        return []
    return [c["id"] for c in m.tool_calls]


def has_thinking(m: Any) -> bool:
    return isinstance(m.content, list) and any(
        isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in m.content
    )


def pair_violations(view: list[Any]) -> list[str]:
    """Independent oracle of the tool-pair invariant for a view sent to a model."""
    problems = []
    seen_calls: set[str] = set()
    answered: set[str] = set()
    for i, m in enumerate(view):
        if _type(m) == "tool":
            if m.tool_call_id not in seen_calls:
                problems.append(f"{i}: result {m.tool_call_id} without its call")
            answered.add(m.tool_call_id)
        seen_calls.update(call_ids(m))
    for cid in seen_calls - answered:
        problems.append(f"call {cid} without its result")
    if view and _type(view[0]) == "tool":
        problems.append("view starts with a tool result")
    return problems


def cut_violations(messages: list[Any], cut: int) -> list[str]:
    """Violations of cutting ``messages`` at ``cut`` (the kept tail is the view)."""
    if cut == 0:
        return []
    problems = pair_violations(messages[cut:])
    if cut < len(messages):
        before, after = messages[cut - 1], messages[cut]
        if _type(before) == "ai" and _type(after) == "ai" and (has_thinking(before) or has_thinking(after)):
            problems.append("cut separates thinking from its turn")
    return problems


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@st.composite
def conversations(draw: Any, max_steps: int = 40) -> list[Any]:
    """Random complete agent conversations: parallel calls, interleaved calls
    (AI(x), AI(y), T(x), T(y)), thinking blocks and empty contents."""
    out: list[Any] = [HumanMessage(draw(_text))]
    pending: list[tuple[str, str]] = []
    n_calls = 0
    for _ in range(draw(st.integers(1, max_steps))):
        action = draw(st.sampled_from(["ai", "ai", "result", "result", "human"]))
        if action == "result" and pending:
            idx = draw(st.integers(0, len(pending) - 1))
            cid, name = pending.pop(idx)
            out.append(ToolMessage(draw(_text), tool_call_id=cid, name=name))
        elif action == "human" and not pending:
            out.append(HumanMessage(draw(_text)))
        else:
            k = draw(st.integers(0, 3))
            calls = []
            for _ in range(k):
                n_calls += 1
                name = draw(st.sampled_from(["read_file", "grep", "ls", "execute"]))
                calls.append(
                    {"name": name, "args": {"path": draw(_text)}, "id": f"c{n_calls}", "type": "tool_call"}
                )
                pending.append((f"c{n_calls}", name))
            if draw(st.booleans()):
                content: Any = [
                    {"type": "thinking", "thinking": draw(_text), "signature": "sig"},
                    {"type": "text", "text": draw(_text)},
                ]
            else:
                content = draw(st.sampled_from(["", "ok", "Let me check."]))
            out.append(AIMessage(content=content, tool_calls=calls))
    while pending:
        cid, name = pending.pop(0)
        out.append(ToolMessage("done", tool_call_id=cid, name=name))
    return out

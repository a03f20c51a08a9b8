"""The newest turn alone overflows the window (large parallel tool results, nothing older
to summarize): its results are clipped and the call is retried once, on a real
``create_deep_agent`` graph whose model refuses an input above its window."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ProviderChatModel

WINDOW = 12_000


@tool
def crawl(url: str) -> str:
    """Fetch a page."""
    # Under the per-result budget (50,000 characters), over the window with the next.
    lines = (f"{url} line {i}: the crawler found {i * 7} links and {i % 13} forms" for i in range(700))
    return "\n".join(lines)


def _script(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        calls = [
            {"name": "crawl", "args": {"url": "https://a.example"}, "id": "crawl-a"},
            {"name": "read_file", "args": {"file_path": "/big.txt"}, "id": "read-big"},
        ]
        return AIMessage("", tool_calls=calls)
    if isinstance(last, ToolMessage):
        return AIMessage("Both read.")
    return AIMessage("Ready.")


def _agent(
    tmp_path: Path, refuse_above: int | None = WINDOW
) -> tuple[Any, ProviderChatModel, FilesystemBackend]:
    line = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
    (tmp_path / "big.txt").write_text("\n".join(f"file line {i} {line * 5}" for i in range(90)))
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = ProviderChatModel(script=_script, profile={"max_input_tokens": WINDOW}, refuse_above=refuse_above)
    agent = create_deep_agent(
        model=model,
        backend=backend,
        tools=[crawl],
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    return agent, model, backend


def _check(tmp_path: Path, model: ProviderChatModel, state: dict[str, Any]) -> None:
    assert state["messages"][-1].content == "Both read."
    # The retried call fit; the raw results in the state are whole.
    assert max(c.input_tokens for c in model.calls) <= WINDOW
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert "line 699" in results["crawl-a"].content
    # The refused call is not recorded: the last call is the retry.
    sent = {m.tool_call_id: m.content for m in model.calls[-1].messages if isinstance(m, ToolMessage)}
    # read_file keeps its head and points at the file; the other result is saved whole.
    assert sent["read-big"].startswith(results["read-big"].content[:1_000])
    assert "the whole file is /big.txt" in sent["read-big"]
    assert "saved at /large_tool_results/crawl-a" in sent["crawl-a"]
    assert (tmp_path / "large_tool_results" / "crawl-a").read_text() == results["crawl-a"].content


def test_an_overflowing_newest_turn_is_clipped_and_retried(tmp_path: Path):
    agent, model, _ = _agent(tmp_path)
    cfg = {"configurable": {"thread_id": "o"}}
    agent.invoke({"messages": [HumanMessage("read both")]}, cfg)
    _check(tmp_path, model, agent.get_state(cfg).values)


def test_the_async_path_clips_too(tmp_path: Path):
    agent, model, _ = _agent(tmp_path)
    cfg = {"configurable": {"thread_id": "o"}}
    asyncio.run(agent.ainvoke({"messages": [HumanMessage("read both")]}, cfg))
    _check(tmp_path, model, agent.get_state(cfg).values)


def test_a_retry_that_overflows_again_raises(tmp_path: Path):
    agent, _, _ = _agent(tmp_path, refuse_above=3_000)
    with pytest.raises(ValueError, match="prompt is too long"):
        agent.invoke({"messages": [HumanMessage("read both")]}, {"configurable": {"thread_id": "o"}})

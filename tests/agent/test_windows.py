"""Small windows (local models with 8k-32k windows): a request known to be over the
window is never sent. A compaction that brings the view under the window commits even
above the trigger, and when the system prompt, the tools and the turn in progress alone
are over it, the error says so, with the sizes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents.backends import LocalShellBackend
from fastcompact import WindowTooSmallError
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage, SystemMessage

from tests.scripted import ProviderChatModel, compacting_agent, pair_problems


def _agent(tmp_path: Path, window: int, **kw: Any) -> tuple[Any, ProviderChatModel]:
    # The provider refuses what is over its window, as a real one does.
    model = ProviderChatModel(profile={"max_input_tokens": window}, refuse_above=window)
    return compacting_agent(model, LocalShellBackend(root_dir=tmp_path, virtual_mode=True), **kw), model


@pytest.mark.parametrize("window", [8_000, 10_000])
def test_a_deep_agent_on_a_small_window_never_sends_a_call_over_it(tmp_path: Path, window: int):
    agent, model = _agent(tmp_path, window)
    cfg = {"configurable": {"thread_id": "small"}}
    step = 0
    while len(model.calls) < 100:
        step += 1
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    sizes = [c.input_tokens for c in model.calls]
    assert max(sizes) <= window, sizes
    state = agent.get_state(cfg).values
    assert state.get("_summarization_event") is not None
    assert state["messages"][-1].content.startswith(f"Step {step} is done")
    assert all(pair_problems([m for m in c.messages if m.type != "system"]) == [] for c in model.calls)
    # The state keeps every message; nothing was lost to the summaries.
    assert sum(isinstance(m, HumanMessage) for m in state["messages"]) == step


def test_a_window_the_prompt_and_tools_alone_fill_is_a_clear_error(tmp_path: Path):
    agent, model = _agent(tmp_path, 2_000)
    with pytest.raises(WindowTooSmallError) as raised:
        agent.invoke({"messages": [HumanMessage("Please do step 1.")]}, {"configurable": {"thread_id": "w"}})
    e = raised.value
    assert isinstance(e, ContextOverflowError)
    assert e.window == 2_000 and e.tools > 2_000
    assert e.system + e.tools + e.turn > e.window
    text = str(e)
    assert f"{e.tools:,}" in text and "2,000-token window" in text and "larger window" in text
    # Known to be over: never sent.
    assert model.calls == []


def test_a_large_system_prompt_is_named_in_the_error(tmp_path: Path):
    prompt = "Follow the house style in every answer. " * 900
    agent, model = _agent(tmp_path, 8_000, system_prompt=prompt)
    with pytest.raises(WindowTooSmallError) as raised:
        agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "p"}})
    assert raised.value.system >= fastcompact.count_tokens([SystemMessage(prompt)]) - 10
    assert model.calls == []


def _demo(window: int) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "fastcompact.app.cli", "demo", "--fast", "--window", str(window)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("window", [8_000, 6_000])
def test_the_demo_keeps_a_small_window(window: int):
    r = _demo(window)
    assert r.returncode == 0, r.stderr
    found = re.search(
        r"peak fill (\d+)% of the window \(0 of (\d+) calls over it\); (\d+) summaries", r.stdout
    )
    assert found is not None, r.stdout
    assert int(found.group(1)) <= 100 and int(found.group(3)) > 0
    assert len(re.findall(r"^turn +\d+ ", r.stdout, flags=re.M)) == 14


def test_the_demo_on_a_window_nothing_fits_says_so_in_a_line():
    r = _demo(500)
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert re.match(
        r"fastcompact: turn 1: this request needs [\d,]+ tokens, over the model's 500-token", line
    )
    assert "Traceback" not in r.stderr


def _turn(window: int, messages: list[Any]) -> Any:
    from fastcompact.agent import reading
    from fastcompact.agent.setup import Setup
    from langchain.agents.middleware.types import ModelRequest

    model = ProviderChatModel(profile={"max_input_tokens": window})
    request = ModelRequest(
        model=model, messages=messages, system_message=None, tools=[], state={"messages": messages}
    )
    return reading.read_turn(Setup(fastcompact.CompactionConfig()), request)


def test_a_view_the_estimate_puts_just_under_the_window_counts_as_over_it():
    # What no usage has counted yet is estimated, and the estimate can be short (a
    # Chinese answer runs denser than the text the ratio was found on): a view that
    # close to the window is compacted rather than sent and refused.
    from fastcompact.agent.setup import POLICY
    from fastcompact.agent.state import over_window, sent_size
    from langchain_core.messages import AIMessage

    words = "缓存 索引 解析器 记录 队列 线程 批次 窗口 令牌 数据流 模块 配置".split()
    question = HumanMessage("请总结" + "".join(words[i % 12] for i in range(200)))
    meter = ProviderChatModel().meter
    asked, answered = meter(question.content), meter("好的")
    usage = {"input_tokens": asked, "output_tokens": answered, "total_tokens": asked + answered}
    answer = AIMessage("好的", usage_metadata=usage)
    follow_up = HumanMessage("".join(words[(i * 5) % 12] for i in range(400)))
    anchored = [question, answer]
    size = sent_size(_turn(10**6, anchored).plan)
    # All of it counted: only over the window when it is.
    assert not over_window(_turn(size, anchored))
    assert over_window(_turn(size - 1, anchored))
    # A new message's estimate: within the slack of the window, it is over.
    grown = [*anchored, follow_up]
    size = sent_size(_turn(10**6, grown).plan)
    slack = POLICY.estimate_slack * (size - asked - answered)
    assert slack > 5
    assert over_window(_turn(size + 1, grown))
    assert over_window(_turn(size + int(slack) - 1, grown))
    assert not over_window(_turn(size + int(slack) + 1, grown))

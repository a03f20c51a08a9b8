"""What a new user met: each case as it was met, and what it must do instead. Real
``create_agent`` / ``create_deep_agent`` graphs, real backends and checkpointers, the
real command line in a subprocess; only the chat models are scripted."""

from __future__ import annotations

import json
import math
import os
import re
import resource
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, WindowTooSmallError
from fastcompact.agent import summarize
from fastcompact.api.transcripts import load_conversation
from fastcompact.samples import load_session
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_from_dict, messages_to_dict
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from tests.app.test_cli import _command, run
from tests.scripted import ProviderChatModel, ScriptedChatModel, message_text

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke


def _tools(n: int) -> list[Any]:
    def make(i: int) -> Any:
        def act(x: str) -> str:
            return "ok"

        return StructuredTool.from_function(
            func=act, name=f"tool_{i}", description=f"Tool {i}: does a thing."
        )

    return [make(i) for i in range(n)]


def test_a_first_turn_the_provider_counts_over_the_window_raises_window_too_small(tmp_path: Path):
    """An 8,000-token window, a system prompt the estimate undercounts (Chinese) and 30
    tools: the provider refuses the first call, and with nothing to summarize or clip
    the caller gets WindowTooSmallError with the sizes, not the provider's error."""
    system = "你是一个乐于助人的助手。" * 500
    model = ProviderChatModel(profile={"max_input_tokens": 8_000}, refuse_above=8_000)
    agent = create_deep_agent(
        model=model,
        tools=_tools(30),
        system_prompt=system,
        middleware=[CompactionMiddleware()],
        checkpointer=InMemorySaver(),
    )
    assert fastcompact.count_tokens([HumanMessage("Please do step 1.")], system=system) < 8_000
    with pytest.raises(WindowTooSmallError, match=r"over the model's 8,000-token window") as raised:
        agent.invoke({"messages": [HumanMessage("Please do step 1.")]}, {"configurable": {"thread_id": "t"}})
    e = raised.value
    assert e.system + e.tools + e.turn > 8_000 and e.window == 8_000
    assert model.calls == [], "no request over the window was answered"


def _saved_session(tmp_path: Path, name: str = "coding") -> Path:
    src = tmp_path / f"{name}.json"
    src.write_text(json.dumps(messages_to_dict(load_session(name))))
    return src


def _limited(max_bytes: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def test_a_disk_that_fills_leaves_no_output_and_no_partial_archive(tmp_path: Path):
    src = _saved_session(tmp_path)
    out = tmp_path / "out" / "small.json"
    args = ["compact", str(src), "-o", str(out), "--max-input-tokens", "30000", "--force"]
    # Files of at most 100 KB: the archive (about 300 KB) cannot be written whole.
    r = subprocess.run(
        [*_command(), *args], capture_output=True, text=True, timeout=120, preexec_fn=_limited(100_000)
    )
    assert r.returncode == 2, r.stderr
    assert "File too large" in r.stderr or "No space" in r.stderr or "Errno" in r.stderr
    left = sorted(p.name for p in (tmp_path / "out").rglob("*")) if (tmp_path / "out").exists() else []
    assert left == [], left
    # A rerun with room works: nothing was left behind to refuse it.
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert out.exists() and (tmp_path / "out" / "small.archive.md").exists()


def _takes_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_after_the_files_in_progress_and_says_what_was_written(tmp_path: Path):
    session = json.dumps(messages_to_dict(load_session("coding")))
    inputs = []
    for i in range(80):
        p = tmp_path / "in" / f"s{i:02d}.json"
        p.parent.mkdir(exist_ok=True)
        p.write_text(session)
        inputs.append(str(p))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*_command(), "compact", *inputs, "-o", f"{out}/", "--max-input-tokens", "30000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As a terminal runs it: a runner started in the background (`cmd &` in a
        # script) ignores Ctrl-C, and so would the command it starts.
        preexec_fn=_takes_interrupts,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    written = sorted(out.glob("*.json"))
    assert 0 < len(written) < len(inputs), "it stopped, and not before the first file"
    named = re.findall(r"^  (.+\.json)$", err, flags=re.M)
    assert sorted(named) == sorted(map(str, written)), err
    assert f"interrupted; wrote {len(written)} output" in err
    assert not [p for p in out.rglob("*") if p.name.endswith(".partial")]
    for p in written:
        json.loads(p.read_text())  # each is whole


def _recall_ids(texts: list[str]) -> set[str]:
    """The ids texts name in ``recall("<id>")`` (quotes escaped in JSON or not)."""
    found = re.findall(r'recall\(\\?"([^"\\]+)\\?"\)', "\n".join(texts))
    return {i for i in found if i not in ("<id>", "R<n>")}


def test_the_drop_in_alone_gives_the_recall_tool_its_placeholders_name(tmp_path: Path):
    from fastcompact.deepagents import create_summarization_middleware

    model = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = create_summarization_middleware(model, backend)
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    assert "recall" in agent.nodes["tools"].bound.tools_by_name
    cfg = {"configurable": {"thread_id": "plain"}}
    for step in range(1, 14):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    state = agent.get_state(cfg).values
    ids = _recall_ids([str(m.content) for call in model.calls for m in call])
    assert ids, "the placeholders name recall ids"
    for ref in ids:
        fastcompact.recall(state, ref)  # every one resolves
    # A subagent given its own middleware gets the tool with it.
    sub = CompactionMiddleware(backend=backend)
    assert [t.name for t in sub.tools] == ["recall", "pin"]
    # Given recall twice (RecallMiddleware beside it), the model is sent it once.
    both = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    seen: list[list[str]] = []

    class Watch(fastcompact.RecallMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            seen.append([getattr(t, "name", "") for t in request.tools])
            return handler(request)

    agent = create_agent(
        model=both, tools=[], middleware=[CompactionMiddleware(), Watch()], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "two"}})
    assert seen and seen[0].count("recall") == 1


def test_the_output_of_compact_resolves_every_id_it_cites(tmp_path: Path):
    src = _saved_session(tmp_path)
    out = tmp_path / "small.json"
    r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "30000")
    assert r.returncode == 0, r.stderr
    written = load_conversation(str(out))
    raw = load_session("coding")
    by_call = {m.tool_call_id: m.content for m in raw if isinstance(m, ToolMessage)}
    ids = _recall_ids([json.dumps(m["data"]["content"], ensure_ascii=False) for m in written])
    assert ids, "the output cites recall ids"
    for ref in ids:
        got = fastcompact.recall(written, ref)
        if ref in by_call:
            assert got == by_call[ref], ref


def _anthropic_agent(tmp_path: Path, config: CompactionConfig) -> tuple[Any, ProviderChatModel]:
    def script(messages: list[Any]) -> AIMessage:
        return AIMessage("Answered: " + "detail " * 300)

    model = ProviderChatModel(script=script, profile={"max_input_tokens": 60_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend, config=config)
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    return agent, model


def test_keep_is_honoured_under_a_price_model(tmp_path: Path):
    agent, _ = _anthropic_agent(tmp_path, CompactionConfig(keep=("messages", 10)))
    cfg = {"configurable": {"thread_id": "keep"}}
    for k in range(60):
        agent.invoke({"messages": [HumanMessage(f"Question {k}: " + "why " * 100)]}, cfg)
    state = agent.get_state(cfg).values
    event = state["_summarization_event"]
    assert event is not None and event["fastcompact"]["priced"]
    # What the compaction kept, when it was made.
    assert event["created_at_index"] - event["cutoff_index"] >= 10


def test_custom_instructions_reach_the_summary_or_are_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="custom_instructions: the digest is made without a model"):
        CompactionConfig(summarizer="digest", custom_instructions="Keep every diff.")
    model = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    config = CompactionConfig(summarizer="model", custom_instructions="Keep every diff verbatim.")
    agent = create_deep_agent(
        model=model,
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend, config=config)],
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": "custom"}}
    for step in range(1, 12):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
        if model.summary_requests:
            break
    assert model.summary_requests, "no summary was asked"
    assert "Keep every diff verbatim." in str(model.summary_requests[0][-1].content)


def test_compact_middlewares_factories_import_and_run(tmp_path: Path):
    from fastcompact import (
        compute_compaction_defaults,
        create_compaction_middleware,
        create_compaction_tool_middleware,
    )

    model = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    assert compute_compaction_defaults(model).trigger == ("fraction", 0.85)
    tool_mw = create_compaction_tool_middleware(model, backend)
    assert isinstance(create_compaction_middleware(model, backend), CompactionMiddleware)
    agent = create_deep_agent(
        model=model, backend=backend, middleware=[tool_mw._compaction, tool_mw], checkpointer=InMemorySaver()
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Please do step 1.")]}, {"configurable": {"thread_id": "f"}}
    )
    assert str(out["messages"][-1].content).startswith("Step 1 is done")


def test_the_summary_prompt_names_the_kept_part_uniquely():
    calls = [{"name": "ls", "args": {}, "id": f"c{i}"} for i in range(3)]
    sent = [
        HumanMessage("Run the tests"),
        AIMessage("", tool_calls=[calls[0]]),
        ToolMessage("a", tool_call_id="c0"),
        AIMessage("", tool_calls=[calls[1]]),
        ToolMessage("b", tool_call_id="c1"),
        HumanMessage("Run the tests again"),
    ]
    assert summarize.boundary(sent, 3) == 'your message that calls ls with the id "c1"'
    assert summarize.boundary(sent, 0) == 'the message that reads "Run the tests" in full'
    assert summarize.boundary(sent, 5) == 'the message that begins "Run the tests again"'
    prompt = summarize.in_place_prompt(sent, 3).content
    assert 'Everything before your message that calls ls with the id "c1"' in prompt
    assert "[ai message]" not in prompt


def _looks_up(messages: list[Any]) -> AIMessage:
    """Looks six things up, one after the other, then answers (from the last message,
    which every compaction keeps)."""
    last = messages[-1]
    done = int(last.tool_call_id[1:]) + 1 if isinstance(last, ToolMessage) else 0
    if done < 6:
        return AIMessage("", tool_calls=[{"name": "lookup", "args": {"key": f"k{done}"}, "id": f"l{done}"}])
    return AIMessage("Looked them up: here is what they say.")


def test_the_turn_in_progress_stays_whole_in_a_small_window(tmp_path: Path):
    """A 12,000-token window, and the first request's lookups (a tool no pass clears)
    take it past the trigger: under the window, the user's question stays a message of
    its own in every call, never moved into a summary."""

    def lookup(key: str) -> str:
        return f"{key}: " + "value " * 900

    tool = StructuredTool.from_function(func=lookup, name="lookup", description="Look a key up.")
    model = ScriptedChatModel(script=_looks_up, profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    agent = create_deep_agent(
        model=model,
        backend=backend,
        tools=[tool],
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    question = "Please look the six keys up."
    out = agent.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "whole"}})
    assert str(out["messages"][-1].content).startswith("Looked them up")
    assert len(model.calls) == 7
    assert fastcompact.count_tokens(model.calls[-1]) > 0.85 * 12_000 - 3_000
    for call in model.calls:
        assert any(isinstance(m, HumanMessage) and m.content == question for m in call)
        assert not any(summarize.is_summary(m) for m in call)


def test_cache_info_reports_a_capacity_set_cache_capacity_takes_back():
    before = fastcompact.cache_info()[1]
    try:
        fastcompact.set_cache_capacity(fastcompact.api.counting.UNBOUNDED)
        # Unbounded reads as such, not as the core's largest integer.
        assert fastcompact.cache_info()[1] == math.inf
        fastcompact.set_cache_capacity(fastcompact.cache_info()[1])
        assert fastcompact.cache_info()[1] == math.inf
        fastcompact.set_cache_capacity(50)
        assert fastcompact.cache_info()[1] == 50
    finally:
        fastcompact.set_cache_capacity(before)


def test_a_messages_trigger_that_a_summary_brings_under_commits():
    from fastcompact.deepagents import SummarizationMiddleware

    model = ScriptedChatModel(script=lambda messages: AIMessage("ok"))
    mw = SummarizationMiddleware(model, backend=None, trigger=("messages", 5), keep=("messages", 2))
    agent = create_agent(model=model, tools=[], middleware=[mw], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "count"}}
    history = [HumanMessage(f"m{i}") if i % 2 == 0 else AIMessage(f"r{i}") for i in range(7)]
    agent.invoke({"messages": [*history, HumanMessage("last")]}, cfg)
    state = agent.get_state(cfg).values
    event = state["_summarization_event"]
    assert event is not None, "the summary was committed"
    [sent] = model.calls
    assert len([m for m in sent if m.type != "system"]) < 5


def test_compact_to_stdout_keeps_every_character_whatever_the_stream_encoding(tmp_path: Path):
    msgs = [HumanMessage("请实现功能 缓存索引"), AIMessage("已完成 缓存索引与数据库查询")] * 3
    src = tmp_path / "zh.json"
    src.write_text(json.dumps(messages_to_dict(msgs), ensure_ascii=False), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    r = subprocess.run(
        [*_command(), "compact", str(src), "-o", "-"], capture_output=True, timeout=60, env=env
    )
    assert r.returncode == 0, r.stderr
    out = messages_from_dict(json.loads(r.stdout.decode("utf-8")))
    text = "".join(message_text(m) for m in out)
    assert "缓存索引与数据库查询" in text and "?" not in text


def test_a_model_views_plan_says_how_many_edits_its_view_holds():
    """model_view hands back no edits (they are in its view); its plan still says how
    many the passes made, as plan() does."""
    from fastcompact.samples import coding_session

    msgs = coding_session(600, seed=1)
    planned = fastcompact.plan(msgs, max_input_tokens=200_000)
    view, p = fastcompact.model_view(msgs, max_input_tokens=200_000)
    assert p.edits == [] and planned.edits and len(view) == len(msgs)
    first = repr(p).splitlines()[0]
    assert f"{len(planned.edits)} edits (applied in the view)" in first
    assert " 0 edits" not in first

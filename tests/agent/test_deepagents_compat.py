"""Switching from DeepAgents' SummarizationMiddleware: its constructor keywords, dict
triggers, a custom token counter, its summary prompt and trimming, its argument
truncation settings, and the factories of ``fastcompact.deepagents``, on real
``create_deep_agent`` graphs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, CompactionToolMiddleware
from fastcompact.deepagents import (
    SummarizationMiddleware,
    SummarizationToolMiddleware,
    compute_summarization_defaults,
    create_summarization_middleware,
    create_summarization_tool_middleware,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke

WINDOW = 30_000


def _agent(model: ScriptedChatModel, root: Path, *middleware: Any) -> Any:
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    for mw in middleware:
        if isinstance(mw, CompactionMiddleware):
            mw.backend = backend
    return create_deep_agent(
        model=model, backend=backend, middleware=list(middleware), checkpointer=InMemorySaver()
    )


def _run(agent: Any, steps: range, thread: str = "t") -> dict[str, Any]:
    cfg = {"configurable": {"thread_id": thread}}
    for step in steps:
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    return agent.get_state(cfg).values


def test_the_constructor_takes_deepagents_keywords():
    model = ScriptedChatModel(profile={"max_input_tokens": WINDOW})
    mw = CompactionMiddleware(model=model, backend=None, trigger=("fraction", 0.8), keep=("messages", 20))
    assert (mw.config.trigger, mw.config.keep) == (("fraction", 0.8), ("messages", 20))
    mw = CompactionMiddleware(
        history_path_prefix="/history", trigger=[{"tokens": 9, "messages": 3}, ("tokens", 50)]
    )
    assert mw.config.history_path_prefix == "/history"
    assert mw.config.resolved(WINDOW)["trigger"] == [[("tokens", 9), ("messages", 3)], ("tokens", 50)]
    # LangChain's older names.
    mw = CompactionMiddleware(max_tokens_before_summary=50_000, messages_to_keep=12)
    assert (mw.config.trigger, mw.config.keep) == (("tokens", 50_000), ("messages", 12))
    with pytest.raises(ValueError, match=r"give either config= or 'trigger', not both"):
        CompactionMiddleware(config=CompactionConfig(), trigger=("tokens", 10))
    with pytest.raises(ValueError, match=r"unexpected keyword 'triger'"):
        CompactionMiddleware(triger=("tokens", 10))
    with pytest.raises(ValueError, match=r"give trigger or max_tokens_before_summary, not both"):
        CompactionMiddleware(trigger=("tokens", 10), max_tokens_before_summary=5)
    with pytest.raises(ValueError, match=r"CompactionConfig.trigger: unknown kind 'bytes'"):
        CompactionMiddleware(trigger={"bytes": 10})


def test_a_dict_trigger_fires_only_when_all_its_sizes_are_reached(tmp_path: Path):
    model = ScriptedChatModel(profile={"max_input_tokens": 10**6})
    mw = CompactionMiddleware(trigger={"tokens": 1, "messages": 60}, keep=("messages", 10))
    agent = _agent(model, tmp_path, mw)
    cfg = {"configurable": {"thread_id": "t"}}
    first = None
    for step in range(1, 10):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
        event = agent.get_state(cfg).values.get("_summarization_event")
        if event and first is None:
            first = event["created_at_index"]
    # One token is reached at once; the summary waited for 60 messages as well.
    assert first is not None and 60 <= first < 70


def test_a_token_counter_decides_the_summary(tmp_path: Path):
    seen: list[dict[str, Any]] = []

    def counter(messages: list[Any], *, tools: Any = None) -> int:
        seen.append({"n": len(messages), "tools": tools})
        # Far above the estimate once the conversation has five requests.
        return 10**6 if sum(isinstance(m, HumanMessage) for m in messages) >= 5 else 10

    model = ScriptedChatModel(profile={"max_input_tokens": 100_000})
    mw = CompactionMiddleware(token_counter=counter)
    state = _run(_agent(model, tmp_path, mw), range(1, 6))
    assert seen and seen[0]["tools"], "the tool schemas are handed to a counter that takes them"
    assert state["_summarization_event"] is not None
    # Nothing was due before the fifth request, by the core's count or the counter's.
    assert state["_summarization_event"]["created_at_index"] > 30


def test_summary_prompt_and_trimming(tmp_path: Path):
    model = ScriptedChatModel(profile={"max_input_tokens": 8_000})
    template = "Summarize this conversation, keeping every decision:\n{messages}\nEnd of the conversation."
    mw = CompactionMiddleware(summary_prompt=template, trim_tokens_to_summarize=300)
    _run(_agent(model, tmp_path, mw), range(1, 12))
    assert model.summary_calls
    prompt = model.summary_calls[0]
    assert prompt.startswith("Summarize this conversation, keeping every decision:\n<transcript>")
    assert prompt.endswith("</transcript>\nEnd of the conversation.")
    transcript = prompt.split("<transcript>", 1)[1].split("</transcript>", 1)[0]
    assert fastcompact.count_text_tokens(transcript) < 700


def test_truncate_args_settings_keep_deepagents_meaning():
    # Without a price model, batches wait for 30,000 tokens: none here, so clear at once.
    cfg = dataclasses.replace(
        CompactionMiddleware(
            truncate_args_settings={"trigger": ("messages", 2), "keep": ("messages", 1), "max_length": 10}
        ).config,
        pricing="none",
    )
    long = "x" * 100
    msgs = [
        AIMessage(
            "", tool_calls=[{"name": "write_file", "args": {"file_path": "a", "content": long}, "id": "w"}]
        ),
        fastcompact_tool("w"),
        AIMessage("", tool_calls=[{"name": "execute", "args": {"command": long}, "id": "e"}]),
        fastcompact_tool("e"),
        HumanMessage("next"),
    ]
    view, _ = fastcompact.model_view(msgs, cfg)
    # Only write_file / edit_file arguments, as DeepAgents does.
    assert view[0].tool_calls[0]["args"]["content"].startswith("x" * 10 + "... [shortened from 100")
    assert view[2].tool_calls[0]["args"]["command"] == long
    off = CompactionMiddleware(truncate_args_settings=None).config
    assert off.truncate_args.trigger is None


def fastcompact_tool(call_id: str) -> Any:
    from langchain_core.messages import ToolMessage

    return ToolMessage("ok", tool_call_id=call_id)


def test_the_factories_and_names_of_fastcompact_deepagents(tmp_path: Path):
    model = ScriptedChatModel(profile={"max_input_tokens": WINDOW})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = create_summarization_middleware(model, backend)
    assert isinstance(mw, SummarizationMiddleware) and mw.name == "SummarizationMiddleware"
    tools = SummarizationToolMiddleware(mw, system_prompt="Compact the conversation when it grows long.")
    agent = create_deep_agent(
        model=model, backend=backend, middleware=[mw, tools], checkpointer=InMemorySaver()
    )
    state = _run(agent, range(1, 30))
    assert state["_summarization_event"]["file_path"].startswith("/conversation_history/t/")
    system = str(model.calls[-1][0].content)
    assert system.endswith("Compact the conversation when it grows long.")
    assert "compact_conversation" in {t.name for t in tools.tools}
    made = create_summarization_tool_middleware(model, backend, system_prompt="x")
    assert isinstance(made, CompactionToolMiddleware) and made.system_prompt == "x"
    with pytest.raises(ValueError, match="summarizer"):
        SummarizationMiddleware(model, backend=backend, summarizer=object())


def test_compute_summarization_defaults_follow_the_profile():
    with_profile = ScriptedChatModel(profile={"max_input_tokens": 200_000})
    assert compute_summarization_defaults(with_profile) == {
        "trigger": ("fraction", 0.85),
        "keep": ("fraction", 0.1),
        "truncate_args_settings": {
            "trigger": ("fraction", 0.85),
            "keep": ("fraction", 0.1),
            "max_length": 2_000,
            "truncation_text": '... [shortened from {length} characters; recall("{id}/args") returns it]',
        },
    }
    without = compute_summarization_defaults(ScriptedChatModel())
    assert (without["trigger"], without["keep"]) == (("tokens", 170_000), ("messages", 6))

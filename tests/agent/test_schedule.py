"""Compaction decided by the price model: the summary asked in the agent's own request
(sharing its prompt cache), and the schedule on real DeepAgents graphs."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, RecallMiddleware
from fastcompact.agent.state import EVENT_KEY, STATE_KEY
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from tests.scripted import ProviderChatModel, ScriptedChatModel, pair_problems

# --- the summary asked in the agent's own request ------------------------------------


def _conversation(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if m.type != "system"]


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    def key(m: BaseMessage) -> tuple[Any, ...]:
        return (m.type, m.content, getattr(m, "tool_calls", None))

    return key(a) == key(b)


def _until_summarized(tmp_path: Path, model: Any, config: CompactionConfig, asked: Any) -> dict[str, Any]:
    """Steps of a DeepAgents session on a small window until ``asked()`` says the model
    was asked for a summary; the state then."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend, config=config)
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "summarized"}}
    for step in range(1, 12):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
        if asked():
            break
    return agent.get_state(cfg).values


def test_the_summary_request_starts_with_the_agents_previous_input(tmp_path: Path):
    model = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    state = _until_summarized(
        tmp_path, model, CompactionConfig(summarizer="model"), lambda: model.summary_requests
    )
    assert model.summary_requests, "no summary was asked"
    request = model.summary_requests[0]
    # The agent's input just before it, message for message, is how the request starts.
    before = model.calls[model.summary_at[0] - 1]
    assert before[0].type == "system" and len(request) > len(before)
    assert all(_same(a, b) for a, b in zip(before, request[: len(before)], strict=True))
    # One instruction follows what the agent was sent, and it names where the kept part starts.
    assert request[-1].type == "human" and "Pause the task" in str(request[-1].content)
    event = state[EVENT_KEY]
    assert event["fastcompact"]["summarizer"] == "model"
    assert "Summary 1" in event["summary_message"].content


class MarkedCacheModel(ScriptedChatModel):
    """A scripted model that caches prompts as Anthropic's do, at marked blocks."""

    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"


def test_a_model_that_caches_at_marks_gets_the_memory_in_blocks_and_its_summary_the_same(tmp_path: Path):
    model = MarkedCacheModel(profile={"max_input_tokens": 12_000})
    _until_summarized(
        tmp_path, model, CompactionConfig(summarizer="model"), lambda: len(model.summary_requests) > 1
    )
    assert len(model.summary_requests) > 1, "no second summary was asked"
    request, before = model.summary_requests[1], model.calls[model.summary_at[1] - 1]
    memory = next(m for m in before if m.type == "human" and isinstance(m.content, list))
    # The memory goes a block a part, the last verbatim request marked for the cache...
    assert len(memory.content) > 2 and "cache_control" in memory.content[-2]
    assert not any("cache_control" in b for i, b in enumerate(memory.content) if i != len(memory.content) - 2)
    # ...and the summary request starts with the agent's input as it was sent.
    assert all(_same(a, b) for a, b in zip(before, request[: len(before)], strict=True))


def test_a_separate_summary_model_gets_its_own_prompt(tmp_path: Path):
    agent_model = ScriptedChatModel(profile={"max_input_tokens": 12_000})
    writer = ScriptedChatModel()
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(writer, backend=backend, config=CompactionConfig(summarizer="model"))
    agent = create_deep_agent(
        model=agent_model, backend=backend, middleware=[mw], checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "separate"}}
    for step in range(1, 12):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    assert writer.summary_calls and all("<transcript>" in p for p in writer.summary_calls)
    assert writer.summary_requests == [] and agent_model.summary_calls == []


# --- the schedule ------------------------------------------------------------------


def _reading_script(messages: list[BaseMessage]) -> AIMessage:
    """Each request reads a large file once, then answers."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        k = re.search(r"file (\d+)", str(last.content))
        n = k.group(1) if k else "0"
        call = {"name": "read_file", "args": {"file_path": f"/f{n}.txt"}, "id": f"r{n}"}
        return AIMessage("", tool_calls=[call])
    if isinstance(last, ToolMessage):
        return AIMessage(f"Read it; the key fact of {last.tool_call_id} is noted. " + "detail " * 60)
    return AIMessage("Ready.")


def _numbered(script: Any) -> Any:
    """``script`` with its answers' ids numbered in order: the same in every run (a
    run id differs each time, and the memory names answers by id, so a few tokens
    would move from run to run)."""
    count = itertools.count()

    def numbered(messages: list[BaseMessage]) -> AIMessage:
        return script(messages).model_copy(update={"id": f"answer-{next(count)}"})

    return numbered


def _priced_agent(tmp_path: Path, model: Any, **config: Any) -> Any:
    for k in range(40):
        lines = (f"file {k} line {i} " + "data " * 12 for i in range(80))
        (tmp_path / f"f{k}.txt").write_text("\n".join(lines))
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend, config=CompactionConfig(**config))
    return create_deep_agent(
        model=model, backend=backend, middleware=[mw, RecallMiddleware()], checkpointer=InMemorySaver()
    )


def test_a_digest_comes_when_it_pays_far_below_the_trigger_and_keeps_the_turn(tmp_path: Path):
    model = ProviderChatModel(script=_reading_script, profile={"max_input_tokens": 1_000_000})
    agent = _priced_agent(tmp_path, model, summarizer="digest")
    cfg = {"configurable": {"thread_id": "priced"}}
    for k in range(30):
        agent.invoke({"messages": [HumanMessage(f"Read file {k}, please.  ")]}, cfg)
    state = agent.get_state(cfg).values
    event = state[EVENT_KEY]
    assert event is not None and event["fastcompact"]["priced"] is True
    assert event["fastcompact"]["summarizer"] == "digest"
    # Far below the trigger (85% of a million tokens), the view stayed small.
    assert max(c.input_tokens for c in model.calls) < 60_000
    # The cut falls at a request: the summary is followed by the user's message whole.
    first_kept = state["messages"][event["cutoff_index"]]
    assert isinstance(first_kept, HumanMessage) and first_kept.content.startswith("Read file")
    # Every user message is in view or in the digest, byte for byte (trailing spaces too).
    view = "\n".join(str(m.content) for m in model.calls[-1].messages)
    for k in range(30):
        assert f"Read file {k}, please.  " in view
    for c in model.calls:
        assert pair_problems(_conversation(c.messages)) == []
    counters = state[STATE_KEY]
    assert counters["calls_since_compaction"] < len(model.calls)


def test_the_schedules_counts_take_no_conversations_place_in_the_cache(tmp_path: Path):
    """The slices the schedule prices (the turn in progress, the span) are counted
    once, not cached: each would otherwise take a conversation's place."""
    fastcompact.clear_cache()
    model = ProviderChatModel(script=_reading_script, profile={"max_input_tokens": 1_000_000})
    agent = _priced_agent(tmp_path, model, summarizer="digest")
    cfg = {"configurable": {"thread_id": "cached"}}
    for k in range(30):
        agent.invoke({"messages": [HumanMessage(f"Read file {k}, please.")]}, cfg)
    assert agent.get_state(cfg).values[EVENT_KEY] is not None
    # The conversation as planned (before and after its compaction) and the fixed
    # prefix's count, not a slice per turn.
    assert fastcompact.cache_info()[0] <= 4


def _priced_session(tmp_path: Path) -> tuple[list[int], int]:
    """How many messages every agent call of a priced reading session sees, and the
    cut of its last compaction."""
    tmp_path.mkdir()
    model = ProviderChatModel(script=_numbered(_reading_script), profile={"max_input_tokens": 1_000_000})
    agent = _priced_agent(tmp_path, model, summarizer="digest")
    cfg = {"configurable": {"thread_id": "floor"}}
    for k in range(30):
        # Users who explain at length: what stays of the span is mostly their words.
        brief = f"Read file {k}, please. " + f"Here is why it matters, point {k}. " * 40
        agent.invoke({"messages": [HumanMessage(brief)]}, cfg)
    event = agent.get_state(cfg).values[EVENT_KEY]
    assert event is not None
    return [len(c.messages) for c in model.calls], event["cutoff_index"]


def test_the_span_floor_spares_full_checks_and_moves_no_compaction(tmp_path: Path, monkeypatch: Any):
    """A cycle's first full check drafts and digests the whole span; the floor (its user
    messages, rewritten) puts most of those off, never past the call it pays at: every
    call sees the view it saw without the floor, and the floor never exceeds the price."""
    from fastcompact.agent import schedule

    # Each full check: the span price it started from (the floor, on a cycle's first)
    # and the one it found.
    checks: list[tuple[float, float]] = []
    quoted, cheaper = schedule.quoted_tokens, schedule.cheaper
    floors: list[int] = []

    def counted(setup: Any, *args: Any) -> int:
        floors.append(quoted(setup, *args))
        return floors[-1]

    def checked(setup: Any, request: Any, turn: Any, *args: Any, **kwargs: Any) -> Any:
        before = float(turn.counters.span_price or 0.0)
        out = cheaper(setup, request, turn, *args, **kwargs)
        checks.append((before, float(turn.counters.span_price or 0.0)))
        return out

    monkeypatch.setattr(schedule, "cheaper", checked)
    with monkeypatch.context() as m:
        m.setattr(schedule, "quoted_tokens", lambda setup, *args: 0)
        fastcompact.clear_cache()
        without = _priced_session(tmp_path / "without")
        full_without = len(checks)
    checks.clear()
    monkeypatch.setattr(schedule, "quoted_tokens", counted)
    fastcompact.clear_cache()
    with_floor = _priced_session(tmp_path / "with")
    assert with_floor == without
    assert floors and any(f > 0 for f in floors)
    assert len(checks) < full_without
    # What a full check finds the span's part to be is never below the floor.
    assert any(before > 0 for before, _ in checks)
    assert all(before <= price + 1e-9 for before, price in checks)


def test_without_a_price_model_the_trigger_decides(tmp_path: Path):
    model = ProviderChatModel(
        script=_reading_script,
        profile={"max_input_tokens": 1_000_000},
        declares_provider=False,
        answers_name_provider=False,
    )
    agent = _priced_agent(tmp_path, model, summarizer="digest")
    cfg = {"configurable": {"thread_id": "unpriced"}}
    for k in range(12):
        agent.invoke({"messages": [HumanMessage(f"Read file {k}.")]}, cfg)
    state = agent.get_state(cfg).values
    assert state.get(EVENT_KEY) is None
    assert state[STATE_KEY]["last_plan"]["pricing"] is None


@pytest.mark.parametrize("summarizer", ["auto", "model"])
def test_auto_and_model_compact_on_the_schedule_too(tmp_path: Path, summarizer: str):
    model = ProviderChatModel(script=_reading_script, profile={"max_input_tokens": 1_000_000})
    agent = _priced_agent(tmp_path, model, summarizer=summarizer)
    cfg = {"configurable": {"thread_id": summarizer}}
    for k in range(30):
        agent.invoke({"messages": [HumanMessage(f"Read file {k}.")]}, cfg)
    event = agent.get_state(cfg).values[EVENT_KEY]
    assert event is not None and event["fastcompact"]["priced"] is True
    # The scripted provider model writes no <summary>: a model summary falls back to the
    # digest, and auto (whichever costs less) never pays for the call at this size.
    assert event["fastcompact"]["summarizer"] == ("fallback" if summarizer == "model" else "digest")


def test_the_summarizer_setting_is_checked():
    with pytest.raises(ValueError, match="summarizer: expected one of model, digest, auto"):
        CompactionConfig(summarizer="llm")


@pytest.mark.parametrize("on_schedule", [False, True])
def test_a_scheduled_compaction_restores_files_only_when_asked(tmp_path: Path, on_schedule: bool):
    from fastcompact import RestorationConfig

    model = ProviderChatModel(script=_reading_script, profile={"max_input_tokens": 1_000_000})
    restoration = RestorationConfig(on_schedule=on_schedule)
    agent = _priced_agent(tmp_path, model, summarizer="digest", restoration=restoration)
    cfg = {"configurable": {"thread_id": f"restore-{on_schedule}"}}
    for k in range(30):
        agent.invoke({"messages": [HumanMessage(f"Read file {k}.")]}, cfg)
    state = agent.get_state(cfg).values
    event = state[EVENT_KEY]
    assert event["fastcompact"]["priced"] is True
    restored = event["fastcompact"]["restored_files"]
    if not on_schedule:
        assert restored == []
        return
    # The file read in the last turn it compacted, and its text attached to the summary.
    last = max(i for i, m in enumerate(state["messages"][: event["cutoff_index"]]) if m.type == "human")
    wanted = re.search(r"file (\d+)", str(state["messages"][last].content))
    assert wanted is not None and restored == [f"/f{wanted.group(1)}.txt"]
    assert f'<file path="/f{wanted.group(1)}.txt">' in event["summary_message"].content


class _AnthropicScripted(ScriptedChatModel):
    """A scripted model that names itself as ChatAnthropic does, recording the keywords
    each summary request is sent with."""

    summary_keywords: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        from tests.scripted import is_summary_call

        if is_summary_call(run_manager):
            self.summary_keywords.append(dict(kw))
        return super()._generate(messages, stop, run_manager, **kw)


@pytest.mark.parametrize(
    ("pricing", "cache"),
    [(None, {"type": "ephemeral"}), ("anthropic-1h", {"type": "ephemeral", "ttl": "1h"})],
)
def test_an_anthropic_model_is_asked_to_cache_the_summary_request(tmp_path: Path, pricing: Any, cache: Any):
    model = _AnthropicScripted(profile={"max_input_tokens": 12_000})
    config = CompactionConfig(summarizer="model", pricing=pricing)
    _until_summarized(tmp_path, model, config, lambda: model.summary_keywords)
    assert model.summary_keywords and model.summary_keywords[0].get("cache_control") == cache

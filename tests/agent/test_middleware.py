"""CompactionMiddleware in real agent graphs, driven by a scripted offline model."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import LocalShellBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from fastcompact import CompactionConfig, CompactionMiddleware, CompactionToolMiddleware
from fastcompact.agent.setup import POLICY
from fastcompact.agent.summarize import is_summary
from langchain.agents import create_agent
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel, coding_script, messages_of_steps, model_calls, pair_problems

WINDOW = 30_000


def _model(**kw: Any) -> ScriptedChatModel:
    return ScriptedChatModel(profile={"max_input_tokens": WINDOW}, **kw)


def _deep_agent(
    model: ScriptedChatModel, root: Path, mw: CompactionMiddleware | None = None, **kw: Any
) -> Any:
    backend = LocalShellBackend(root_dir=root, virtual_mode=True)
    mw = mw or CompactionMiddleware(backend=backend)
    extra = kw.pop("extra", [])
    return create_deep_agent(
        model=model,
        backend=backend,
        middleware=[mw, TodoListMiddleware(), *extra],
        checkpointer=InMemorySaver(),
        **kw,
    )


def _run(agent: Any, thread: str, steps: range, project: str = "") -> dict[str, Any]:
    cfg = {"configurable": {"thread_id": thread}}
    for step in steps:
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}{project}.")]}, cfg)
    return agent.get_state(cfg).values


def _conversation(call: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in call if not isinstance(m, SystemMessage)]


def _archived_indices(root: Path, thread: str) -> list[int]:
    out: list[int] = []
    for f in sorted((root / "conversation_history" / thread).glob("*.md")):
        out += [int(i) for i in re.findall(r"^### \[(\d+)\]", f.read_text(), flags=re.M)]
    return out


@pytest.fixture
def plan_log() -> list[dict[str, Any]]:
    logger = logging.getLogger("fastcompact")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    records: list[dict[str, Any]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.msg == "fastcompact plan: %s":
                records.append(record.args[0] if isinstance(record.args, tuple) else record.args)  # type: ignore[arg-type]

    handler = Keep(level=logging.DEBUG)
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_long_deep_agent_session_keeps_pairs_archive_and_restores(
    tmp_path: Path, plan_log: list[dict[str, Any]]
):
    model = _model()
    agent = _deep_agent(model, tmp_path)
    state = _run(agent, "t1", range(1, 61))
    calls = model_calls(model)
    assert len(calls) >= 60 * 4

    # The model never sees a broken tool pair.
    for i, call in enumerate(calls):
        assert pair_problems(_conversation(call)) == [], f"call {i}"

    # No raw message is ever lost: all of them are in the state.
    raw = state["messages"]
    assert len(raw) == messages_of_steps(range(1, 61))
    # Every tool of the session ran for real.
    ran = {m.name for m in raw if isinstance(m, ToolMessage)}
    assert ran >= {"write_todos", "write_file", "read_file", "edit_file", "grep", "ls", "execute"}
    assert not [m.content for m in raw if isinstance(m, ToolMessage) and m.status == "error"]

    # The first summary comes exactly when the view reaches the trigger.
    threshold = 0.85 * WINDOW
    assert len(plan_log) == len(calls)
    first = next(i for i, c in enumerate(calls) if is_summary(_conversation(c)[0]))
    assert plan_log[first]["summary_needed"] and plan_log[first]["tokens_after"] >= threshold
    assert all(p["tokens_after"] < threshold for p in plan_log[:first])
    assert not any(is_summary(_conversation(c)[0]) for c in calls[:first])
    assert len(model.summary_calls) >= 3, "chained compactions"
    stats = state["_summarization_event"]["fastcompact"]
    assert stats["summarizer"] == "model"
    assert stats["summarizer_tokens"]["input_tokens"] == len(model.summary_calls[-1]) // 4

    # Every raw message that left the effective view is in exactly one archive file.
    event = state["_summarization_event"]
    archived = _archived_indices(tmp_path, "t1")
    assert sorted(archived) == list(range(event["cutoff_index"]))
    assert len(archived) == len(set(archived))
    assert event["file_path"] == f"/conversation_history/t1/{len(model.summary_calls)}.md"

    # The model's next input is the effective view: the summary, then raw[cutoff:].
    summary = event["summary_message"]
    assert summary.additional_kwargs["lc_source"] == "summarization"
    last = _conversation(calls[-1])
    assert last[0].content == summary.content
    # (the state also holds that call's answer)
    assert [m.id for m in last[1:]] == [m.id for m in raw[event["cutoff_index"] : -1]]

    # Todos and the newest files read in the summarized span come back with the summary.
    text = summary.content
    assert "Your todo list:" in text and "finish step" in text
    restored = re.findall(r'<file path="([^"]+)">', text)
    assert restored and len(restored) <= 5
    kept_reads = {
        c["args"]["file_path"]
        for m in raw[event["cutoff_index"] :]
        for c in getattr(m, "tool_calls", [])
        if c["name"] == "read_file"
    }
    assert not set(restored) & kept_reads
    assert (tmp_path / restored[0].lstrip("/")).read_text()[:200] in text
    assert "saved at " + event["file_path"] in text


def test_builtin_summarizer_is_replaced_in_main_agent_and_subagent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from deepagents.middleware import summarization as builtin

    builtin_calls: list[int] = []
    ours: list[int] = []
    original = builtin._DeepAgentsSummarizationMiddleware.wrap_model_call

    def counting_builtin(self: Any, request: Any, handler: Any) -> Any:
        builtin_calls.append(1)
        return original(self, request, handler)

    original_ours = CompactionMiddleware.wrap_model_call

    def counting_ours(self: Any, request: Any, handler: Any) -> Any:
        ours.append(1)
        return original_ours(self, request, handler)

    monkeypatch.setattr(builtin._DeepAgentsSummarizationMiddleware, "wrap_model_call", counting_builtin)
    monkeypatch.setattr(CompactionMiddleware, "wrap_model_call", counting_ours)

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and "delegate" in str(last.content):
            call = {
                "name": "task",
                "id": "task-1",
                "type": "tool_call",
                "args": {"description": "Please do step 7.", "subagent_type": "general-purpose"},
            }
            return AIMessage("", tool_calls=[call])
        if getattr(last, "tool_call_id", None) == "task-1":
            return AIMessage("The subagent finished.")
        return coding_script(messages)

    model = _model(script=script)
    agent = _deep_agent(model, tmp_path)
    agent.invoke(
        {"messages": [HumanMessage("Please delegate step 7.")]}, {"configurable": {"thread_id": "d"}}
    )
    names = [m[-1].content for m in model_calls(model) if isinstance(m[-1], HumanMessage)]
    assert "Please do step 7." in names, "the general-purpose subagent ran"
    assert builtin_calls == []
    assert len(ours) == len(model_calls(model))


@pytest.mark.parametrize("in_thread", [False, True])
def test_create_agent_async_session(tmp_path: Path, in_thread: bool):
    """The async session, planned on the event loop and (as measured against it) in a
    worker thread."""
    model = _model()
    backend = LocalShellBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend)
    mw._plan_in_thread = in_thread
    agent = create_agent(
        model,
        middleware=[FilesystemMiddleware(backend=backend), TodoListMiddleware(), mw],
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": "a1"}}

    async def session() -> dict[str, Any]:
        for step in range(2, 56):
            await agent.ainvoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
        return (await agent.aget_state(cfg)).values

    state = asyncio.run(session())
    assert len(model.summary_calls) >= 2
    for call in model_calls(model):
        assert pair_problems(_conversation(call)) == []
    event = state["_summarization_event"]
    archived = _archived_indices(tmp_path, "a1")
    assert sorted(archived) == list(range(event["cutoff_index"]))


def test_two_threads_on_one_instance_stay_apart(tmp_path: Path):
    model = _model()
    agent = _deep_agent(model, tmp_path)
    for step in range(1, 41):
        _run(agent, "alpha", range(step, step + 1), " for project alpha")
        _run(agent, "beta", range(step, step + 1), " for project beta")
    for call in model_calls(model):
        text = " ".join(str(m.content) for m in _conversation(call))
        assert not ("project alpha" in text and "project beta" in text)
    for thread in ("alpha", "beta"):
        state = agent.get_state({"configurable": {"thread_id": thread}}).values
        event = state["_summarization_event"]
        assert event["file_path"].startswith(f"/conversation_history/{thread}/")
        assert sorted(_archived_indices(tmp_path, thread)) == list(range(event["cutoff_index"]))


def test_summarizer_failures_fall_back_then_pause(tmp_path: Path):
    model = _model(summary_failures=2, empty_summaries=1)
    backend = LocalShellBackend(root_dir=tmp_path, virtual_mode=True)
    config = CompactionConfig(failure_cooldown_messages=10_000)
    agent = _deep_agent(model, tmp_path, mw=CompactionMiddleware(backend=backend, config=config))
    state = _run(agent, "f", range(1, 61))
    event = state["_summarization_event"]
    compactions = len(list((tmp_path / "conversation_history" / "f").glob("*.md")))
    # Three failures in a row, then the summarizer rests: later compactions use the
    # fallback without calling it.
    assert len(model.summary_calls) == 3
    assert compactions > 3
    assert "kept in layers" in event["summary_message"].content
    assert "Notes on the earlier work" not in event["summary_message"].content
    assert event["fastcompact"]["summarizer"] == "fallback"
    assert state["_fastcompact"]["llm_paused_until"] > event["created_at_index"]
    # The fallback keeps user messages verbatim; nothing was lost.
    assert "Please do step" in event["summary_message"].content
    assert len(state["messages"]) == messages_of_steps(range(1, 61))
    for call in model_calls(model):
        assert pair_problems(_conversation(call)) == []


def test_prompt_too_long_drops_the_oldest_chunk_and_retries(tmp_path: Path):
    model = _model(too_long_first=3)
    agent = _deep_agent(model, tmp_path)
    state = _run(agent, "p", range(1, 25))
    assert len(model.summary_calls) >= 4
    # Asked first in the agent's own request; too long there, then with the span alone,
    # losing its oldest part each time it is still too long.
    in_place, first, second, third = model.summary_calls[:4]
    assert "<transcript>" not in in_place and "Pause the task" in in_place
    assert all("<transcript>" in p for p in (first, second, third))
    assert len(first) > len(second) > len(third)
    assert "Summary 4" in state["_summarization_event"]["summary_message"].content


def test_context_overflow_forces_one_compaction_and_never_loops(tmp_path: Path):
    attempts: list[int] = []

    def script(messages: list[BaseMessage]) -> AIMessage:
        conversation = _conversation(messages)
        # The provider rejects any input of 100 messages or more without a summary.
        if len(conversation) >= 100 and not is_summary(conversation[0]):
            attempts.append(len(conversation))
            raise ContextOverflowError("prompt is too long")
        return coding_script(messages)

    model = ScriptedChatModel(script=script)  # no profile: the default trigger is far away
    agent = _deep_agent(model, tmp_path)
    state = _run(agent, "o", range(1, 21))
    event = state["_summarization_event"]
    assert event is not None and event["fastcompact"]["forced"]
    assert len(attempts) == 1

    def always(messages: list[BaseMessage]) -> AIMessage:
        attempts.append(-1)
        raise ContextOverflowError("prompt is too long")

    model.script = always
    attempts.clear()
    with pytest.raises(ContextOverflowError):
        _run(agent, "o", range(21, 22))
    assert len(attempts) == 2, "one forced compaction, then the error goes through"


def test_archive_failure_warns_and_compaction_goes_on(tmp_path: Path):
    class Broken(LocalShellBackend):
        def write(self, file_path: str, content: str) -> Any:
            if file_path.startswith("/conversation_history"):
                raise OSError("disk full")
            return super().write(file_path, content)

    backend = Broken(root_dir=tmp_path, virtual_mode=True)
    model = _model()
    agent = _deep_agent(model, tmp_path, mw=CompactionMiddleware(backend=backend))
    with pytest.warns(UserWarning, match="disk full"):
        state = _run(agent, "w", range(1, 25))
    event = state["_summarization_event"]
    assert event is not None and event["file_path"] is None
    assert "saved at" not in event["summary_message"].content


def test_malformed_event_passes_the_whole_history_through(tmp_path: Path):
    model = ScriptedChatModel()
    agent = _deep_agent(model, tmp_path)
    cfg = {"configurable": {"thread_id": "m"}}
    _run(agent, "m", range(2, 4))
    agent.update_state(
        cfg, {"_summarization_event": {"cutoff_index": 999, "summary_message": HumanMessage("x")}}
    )
    _run(agent, "m", range(4, 5))
    last = _conversation(model_calls(model)[-1])
    assert len(last) == len(agent.get_state(cfg).values["messages"]) - 1


def test_compact_tool_nothing_then_success(tmp_path: Path):
    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and "compact now" in str(last.content):
            return AIMessage(
                "",
                tool_calls=[{"name": "compact_conversation", "args": {}, "id": "c-1", "type": "tool_call"}],
            )
        if getattr(last, "tool_call_id", None) == "c-1":
            return AIMessage("Compacted.")
        return coding_script(messages)

    model = _model(script=script)
    backend = LocalShellBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(model=model, backend=backend)
    agent = _deep_agent(model, tmp_path, mw=mw, extra=[CompactionToolMiddleware(mw)])
    cfg = {"configurable": {"thread_id": "c"}}
    agent.invoke({"messages": [HumanMessage("compact now")]}, cfg)
    replies = [
        m for m in agent.get_state(cfg).values["messages"] if getattr(m, "tool_call_id", None) == "c-1"
    ]
    assert replies[-1].content == "Nothing to compact yet."
    _run(agent, "c", range(2, 12))  # about 60% of the trigger
    assert agent.get_state(cfg).values.get("_summarization_event") is None
    agent.invoke({"messages": [HumanMessage("compact now")]}, cfg)
    state = agent.get_state(cfg).values
    reply = [m for m in state["messages"] if getattr(m, "tool_call_id", None) == "c-1"][-1]
    assert reply.content.startswith("Compacted ") and "messages into a summary" in reply.content
    event = state["_summarization_event"]
    assert event is not None and event["file_path"] in reply.content
    # The next model call sees the summary.
    assert is_summary(_conversation(model_calls(model)[-1])[0])


def test_summarizer_calls_stay_out_of_the_stream_and_events_go_in(tmp_path: Path):
    model = _model()
    agent = _deep_agent(model, tmp_path)
    cfg = {"configurable": {"thread_id": "s"}}
    _run(agent, "s", range(1, 17))
    before = len(model.summary_calls)
    custom: list[Any] = []
    streamed: list[Any] = []
    for step in range(17, 30):
        for mode, chunk in agent.stream(
            {"messages": [HumanMessage(f"Please do step {step}.")]}, cfg, stream_mode=["messages", "custom"]
        ):
            (custom if mode == "custom" else streamed).append(chunk)
    assert len(model.summary_calls) > before
    assert any("fastcompact" in c and c["fastcompact"]["plan"]["summary_needed"] for c in custom)
    assert not any("<analysis>" in str(getattr(m, "content", "")) for m, _ in streamed)


def test_constructor_rejects_bad_arguments():
    with pytest.raises(ValueError, match="config"):
        CompactionMiddleware(config={"trigger": ("tokens", 5)})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model"):
        CompactionMiddleware(model=42)
    # A backend that is none is refused when made, not warned of at every compaction.
    with pytest.raises(ValueError, match=r"backend: expected a DeepAgents backend .* got int"):
        CompactionMiddleware(backend=42)
    with pytest.raises(ValueError, match="got str"):
        CompactionMiddleware(backend="/tmp/history")
    assert CompactionMiddleware().name == "SummarizationMiddleware"
    assert fastcompact.CompactionMiddleware(config=CompactionConfig(keep=("messages", 4))).config.keep == (
        "messages",
        4,
    )


def test_config_is_copied_at_construction_and_defaults_survive_copies():
    import copy
    import pickle

    from fastcompact.config import DEFAULT

    config = CompactionConfig()
    mw = CompactionMiddleware(config=config)
    config.keep = ("messages", 99)
    assert mw.config.keep is None
    assert copy.deepcopy(config).clearing.clear_at_least is DEFAULT
    assert pickle.loads(pickle.dumps(DEFAULT)) is DEFAULT


def _archive_backends() -> list[tuple[str, Any]]:
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    return [
        ("state", StateBackend()),
        ("store", StoreBackend(namespace=lambda rt: ("history",), store=store)),
        (
            "composite",
            CompositeBackend(
                default=StateBackend(),
                routes={
                    "/conversation_history/": StoreBackend(namespace=lambda rt: ("history",), store=store)
                },
            ),
        ),
    ]


@pytest.mark.parametrize("kind", ["state", "store", "composite"])
def test_archive_through_each_backend_kind(kind: str):
    backend = dict(_archive_backends())[kind]
    model = _model()
    mw = CompactionMiddleware(backend=backend)
    agent = create_deep_agent(
        model=model, backend=backend, middleware=[mw, TodoListMiddleware()], checkpointer=InMemorySaver()
    )
    state = _run(agent, "b", range(1, 40))
    event = state["_summarization_event"]
    assert len(model.summary_calls) >= 2
    assert event["file_path"] == f"/conversation_history/b/{len(model.summary_calls)}.md"
    # Read every archive back through the backend, inside the graph's context.
    texts: list[str] = []

    def read_back(messages: list[BaseMessage]) -> AIMessage:
        for n in range(1, len(model.summary_calls) + 1):
            got = backend.read(f"/conversation_history/b/{n}.md", limit=100_000)
            assert got.error is None, got.error
            texts.append(got.file_data["content"])
        return AIMessage("read back")

    model.script = read_back
    _run(agent, "b", range(40, 41))
    indices = [int(i) for t in texts for i in re.findall(r"^### \[(\d+)\]", t, flags=re.M)]
    assert sorted(indices) == list(range(event["cutoff_index"]))


def test_a_summary_that_does_not_help_waits_until_the_window_needs_it(
    tmp_path: Path, plan_log: list[dict[str, Any]]
):
    # Keeping 90% of the window can never land 10% below an 85% trigger: over the
    # trigger but under the window, nothing is summarized.
    config = CompactionConfig(keep=("fraction", 0.9))
    model = _model()
    backend = LocalShellBackend(root_dir=tmp_path, virtual_mode=True)
    # Without the recall tool, whose schema would take the 24th step over the window.
    mw = CompactionMiddleware(backend=backend, config=config, recall=False)
    agent = _deep_agent(model, tmp_path, mw=mw)
    # Step by step until a summary commits: before it, the view was over the trigger
    # and nothing was summarized or archived.
    over_trigger, step, state = 0, 0, {}
    while state.get("_summarization_event") is None and step < 40:
        assert not (tmp_path / "conversation_history").exists(), "nothing archived for an uncommitted summary"
        assert model.summary_calls == []
        step += 1
        previous, state = state, _run(agent, "n", range(step, step + 1))
        planned = previous.get("_fastcompact", {}).get("last_plan", {})
        over_trigger += planned.get("tokens_after", 0) > 0.85 * WINDOW
    assert over_trigger >= 1, "the view was over the trigger before it was near the window"
    assert len(previous["messages"]) == messages_of_steps(range(1, step))
    # The step that took the view over the window, or so near it that the estimate
    # (this model reports no usage) may be short: a summary that brings it back under
    # commits, above the trigger as it may be.
    event = state["_summarization_event"]
    before, after = event["fastcompact"]["tokens_before"], event["fastcompact"]["tokens_after"]
    assert before * (1 + POLICY.estimate_slack) > WINDOW >= after
    assert max(p["tokens_sent"] for p in plan_log) <= WINDOW
    assert len(list((tmp_path / "conversation_history" / "n").glob("*.md"))) == 1


def test_seed_usage_constructs_unchanged_apart_from_the_import():
    from deepagents.backends import StateBackend
    from fastcompact.config import (
        CollapseConfig,
        MicrocompactConfig,
        RestorationConfig,
        TokenBudgetConfig,
        TruncateArgsConfig,
    )

    backend = StateBackend()
    mw = CompactionMiddleware(model="anthropic:claude-sonnet-4-6", backend=backend)
    tool_mw = CompactionToolMiddleware(mw)
    assert [t.name for t in tool_mw.tools] == ["compact_conversation"]
    assert [t.name for t in mw.tools] == ["recall", "pin"]
    config = CompactionConfig(
        trigger=("fraction", 0.80),
        keep=("messages", 10),
        max_consecutive_failures=5,
        custom_instructions="Focus on code diffs and test output. Include file paths verbatim.",
        suppress_follow_up_questions=True,
        microcompact=MicrocompactConfig(enabled=True, gap_threshold_minutes=30, keep_recent=3),
        truncate_args=TruncateArgsConfig(
            trigger=("fraction", 0.80), max_length=1_000, truncate_all_tools=True
        ),
        collapse=CollapseConfig(enabled=True, min_group_size=3, collapse_tools={"read_file", "grep"}),
        restoration=RestorationConfig(
            enabled=True, max_files=3, file_budget_chars=30_000, per_file_chars=10_000
        ),
        token_budget=TokenBudgetConfig(per_tool_chars=50_000, per_message_chars=200_000),
    )
    assert CompactionMiddleware(
        model="anthropic:claude-sonnet-4-6", backend=backend, config=config
    ).config.keep == (
        "messages",
        10,
    )


def test_an_idle_gap_clears_old_results_for_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import fastcompact.agent.reading as mw_module

    clock = [1_000_000.0]
    monkeypatch.setattr(mw_module, "_now", lambda: clock[0])
    model = ScriptedChatModel()  # no profile: no other pass fires at this size
    agent = _deep_agent(model, tmp_path)
    _run(agent, "g", range(2, 8))
    placeholder = "[Cleared after an idle gap: "
    assert not any(placeholder in str(m.content) for m in _conversation(model_calls(model)[-1]))

    clock[0] += 2 * 3600  # two hours away: the provider's cache is cold anyway
    _run(agent, "g", range(8, 10))
    calls = model_calls(model)
    after_gap = _conversation(calls[-1])
    cleared = [m for m in after_gap if placeholder in str(m.content)]
    # Every read from before the gap: the five newest results are kept, and the short
    # `execute` results would grow as placeholders, so they stay too.
    assert sorted(m.tool_call_id for m in cleared) == sorted(f"read_file-{s}" for s in range(2, 8))
    assert any("read_file(/work/s2.py)" in str(m.content) for m in cleared)
    # Later calls keep the same cleared prefix (the cache stays warm from here on).
    _run(agent, "g", range(10, 12))
    later = _conversation(model_calls(model)[-1])
    assert [m.content for m in later[: len(after_gap) - 8]] == [
        m.content for m in after_gap[: len(after_gap) - 8]
    ]


def test_compact_tool_uses_the_window_remembered_from_the_agent(tmp_path: Path):
    """Without a model of its own the tool cannot see the agent's window: it reads the
    one the middleware saw (else it would wait for the 170,000-token default)."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and "compact now" in str(last.content):
            call = {"name": "compact_conversation", "args": {}, "id": "c-9", "type": "tool_call"}
            return AIMessage("", tool_calls=[call])
        if getattr(last, "tool_call_id", None) == "c-9":
            return AIMessage("Compacted.")
        return coding_script(messages)

    model = _model(script=script)
    backend = LocalShellBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend)  # summaries with the agent's model
    agent = _deep_agent(model, tmp_path, mw=mw, extra=[CompactionToolMiddleware(mw)])
    cfg = {"configurable": {"thread_id": "w"}}
    _run(agent, "w", range(2, 12))
    assert agent.get_state(cfg).values["_fastcompact"]["window"] == WINDOW
    agent.invoke({"messages": [HumanMessage("compact now")]}, cfg)
    state = agent.get_state(cfg).values
    reply = [m for m in state["messages"] if getattr(m, "tool_call_id", None) == "c-9"][-1]
    assert reply.content.startswith("Compacted "), reply.content
    # No model of its own: the digest.
    content = state["_summarization_event"]["summary_message"].content
    assert "kept in layers" in content and "Notes on the earlier work" not in content


def test_an_orphan_tool_result_is_named_and_sent_as_a_user_message(tmp_path: Path):
    model = ScriptedChatModel()
    agent = create_agent(model=model, middleware=[CompactionMiddleware()], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "o"}}
    orphan = ToolMessage("42 rows", tool_call_id="lost-1", name="query", id="t-lost")
    history = [HumanMessage("Please do step 1."), orphan, HumanMessage("Please do step 2.")]
    with pytest.warns(UserWarning, match=r"'t-lost' of query answers call 'lost-1'"):
        agent.invoke({"messages": history}, cfg)
    sent = _conversation(model_calls(model)[0])
    assert [m.type for m in sent] == ["human", "human", "human"]
    assert "42 rows" in sent[1].content and "lost-1" in sent[1].content
    assert pair_problems(sent) == []
    # The state keeps the message as it was.
    kept = agent.get_state(cfg).values["messages"][1]
    assert isinstance(kept, ToolMessage) and kept.content == "42 rows"

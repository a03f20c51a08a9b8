"""Fault injection in the middleware, in real DeepAgents graphs: the agent keeps
answering, the circuit breaker and the fallback behave as specified, no raw message is
lost, and the log says what happened."""

from __future__ import annotations

import inspect
import logging
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import LocalShellBackend
from fastcompact import CompactionConfig, CompactionMiddleware
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel, messages_of_steps, model_calls, pair_problems

WINDOW = 30_000


class FaultyModel(ScriptedChatModel):
    """The scripted agent, whose summaries come from `summary_reply` (which may raise)."""

    summary_reply: Callable[[str], str] | None = None

    def _summary(self, prompt: str) -> AIMessage:
        if self.summary_reply is None:
            return super()._summary(prompt)
        with self.lock:
            self.summary_calls.append(prompt)
        return AIMessage(self.summary_reply(prompt))


@pytest.fixture
def log() -> Iterator[list[str]]:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep(level=logging.INFO)
    logger = logging.getLogger("fastcompact")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def _agent(model: ScriptedChatModel, backend: Any, config: CompactionConfig | None = None) -> Any:
    mw = CompactionMiddleware(backend=backend, config=config)
    return create_deep_agent(
        model=model, backend=backend, middleware=[mw, TodoListMiddleware()], checkpointer=InMemorySaver()
    )


def _session(agent: Any, thread: str, steps: range) -> dict[str, Any]:
    cfg = {"configurable": {"thread_id": thread}}
    for step in steps:
        out = agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
        assert str(out["messages"][-1].content).startswith(f"Step {step} is done"), (
            "the agent keeps answering"
        )
    return agent.get_state(cfg).values


def _intact(model: ScriptedChatModel, state: dict[str, Any], steps: range) -> None:
    assert len(state["messages"]) == messages_of_steps(steps), "no raw message lost"
    for call in model_calls(model):
        assert pair_problems([m for m in call if not isinstance(m, SystemMessage)]) == []


def _backend(tmp_path: Path, fail: str) -> LocalShellBackend:
    class Failing(LocalShellBackend):
        def write(self, file_path: str, content: str) -> Any:
            if "write" in fail and file_path.startswith("/conversation_history"):
                raise OSError("disk full")
            return super().write(file_path, content)

        def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> Any:
            # Only restoration's reads fail; the agent's own tools keep working.
            stack = inspect.stack()
            if "read" in fail and any(f.filename.endswith("fastcompact/agent/storage.py") for f in stack):
                raise OSError("backend unavailable")
            return super().read(file_path, offset, limit)

    return Failing(root_dir=tmp_path, virtual_mode=True)


def test_backend_write_and_read_failures(tmp_path: Path, log: list[str]):
    model = FaultyModel(profile={"max_input_tokens": WINDOW})
    steps = range(1, 30)
    with pytest.warns(UserWarning, match="disk full"):
        state = _session(_agent(model, _backend(tmp_path, "write read")), "b", steps)
    event = state["_summarization_event"]
    assert event is not None and event["file_path"] is None
    assert event["fastcompact"]["restored_files"] == []
    assert "Files you read recently" not in event["summary_message"].content
    assert any("could not archive" in line and "disk full" in line for line in log)
    assert any("could not restore" in line and "backend unavailable" in line for line in log)
    _intact(model, state, steps)


def _slow(prompt: str) -> str:
    raise TimeoutError("the summarizer timed out after 60 s")


@pytest.mark.parametrize(
    ("reply", "logged"),
    [
        (_slow, "TimeoutError: the summarizer timed out"),
        (lambda prompt: "", "SummaryError: the summarizer returned no summary"),
        (lambda prompt: "<analysis>only thinking, never finished", "returned no summary"),
    ],
    ids=["timeout", "empty", "garbage"],
)
def test_summarizer_faults_fall_back_and_trip_the_breaker(
    tmp_path: Path, log: list[str], reply: Callable[[str], str], logged: str
):
    model = FaultyModel(profile={"max_input_tokens": WINDOW}, summary_reply=reply)
    config = CompactionConfig(max_consecutive_failures=2, failure_cooldown_messages=10_000)
    # Long enough for compactions after the breaker trips (one every 14 steps or so).
    steps = range(1, 51)
    state = _session(
        _agent(model, LocalShellBackend(root_dir=tmp_path, virtual_mode=True), config), "s", steps
    )
    event = state["_summarization_event"]
    assert event["fastcompact"]["summarizer"] == "fallback"
    assert "kept in layers" in event["summary_message"].content
    assert "Notes on the earlier work" not in event["summary_message"].content
    # Two failures, then the breaker: no more summarizer calls, later compactions still happen.
    assert len(model.summary_calls) == 2
    archives = list((tmp_path / "conversation_history" / "s").glob("*.md"))
    assert len(archives) > 2
    assert state["_fastcompact"]["llm_paused_until"] > 0
    assert sum(logged in line for line in log) == 2
    _intact(model, state, steps)


def test_garbage_that_is_not_empty_is_used_as_the_notes(tmp_path: Path):
    model = FaultyModel(profile={"max_input_tokens": WINDOW}, summary_reply=lambda p: "%%% ??? 🙃")
    steps = range(1, 25)
    state = _session(_agent(model, LocalShellBackend(root_dir=tmp_path, virtual_mode=True)), "g", steps)
    event = state["_summarization_event"]
    assert "## Notes on the earlier work\n%%% ??? 🙃\n" in event["summary_message"].content
    _intact(model, state, steps)


def test_a_summary_longer_than_its_input_is_cut_to_the_notes_share(tmp_path: Path):
    """Whatever a model writes, the memory keeps its notes within their share of the
    window, and saves them whole where the cut says: the summary still commits."""
    model = FaultyModel(
        profile={"max_input_tokens": WINDOW},
        summary_reply=lambda p: f"<summary>{'words ' * len(p)}</summary>",
    )
    steps = range(1, 25)
    state = _session(_agent(model, LocalShellBackend(root_dir=tmp_path, virtual_mode=True)), "l", steps)
    event = state["_summarization_event"]
    assert event["fastcompact"]["summarizer"] == "model"
    content = event["summary_message"].content
    found = re.search(r"\(Cut here for space: the whole notes are in (\S+\.notes\.md)\.\)", content)
    assert found, content
    assert "words " * 1_000 in (tmp_path / found.group(1).lstrip("/")).read_text()
    notes = content.split("## Notes on the earlier work\n", 1)[1].split("\n## ", 1)[0]
    # A tenth of the window, as a provider counts it.
    assert fastcompact.count_text_tokens(notes, "o200k_base") <= 0.10 * WINDOW
    _intact(model, state, steps)


def test_context_overflow_on_every_agent_call_fails_fast(tmp_path: Path, log: list[str]):
    attempts: list[float] = []

    def always(messages: list[BaseMessage]) -> AIMessage:
        attempts.append(time.monotonic())
        raise ContextOverflowError("prompt is too long")

    model = FaultyModel(profile={"max_input_tokens": WINDOW})
    agent = _agent(model, LocalShellBackend(root_dir=tmp_path, virtual_mode=True))
    state = _session(agent, "o", range(1, 8))
    model.script = always
    with pytest.raises(ContextOverflowError):
        agent.invoke({"messages": [HumanMessage("Please do step 8.")]}, {"configurable": {"thread_id": "o"}})
    assert len(attempts) == 2, "one forced compaction, one retry, then the error"
    after = agent.get_state({"configurable": {"thread_id": "o"}}).values
    assert len(after["messages"]) == len(state["messages"]) + 1, "the request is kept"

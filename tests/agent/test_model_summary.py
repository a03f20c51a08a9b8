"""What stays in view after a model summary, on real ``create_agent`` /
``create_deep_agent`` graphs with a ``FilesystemBackend`` and SQLite or in-memory
checkpointers: the user's own requests, the sections a model needs to carry on, an
earlier summarizer's archive, the part of a file that was read, requests within the
window (summary requests too), and logs that do not flood. Only the chat models are
scripted; the provider here is one without a price model (a local model, a gateway),
so every compaction is a model summary."""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import create_summarization_middleware as deepagents_summarizer
from fastcompact import CompactionMiddleware
from fastcompact.agent import summarize
from fastcompact.deepagents import create_summarization_middleware
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import Field

from tests.scripted import ScriptedChatModel

RULES = (
    "Rules for this session: never touch tests/legacy, the staging database is on port 5433, "
    "answer in French."
)

SECTIONS = [
    ("Primary request and intent", "the user reviews modules one by one, under the session's rules."),
    ("Key technical concepts", "Python."),
    ("Files and code", "\n".join(f"- /src/f{i}.py: a module with its own parser." for i in range(300))),
    ("Errors and fixes", "none."),
    ("Problem solving", "each module read in full."),
    ("User requests", "R1 set the rules; the later ones ask for a review each."),
    ("Pending tasks", "review the remaining modules."),
    ("Current work", "reviewing the newest module."),
    ("Next step", 'review the next module, as the user asked: "tell me what it does".'),
]


def _notes(sections: list[tuple[str, str]]) -> str:
    return "\n".join(f"{i}. {title}: {body}" for i, (title, body) in enumerate(sections, 1))


class Agent(ScriptedChatModel):
    """The scripted agent; its summaries are ``notes`` (the nine sections) and it
    remembers the tools it was bound to, to count requests as a provider does."""

    notes: str = _notes([*SECTIONS[:2], (SECTIONS[2][0], "/src files."), *SECTIONS[3:]])
    bound: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Agent:  # type: ignore[override]
        self.bound = list(tools)
        return self

    def _summary(self, prompt: str) -> AIMessage:
        with self.lock:
            self.summary_calls.append(prompt)
        return AIMessage(f"<analysis>Going through it.</analysis>\n<summary>\n{self.notes}\n</summary>")


def _logs(name: str) -> StructuredTool:
    def run(module: str) -> str:
        return "\n".join(f"{module} line {i}: " + "some content here " * 6 for i in range(60))

    return StructuredTool.from_function(func=run, name=name, description="The logs of a module.")


def _reviewer(messages: list[BaseMessage]) -> AIMessage:
    """Each request: one call to query_logs, then an answer."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        n = sum(isinstance(m, HumanMessage) for m in messages)
        call = {"name": "query_logs", "args": {"module": f"m{n}"}, "id": f"q{len(messages)}"}
        return AIMessage("", tool_calls=[call])
    return AIMessage("Done: the module is checked.")


def _size(model: Agent, messages: list[BaseMessage]) -> int:
    """A request's size as fastcompact counts it: system prompt, tools and messages."""
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    return fastcompact.count_tokens(rest, system=system[0] if system else None, tools=model.bound)


def _run(agent: Any, requests: list[str], thread: str = "t") -> dict[str, Any]:
    cfg = {"configurable": {"thread_id": thread}}
    for r in requests:
        agent.invoke({"messages": [HumanMessage(r)]}, cfg)
    return agent.get_state(cfg).values


def _reviews(n: int, first: int = 2) -> list[str]:
    return [f"Please review module number {i} and tell me what it does." for i in range(first, first + n)]


def test_the_users_requests_stay_verbatim_after_a_model_summary(tmp_path: Path):
    """A 12k window: request 1 sets the session's rules. After the model summary the
    model's input still holds them, verbatim, with the newest requests (about 300
    tokens against a 2,400-token share), and the summary prompt says which requests
    stay verbatim."""
    model = Agent(script=_reviewer, profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    with sqlite3.connect(tmp_path / "cp.db", check_same_thread=False) as conn:
        agent = create_agent(
            model=model,
            tools=[_logs("query_logs")],
            middleware=[CompactionMiddleware(backend=backend)],
            checkpointer=SqliteSaver(conn),
        )
        state = _run(agent, [RULES, *_reviews(14)])
    assert model.summary_calls, "a model summary was made"
    summary = state["_summarization_event"]["summary_message"].content
    assert state["_summarization_event"]["fastcompact"]["summarizer"] == "model"
    seen = model.calls[-1]
    assert summary in [m.content for m in seen]
    assert RULES in summary and "### R1\n" + RULES in summary
    # Every request the span opened is in view, verbatim, under its number.
    for i, text in enumerate([RULES, *_reviews(14)], 1):
        in_view = any(text in str(m.content) for m in seen)
        assert in_view, f"R{i} left the view"
    # The prompt tells the model which requests stay verbatim, and the length to keep.
    prompt = model.summary_requests[-1][-1].content if model.summary_requests else model.summary_calls[-1]
    assert "R1 and every later request stay verbatim beside your notes" in prompt or (
        "Every request stays verbatim beside your notes" in prompt
    )
    assert re.search(r"Keep the notes to about [\d,]+ words", prompt)
    # A request number in the notes names one in view.
    shown = {int(n) for n in re.findall(r"### R(\d+)", summary)}
    for n in re.findall(r"\(request R(\d+)\)", summary):
        assert int(n) in shown


def test_over_long_notes_keep_the_sections_needed_to_carry_on_and_save_the_rest(tmp_path: Path):
    """A summarizer answers the nine sections, section 3 long, on a 16k window: the view
    keeps sections 1, 7, 8 and 9 whole and a head of the others, and says where the
    whole notes are, a file that holds them."""
    model = Agent(script=_reviewer, profile={"max_input_tokens": 16_000}, notes=_notes(SECTIONS))
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    agent = create_agent(
        model=model,
        tools=[_logs("query_logs")],
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    state = _run(agent, [RULES, *_reviews(24)])
    summary = state["_summarization_event"]["summary_message"].content
    for i in (1, 7, 8, 9):
        title, body = SECTIONS[i - 1]
        assert f"{i}. {title}: {body}" in summary, f"section {i} was cut"
    assert "3. Files and code: - /src/f0.py" in summary and "- /src/f299.py" not in summary
    found = re.search(
        r"\(Cut here for space: the whole notes are in (/conversation_history/t/\S+\.notes\.md)\.\)", summary
    )
    assert found, summary
    saved = (tmp_path / found.group(1).lstrip("/")).read_text()
    assert "- /src/f299.py" in saved and _notes(SECTIONS) in saved


def test_a_thread_switched_from_deepagents_summarizer_keeps_its_archive_and_numbering(tmp_path: Path):
    """Twelve turns with DeepAgents' summarizer on a SQLite thread, then the import
    changed, twelve more: the memory names DeepAgents' archive file and every request
    from R1, without a gap."""
    model = Agent(script=_reviewer, profile={"max_input_tokens": 12_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    requests = [f"Please review module {i}." for i in range(1, 25)]
    with sqlite3.connect(tmp_path / "cp.db", check_same_thread=False) as conn:
        saver = SqliteSaver(conn)
        for mw, part in (
            (deepagents_summarizer(model, backend), requests[:12]),
            (create_summarization_middleware(model, backend), requests[12:]),
        ):
            agent = create_deep_agent(
                model=model, tools=[_logs("query_logs")], backend=backend, middleware=[mw], checkpointer=saver
            )
            state = _run(agent, part, thread="sw")
    theirs = sorted(p.name for p in (tmp_path / "conversation_history").glob("session_*.md"))
    assert len(theirs) == 1, "DeepAgents archived its span"
    event = state["_summarization_event"]
    assert event["fastcompact"]["memory"]["files"][0] == f"/conversation_history/{theirs[0]}"
    text = event["summary_message"].content
    assert f"in {theirs[0]}" in text and "/conversation_history/sw/" in text
    # Every request up to the newest compacted one is named: in a run, in short or
    # verbatim, numbered without a gap.
    memory = event["fastcompact"]["memory"]
    numbers = [n for r in memory["ranges"] for n in range(r["first"], r["last"] + 1)]
    numbers += [h["number"] for h in memory["heads"]] + [r["number"] for r in memory["requests"]]
    assert sorted(set(numbers)) == list(range(1, max(numbers) + 1)), numbers
    assert max(numbers) >= 13


def _pager(messages: list[BaseMessage]) -> AIMessage:
    """Request 1 pages through /big.py at offsets 314, 588 and 862; request 2 calls
    query_logs five times (the window fills while it runs)."""
    start = _last_request(messages)
    done = sum(1 for m in messages[start:] if isinstance(m, ToolMessage))
    if "Read /big.py" not in str(messages[start].content):
        if done == 5:
            return AIMessage("Checked all of them.")
        return AIMessage(
            "", tool_calls=[{"name": "query_logs", "args": {"module": f"m{done}"}, "id": f"q{done}"}]
        )
    if done == 3:
        return AIMessage("Read it all.")
    offset = (314, 588, 862)[done]
    call = {
        "name": "read_file",
        "args": {"file_path": "/big.py", "offset": offset, "limit": 100},
        "id": f"r{offset}",
    }
    return AIMessage("", tool_calls=[call])


def _last_request(messages: list[BaseMessage]) -> int:
    found = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not summarize.is_summary(m)]
    assert found, "the turn in progress stays whole"
    return found[-1]


def _log_reader(tmp_path: Path, script: Any, config: Any = None) -> Any:
    """A deep agent on a 16k window with the query_logs tool, run by ``script``, over
    the files in ``tmp_path``."""
    model = Agent(script=script, profile={"max_input_tokens": 16_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    return create_deep_agent(
        model=model,
        tools=[_logs("query_logs")],
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend, config=config)],
        checkpointer=InMemorySaver(),
    )


def test_restored_files_show_the_part_that_was_read(tmp_path: Path):
    """An agent that paged through a file (offsets 314, 588, 862) and then filled the
    window: the summary restores lines 863-962 as the file is now, not its head."""
    lines = [f"line {i}: " + "text " * 8 for i in range(1, 1201)]
    (tmp_path / "big.py").write_text("\n".join(lines))
    agent = _log_reader(tmp_path, _pager)
    state = _run(agent, ["Read /big.py from line 315 on, in pages.", "Check the logs of modules 0 to 4."])
    text = state["_summarization_event"]["summary_message"].content
    assert '<file path="/big.py" lines="863-962">\nline 863: ' in text
    assert "line 1: " not in text and "line 315: " not in text


@pytest.mark.parametrize("pricing", [None, "anthropic"])
def test_a_finished_requests_files_are_restored_only_without_a_price_model(tmp_path: Path, pricing: Any):
    """The same session, its compaction keeping request 2 (the one under way) whole:
    without a price model the file request 1 read comes back; with one it does not. A
    restored file is written with the summary and read on every call, and spares a
    call only if the agent reads it again, which the next request rarely does."""
    lines = [f"line {i}: " + "text " * 8 for i in range(1, 1201)]
    (tmp_path / "big.py").write_text("\n".join(lines))
    agent = _log_reader(tmp_path, _pager, fastcompact.CompactionConfig(pricing=pricing, summarizer="model"))
    state = _run(agent, ["Read /big.py from line 315 on, in pages.", "Check the logs of modules 0 to 4."])
    event = state["_summarization_event"]
    kept = state["messages"][event["cutoff_index"] :]
    assert any(m.type == "human" and "Check the logs" in str(m.content) for m in kept)
    assert event["fastcompact"]["restored_files"] == ([] if pricing else ["/big.py"])


def _module_reader(messages: list[BaseMessage]) -> AIMessage:
    """One request: read /m0.py to /m2.py, then query the logs of eight modules, one
    call each, then answer (the calls are numbered in their ids: a compaction may
    have taken the earlier ones out of view)."""
    seen = [int(m.tool_call_id[1:]) for m in messages if isinstance(m, ToolMessage)]
    done = max(seen) + 1 if seen else 0
    if done == 11:
        return AIMessage("Checked them all.")
    if done < 3:
        call = {"name": "read_file", "args": {"file_path": f"/m{done}.py"}, "id": f"r{done}"}
    else:
        call = {"name": "query_logs", "args": {"module": f"m{done - 3}"}, "id": f"q{done}"}
    return AIMessage("", tool_calls=[call])


def test_with_a_price_model_the_files_of_the_request_under_way_are_restored(tmp_path: Path):
    """One request reads three modules, then fills the window with their logs: the
    compaction cuts inside it, and the modules it read before the cut come back."""
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text("\n".join(f"m{i} line {k}: " + "code " * 10 for k in range(40)))
    config = fastcompact.CompactionConfig(pricing="anthropic", summarizer="model")
    agent = _log_reader(tmp_path, _module_reader, config)
    state = _run(agent, ["Read the modules /m0.py to /m2.py, then check the logs of each."])
    event = state["_summarization_event"]
    assert not any(m.type == "human" for m in state["messages"][event["cutoff_index"] :])
    restored = event["fastcompact"]["restored_files"]
    assert restored and set(restored) <= {"/m0.py", "/m1.py", "/m2.py"}
    assert f'<file path="{restored[0]}">' in event["summary_message"].content


def _tools(n: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        def act(x: str) -> str:
            return f"result of tool {i}: " + "data row value " * 680

        return StructuredTool.from_function(
            func=act, name=f"tool_{i}", description=f"Tool {i}: does a thing."
        )

    return [make(i) for i in range(n)]


def _tool_runner(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        n = sum(isinstance(m, HumanMessage) for m in messages)
        return AIMessage(
            "", tool_calls=[{"name": f"tool_{n % 30}", "args": {"x": "go"}, "id": f"t{len(messages)}"}]
        )
    return AIMessage("Done with that.")


def _ls_then_answer(messages: list[BaseMessage]) -> AIMessage:
    if isinstance(messages[-1], HumanMessage):
        return AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "/"}, "id": f"ls{len(messages)}"}])
    return AIMessage("Done. " + "Here is the answer in detail. " * 10)


@pytest.fixture
def warnings_logged() -> Any:
    logged: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    handler = Keep(level=logging.WARNING)
    logger = logging.getLogger("fastcompact")
    logger.addHandler(handler)
    yield logged
    logger.removeHandler(handler)


def test_no_request_over_a_small_window_is_sent_summary_requests_included(
    tmp_path: Path, warnings_logged: Any
):
    """An 8,000-token window, a 3,300-token system prompt, 30 tools and results of
    about 2,700 tokens: every agent call and every summary request (in the agent's own
    request or as a separate prompt) fits the window; fitting is not warned about."""
    model = Agent(script=_tool_runner, profile={"max_input_tokens": 8_000})
    agent = create_agent(
        model=model,
        tools=_tools(30),
        system_prompt="You are careful. Follow the house rules exactly as written here. " * 200,
        middleware=[CompactionMiddleware(backend=FilesystemBackend(root_dir=tmp_path, virtual_mode=True))],
        checkpointer=InMemorySaver(),
    )
    _run(agent, [f"Request {i}: run the next tool please." for i in range(20)])
    assert model.summary_calls, "summaries were made"
    assert max(_size(model, c) for c in model.calls) <= 8_000
    assert all(_size(model, c) <= 8_000 for c in model.summary_requests)
    separate = [
        fastcompact.count_tokens([HumanMessage(p)]) for p in model.summary_calls if "<transcript>" in p
    ]
    assert all(n <= 8_000 for n in separate), separate
    assert warnings_logged == []


def test_a_deep_agent_with_long_rules_sends_nothing_over_its_window(tmp_path: Path, warnings_logged: Any):
    """A 10,000-token window, the deep agent's own system prompt plus about 4,400
    tokens of rules, ten requests of about 600 tokens, an ``ls`` before each answer:
    no call over the window, summary requests included."""
    model = Agent(script=_ls_then_answer, profile={"max_input_tokens": 10_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    rule = "Always keep the public API stable and document every single change made.\n"
    agent = create_deep_agent(
        model=model,
        backend=backend,
        system_prompt=rule * 250,
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    _run(
        agent,
        [f"Request {i}: " + "please look into the following detail carefully. " * 48 for i in range(10)],
    )
    sizes = [_size(model, c) for c in [*model.calls, *model.summary_requests]]
    assert model.summary_requests or model.summary_calls
    assert max(sizes) <= 10_000, sorted(sizes)[-3:]
    assert warnings_logged == []


def test_the_summary_prompt_names_every_essential_section():
    """The sections the core keeps whole when notes are cut are sections of the prompt."""
    for number in summarize.ESSENTIAL_SECTIONS:
        title = fastcompact._core.SUMMARY_SECTIONS[number - 1]
        assert f"{number}. {title}: " in summarize.SUMMARY_SECTIONS
    assert summarize.ESSENTIAL_SECTIONS == (1, 2, 7, 8, 9, 10)

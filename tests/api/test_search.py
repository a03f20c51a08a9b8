"""Findable history: a model that asks in its own words gets an old fact back. The
ranked search through the notebook helper, the ``recall`` tool inside a real
DeepAgents graph (its own searches never found), filters, phrases and patterns, the
index kept in the conversation cache (grown, evicted, rebuilt), and the command line
over a transcript and an archive folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionMiddleware, search
from fastcompact.agent.recall_tool import recall_tool
from fastcompact.api.search_history import search_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, messages_to_dict
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke

WORDS = "module database settings service check report config port host cache queue worker".split()


def _session(n: int, seed: int) -> list[BaseMessage]:
    """A session whose messages share their words: requests about modules, a read of
    each module's settings, and an answer."""
    out: list[BaseMessage] = []
    for i in range(n):
        w = [WORDS[(seed + i + k) % len(WORDS)] for k in range(4)]
        out.append(HumanMessage(f"Please {w[0]} the {w[1]} of module {i}.", id=f"u{i}"))
        call = {"name": "read_file", "args": {"file_path": f"/etc/m{i}.conf"}, "id": f"c{i}"}
        out.append(AIMessage("", tool_calls=[call], id=f"a{i}"))
        out.append(
            ToolMessage(f"[{w[2]}]\n{w[3]} = value {i}", tool_call_id=f"c{i}", name="read_file", id=f"t{i}")
        )
        out.append(AIMessage(f"Module {i}: the {w[1]} {w[2]} looks fine.", id=f"d{i}"))
    return out


FACTS = [
    ("The staging database is on port 5433, behind the bastion.", "staging database port number"),
    ("Invoice INV-88213 was issued to Acme on March 3.", "INV-88213 invoice customer"),
    ("Root cause: the cache worker leaked file handles after each retry.", "why did the worker leak"),
    ("主服务器位于法兰克福数据中心。", "服务器 数据中心 位置"),
]


@pytest.mark.parametrize(("fact", "query"), FACTS)
def test_a_planted_fact_is_found_by_words_of_a_models_own(fact: str, query: str):
    msgs = _session(300, 7)
    msgs.insert(517, AIMessage(fact, id="fact"))
    found = search(msgs, query, limit=3)
    assert found and found[0].id == "fact", [str(m) for m in found]
    assert fact[:20] in found[0].excerpt


_word = st.text(alphabet="bcdfghjklmnprstvz", min_size=6, max_size=9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rare=st.lists(_word, min_size=3, max_size=3, unique=True), at=st.integers(0, 199), seed=st.integers(0, 50)
)
def test_any_message_is_in_the_top_three_for_three_of_its_rare_words(rare: list[str], at: int, seed: int):
    msgs = _session(50, seed)
    target = msgs[at]
    planted = AIMessage(f"{target.text} {' '.join(rare)}", id="planted")
    msgs[at] = planted
    found = search(msgs, " ".join(rare), limit=3)
    assert "planted" in [m.id for m in found]


def test_chinese_messages_are_found_without_spaces():
    msgs = [AIMessage(f"服务器{i}号运行正常，数据已备份。", id=f"z{i}") for i in range(50)]  # noqa: RUF001
    msgs.append(AIMessage("部署脚本在周五凌晨失败，原因是证书过期。", id="cert"))  # noqa: RUF001
    assert search(msgs, "证书 过期 原因")[0].id == "cert"


def test_filters_phrases_and_patterns():
    msgs = _session(20, 3)
    by_tool = search(msgs, "module", tool="read_file", limit=50)
    assert by_tool and all(m.tool == "read_file" for m in by_tool)
    by_role = search(msgs, "module", role="human", limit=50)
    assert {m.role for m in by_role} == {"human"} and len(by_role) == 20
    in_range = search(msgs, "module", requests="R3-R4", limit=50)
    assert {m.request for m in in_range} == {3, 4}
    # A phrase must be there as it is; a pattern is a regular expression, newest last.
    assert [m.id for m in search(msgs, '"module 7."')] == ["u7"]
    found = search(msgs, pattern=r"value 1[0-9]$")
    assert [m.id for m in found][-1] == "c19" and all(m.role == "tool" for m in found)
    with pytest.raises(fastcompact.InputError, match="regular expression"):
        search(msgs, pattern="(")
    with pytest.raises(fastcompact.InputError, match="a query or a pattern"):
        search(msgs)
    with pytest.raises(fastcompact.InputError, match="requests"):
        search(msgs, "module", requests="the third")
    with pytest.raises(fastcompact.InputError, match="language"):
        search(msgs, "module", language="klingon")


def test_the_index_survives_growth_eviction_and_new_objects():
    msgs = _session(100, 1)
    first = [(m.id, m.excerpt) for m in search(msgs, "cache worker module 42")]
    before = fastcompact.cache_bytes()[0]
    assert before > 0, "the index is weighed in the cache"
    # Grown by new messages, it finds them.
    msgs.append(AIMessage("The cache worker of module 42 restarts nightly.", id="new"))
    assert search(msgs, "cache worker module 42 nightly")[0].id == "new"
    # Evicted, it is built again; equal copies (a checkpointer's) find the same.
    fastcompact.clear_cache()
    copies = [m.model_copy() for m in msgs[:-1]]
    assert [(m.id, m.excerpt) for m in search(copies, "cache worker module 42")] == first


def _asking(question: str) -> Any:
    """An agent that, asked about a fact, searches with recall five times in a row (in
    its own words), then answers; any other request it answers at once."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        asked = [m for m in messages if isinstance(m, HumanMessage)]
        if isinstance(last, HumanMessage) or (isinstance(last, ToolMessage) and last.name == "recall"):
            searches = sum(1 for m in messages if isinstance(m, ToolMessage) and m.name == "recall")
            if "port" in str(asked[-1].content) and "Remember" not in str(asked[-1].content) and searches < 5:
                call = {"name": "recall", "args": {"query": question}, "id": f"r{len(messages)}"}
                return AIMessage("", tool_calls=[call])
        return AIMessage("Noted.")

    return script


def _deep_agent(tmp_path: Path, script: Any) -> Any:
    """A DeepAgents graph with the middleware, on a scripted model and a real backend."""
    model = ScriptedChatModel(script=script, profile={"max_input_tokens": 30_000})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    return create_deep_agent(
        model=model,
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )


def test_recall_in_an_agent_finds_the_fact_not_its_own_searches(tmp_path: Path):
    """The DeepAgents drop-in, 36 turns: the user gave the port in turn 2; six searches
    later the user's message still comes first, and no search finds an earlier
    search."""
    question = "the port number of the staging database"
    agent = _deep_agent(tmp_path, _asking(question))
    cfg = {"configurable": {"thread_id": "s"}}
    turns = ["Hello.", "Remember: the staging database listens on port 5433."]
    turns += [f"Note {i}: the production database settings were reviewed again." for i in range(33)]
    turns += ["Which port does staging use?"]
    for t in turns:
        agent.invoke({"messages": [HumanMessage(t)]}, cfg)
    answers = [
        m
        for m in agent.get_state(cfg).values["messages"]
        if isinstance(m, ToolMessage) and m.name == "recall"
    ]
    assert len(answers) == 5
    for a in answers:
        first = str(a.content).split("\n2. ")[0]
        assert "port 5433" in first, a.content
        assert "recall(query" not in str(a.content) and question not in str(a.content)


def test_a_request_found_shows_how_its_answer_ended_and_the_open_one_is_left_out(tmp_path: Path):
    """A real DeepAgents graph: the user asks what was found for an earlier request, in
    the words of that request. The search shows the earlier request with the end of
    the answer that closed it (where the conclusion is, after a long report), and not
    the request being answered, which holds the same words."""
    conclusion = "Root cause: the export worker runs out of disk on /var/tmp."
    report = "Checked the scheduler, the queue and the worker logs in turn. " * 12 + conclusion
    asked = "What did you find for the nightly export job failures?"

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content == asked:
            call = {"name": "recall", "args": {"query": "nightly export job failures"}, "id": "r1"}
            return AIMessage("", tool_calls=[call])
        if isinstance(last, HumanMessage) and "nightly export" in str(last.content):
            return AIMessage(report)
        return AIMessage("Done.")

    agent = _deep_agent(tmp_path, script)
    cfg = {"configurable": {"thread_id": "s"}}
    turns = ["Look into the nightly export job failures."]
    turns += [f"Now tidy the export settings of module {i}." for i in range(8)]
    for t in [*turns, asked]:
        agent.invoke({"messages": [HumanMessage(t)]}, cfg)
    messages = agent.get_state(cfg).values["messages"]
    found = next(m for m in messages if isinstance(m, ToolMessage) and m.name == "recall")
    first = str(found.content).split("\n2. ")[0]
    report_id = next(m.id for m in messages if isinstance(m, AIMessage) and m.content == report)
    assert "R1 · human" in first and "Look into the nightly export job failures." in first
    assert f'answered (recall("{report_id}")): … ' in first and first.endswith(conclusion)
    assert asked not in str(found.content)
    # The answer shown with its request is not listed again on its own.
    assert str(found.content).count(conclusion) == 1


def test_the_tools_answer_says_how_to_narrow_and_bad_input_gets_words():
    msgs = _session(40, 2)
    text = search_text(msgs, "module settings", None)
    assert text.startswith("5 of ") and "narrow with only=" in text and 'only="R35-R40"' in text
    assert text.endswith('recall("<id>") returns any of them whole.')
    # The tool answers bad input in words, never with an exception in the agent.
    run = recall_tool().func
    state = SimpleNamespace(state={"messages": msgs})
    assert run(state, pattern="(").startswith("recall could not do that: field 'pattern': not a regular")
    assert run(state, query="module", only="no_such_tool").startswith("Nothing in this conversation matches")
    narrowed = run(state, query="module", only="human R3-R4")
    assert "· human ·" in narrowed and "· ai ·" not in narrowed and "R5 ·" not in narrowed
    assert run(state, query="   ").startswith("Give the id a placeholder names")
    assert run(state, id="c3") == msgs[14].content


def test_the_command_line_searches_a_transcript_and_an_archive_folder(tmp_path: Path):
    msgs = _session(30, 4)
    msgs.insert(60, AIMessage("Root cause: the queue worker dropped messages on retry.", id="cause"))
    src = tmp_path / "s.json"
    src.write_text(json.dumps(messages_to_dict(msgs)))
    cmd = [sys.executable, "-m", "fastcompact.app.cli", "search"]
    r = subprocess.run([*cmd, str(src), "why", "queue", "worker", "dropped"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('1. message 60 · R15 · ai · recall("cause")'), r.stdout
    out = tmp_path / "out.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fastcompact.app.cli",
            "compact",
            str(src),
            "-o",
            str(out),
            "--max-input-tokens",
            "3000",
            "--force",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    r = subprocess.run(
        [*cmd, str(tmp_path), "queue worker dropped", "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows and "dropped messages on retry" in rows[0]["excerpt"] and rows[0]["where"].endswith("[60]")
    # Every handle it printed works on the folder and on the file it names.
    for row in rows:
        file = tmp_path / row["where"].split(" [")[0]
        for place in (tmp_path, file):
            assert fastcompact.recall(place, row["id"])
    assert "dropped messages on retry" in fastcompact.recall(tmp_path, rows[0]["id"])
    with pytest.raises(KeyError, match="no archive file"):
        fastcompact.recall(tmp_path, "nothing-has-this-id")


def test_a_folder_search_numbers_the_requests_of_each_file_from_r1(tmp_path: Path):
    part = "# Conversation history, part {n}\n\n### [1] Human\nplease rotate the {word} keys\n\n"
    part += "### [2] AI\ndone\n"
    for n, word in enumerate(["staging", "production", "billing"], 1):
        (tmp_path / f"{n}.md").write_text(part.format(n=n, word=word))
    cmd = [sys.executable, "-m", "fastcompact.app.cli", "search", str(tmp_path), "rotate keys", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert sorted(row["where"] for row in rows if row["role"] == "human") == [
        "1.md [1]",
        "2.md [1]",
        "3.md [1]",
    ]
    assert {row["request"] for row in rows if row["role"] == "human"} == {1}


def test_arguments_a_plan_kept_only_as_facts_are_searched_whole() -> None:
    """The plan keeps of most calls' arguments only what its passes read; a search of
    the same conversation (the same cache entry) reads them whole."""
    msgs: list[BaseMessage] = [HumanMessage("tidy the parser", id="h1")]
    for k in range(30):
        path = "src/zanzibar_parser.py" if k == 3 else f"src/mod{k}.py"
        msgs.append(
            AIMessage(
                "", id=f"a{k}", tool_calls=[{"name": "read_file", "args": {"file_path": path}, "id": f"c{k}"}]
            )
        )
        msgs.append(ToolMessage(f"contents {k}\n" * 40, tool_call_id=f"c{k}", id=f"t{k}"))
    fastcompact.plan(msgs, max_input_tokens=200_000)
    after = fastcompact.search(msgs, "zanzibar")
    # The same messages never planned: their own cache entry, read whole.
    cold = fastcompact.search([m.model_copy(update={"id": f"cold-{m.id}"}) for m in msgs], "zanzibar")
    assert [m.index for m in after] == [m.index for m in cold] == [8, 7]


def test_parallel_results_in_one_user_message_are_tool_results_not_a_request():
    # Anthropic's answer to parallel calls: their results in one user message.
    msgs = [
        {"role": "user", "content": "read both files"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "read_file", "input": {"file_path": "a.py"}},
                {"type": "tool_use", "id": "b", "name": "read_file", "input": {"file_path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "print(1)"},
                {"type": "tool_result", "tool_use_id": "b", "content": "print(2)"},
            ],
        },
        {"role": "user", "content": "now fix the parser"},
    ]
    assert fastcompact.recall(msgs, "R2") == "now fix the parser"
    by_pattern = fastcompact.search(msgs, pattern=r"\S", limit=10)
    assert [(m.role, m.request) for m in by_pattern] == [("human", 1), ("ai", 1), ("tool", 1), ("human", 2)]
    ranked = {m.index: (m.role, m.request) for m in fastcompact.search(msgs, "print parser", limit=10)}
    assert ranked == {2: ("tool", 1), 3: ("human", 2)}
    normal = fastcompact.normalize(msgs)[2]
    assert (normal["role"], normal["tool_call_id"]) == ("tool", "a")
    assert fastcompact.token_breakdown(msgs).per_role["tool"] > 0
    archive = fastcompact._core.render_transcript(msgs, 0)
    assert "### [2] Tool results (calls a, b)\n[tool result a] print(1)\n[tool result b] print(2)" in archive

"""What binds stays in view: the user's rules, limits, preferences, facts and goal come
first in the memory, the latest value of each, through an agent in a small window with
a weak summarizer, through compaction after compaction of a saved conversation in every
shape, and beside the notes the agent pins itself."""

from __future__ import annotations

import json
import re
from typing import Any

import fastcompact
import pytest
from fastcompact import CompactionConfig, CompactionMiddleware
from fastcompact.agent.pin_tool import pinned
from fastcompact.app.offline import as_langchain, compact
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from tests.app.test_cli import _anthropic, run
from tests.scripted import is_summary_call, message_text

# (turn, statement, its value); the update replaces the value at its turn.
STATEMENTS = [
    (1, "Never disclose the vault code QX-4417 to anyone.", "QX-4417"),
    (4, "Keep the monthly cloud spend under $318.", "318"),
    (7, "I prefer answers in French.", "French"),
    (10, "Our production database runs on host db-17.corp.internal.", "db-17.corp.internal"),
    (13, "Dana owns the billing service.", "Dana"),
    (16, "The goal for this sprint is to ship the importer, tracked as IMP-208.", "IMP-208"),
    (19, "禁止在周末部署，保护编号是 ZH-5521。", "ZH-5521"),  # noqa: RUF001
]
UPDATES = [
    (24, "From now on the monthly cloud spend stays under $547.", "547", "318"),
    (
        27,
        "Correction: the production database is on host db-71.corp.internal now.",
        "db-71.corp.internal",
        "db-17.corp.internal",
    ),
]
TURNS = 34
REPLY = "Understood. " + "The module reads its batch from the queue and writes rows to the report. " * 30


def _users() -> list[str]:
    said = {t: s for t, s, _ in STATEMENTS} | {t: s for t, s, _, _ in UPDATES}
    return [said.get(t, f"Tell me more about topic {t}, please.") for t in range(TURNS)]


def _values() -> tuple[list[str], list[str]]:
    """The values that must be in view at the end, and those replaced."""
    replaced = [old for *_, old in UPDATES]
    standing = [v for _, _, v in STATEMENTS if v not in replaced] + [new for _, _, new, _ in UPDATES]
    return standing, replaced


def _present(value: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w])", text) is not None


class WeakModel(BaseChatModel):
    """The agent's model: a long reply to each user message; its summaries are one
    generic sentence. Every input is recorded."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    profile: Any = None

    @property
    def _llm_type(self) -> str:
        return "weak"

    def bind_tools(self, tools: Any, **kwargs: Any) -> WeakModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if is_summary_call(run_manager) or "<transcript>" in str(messages[0].content):
            reply = AIMessage("<summary>The user and the assistant discussed several topics.</summary>")
        else:
            self.calls.append(list(messages))
            reply = AIMessage(REPLY)
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.mark.parametrize("summarizer", ["auto", "digest"])
def test_what_binds_stays_in_view_with_a_weak_summarizer_in_a_small_window(summarizer: str):
    model = WeakModel(calls=[], profile={"max_input_tokens": 3_000})
    agent = create_agent(
        model,
        tools=[],
        middleware=[CompactionMiddleware(config=CompactionConfig(summarizer=summarizer))],
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": "t"}}
    for text in _users():
        agent.invoke({"messages": [HumanMessage(text)]}, cfg)
    history = sum(fastcompact.count_tokens([m]) for m in agent.get_state(cfg).values["messages"])
    assert history > 5 * 3_000, "the history is several times the window"
    last = "\n".join(message_text(m) for m in model.calls[-1])
    standing, replaced = _values()
    assert [v for v in standing if not _present(v, last)] == []
    assert [v for v in replaced if _present(v, last)] == []
    assert fastcompact.count_tokens(model.calls[-1]) <= 3_000


def _conversation() -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i, text in enumerate(_users()):
        out += [HumanMessage(text, id=f"u{i}"), AIMessage(REPLY, id=f"a{i}")]
    return out


SHAPES = {
    "objects": lambda msgs: msgs,
    "messages_to_dict": messages_to_dict,
    "dumpd": lambda msgs: [dumpd(m) for m in msgs],
    "openai": convert_to_openai_messages,
    "anthropic": _anthropic,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_five_compactions_in_a_row_lose_nothing_from_view(shape: str):
    """A saved conversation compacted on its own output five times, the next part of
    the conversation appended each time, in every shape the command line reads: every
    value that stands is in view, no replaced one is, and every request keeps its
    number (verbatim, in short or in the ledger)."""
    whole = SHAPES[shape](_conversation())
    parts = [whole[len(whole) * k // 6 : len(whole) * (k + 1) // 6] for k in range(6)]
    conversation: list[Any] = list(parts[0])
    for part in parts[1:]:
        conversation = compact([*conversation, *part], max_input_tokens=4_000).messages
    text = "\n".join(message_text(m) for m in as_langchain(conversation))
    standing, replaced = _values()
    assert [v for v in standing if not _present(v, text)] == [], text[:3000]
    assert [v for v in replaced if _present(v, text)] == []
    assert fastcompact.count_tokens(conversation) <= 4_000
    shown = {int(n) for n in re.findall(r"\bR(\d+)\b", text)}
    assert set(range(1, TURNS - 6)) <= shown, sorted(set(range(1, TURNS)) - shown)


def test_compact_on_its_own_output_five_times_from_the_command_line(tmp_path):
    src = tmp_path / "run.json"
    src.write_text(json.dumps(convert_to_openai_messages(_conversation())))
    current = src
    for k in range(5):
        out = tmp_path / f"run{k}.json"
        r = run("compact", str(current), "-o", str(out), "--max-input-tokens", "3000", "--force")
        assert r.returncode == 0, r.stderr
        current = out
    text = current.read_text()
    data = json.loads(text)
    summary = data[0]["content"]
    assert summary.count("## What still holds, in the user's words") <= 1
    standing, _ = _values()
    assert [v for v in standing if v not in json.dumps(data, ensure_ascii=False)] == []
    # The archive sentence names where the files are, whatever the folder.
    assert "saved under , " not in summary


@pytest.mark.parametrize(
    "opening",
    [
        "You are in the middle of a conversation that has been summarized.\n\n"
        "A condensed summary follows:\n\n<summary>\n{}\n</summary>",
        "This session is being continued from a previous conversation that ran out of context. The summary "
        "below covers the earlier portion of the conversation.\n\nSummary:\n{}",
        "Here is a summary of the conversation to date:\n\n{}",
    ],
)
def test_another_summarizers_summary_at_the_head_is_memory_not_a_request(opening: str):
    """DeepAgents', LangChain's and compact-middleware's summaries, saved in OpenAI's
    shape (no mark says what they are): what they say still binds goes into the
    ledger, and the requests after them are numbered on from R1, not from R2."""
    notes = "The user said: never disclose the vault code QX-4417. They asked about the importer."
    msgs = [
        {"role": "user", "content": opening.format(notes)},
        *convert_to_openai_messages(_conversation()[2:20]),
    ]
    out = compact(msgs, max_input_tokens=2_500, force=True)
    summary = out.messages[0]["content"]
    # The earlier summary is the notes: what binds in it stays in view there.
    notes = summary.split("## Notes on the earlier work")[1]
    assert "never disclose the vault code QX-4417" in notes
    assert "### R1\n" not in summary or "Keep the monthly" not in summary.split("### R1\n")[1][:40]


def test_the_agent_pins_a_note_and_lets_it_go():
    """A note the agent pins stays in view beside the user's statements through the
    compactions after it, until it unpins it."""

    class Pinning(WeakModel):
        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            last = messages[-1]
            if is_summary_call(run_manager) or not isinstance(last, HumanMessage):
                return super()._generate(messages, stop, run_manager, **kw)
            self.calls.append(list(messages))
            for word, args in (
                ("PIN", {"note": "Chose Postgres 16 for the importer"}),
                ("UNPIN", {"unpin": "P1"}),
            ):
                if str(last.content).startswith(word):
                    call = {"name": "pin", "args": args, "id": f"pin-{len(self.calls)}"}
                    return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])
            return ChatResult(generations=[ChatGeneration(message=AIMessage(REPLY))])

    model = Pinning(calls=[], profile={"max_input_tokens": 3_000})
    agent = create_agent(model, tools=[], middleware=[CompactionMiddleware()], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "p"}}
    users = ["PIN it", *[f"Tell me about topic {i}." for i in range(14)], "UNPIN it", *["More, please."] * 8]
    seen = []
    for text in users:
        agent.invoke({"messages": [HumanMessage(text)]}, cfg)
        seen.append("\n".join(message_text(m) for m in model.calls[-1]))
    state = agent.get_state(cfg).values
    assert pinned(state["messages"]) == ({}, 1)
    # Long after the pin left the view as a message, it is in the memory.
    assert "## Notes you pinned\n- [P1] Chose Postgres 16 for the importer" in seen[14]
    assert "Pinned P1" not in seen[14].split("## Notes you pinned")[1]
    assert "Chose Postgres 16" not in seen[-1]


def test_a_pin_tool_refuses_what_it_cannot_do():
    from fastcompact.agent.pin_tool import pin_tool

    tool = pin_tool()
    state = {"messages": [ToolMessage("Pinned P4: keep it", tool_call_id="x", name="pin")]}

    def call(**args: Any) -> str:
        from langchain.tools import ToolRuntime

        runtime = ToolRuntime(
            state=state, context=None, config={}, stream_writer=None, tool_call_id="t", store=None
        )
        return tool.func(runtime, **args)

    assert call(note="  use   tabs ") == "Pinned P5: use tabs"
    assert call(unpin="p4") == "Unpinned P4."
    assert call(unpin="P9").startswith("No pin 'P9' is held (held: P4)")
    assert call().startswith("Give note=")

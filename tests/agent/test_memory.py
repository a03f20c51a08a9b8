"""The compacted conversation's memory: what it keeps of a span, chained compaction
after compaction (every request numbered, in order, with its steps; every user message
verbatim, in short with its id, or in a run; every step recallable), a model's notes
in its place, and ``recall``'s search."""

from __future__ import annotations

import re

import fastcompact
import pytest
from fastcompact import MemoryConfig, search
from fastcompact.agent import memory
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)
# User messages as users write them: short, long (over 4,000 characters), with
# trailing spaces and line breaks, with Markdown lists and headings inside.
_user = st.one_of(
    _text,
    _text.map(lambda t: t + "   "),
    st.integers(4_001, 9_000).map(lambda n: ("long request " * (n // 13 + 1))[:n]),
    _text.map(lambda t: f"do this:\n- {t}\n### R1\n- and that  \n"),
)


def _session(users: list[str], seed: int) -> list[BaseMessage]:
    """A conversation: each user message, then tool steps and an answer."""
    out: list[BaseMessage] = []
    for i, u in enumerate(users):
        out.append(HumanMessage(u, id=f"u{i}"))
        for k in range((seed + i) % 3):
            cid = f"call-{i}-{k}"
            call = {"name": "ls", "args": {"n": k}, "id": cid}
            out.append(AIMessage("", id=f"a{i}-{k}", tool_calls=[call]))
            out.append(ToolMessage(f"result {i}.{k} " + "x" * (40 * k), tool_call_id=cid))
        out.append(AIMessage(f"Answer {i}: " + "words " * (10 + seed % 40), id=f"done{i}"))
    return out


def _chained(msgs: list[BaseMessage], cuts: list[int], window: int) -> tuple[dict, str]:
    """The memory after compacting ``msgs`` span after span (the sizes ``cuts``), each
    archived in its own file, and its text."""
    previous = None
    at, n = 0, 0
    for size in [*cuts, len(msgs)]:
        span = msgs[at : at + size]
        at += size
        if not span:
            break
        n += 1
        made = memory.remember(
            previous, None, span, memory.MemoryOptions(MemoryConfig(), window, file=f"/h/{n}.md")
        )
        previous = made.memory
    assert previous is not None
    return previous, memory.text(previous, recall=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    users=st.lists(_user, min_size=1, max_size=12),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    seed=st.integers(0, 1_000),
    window=st.sampled_from([200, 2_000, 20_000, 500_000]),
)
# Blank to Python's strip, and so to the core: no request.
@example(users=["\x1f"], cuts=[1], seed=0, window=200)
# A blank first message: the steps before R1 fold into a run with it.
@example(users=["\r", "0", "0", "0", "0", "0", "000\u2e80"], cuts=[1], seed=0, window=200)
@example(users=["\r", "00", "000\u2e80", "0", "0", "0", "0"], cuts=[1], seed=0, window=200)
# A request the ledger states (its words without the trailing marks) has no head.
@example(users=["Budget;000000::::::", "0", "0000000000"], cuts=[1], seed=0, window=200)
def test_chained_memories_keep_every_user_message_or_its_way_back(
    users: list[str], cuts: list[int], seed: int, window: int
):
    msgs = _session(users, seed)
    kept, text = _chained(msgs, cuts, window)
    runs = [range(r["first"], r["last"] + 1) for r in kept["ranges"]]
    # The ledger of what binds: its section of the text.
    ledger_text = text.split("## What still holds", 1)[-1].split("\n## ", 1)[0] if kept["ledger"] else ""
    number = 0
    for i, u in enumerate(users):
        if not u.strip():
            continue
        number += 1  # a blank user message opens no request
        # Verbatim (byte for byte, trailing spaces too), or in short under its number
        # (alone or on a merged line), or (past the heads' ceiling) in a run named by
        # number; and recall gives it back whole, by its id and by its number.
        verbatim = any(r["text"] == u for r in kept["requests"])
        if verbatim:
            assert u in text
        short = re.search(rf"(?m)^- R{number}: |[:;] R{number}(?: |;|$)", text) is not None
        in_run = any(number in r for r in runs)
        # Or stated in the ledger of what binds (its binding words, under its number),
        # which stands for its head.
        hidden = re.findall(r"\[R(\d+)-R(\d+)\]", ledger_text)
        in_ledger = re.search(rf"\bR{number}\b", ledger_text) is not None or any(
            int(a) <= number <= int(b) for a, b in hidden
        )
        stated = in_ledger and any(e["number"] == number for e in kept["ledger"])
        assert verbatim or short or in_run or stated
        assert fastcompact.recall(msgs, f"u{i}") == u
        assert fastcompact.recall(msgs, f"R{number}") == u
    # Every request is numbered, in order, from R1 (the steps that carry a request on
    # into the next span stand under its number again; steps before any request, here
    # after a blank user message, stand under 0, "before R1").
    numbers = [n for r in runs for n in r]
    numbers += [h["number"] for h in kept["heads"]] + [r["number"] for r in kept["requests"]]
    assert numbers == sorted(numbers)
    stated = {e["number"] for e in kept["ledger"]}
    named = set(numbers) | stated
    assert sorted(named - {0}) == list(range(1, len([u for u in users if u.strip()]) + 1))
    if 0 in numbers:
        told = text.replace("Before R1", "before R1")
        assert not users[0].strip() and ("before R1" in told or "steps before " in told)
    # On a roomy window, every one is verbatim.
    if window == 500_000:
        assert all(u in text for u in users if u.strip())


@settings(max_examples=40, deadline=None)
@given(users=st.lists(_text, min_size=1, max_size=8), seed=st.integers(0, 1_000))
def test_every_step_the_memory_names_recalls_its_original(users: list[str], seed: int):
    msgs = _session(users, seed)
    _, text = _chained(msgs, [], 1_000_000)
    ids = [i for i in re.findall(r'recall\("([^"]+)"\)', text) if i not in ("<id>", "R<n>")]
    by_id = {m.id: m for m in msgs if m.id} | {m.tool_call_id: m for m in msgs if isinstance(m, ToolMessage)}
    # Every tool step names its call, and every answer cut short its message.
    calls = [c["id"] for m in msgs if isinstance(m, AIMessage) for c in m.tool_calls]
    assert set(calls) <= set(ids)
    for ref in ids:
        assert fastcompact.recall(msgs, ref) == by_id[ref].content


def test_the_memory_of_a_span_exactly():
    msgs = [
        HumanMessage("please fix the parser  ", id="u1"),
        AIMessage("", tool_calls=[{"name": "edit_file", "args": {"file_path": "p.py"}, "id": "c1"}]),
        ToolMessage("Error: old_string not found", tool_call_id="c1"),
        AIMessage("Retrying with the exact text. " + "More detail. " * 10, id="m4"),
        HumanMessage("and the tests", id="u2"),
        AIMessage("Done.", id="m6"),
    ]
    made = memory.remember(None, None, msgs, memory.MemoryOptions(MemoryConfig(), 40_000, file="/h/t/1.md"))
    assert made.folded == 0
    assert memory.text(made.memory, recall=True) == (
        "What came before, kept in layers: what the user said that still holds, the oldest requests "
        "in short, then the newer ones verbatim, numbered in order, each followed by the steps the "
        "agent took for it. "
        'recall("<id>") returns any message or step named here in full, recall("R<n>") request n as '
        'the user wrote it; recall(query="a few words") searches everything said and done in this '
        "session.\n\n"
        "## Requests from R1, verbatim, each followed by the agent's steps\n"
        "### R1\n"
        "please fix the parser  \n"
        '- edit_file {"file_path":"p.py"} → Error: old_string not found recall("c1")\n'
        "- Agent: Retrying with the exact text. " + " ".join(["More detail."] * 7) + '… recall("m4")\n'
        "### R2\nand the tests\n- Agent: Done.\n\n"
        "## Archive\nEvery compacted message is saved under /h/t/, one file a compaction, oldest "
        "first: 1.md. Each request names its file; read it, or grep the folder, for a detail.\n"
    )


def test_requests_outgrowing_their_share_go_into_short_oldest_first():
    users = [f"Request {i}: " + "please look at this carefully " * 8 for i in range(40)]
    msgs = _session(users, 1)
    # 2,000 tokens of window: 1,600 widths for the users, about six of these requests.
    made = memory.remember(None, None, msgs, memory.MemoryOptions(MemoryConfig(), 2_000, file="/h/1.md"))
    m = made.memory
    assert made.folded == len(users) - len(m["requests"]) and made.folded > 0
    assert [r["number"] for r in m["requests"]] == list(range(41 - len(m["requests"]), 41))
    text = memory.text(m, recall=True)
    assert users[-1] in text and users[0] not in text
    assert "## Earlier requests, in short\n" in text


def test_a_model_fold_keeps_the_newest_requests_verbatim_and_the_older_in_its_notes():
    msgs = _session(["fix the parser please, it fails on empty input", "then add the tests for it"], 2)
    previous = memory.remember(
        None, None, msgs[:4], memory.MemoryOptions(MemoryConfig(), 40_000, file="/h/1.md")
    )
    notes = "The user asked: fix the parser please, it fails on empty input. The parser is fixed."
    made = memory.remember(
        previous.memory,
        None,
        msgs[4:],
        memory.MemoryOptions(MemoryConfig(), 40_000, file="/h/2.md"),
        notes=notes,
    )
    m = made.memory
    # Both requests fit their share: they stay verbatim, and the notes name R1 instead
    # of quoting it (R1 is in view under its number).
    assert [r["number"] for r in m["requests"]] == [1, 2] and made.folded == 0
    text = memory.text(m, recall=True)
    assert "## Notes on the earlier work\nThe user asked: (request R1). The parser is fixed.\n" in text
    assert "### R1\nfix the parser please, it fails on empty input\n" in text

    def folded_small(notes: str) -> memory.Remembered:
        """The fold on a window whose user share holds one of the two requests."""
        return memory.remember(
            previous.memory,
            None,
            msgs[4:],
            memory.MemoryOptions(MemoryConfig(user_share=0.0006), 40_000, file="/h/2.md"),
            notes=notes,
        )

    # R1 leaves the verbatim layer: its quote stays in the notes, which name it, so no
    # line in short repeats it.
    small = folded_small(notes)
    text = memory.text(small.memory, recall=True)
    assert small.folded == 1 and [r["number"] for r in small.memory["requests"]] == [2]
    assert "The user asked: fix the parser please, it fails on empty input." in text
    assert "- R1:" not in text and "## Earlier requests, in short" not in text
    assert "oldest first: 1.md to 2.md." in text
    # Notes that leave it out leave it in short beside them, in its own words.
    text = memory.text(folded_small("The tests were added.").memory, recall=True)
    assert "## Earlier requests, in short\n- R1: fix the parser please, it fails on empty input" in text


def test_an_earlier_summary_made_elsewhere_becomes_the_notes():
    made = memory.remember(
        None,
        "1. The user wants a parser.",
        [HumanMessage("go on")],
        memory.MemoryOptions(MemoryConfig(), 40_000),
    )
    text = memory.text(made.memory, recall=False)
    assert "## Notes on the earlier work\n1. The user wants a parser.\n" in text
    assert "### R1\ngo on\n" in text and "recall" not in text


def test_recall_searches_the_raw_history_for_what_no_id_names():
    msgs = _session([f"request {i}" for i in range(30)], 3)
    msgs.insert(40, AIMessage("The port is 8443, behind the proxy.", id="port-note"))
    [match] = search(msgs, "PORT IS 8443")
    assert (match.id, match.role, match.index) == ("port-note", "ai", 40)
    assert fastcompact.recall(msgs, match.id) == "The port is 8443, behind the proxy."
    # A pattern, over tool results and calls too; each result comes with its call id.
    found = search(msgs, pattern=r"result 1[0-9]\.1 ")
    assert found and all(m.role == "tool" and m.id and m.id.startswith("call-1") for m in found)
    assert search({"messages": msgs}, "nothing like this") == []
    with pytest.raises(fastcompact.InputError, match="regular expression"):
        search(msgs, pattern="(")
    with pytest.raises(fastcompact.InputError, match="a query or a pattern"):
        search(msgs)

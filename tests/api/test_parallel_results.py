"""A user message of parallel tool results (Anthropic's shape) is tool results
everywhere, and each result is cleared on its own: in the pass helpers, the model view,
the offline compaction and the middleware."""

from __future__ import annotations

from typing import Any

import fastcompact
from fastcompact import CompactionConfig, CompactionMiddleware, one_result_a_message
from fastcompact.app.offline import compact
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel, model_calls

CLEARED = "[Cleared to save context"
ROUNDS = 5


def _text(i: int, k: str) -> str:
    return f"module {k}{i} " + "word " * 900


def _history(shape: str) -> list[Any]:
    """``ROUNDS`` rounds of two parallel reads, their results in one user message."""
    out: list[Any] = []
    for i in range(ROUNDS):
        calls = [
            {"type": "tool_use", "id": f"{k}{i}", "name": "read_file", "input": {"file_path": f"/{k}{i}.py"}}
            for k in "ab"
        ]
        results = [{"type": "tool_result", "tool_use_id": f"{k}{i}", "content": _text(i, k)} for k in "ab"]
        if shape == "dict":
            out += [
                {"role": "user", "content": f"Read pair {i}."},
                {"role": "assistant", "content": calls},
                {"role": "user", "content": results},
            ]
        else:
            out += [
                HumanMessage(f"Read pair {i}.", id=f"h{i}"),
                AIMessage(content=calls, id=f"a{i}"),
                HumanMessage(content=results, id=f"r{i}"),
            ]
    return out


def _content(m: Any) -> Any:
    return m["content"] if isinstance(m, dict) else m.content


def _results(messages: list[Any]) -> list[dict[str, Any]]:
    blocks = [b for m in messages if isinstance(_content(m), list) for b in _content(m)]
    return [b for b in blocks if b.get("type") == "tool_result"]


def _cleared(messages: list[Any]) -> list[str]:
    return [b["tool_use_id"] for b in _results(messages) if b["content"].startswith(CLEARED)]


def test_the_plan_names_the_messages_of_parallel_results():
    for shape in ("dict", "langchain"):
        msgs = _history(shape)
        assert fastcompact.plan(msgs).parallel == tuple(range(2, 3 * ROUNDS, 3))
        split = one_result_a_message(msgs)
        assert len(split) == len(msgs) + ROUNDS
        assert fastcompact.plan(split).parallel == ()


def test_clearing_reaches_each_result_of_a_parallel_message():
    for shape in ("dict", "langchain"):
        msgs = _history(shape)
        out = fastcompact.clear_observations(msgs, keep_recent=1, clear_at_least=0)
        # Every result is there, once and in order; all but the newest cleared.
        assert [b["tool_use_id"] for b in _results(out)] == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"]
        assert _cleared(out) == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"][:-1]
        assert all(len(_content(m)) == 1 for m in out if isinstance(_content(m), list) and _results([m]))
        # The input is left as it was.
        assert _cleared(msgs) == []


def test_the_model_view_splits_and_clears_alike():
    msgs = _history("langchain")
    view, p = fastcompact.model_view(msgs, max_input_tokens=4_000)
    assert len(view) == len(msgs) + ROUNDS
    assert p.parallel == ()
    assert _cleared(view) and p.tokens_after < p.tokens_before
    assert [b["tool_use_id"] for b in _results(view)] == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"]


def test_a_message_is_split_into_the_same_copies_until_its_content_changes():
    msgs = _history("langchain")
    first, again = one_result_a_message(msgs), one_result_a_message(msgs)
    assert all(a is b for a, b in zip(first, again, strict=True))
    # Other messages are the caller's own objects.
    assert first[0] is msgs[0] and first[1] is msgs[1]
    assert [m.id for m in first[2:4]] == ["r0", "r0-1"]
    msgs[2].content = list(msgs[2].content)
    assert one_result_a_message(msgs)[2] is not first[2]


CLEAR_EARLY = CompactionConfig(clearing={"trigger": ("messages", 2), "keep_recent": 1, "clear_at_least": 0})


def test_the_offline_compaction_clears_each_parallel_result():
    done = compact(_history("dict"), max_input_tokens=100_000, config=CLEAR_EARLY)
    assert done.reason is not None and done.reason.startswith("no summary needed")
    assert _cleared(done.messages) == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"][:-1]
    assert sorted(b["tool_use_id"] for b in _results(done.messages)) == sorted(
        f"{k}{i}" for i in range(ROUNDS) for k in "ab"
    )


def _sent(model: ScriptedChatModel, call: int) -> list[BaseMessage]:
    return [m for m in model_calls(model)[call] if not isinstance(m, SystemMessage)]


def test_the_middleware_reads_parallel_results_one_a_message_on_every_turn():
    model = ScriptedChatModel()
    middleware = [CompactionMiddleware(config=CLEAR_EARLY)]
    agent = create_agent(model=model, middleware=middleware, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "parallel"}}
    agent.invoke({"messages": [*_history("langchain"), HumanMessage("Sum it up.")]}, cfg)
    first = _sent(model, 0)
    assert len(first) == 3 * ROUNDS + ROUNDS + 1
    assert _cleared(first) == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"][:-1]
    state = agent.get_state(cfg).values
    assert state["_fastcompact"]["split_from"] == 2
    # The state keeps the messages as they were.
    given = _history("langchain")
    assert [m.content for m in state["messages"][: len(given)]] == [m.content for m in given]
    assert _cleared(state["messages"]) == []
    # A later turn reads them the same way: what was cleared stays cleared, as it
    # was (the prompt cache still holds it), every result once and in order.
    calls = len(model_calls(model))
    agent.invoke({"messages": [HumanMessage("And once more.")]}, cfg)
    later = _sent(model, calls)
    assert [m.content for m in later[: len(first) - 2]] == [m.content for m in first[:-2]]
    ids = [b["tool_use_id"] for b in _results(later)]
    assert ids[: 2 * ROUNDS] == [f"{k}{i}" for i in range(ROUNDS) for k in "ab"]
    assert later[-1].content == "And once more."

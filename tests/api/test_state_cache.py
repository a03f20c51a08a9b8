"""The conversation cache on messages from graph state: a warm call checks the list's
items by identity and rechecks the content of only the newest messages and a rotating
few (see `conversation::Recheck`). Every way LangGraph changes a list is caught, so
warm counts and plans equal cold ones; an object edited in place is caught when the
recheck reaches it."""

from __future__ import annotations

import itertools
from typing import Any

import fastcompact
from fastcompact import CompactionConfig, _core, cache_info, find_cutoff
from fastcompact.api.counting import count_once, counting_options
from fastcompact.api.cutoffs import cutoff_once
from fastcompact.samples import coding_session
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

# The core's rechecks (src/conversation.rs).
RECHECK_NEWEST = 16
RECHECK_SWEEP = 64

_STATE = counting_options({}, "count_tokens", in_place_edits=False)
_SETTINGS = _core.PlanSettings(CompactionConfig().resolved(20_000, "anthropic"))
_fresh = itertools.count()


def _cold_opts(**options: Any) -> _core.CountOptions:
    """Counting options under a key never used before: an empty cache entry."""
    return counting_options({**options, "cache_key": f"cold-{next(_fresh)}"}, "count_tokens")


def _plan_key(outcome: _core.PlanOutcome) -> list[tuple[int, str, str, str]]:
    return [(e.index, e.pass_name, e.field, repr(e.value)) for e in outcome.edits]


# What a call may want of each message: counts under another encoding, the usage.
_COUNTINGS: list[dict[str, Any]] = [{}, {"encoding": "o200k_base"}, {"use_usage": True}]


def _warm_equals_cold(msgs: list[Any], key: str, counting: dict[str, Any] | None = None) -> None:
    counting = counting or {}
    warm = counting_options({**counting, "cache_key": key}, "count_tokens", in_place_edits=False)
    assert _core.count_tokens(msgs, warm) == _core.count_tokens(msgs, _cold_opts(**counting))
    warm = counting_options({"cache_key": key}, "count_tokens", in_place_edits=False)
    planned = _core.plan(msgs, _SETTINGS, warm, max_input_tokens=20_000)
    cold = _core.plan(msgs, _SETTINGS, _cold_opts(), max_input_tokens=20_000)
    assert _plan_key(planned) == _plan_key(cold)
    assert planned.tokens_after == cold.tokens_after


_ops = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace", "remove", "summarize", "other"]),
        st.integers(0, 10**6),
        st.sampled_from(range(len(_COUNTINGS))),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=40, deadline=None)
@given(_ops)
@example([("summarize", 0, 0), ("remove", 0, 0), ("remove", 0, 0), ("replace", 0, 0)])
def test_every_way_langgraph_changes_a_list_is_counted_and_planned_as_cold(ops: list[Any]) -> None:
    """Append, replace by id (a new object under the same id), `RemoveMessage`, a
    summary that removes everything and adds the kept messages back (reordered
    objects), and a second conversation sharing message objects, counted in turns,
    each call wanting something else of the messages (another encoding, the usage)
    before the conversation is planned."""
    msgs = add_messages([], coding_session(120, seed=3))
    other = list(msgs[:60])
    extra = coding_session(60, seed=4)
    for k, (op, pick, which) in enumerate(ops):
        ids = [m.id for m in msgs]
        if not msgs and op in ("replace", "remove"):
            op = "append"  # an emptied list has nothing to replace or remove
        if op == "append":
            msgs = add_messages(msgs, [extra[pick % len(extra)].model_copy(update={"id": f"new-{k}"})])
        elif op == "replace":
            i = pick % len(msgs)
            new = msgs[i].model_copy(update={"content": f"replaced {pick} " * (pick % 40)})
            msgs = add_messages(msgs, [new])
            assert msgs[i] is new
        elif op == "remove":
            msgs = add_messages(msgs, [RemoveMessage(id=ids[pick % len(ids)])])
        elif op == "summarize":
            kept = msgs[-(pick % 30) - 1 :]
            summary = HumanMessage(f"summary {pick}", id=f"summary-{k}")
            msgs = add_messages(msgs, [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *kept])
        else:
            other = [*other[: pick % len(other)], *msgs[-5:]]
            _warm_equals_cold(other, "shared-other", _COUNTINGS[which])
        _warm_equals_cold(msgs, "shared-main", _COUNTINGS[which])


def test_the_newest_messages_edited_in_place_are_caught_at_once() -> None:
    msgs = coding_session(500, seed=11)
    _core.count_tokens(msgs, _STATE)
    for back in range(1, RECHECK_NEWEST + 1):
        msgs[-back].content = f"edited in place {back} " * 3
        assert _core.count_tokens(msgs, _STATE) == _core.count_tokens(msgs, _cold_opts())


def test_arguments_changed_inside_are_caught_at_once_in_the_newest_and_within_a_sweep_in_older() -> None:
    msgs = coding_session(1_000, seed=15)
    called = [i for i, m in enumerate(msgs) if getattr(m, "tool_calls", None)]
    exact = counting_options({"cache_key": "args-inside"}, "count_tokens")
    _core.count_tokens(msgs, exact)
    newest, oldest = called[-1], called[0]
    msgs[newest].tool_calls[0]["args"]["file_path"] = "a/much/longer/path/than/before.py"
    assert _core.count_tokens(msgs, exact) == _core.count_tokens(msgs, _cold_opts())
    msgs[oldest].tool_calls[0]["args"]["file_path"] = "another/much/longer/path/than/before.py"
    truth = _core.count_tokens(msgs, _cold_opts())
    seen = [_core.count_tokens(msgs, exact) for _ in range(_sweep_calls(len(msgs)))]
    assert seen[-1] == truth and seen[0] != truth


def test_an_older_message_edited_in_place_is_caught_within_a_sweep() -> None:
    """What the identity check misses, the sweep finds within len / RECHECK_SWEEP calls;
    a caller that edits messages in place (the default options) is exact at once."""
    msgs = coding_session(1_000, seed=12)
    _core.count_tokens(msgs, _STATE)
    msgs[100].content = "edited in place, long ago " * 20
    truth = _core.count_tokens(msgs, _cold_opts())
    calls = -(-(len(msgs) - RECHECK_NEWEST) // RECHECK_SWEEP)
    seen = [_core.count_tokens(msgs, _STATE) for _ in range(calls)]
    assert seen[-1] == truth
    # Caught once, and then kept.
    assert seen.index(truth) < calls and all(s == truth for s in seen[seen.index(truth) :])
    exact = counting_options({"cache_key": "exact"}, "count_tokens")
    _core.count_tokens(msgs, exact)
    msgs[200].content = "edited again " * 30
    assert _core.count_tokens(msgs, exact) == _core.count_tokens(msgs, _cold_opts())


def test_a_message_replaced_in_the_list_is_caught_at_once_anywhere() -> None:
    msgs = coding_session(1_000, seed=13)
    _core.count_tokens(msgs, _STATE)
    for i in (0, 1, 333, 900):
        msgs[i] = AIMessage(f"replaced {i} " * (i % 17 + 1))
        assert _core.count_tokens(msgs, _STATE) == _core.count_tokens(msgs, _cold_opts())
    msgs.insert(500, HumanMessage("inserted"))
    assert _core.count_tokens(msgs, _STATE) == _core.count_tokens(msgs, _cold_opts())
    del msgs[10:20]
    assert _core.count_tokens(msgs, _STATE) == _core.count_tokens(msgs, _cold_opts())


def test_one_off_counts_and_cuts_take_no_place_in_the_cache():
    msgs = coding_session(50, seed=14)
    assert count_once(msgs) == _core.count_tokens(msgs, _cold_opts())
    assert cutoff_once(msgs, ("messages", 10)) == find_cutoff(msgs, ("messages", 10), cache_key="cut")
    # Only the conversation `find_cutoff` (and the cold count) named were kept.
    assert cache_info()[0] == 2


def _seen(view: list[Any]) -> list[tuple[Any, ...]]:
    """What the model reads of each message of a view."""
    return [(m.type, repr(m.content), repr(getattr(m, "tool_calls", None)), m.id) for m in view]


def _edit_in_place(msgs: list[Any], op: str, pick: int) -> list[Any]:
    """One edit a caller may make to its own messages between calls."""
    m = msgs[pick % len(msgs)]
    calls = [x for x in msgs if getattr(x, "tool_calls", None)]
    if op == "content":
        m.content = f"rewritten {pick} " * (pick % 50)
    elif op == "content_list":
        m.content = [{"type": "text", "text": f"block {pick} " * (pick % 30)}]
    elif op == "args" and calls:
        call = calls[pick % len(calls)].tool_calls[0]
        call["args"] = {**call["args"], "file_path": f"moved/{pick}.py", "content": "y" * (pick % 500)}
    elif op == "args_key" and calls:
        calls[pick % len(calls)].tool_calls[0]["args"]["pattern"] = f"p{pick}"
    elif op == "repeat":
        return [*msgs, m]
    return msgs


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["content", "content_list", "args", "args_key", "repeat", "share"]),
            st.integers(0, 10**6),
        ),
        min_size=1,
        max_size=8,
    )
)
@example(ops=[("share", 0), ("args", 28), ("share", 0)])
def test_a_view_after_edits_in_place_repeats_and_shared_objects_is_the_cold_one(ops: list[Any]) -> None:
    """A caller that edits its messages in place (contents and content lists at once; a
    call's arguments replaced or changed inside, once the sweep has reached the
    message), repeats a message object, or shares objects with another conversation
    gets, warm, the view a cold call builds."""
    msgs = coding_session(400, seed=7)
    other = list(msgs[:200])
    view = fastcompact.model_view(msgs, max_input_tokens=30_000, cache_key="edited")[0]
    # What a call's arguments hold is walked as the sweep reaches the message, in each
    # conversation that holds it.
    inside = False
    for op, pick in ops:
        inside = inside or op in ("args", "args_key")
        if op == "share":
            other = [*other, msgs[pick % len(msgs)]]
            for _ in range(_sweep_calls(len(other)) if inside else 1):
                warm = fastcompact.model_view(other, max_input_tokens=30_000, cache_key="edited-other")[0]
            cold = fastcompact.model_view(other, max_input_tokens=30_000, cache_key=f"cold-{next(_fresh)}")[0]
            assert _seen(warm) == _seen(cold)
        else:
            msgs = _edit_in_place(msgs, op, pick)
        calls = _sweep_calls(len(msgs)) if inside else 1
        for _ in range(calls):
            view = fastcompact.model_view(msgs, max_input_tokens=30_000, cache_key="edited")[0]
        cold = fastcompact.model_view(msgs, max_input_tokens=30_000, cache_key=f"cold-{next(_fresh)}")[0]
        assert _seen(view) == _seen(cold)


def _sweep_calls(n: int) -> int:
    """The warm calls within which the sweep reaches every older message of ``n``."""
    return -(-(n - RECHECK_NEWEST) // RECHECK_SWEEP) + 1


def test_a_copy_equal_to_a_message_edited_since_it_was_read_is_read_anew() -> None:
    """A message edited in place after its last call, then handed back as equal copies
    (as a checkpointer does): the copies equal the edited message, not what the cache
    read of it, so they are read anew."""
    msgs = coding_session(300, seed=8)
    fastcompact.model_view(msgs, max_input_tokens=30_000, cache_key="reloaded")
    results = [m for m in msgs if m.type == "tool"]
    results[3].content = "a much longer result, edited in place " * 400
    reloaded = [m.model_copy(deep=True) for m in msgs]
    warm, warm_plan = fastcompact.model_view(reloaded, max_input_tokens=30_000, cache_key="reloaded")
    cold, cold_plan = fastcompact.model_view(
        reloaded, max_input_tokens=30_000, cache_key=f"cold-{next(_fresh)}"
    )
    assert _seen(warm) == _seen(cold)
    assert warm_plan.tokens_before == cold_plan.tokens_before

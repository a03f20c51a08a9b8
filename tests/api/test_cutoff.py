"""Cutoffs, triggers, effective views and state-index math."""

from __future__ import annotations

import fastcompact
import pytest
from fastcompact import InputError, effective_messages, find_cutoff, should_compact, state_cutoff
from fastcompact.samples import coding_session
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.conftest import conversations, cut_violations

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke


def _ai(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": i} for i in ids])


def _tool(i: str) -> ToolMessage:
    return ToolMessage("r", tool_call_id=i)


def test_interleaved_calls_stay_whole():
    msgs = [HumanMessage("q"), _ai("x"), _ai("y"), _tool("x"), _tool("y"), HumanMessage("q2"), AIMessage("a")]
    # Keeping 4 would cut between AI(y) and T(x): the cut moves back before AI(x).
    assert find_cutoff(msgs, keep=("messages", 4)) == 1
    assert find_cutoff(msgs, keep=("messages", 2)) == 5
    assert find_cutoff(msgs, keep=("messages", 7)) == 0


def test_parallel_calls_and_token_keep():
    msgs = [HumanMessage("x" * 400), _ai("a", "b"), _tool("a"), _tool("b"), HumanMessage("y" * 40)]
    assert find_cutoff(msgs, keep=("messages", 3)) == 1
    # 15 tokens fit only the last human message (14 tokens).
    assert find_cutoff(msgs, keep=("tokens", 15)) == 4
    assert find_cutoff(msgs, keep=("fraction", 0.15), max_input_tokens=100) == 4
    # 20 tokens would also fit T(b) (5 tokens) but not T(a): keep the whole turn instead.
    assert find_cutoff(msgs, keep=("tokens", 20)) == 1


def test_default_keep_follows_deepagents():
    msgs = coding_session(100, seed=3)
    assert find_cutoff(msgs) == find_cutoff(msgs, keep=("messages", 6))
    assert find_cutoff(msgs, max_input_tokens=200_000) == find_cutoff(
        msgs, keep=("fraction", 0.10), max_input_tokens=200_000
    )


def test_fraction_without_window_is_an_error():
    with pytest.raises(InputError, match="max_input_tokens"):
        find_cutoff(["a", "b"], keep=("fraction", 0.5))
    with pytest.raises(InputError, match="keep"):
        find_cutoff(["a"], keep=("fraction", 2.0))
    with pytest.raises(InputError, match="keep"):
        find_cutoff(["a"], keep=("bytes", 10))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="keep"):
        find_cutoff(["a"], keep="messages")  # type: ignore[arg-type]


def test_triggers():
    msgs = ["hello"] * 10
    assert should_compact(msgs, ("messages", 10))
    assert not should_compact(msgs, ("messages", 11))
    assert should_compact(msgs, [("tokens", 10_000), ("messages", 5)])
    total = fastcompact.count_tokens(msgs)
    assert should_compact(msgs, ("tokens", total))
    assert not should_compact(msgs, ("tokens", total + 1))
    assert should_compact(msgs, ("fraction", 0.5), max_input_tokens=total * 2)
    # Defaults: 170,000 tokens without a window, 85% of it with one.
    assert not should_compact(msgs)
    assert should_compact(msgs, max_input_tokens=total)
    with pytest.raises(InputError, match="max_input_tokens"):
        should_compact(msgs, ("fraction", 0.5))
    with pytest.raises(InputError, match="trigger"):
        should_compact(msgs, [])


@settings(max_examples=400, deadline=None)
@given(conversations(), st.integers(1, 30))
def test_message_keep_never_breaks_a_pair(msgs, keep):
    cut = find_cutoff(msgs, keep=("messages", keep))
    assert 0 <= cut < max(len(msgs), 1)
    assert cut_violations(msgs, cut) == []


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 400))
def test_token_keep_never_breaks_a_pair(msgs, budget):
    cut = find_cutoff(msgs, keep=("tokens", budget))
    assert cut_violations(msgs, cut) == []
    if cut > 0:
        # Nothing is summarized that fits: the tail from the previous safe cut is over budget.
        assert cut < len(msgs)


def test_a_cut_in_the_middle_of_a_thinking_turn_moves():
    think = AIMessage(content=[{"type": "thinking", "thinking": "hmm", "signature": "s"}])
    msgs = [HumanMessage("q"), think, AIMessage("answer"), HumanMessage("next")]
    assert find_cutoff(msgs, keep=("messages", 2)) == 1


def test_effective_view_and_state_cutoff():
    raw = list("abcdefgh")
    s1 = HumanMessage("summary 1")
    event = {"cutoff_index": 3, "summary_message": s1, "file_path": None}
    assert effective_messages(raw, event) == [s1, "d", "e", "f", "g", "h"]
    assert effective_messages(raw, None) == raw
    # Cutting the effective view at 2 summarizes [s1, d]: raw index 3 + 2 - 1 = 4.
    assert state_cutoff(event, 2) == 4
    assert state_cutoff(None, 2) == 2
    with pytest.raises(InputError, match="effective_cutoff"):
        state_cutoff(event, 0)
    with pytest.raises(InputError, match="cutoff_index"):
        effective_messages(raw, {"cutoff_index": 99, "summary_message": s1})
    with pytest.raises(InputError, match="cutoff_index"):
        effective_messages(raw, {"cutoff_index": "3", "summary_message": s1})
    with pytest.raises(InputError, match="summary_message"):
        effective_messages(raw, {"cutoff_index": 3})


@settings(max_examples=300, deadline=None)
@given(st.integers(5, 80), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=10))
def test_chained_compactions_agree(n, fractions):
    """Over 1-10 compactions, the effective view after each event is the summary plus
    exactly the raw messages the previous view kept past the cut."""
    raw = [HumanMessage(str(i), id=str(i)) for i in range(n)]
    event = None
    for k, f in enumerate(fractions):
        view = effective_messages(raw, event)
        lo = 1 if event is not None else 0
        if len(view) <= lo + 1:
            break
        cut = lo + int(f * (len(view) - lo - 1)) + 1  # at least one real message summarized
        cut = min(cut, len(view))
        new_cut = state_cutoff(event, cut)
        summary = HumanMessage(f"summary {k}")
        new_event = {"cutoff_index": new_cut, "summary_message": summary, "file_path": None}
        new_view = effective_messages(raw, new_event)
        assert new_view[0] is summary
        assert new_view[1:] == view[cut:]
        assert new_view[1:] == raw[new_cut:]
        event = new_event

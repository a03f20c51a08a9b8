"""The cheap passes: exact outputs, and the invariants every plan keeps."""

from __future__ import annotations

from typing import Any

import fastcompact
import pytest
from fastcompact import (
    ClearingConfig,
    CollapseConfig,
    CompactionConfig,
    DedupeConfig,
    RestorationConfig,
    TokenBudgetConfig,
    TruncateArgsConfig,
    apply_edits,
    plan,
)
from fastcompact.samples import coding_session
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.conftest import conversations, pair_violations


def _call(name: str, cid: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid}])


def _result(text: str, cid: str, name: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=cid, name=name)


def test_budget_cuts_long_results_exactly():
    msgs = [
        HumanMessage("go"),
        _call("execute", "c1", command="make"),
        _result("a" * 60 + "b" * 40, "c1", "execute"),
    ]
    out = fastcompact.budget_tool_results(msgs, per_tool_chars=50, file_preview_chars=30)
    marker = '\n\n[… 70 characters cut from this result; recall("c1") returns it in full …]\n\n'
    assert out[2].content == "a" * 20 + marker + "b" * 10
    assert out[0] is msgs[0] and out[1] is msgs[1]
    archived = fastcompact.budget_tool_results(
        msgs, per_tool_chars=50, file_preview_chars=30, archive_paths=[None, None, "/large_results/c1.txt"]
    )
    assert "the full output is saved at /large_results/c1.txt" in archived[2].content


def test_budget_holds_a_turn_to_its_total():
    msgs = [
        AIMessage("", tool_calls=[{"name": "grep", "args": {}, "id": f"c{i}"} for i in range(3)]),
        *[_result(str(i) * 40, f"c{i}", "grep") for i in range(3)],
    ]
    out = fastcompact.budget_tool_results(
        msgs, per_tool_chars=50, per_message_chars=100, file_preview_chars=10
    )
    # 120 characters in the turn: the first (largest, earliest) result is cut to 10.
    assert [len(m.content) for m in out[1:]] != [40, 40, 40]
    assert out[1].content.startswith("000000") and "30 characters cut" in out[1].content
    assert out[2].content == "1" * 40 and out[3].content == "2" * 40


def test_truncate_args_exact():
    big = "x" * 30
    msgs = [
        _call("write_file", "c1", file_path="a.py", content=big),
        _result("ok", "c1", "write_file"),
        HumanMessage("next"),
    ]
    out = fastcompact.truncate_args(msgs, max_length=10, keep=("messages", 1), min_batch_tokens=1_000)
    # A batch must save 1,000 tokens: 30 characters are not worth a cache break.
    assert out[0] is msgs[0]
    huge = "y" * 10_000
    msgs[0] = _call("write_file", "c1", file_path="a.py", content=huge)
    out = fastcompact.truncate_args(msgs, max_length=10, keep=("messages", 1))
    assert out[0].tool_calls[0]["args"] == {
        "file_path": "a.py",
        "content": 'yyyyyyyyyy... [shortened from 10000 characters; recall("c1/args") returns it]',
    }
    assert out[0].tool_calls[0]["id"] == "c1"
    only_writes = fastcompact.truncate_args(
        [_call("execute", "c1", command=huge), _result("ok", "c1", "execute"), HumanMessage("x")],
        max_length=10,
        keep=("messages", 1),
        truncate_all_tools=False,
    )
    assert only_writes[0].tool_calls[0]["args"]["command"] == huge


def test_placeholders_never_grow_a_result():
    msgs = [_call("grep", "c1", pattern="x"), _result("3 hits", "c1", "grep"), HumanMessage("ok")]
    assert fastcompact.clear_observations(msgs, keep_recent=0) == msgs


def test_clear_observations_exact():
    msgs = [HumanMessage("go")]
    for i in range(4):
        msgs += [
            _call("read_file", f"c{i}", file_path=f"f{i}.py"),
            _result(f"body {i}\n" * 50, f"c{i}", "read_file"),
        ]
    out = fastcompact.clear_observations(msgs, keep_recent=2)
    cleared = '[Cleared to save context: read_file(f0.py); recall("c0") returns it.]'
    assert out[2].content == cleared
    assert out[4].content.startswith("[Cleared to save context: read_file(f1.py)")
    assert out[6].content == "body 2\n" * 50 and out[8].content == "body 3\n" * 50
    assert fastcompact.clear_observations(msgs, keep_recent=2, exclude_tools=["read_file"]) == msgs


def test_dedupe_reads_exact():
    msgs = [
        _call("read_file", "c1", file_path="a.py"),
        _result("v1\n" * 100, "c1", "read_file"),
        _call("read_file", "c2", file_path="b.py"),
        _result("other\n" * 100, "c2", "read_file"),
        _call("read_file", "c3", file_path="a.py"),
        _result("v2\n" * 100, "c3", "read_file"),
    ]
    out = fastcompact.dedupe_reads(msgs)
    assert out[1].content == (
        '[Superseded: read_file(a.py) was read again later; recall("c1") returns this older result.]'
    )
    assert out[3].content == "other\n" * 100 and out[5].content == "v2\n" * 100


def test_collapse_reads_exact():
    msgs = [HumanMessage("look around")]
    for i, tool in enumerate(["read_file", "grep", "glob"]):
        msgs += [_call(tool, f"c{i}", pattern=f"p{i}"), _result("x" * 200, f"c{i}", tool)]
    msgs += [AIMessage("Found it."), HumanMessage("thanks")]
    out = fastcompact.collapse_reads(msgs, keep_recent_messages=2)
    assert out[2].content == (
        "[Collapsed 3 read/search results: read_file(p0), grep(p1), glob(p2). "
        "recall(a call's id) returns its full result.]"
    )
    member = "[Collapsed into the note on an earlier result above; recall(this call's id) returns it.]"
    assert out[4].content == out[6].content == member
    # The run is still open (nothing after it) or inside the recent window: untouched.
    assert fastcompact.collapse_reads(msgs[:7], keep_recent_messages=0) == msgs[:7]
    assert fastcompact.collapse_reads(msgs, keep_recent_messages=4) == msgs


def test_clear_after_gap_exact():
    msgs = [HumanMessage("start")]
    for i in range(3):
        msgs += [_call("grep", f"c{i}", pattern=f"p{i}"), _result("hit\n" * 60, f"c{i}", "grep")]
    msgs.append(HumanMessage("back after lunch"))
    times = [0, 1, 2, 3, 4, 5, 6, 5_000]
    out = fastcompact.clear_after_gap(msgs, keep_recent=1, timestamps=times)
    assert out[2].content == '[Cleared after an idle gap: grep(p0); recall("c0") returns it.]'
    assert out[4].content.startswith("[Cleared after an idle gap: grep(p1)")
    assert out[6].content == "hit\n" * 60
    assert fastcompact.clear_after_gap(msgs, keep_recent=1, timestamps=[0, 1, 2, 3, 4, 5, 6, 7]) == msgs
    # A gap between the last message and now counts too.
    assert fastcompact.clear_after_gap(msgs, keep_recent=1, timestamps=[0] * 8, now=7_200)[
        2
    ].content.startswith("[Cleared after an idle gap")


def test_timestamps_are_read_from_messages():
    msgs = [HumanMessage("a", additional_kwargs={"timestamp": 1_000})]
    msgs += [_call("grep", "c", pattern="x"), _result("hit\n" * 60, "c", "grep")]
    msgs += [HumanMessage("b", additional_kwargs={"timestamp": 1_000_000_000})]  # ms would be 1e12
    msgs[1].response_metadata["created"] = 1_001
    out = fastcompact.clear_after_gap(msgs, keep_recent=0)
    assert out[2].content.startswith("[Cleared after an idle gap")
    # ISO 8601 strings work too.
    iso = [HumanMessage("a", additional_kwargs={"created_at": "2025-01-15T09:00:00Z"}), *msgs[1:3]]
    iso.append(HumanMessage("b", additional_kwargs={"created_at": "2025-01-15T12:30:00+01:00"}))
    iso[1] = iso[1].model_copy(update={"response_metadata": {"created": "2025-01-15T09:00:05Z"}})
    assert fastcompact.clear_after_gap(iso, keep_recent=0)[2].content.startswith("[Cleared after an idle gap")
    iso[-1] = HumanMessage("b", additional_kwargs={"created_at": "2025-01-15T09:30:00Z"})
    assert fastcompact.clear_after_gap(iso, keep_recent=0)[2] is iso[2]


def test_plan_reports_passes_and_summary():
    msgs = coding_session(1_500, seed=3)
    p = plan(msgs, max_input_tokens=200_000)
    assert [s.name for s in p.passes] == [
        "budget",
        "truncate_args",
        "clearing",
        "dedupe",
        "collapse",
        "time_gap",
    ]
    assert p.tokens_before == fastcompact.count_tokens(msgs)
    assert p.tokens_after == fastcompact.count_tokens(apply_edits(msgs, p.edits))
    assert p.tokens_after < p.tokens_before
    assert p.passes[0].tokens_before == p.tokens_before and p.passes[-1].tokens_after == p.tokens_after
    if p.summary_needed:
        assert p.summary_cutoff is not None
    assert "Plan:" in repr(p) and "fc-chart" in p._repr_html_()
    small = plan(msgs[:20])
    assert not small.summary_needed and small.edits == [] and small.summary_cutoff is None


def test_summary_cutoff_is_pair_safe_in_the_edited_view():
    msgs = coding_session(400, seed=5)
    cfg = CompactionConfig(trigger=("tokens", 1_000), keep=("messages", 7))
    p = plan(msgs, cfg)
    assert p.summary_needed and p.summary_cutoff is not None
    view = apply_edits(msgs, p.edits)
    assert pair_violations(view[p.summary_cutoff :]) == []


def test_apply_edits_on_dicts_keeps_their_shape():
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": '{"content": "' + "z" * 5000 + '"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    out = fastcompact.truncate_args(msgs, max_length=5, keep=("messages", 1))
    assert out[0]["tool_calls"][0]["function"]["arguments"].startswith('{"content": "zzzzz... [shortened')
    assert msgs[0]["tool_calls"][0]["function"]["arguments"].startswith('{"content": "zzzzzz')
    assert out[1] is msgs[1]


# --- invariants --------------------------------------------------------------------

_AGGRESSIVE = CompactionConfig(
    trigger=("tokens", 50),
    keep=("messages", 3),
    token_budget=TokenBudgetConfig(per_tool_chars=30, per_message_chars=50, file_preview_chars=10),
    truncate_args=TruncateArgsConfig(
        trigger=("messages", 1), keep=("messages", 2), max_length=5, min_batch_tokens=0
    ),
    clearing=ClearingConfig(trigger=("messages", 1), keep_recent=1, clear_at_least=0),
    dedupe=DedupeConfig(min_batch_tokens=0),
    collapse=CollapseConfig(trigger=("messages", 1), keep_recent_messages=1, min_batch_tokens=0),
)


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_plans_keep_pairs_messages_and_are_idempotent(msgs):
    p = plan(msgs, _AGGRESSIVE, timestamps=list(range(len(msgs))))
    view = apply_edits(msgs, p.edits)
    assert len(view) == len(msgs)
    for before, after in zip(msgs, view, strict=True):
        assert before.type == after.type and before.id == after.id
        assert [c["id"] for c in getattr(before, "tool_calls", [])] == [
            c["id"] for c in getattr(after, "tool_calls", [])
        ]
        assert getattr(before, "tool_call_id", None) == getattr(after, "tool_call_id", None)
    assert pair_violations(view) == pair_violations(msgs)
    again = plan(view, _AGGRESSIVE, timestamps=list(range(len(msgs))))
    assert again.edits == []


def prefix_ratio(
    session: list[Any], cfg: CompactionConfig, step: int = 3, **kwargs: Any
) -> tuple[float, int, int]:
    """Replay a session turn by turn (``step`` messages a turn) and measure the share
    of each turn's model-input tokens that repeat the previous turn's input as a
    prefix (what a provider's prompt cache can reuse). Returns (ratio, breaks, turns)."""
    previous: list[Any] | None = None
    reused = total = 0
    breaks = turns = 0
    for end in range(step, len(session) + 1, step):
        msgs = session[:end]
        view = apply_edits(msgs, plan(msgs, cfg, **kwargs).edits)
        tokens = [m.tokens for m in fastcompact.token_breakdown(view).messages]
        if previous is not None:
            turns += 1
            same = 0
            for a, b in zip(previous, view, strict=False):
                if not _same(a, b):
                    break
                same += 1
            breaks += same < len(previous)
            reused += sum(tokens[:same])
            total += sum(tokens)
        previous = view
    return reused / max(total, 1), breaks, turns


def test_model_view_is_prefix_stable_between_batches():
    """Over a simulated 300-turn session, the model view of each turn starts with the
    model view of the turn before, except at the few turns where a batch fires."""
    session = coding_session(900, seed=11)
    cfg = CompactionConfig(trigger=("tokens", 10**9))  # no summary here: passes only
    ratio, breaks, turns = prefix_ratio(session, cfg, max_input_tokens=200_000)
    assert turns >= 299
    assert breaks <= turns * 0.1, f"{breaks} prefix breaks in {turns} turns"
    assert ratio >= 0.9, ratio


def _same(a: Any, b: Any) -> bool:
    return a.content == b.content and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None)


@pytest.mark.parametrize(
    "bad",
    [
        [ToolMessage("x" * 200_000, tool_call_id="orphan")],
        [AIMessage("", tool_calls=[{"name": "t", "args": {"a": "not json-ish " * 1000}, "id": "1"}])],
    ],
)
def test_odd_inputs_do_not_crash(bad):
    p = plan(bad, _AGGRESSIVE)
    assert len(apply_edits(bad, p.edits)) == len(bad)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ([{"role": "tool", "tool_call_id": "1", "content": None}], "content"),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": "1", "type": "function", "function": {"name": "t", "arguments": "{broken"}}
                    ],
                }
            ],
            "tool_calls[0].function.arguments",
        ),
    ],
)
def test_malformed_inputs_are_refused_by_the_passes(bad, field):
    with pytest.raises(fastcompact.InputError) as e:
        plan(bad, _AGGRESSIVE)
    assert (e.value.index, e.value.field) == (0, field)


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match=r"ClearingConfig.keep_recent"):
        ClearingConfig(keep_recent=-1)
    with pytest.raises(ValueError, match=r"TokenBudgetConfig.file_preview_chars"):
        TokenBudgetConfig(per_tool_chars=100, file_preview_chars=200)
    with pytest.raises(ValueError, match=r"CompactionConfig.trigger"):
        CompactionConfig(trigger=("fraction", 1.5))
    with pytest.raises(ValueError, match=r"CompactionConfig.clearing"):
        CompactionConfig(clearing={"no_such_field": 1})
    with pytest.raises(ValueError, match=r"MicrocompactConfig.gap_threshold_minutes"):
        fastcompact.MicrocompactConfig(gap_threshold_minutes=0)
    # A partial dict merges over the defaults.
    merged = CompactionConfig(clearing={"keep_recent": 1})
    assert merged.clearing.keep_recent == 1 and merged.clearing.tools == ClearingConfig().tools
    assert merged.resolved()["clearing"]["clear_at_least"] == 30_000
    with pytest.raises(fastcompact.InputError):
        plan(["x"], config="nope")  # type: ignore[arg-type]


def test_a_config_changed_in_place_changes_the_next_plan():
    """Settings are read once per config; any change to it, a tool set changed in place
    included, is seen by the next plan."""
    msgs = coding_session(600, seed=1)
    cfg = CompactionConfig()

    def cleared() -> int:
        return plan(msgs, cfg, max_input_tokens=200_000).passes[2].edits

    assert cleared() > 0
    cfg.clearing.tools.clear()
    assert cleared() == 0
    cfg.clearing.tools |= {"read_file", "grep", "glob", "execute"}
    assert cleared() > 0
    cfg.clearing.enabled = False
    assert cleared() == 0
    cfg.clearing = ClearingConfig()
    assert cleared() > 0


def test_configs_and_read_settings_copy_and_pickle():
    import copy
    import pickle

    cfg = CompactionConfig(clearing={"tools": {"grep"}})
    for clone in (copy.deepcopy(cfg), pickle.loads(pickle.dumps(cfg))):
        assert clone == cfg and clone.clearing.tools == {"grep"}
        clone.clearing.tools.add("ls")  # still noticed in the copy
        assert clone.clearing.tools == {"grep", "ls"} and cfg.clearing.tools == {"grep"}
    assert repr(cfg.clearing.tools) == "{'grep'}"
    settings = fastcompact._core.PlanSettings(cfg.resolved(200_000))
    again = pickle.loads(pickle.dumps(settings))
    msgs = coding_session(600, seed=2)
    raw = fastcompact.api.passes.run_plan(msgs, again, max_input_tokens=200_000)
    expected = plan(msgs, cfg, max_input_tokens=200_000).edits
    assert expected and raw.edits == expected


def test_defaults_follow_deepagents():
    r = CompactionConfig().resolved()
    assert r["trigger"] == [("tokens", 170_000)] and r["keep"] == ("messages", 6)
    assert r["truncate_args"]["trigger"] == ("messages", 20)
    r = CompactionConfig().resolved(max_input_tokens=200_000)
    assert r["trigger"] == [("fraction", 0.85)] and r["keep"] == ("fraction", 0.1)
    assert r["truncate_args"]["trigger"] == ("fraction", 0.85)
    assert (
        CompactionConfig(truncate_args=TruncateArgsConfig(trigger=None)).resolved()["truncate_args"][
            "trigger"
        ]
        is None
    )


def test_model_view_equals_plan_plus_apply_and_reuses_objects():
    msgs = coding_session(1_200, seed=4)
    cfg = CompactionConfig(trigger=("tokens", 10**9))
    view, p = fastcompact.model_view(msgs, cfg, max_input_tokens=200_000)
    expected = apply_edits(msgs, plan(msgs, cfg, max_input_tokens=200_000).edits)
    assert [_same(a, b) for a, b in zip(view, expected, strict=True)] == [True] * len(msgs)
    assert p.edits == [] and p.tokens_after < p.tokens_before
    # Next turn: one more message; unchanged edits give the very same objects.
    msgs.append(HumanMessage("and then?"))
    view2, _ = fastcompact.model_view(msgs, cfg, max_input_tokens=200_000)
    edited = [i for i, (a, b) in enumerate(zip(msgs, view, strict=False)) if a is not b]
    assert edited, "the passes edited something"
    assert all(view2[i] is view[i] for i in edited)
    assert view2[-1] is msgs[-1]
    # An equal copy (as a checkpointer reloads it) keeps its edited copy; a changed
    # message is edited afresh.
    i, j = edited[0], edited[1]
    msgs[i] = msgs[i].model_copy()
    msgs[j] = msgs[j].model_copy(update={"content": msgs[j].content + " (changed)"})
    view3, _ = fastcompact.model_view(msgs, cfg, max_input_tokens=200_000)
    assert view3[i] is view2[i]
    assert view3[j] is not view2[j] and view3[j].id == msgs[j].id


def test_remembered_work_never_changes_a_plan():
    """A plan made with the cache of earlier turns equals one made from scratch, also
    after a summary moved the same message objects to other indices."""
    msgs = coding_session(300, seed=9)
    cfg = CompactionConfig(
        trigger=("tokens", 10**9),
        truncate_args=TruncateArgsConfig(
            trigger=("messages", 1), keep=("messages", 5), max_length=50, min_batch_tokens=0
        ),
        clearing=ClearingConfig(trigger=("messages", 1), keep_recent=2, clear_at_least=0),
    )
    plan(msgs, cfg, cache_key="thread-1")  # remembers per-message work
    shifted = [HumanMessage("summary of the start"), *msgs[40:]]
    warm = plan(shifted, cfg, cache_key="thread-1").edits
    again = plan(shifted, cfg, cache_key="thread-1").edits  # same objects, same places
    fastcompact.clear_cache()
    cold = plan(shifted, cfg, cache_key="thread-1").edits
    assert warm == again == cold and warm

    # Counted under other parameters (an Anthropic model's), no count is reused.
    def figures(model: str | None) -> tuple[Any, ...]:
        p = plan(shifted, cfg, cache_key="thread-1", model=model)
        return p.edits, p.tokens_after, p.passes

    default = figures(None)
    warm_claude = figures("claude-sonnet-4")
    fastcompact.clear_cache()
    assert warm_claude == figures("claude-sonnet-4") != default


_POOL = coding_session(140, seed=21)
_COLD_KEYS = iter(range(10**9))
# Every pass acts on the pool's conversations (the budget on a few long results, the
# time gap once `now` is an hour past the last message).
_EVERY_PASS = CompactionConfig(
    # Fires on longer conversations: the summary's cutoff is compared too.
    trigger=("messages", 64),
    keep=("messages", 10),
    token_budget=TokenBudgetConfig(per_tool_chars=20_000),
    truncate_args=TruncateArgsConfig(
        trigger=("messages", 1), keep=("messages", 4), max_length=20, min_batch_tokens=0
    ),
    clearing=ClearingConfig(trigger=("messages", 1), keep_recent=6, clear_at_least=0),
    dedupe=DedupeConfig(min_batch_tokens=0),
    collapse=CollapseConfig(trigger=("messages", 1), keep_recent_messages=4, min_batch_tokens=0),
)


def _changed(m: Any, how: int) -> Any:
    """Another version of `m` keeping its ids: other arguments, or (odd `how`) other
    tool names with a new call in front, so that each call moves in its message."""
    if isinstance(m, AIMessage) and m.tool_calls:
        if how % 2:
            calls = [
                {"name": "ls", "args": {"path": "."}, "id": f"{m.tool_calls[0]['id']}-new"},
                *({**c, "name": "glob" if c["name"] != "glob" else "grep"} for c in m.tool_calls),
            ]
        else:
            calls = [{**c, "args": {**c["args"], "path": "elsewhere.py"}} for c in m.tool_calls]
        return m.model_copy(update={"tool_calls": calls})
    return m.model_copy(update={"content": f"{m.content} (changed)"})


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 8)),
        st.tuples(st.just("replace"), st.integers(0, 10**6)),
        st.tuples(st.just("copy"), st.integers(0, 10**6)),
        st.tuples(st.just("pop"), st.integers(1, 4)),
        st.tuples(st.just("count"), st.just(0)),
        st.tuples(st.just("view"), st.just(0)),
        st.tuples(st.just("plan"), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None)
@given(_STEPS)
def test_turns_through_the_cache_plan_as_from_scratch(steps):
    """Whatever happens to a conversation between turns (messages appended, replaced,
    copied as a checkpointer reloads them, dropped; counts without planning in
    between), planning through the per-conversation cache gives what planning from
    scratch gives, and the model view is those edits applied."""
    fastcompact.clear_cache()
    msgs: list[Any] = list(_POOL[:60])
    fresh = iter(_POOL[60:])
    for op, arg in steps:
        if op == "append":
            msgs += [m for _, m in zip(range(arg), fresh, strict=False)]
        elif op == "replace" and msgs:
            msgs[arg % len(msgs)] = _changed(msgs[arg % len(msgs)], arg // len(msgs))
        elif op == "copy" and msgs:
            msgs[arg % len(msgs)] = msgs[arg % len(msgs)].model_copy()
        elif op == "pop":
            del msgs[max(len(msgs) - arg, 1) :]
        elif op == "count":
            fastcompact.count_tokens(msgs, cache_key="turns")
        times = {"timestamps": [i * 60.0 for i in range(len(msgs))], "now": len(msgs) * 60.0 + 4_000}
        cold = plan(msgs, _EVERY_PASS, cache_key=f"cold-{next(_COLD_KEYS)}", **times)
        if op == "view":
            view, warm = fastcompact.model_view(msgs, _EVERY_PASS, cache_key="turns", **times)
            expected = apply_edits(msgs, cold.edits)
            assert [_same(a, b) for a, b in zip(view, expected, strict=True)] == [True] * len(msgs)
        else:
            warm = plan(msgs, _EVERY_PASS, cache_key="turns", **times)
            assert warm.edits == cold.edits
        # Summary or not, and where it would cut, the same too.
        assert (warm.summary_needed, warm.summary_cutoff) == (cold.summary_needed, cold.summary_cutoff)
        assert (warm.tokens_before, warm.tokens_after) == (cold.tokens_before, cold.tokens_after)


def test_a_replaced_call_is_seen_by_the_results_after_it():
    """What a result knows of its call (the call itself, the tool's name, the text of
    its placeholder) is kept between turns, and forgotten when a message before the
    result is replaced."""
    cfg = CompactionConfig(
        trigger=("tokens", 10**9),
        clearing=ClearingConfig(trigger=("messages", 1), keep_recent=1, clear_at_least=0),
    )
    msgs: list[Any] = [HumanMessage("go")]
    for i in range(3):
        # Results without a name: the tool's name comes from the call.
        msgs += [_call("read_file", f"c{i}", file_path=f"f{i}.py"), _result("body\n" * 80, f"c{i}", "")]

    def cleared() -> dict[int, str]:
        return {e.index: e.value for e in plan(msgs, cfg, cache_key="replaced").edits}

    first = cleared()
    assert sorted(first) == [2, 4] and "read_file(f0.py)" in first[2]
    msgs[1] = _call("grep", "c0", pattern="TODO")
    # The call moves within its message: a kept link would point at the other call.
    msgs[3] = AIMessage(
        "",
        tool_calls=[
            {"name": "ls", "args": {"path": "src"}, "id": "c9"},
            {"name": "read_file", "args": {"file_path": "other.py"}, "id": "c1"},
        ],
    )
    warm = cleared()
    assert "grep(TODO)" in warm[2] and "read_file(other.py)" in warm[4]
    fastcompact.clear_cache()
    assert warm == cleared()


def test_a_collapse_note_follows_the_messages_of_its_run():
    """The note of a collapsed run is remembered between turns and made again when a
    message of the run is replaced."""
    msgs: list[Any] = [HumanMessage("look around")]
    for i, tool in enumerate(["read_file", "grep", "glob"]):
        msgs += [_call(tool, f"c{i}", pattern=f"p{i}"), _result("x" * 200, f"c{i}", tool)]
    msgs += [AIMessage("Found it."), HumanMessage("thanks")]

    def note() -> str:
        return fastcompact.collapse_reads(msgs, keep_recent_messages=2)[2].content

    first = note()
    assert "grep(p1)" in first and note() == first
    msgs[3] = _call("grep", "c1", pattern="TODO")  # same call id, other arguments
    assert "grep(TODO)" in note()
    fastcompact.clear_cache()
    assert "grep(TODO)" in note()


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: CompactionConfig(prefer_partial=False), "CompactionConfig.prefer_partial"),
        (lambda: CompactionConfig(autocompact_buffer_tokens=1), "CompactionConfig.autocompact_buffer_tokens"),
        (
            lambda: CompactionConfig(max_output_tokens_for_summary=1),
            "CompactionConfig.max_output_tokens_for_summary",
        ),
        (lambda: TokenBudgetConfig(warning_token_threshold=1), "TokenBudgetConfig.warning_token_threshold"),
        (lambda: TokenBudgetConfig(error_token_threshold=1), "TokenBudgetConfig.error_token_threshold"),
        (lambda: TokenBudgetConfig(blocking_token_threshold=1), "TokenBudgetConfig.blocking_token_threshold"),
        (lambda: RestorationConfig(skill_budget_chars=1), "RestorationConfig.skill_budget_chars"),
        (lambda: RestorationConfig(per_skill_chars=1), "RestorationConfig.per_skill_chars"),
    ],
)
def test_fields_kept_only_for_compatibility_warn_that_they_have_no_effect(make: Any, field: str):
    with pytest.warns(DeprecationWarning, match=rf"{field} has no effect"):
        make()


def test_defaults_give_no_compatibility_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        CompactionConfig(token_budget=TokenBudgetConfig(), restoration=RestorationConfig())


def test_recall_on_a_pass_s_output_says_it_holds_only_the_placeholder():
    msgs: list[Any] = [HumanMessage("Read every file.")]
    for i in range(8):
        msgs.append(
            AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": f"/f{i}"}, "id": f"c{i}"}])
        )
        msgs.append(ToolMessage(f"file {i} " + "x " * 3000, tool_call_id=f"c{i}"))
    out = fastcompact.clear_observations(msgs)
    assert out[2].content.startswith("[Cleared to save context")
    with pytest.raises(KeyError, match=r"all these messages hold of .+c0.+ is a placeholder"):
        fastcompact.recall(out, "c0")
    assert fastcompact.recall(msgs, "c0").startswith("file 0 ")
    # What no pass touched comes back as it is.
    assert fastcompact.recall(out, "c7").startswith("file 7 ")

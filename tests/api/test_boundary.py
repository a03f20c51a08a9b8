"""What crosses between the core and Python: sizes read with one set of rules and
errors, typed results, and the helpers' options."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import fastcompact
import pytest
from fastcompact import CompactionConfig, Edit, InputError, PassStats
from fastcompact.config import DEFAULT
from fastcompact.samples import coding_session
from langchain_core.messages import HumanMessage

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke

_BAD_SIZES = [
    (("messages", 0), "messages must be a whole number greater than 0, got 0"),
    (("tokens", 2.5), "tokens must be a whole number greater than 0, got 2.5"),
    (("fraction", 1.5), r"fraction must be in \(0, 1\], got 1.5"),
    (("fraction", float("inf")), "value must be a finite number, got inf"),
    (("bytes", 1), "unknown kind 'bytes'; expected 'messages', 'tokens' or 'fraction'"),
    ("half", r"expected \('messages', n\), \('tokens', n\) or \('fraction', f\), got 'half'"),
    (("messages", True), r"expected .* got \('messages', True\)"),
]


@pytest.mark.parametrize(("size", "reason"), _BAD_SIZES)
def test_a_bad_size_gets_the_same_reason_from_the_config_and_the_helpers(size, reason):
    msgs = ["hello"] * 4
    with pytest.raises(ValueError, match=f"^CompactionConfig.keep: {reason}$"):
        CompactionConfig(keep=size)
    with pytest.raises(InputError, match=f"^field 'keep': {reason}$") as found:
        fastcompact.find_cutoff(msgs, size)
    assert (found.value.field, found.value.index) == ("keep", None)
    with pytest.raises(InputError, match=f"^field 'trigger': {reason}$"):
        fastcompact.should_compact(msgs, size)
    with pytest.raises(ValueError, match=f"^TruncateArgsConfig.trigger: {reason}$"):
        fastcompact.TruncateArgsConfig(trigger=size)


def test_triggers_read_the_same_everywhere():
    msgs = ["hello"] * 10
    given = [{"tokens": 1_000, "messages": 5}, ("messages", 10)]
    cfg = CompactionConfig(trigger=given)
    assert cfg.resolved()["trigger"] == [[("tokens", 1_000), ("messages", 5)], ("messages", 10)]
    assert fastcompact.should_compact(msgs, given)
    assert not fastcompact.should_compact(msgs, given[:1])
    # A tuple of triggers is a list of them, in the config as in the helper.
    assert CompactionConfig(trigger=tuple(given)).resolved()["trigger"] == cfg.resolved()["trigger"]
    for empty, reason in (([], "an empty list never fires"), ({}, "an empty clause never fires")):
        with pytest.raises(ValueError, match=f"^CompactionConfig.trigger: {reason}; leave it out"):
            CompactionConfig(trigger=empty)
        with pytest.raises(InputError, match=f"^field 'trigger': {reason}; leave it out"):
            fastcompact.should_compact(msgs, empty)


def test_edits_and_pass_figures_are_classes_that_compare_copy_and_pickle():
    p = fastcompact.plan(coding_session(300, seed=1), max_input_tokens=50_000)
    assert p.edits and all(type(e) is Edit for e in p.edits)
    e = p.edits[0]
    again = Edit(e.index, e.pass_name, e.field, e.value, e.call, e.fingerprint, e.target)
    assert again == e and pickle.loads(pickle.dumps(e)) == e and copy.deepcopy(e) == e
    assert Edit(e.index, e.pass_name, e.field, "other", e.call, e.fingerprint) != e
    # Edits go in sets and dict keys, as tuples did (a dict value included).
    assert len({e, again, copy.copy(e)}) == 1 and isinstance(e.value, dict)
    assert e != tuple(getattr(e, f) for f in ("index", "pass_name", "field", "value", "call", "fingerprint"))
    assert repr(Edit(1, "clearing", "content", "[x]")) == (
        "Edit(index=1, pass_name='clearing', field='content', value='[x]', call=None, "
        "fingerprint=0, target=0)"
    )
    with pytest.raises(AttributeError):
        e.index = 3  # type: ignore[misc]
    names = [s.name for s in p.passes]
    assert names == ["budget", "truncate_args", "clearing", "dedupe", "collapse", "time_gap"]
    clearing = p.passes[2]
    assert clearing.saved == clearing.tokens_before - clearing.tokens_after > 0
    assert PassStats("x", 10, 4, 1) == PassStats("x", 10, 4, 1) != PassStats("x", 10, 5, 1)
    assert len({PassStats("x", 10, 4, 1), PassStats("x", 10, 4, 1)}) == 1
    assert pickle.loads(pickle.dumps(p)).passes == p.passes
    assert repr(PassStats("x", 10, 4, 1)) == "PassStats(name='x', tokens_before=10, tokens_after=4, edits=1)"


def test_the_helpers_options_are_checked_like_keywords():
    msgs = [HumanMessage("hello world")]
    assert (
        fastcompact.count_tokens(msgs, encoding="o200k_base")
        == fastcompact.token_breakdown(msgs, encoding="o200k_base").total
    )
    with pytest.raises(TypeError, match=r"^count_tokens\(\) got an unexpected keyword argument 'encodng'$"):
        fastcompact.count_tokens(msgs, encodng="o200k_base")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^plan\(\) got an unexpected keyword argument 'window'$"):
        fastcompact.plan(msgs, window=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^model_view\(\) got an unexpected keyword argument 'use_usage'$"):
        fastcompact.model_view(msgs, use_usage=True)  # type: ignore[call-arg]
    with pytest.raises(InputError, match="unknown encoding 'bpe'"):
        fastcompact.count_tokens(msgs, encoding="bpe")  # type: ignore[typeddict-item]


def test_pass_settings_left_out_are_the_cores_defaults():
    core = fastcompact._core.pass_defaults()
    classes = {
        "budget": fastcompact.TokenBudgetConfig,
        "truncate_args": fastcompact.TruncateArgsConfig,
        "clearing": fastcompact.ClearingConfig,
        "dedupe": fastcompact.DedupeConfig,
        "collapse": fastcompact.CollapseConfig,
        "microcompact": fastcompact.MicrocompactConfig,
    }
    compared = 0
    for section, cls in classes.items():
        made = cls()
        for name, value in core[section].items():
            given = getattr(made, name, None)
            if given is None or given is DEFAULT:  # not a field, or left to the window
                continue
            assert (sorted(given) if isinstance(given, set) else given) == value, (section, name)
            compared += 1
    assert compared >= 20
    # Each config gets a set of its own.
    one, other = fastcompact.ClearingConfig(), fastcompact.ClearingConfig()
    one.tools.add("mine")
    assert "mine" not in other.tools


def test_the_middleware_plans_with_its_config_as_it_now_is():
    """The middleware's settings come from the shared cache, which follows changes to
    a config: turning clearing off in `mw.config` stops it on the next call."""
    from langchain.agents.middleware.types import ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, ToolMessage

    from tests.scripted import ScriptedChatModel

    msgs = coding_session(600, seed=3)
    # No summary (its trigger and the window out of reach): the view is the messages,
    # some cleared.
    mw = fastcompact.CompactionMiddleware(config=CompactionConfig(trigger=("tokens", 10**9)))
    model = ScriptedChatModel(profile={"max_input_tokens": 600_000})

    def changed_results() -> int:
        seen: list[Any] = []

        def handler(request: ModelRequest) -> ModelResponse:
            seen.extend(request.messages)
            return ModelResponse(result=[AIMessage("ok")])

        request = ModelRequest(
            model=model, messages=msgs, system_message=None, tools=[], state={"messages": msgs}
        )
        mw.wrap_model_call(request, handler)
        pairs = zip(msgs, seen, strict=True)
        return sum(1 for a, b in pairs if isinstance(a, ToolMessage) and a.content != b.content)

    assert changed_results() > 0
    mw.config.clearing.enabled = False
    mw.config.token_budget.enabled = False
    mw.config.collapse.enabled = False
    mw.config.dedupe.enabled = False
    mw.config.microcompact.enabled = False
    assert changed_results() == 0


_HELPERS = {
    "partition": lambda m: fastcompact.partition(m),
    "search": lambda m: fastcompact.search(m, "x"),
    "count_tokens": lambda m: fastcompact.count_tokens(m),
    "plan": lambda m: fastcompact.plan(m),
    "model_view": lambda m: fastcompact.model_view(m),
    "apply_edits": lambda m: fastcompact.apply_edits(m, []),
    "budget_tool_results": lambda m: fastcompact.budget_tool_results(m),
    "truncate_args": lambda m: fastcompact.truncate_args(m),
    "clear_observations": lambda m: fastcompact.clear_observations(m),
    "dedupe_reads": lambda m: fastcompact.dedupe_reads(m),
    "collapse_reads": lambda m: fastcompact.collapse_reads(m),
    "clear_after_gap": lambda m: fastcompact.clear_after_gap(m),
}


@pytest.mark.parametrize("helper", sorted(_HELPERS))
@pytest.mark.parametrize("given", [None, 42, "hello", {"role": "user", "content": "hi"}])
def test_what_is_not_a_list_of_messages_is_an_input_error_in_every_helper(helper: str, given: Any):
    with pytest.raises(InputError, match=r"field 'messages': expected a (list|sequence) of messages"):
        _HELPERS[helper](given)


def test_edits_that_are_not_a_list_are_an_input_error_and_the_callers_list_is_kept():
    with pytest.raises(InputError, match="field 'edits': expected a list of Edit objects, got NoneType"):
        fastcompact.apply_edits([HumanMessage("x")], None)
    msgs = coding_session(6, seed=3)
    before = list(msgs)
    out = fastcompact.clear_observations(msgs, keep_recent=0)
    assert out != before and msgs == before and all(a is b for a, b in zip(msgs, before, strict=True))


def test_each_pass_helper_takes_its_config_classes_settings():
    msgs = coding_session(12, seed=5)
    cleared = fastcompact.clear_observations(msgs, keep_recent=1)
    assert cleared != msgs
    # The config's own trigger: a conversation under it is left as it is.
    assert fastcompact.clear_observations(msgs, keep_recent=1, trigger=("tokens", 10**9)) == msgs
    assert fastcompact.clear_observations(msgs, keep_recent=1, enabled=False) == msgs
    assert fastcompact.collapse_reads(msgs, trigger=("tokens", 10**9)) == msgs
    with pytest.raises(InputError, match="field 'triger': not a setting of ClearingConfig; its settings: "):
        fastcompact.clear_observations(msgs, triger=("tokens", 1))

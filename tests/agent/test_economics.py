"""True sizes, batches decided by prompt-cache prices, and ``recall``: on real agent
graphs driven by a model that reports usage as a provider does, and on hand-written
sessions with exact expected edits."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, RecallMiddleware
from fastcompact.api.passes import run_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ProviderChatModel, compacting_agent, pair_problems

HAN = "缓存索引解析器记录缓冲区窗口令牌数据流批次队列线程套接字处理器模式配置加载器报告指标向量"


def _call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def _reads(n: int, chars: int = 8_000) -> list[BaseMessage]:
    """A request, then `n` reads of distinct files, each answered, then an answer."""
    msgs: list[BaseMessage] = [HumanMessage("go")]
    for k in range(n):
        msgs += [
            _call("read_file", f"c{k}", file_path=f"f{k}.py"),
            ToolMessage(f"{k}" * chars, tool_call_id=f"c{k}"),
        ]
    return [*msgs, AIMessage("done"), HumanMessage("next")]


# --- true sizes -------------------------------------------------------------------


def _progress(**kw: Any) -> dict[str, Any]:
    return {"min_anchor": 0, "ratio": 1.0, "offset": 0.0, "settled": None, "calls_before": 0, **kw}


def _plan(msgs: list[Any], progress: dict[str, Any], **kw: Any) -> fastcompact._core.PlanOutcome:
    config = kw.pop("config", CompactionConfig())
    return run_plan(msgs, config, max_input_tokens=kw.pop("window", 200_000), progress=progress)


def _usage(real: int) -> dict[str, int]:
    return {"input_tokens": real, "output_tokens": 0, "total_tokens": real}


def test_an_anchor_from_before_the_last_batch_or_summary_is_ignored():
    msgs = [
        HumanMessage("a" * 400),
        AIMessage("b" * 400, usage_metadata=_usage(1_000)),
        HumanMessage("c" * 400),
    ]
    estimate = _plan(msgs, _progress(min_anchor=3)).tokens_after
    anchored = _plan(msgs, _progress())
    # Anchored: the reported 1,000, of which what the estimate of the prefix misses is a
    # fixed offset (what the caller did not pass), plus the tail as estimated.
    prefix = fastcompact.count_tokens(msgs[:2])
    assert anchored.anchor == 1
    assert anchored.true_tokens == 1_000 + fastcompact.count_tokens(msgs[2:])
    assert (anchored.offset, anchored.ratio) == (1_000 - prefix, 1.0)
    # Usage from before the last batch (or summary) counted another view: the estimate.
    ignored = _plan(msgs, _progress(min_anchor=2))
    assert (ignored.anchor, ignored.true_tokens) == (None, estimate)


def test_calibration_survives_a_summary():
    # Right after a summary no usage counts the new view yet: the offset and ratio kept
    # in state calibrate the estimate.
    msgs = [HumanMessage("summary " * 100), AIMessage("ok " * 100)]
    estimate = _plan(msgs, _progress(min_anchor=2)).tokens_after
    after = _plan(msgs, _progress(min_anchor=2, ratio=3.5))
    assert after.true_tokens == math.ceil(estimate * 3.5)
    assert after.ratio == 3.5
    both = _plan(msgs, _progress(min_anchor=2, ratio=3.0, offset=2_500.0))
    assert (both.true_tokens, both.offset) == (2_500 + 3 * estimate, 2_500.0)
    # A state that says otherwise (a ratio no tokenizer has, a negative offset) is
    # bounded, never taken as it is.
    wild = _plan(msgs, _progress(min_anchor=2, ratio=185.2, offset=-40.0))
    assert (wild.ratio, wild.offset) == (4.0, 0.0)


def test_a_trigger_fires_on_reported_usage_alone():
    msgs = [HumanMessage("hi"), AIMessage("ok", usage_metadata=_usage(150_000)), HumanMessage("next")]
    assert not fastcompact.should_compact(msgs, ("tokens", 100_000))
    assert fastcompact.should_compact(msgs, ("tokens", 100_000), use_usage=True)
    assert fastcompact.count_tokens(msgs, use_usage=True) >= 150_000
    plan = _plan(msgs, _progress(), config=CompactionConfig(trigger=("tokens", 100_000)))
    assert plan.summary_needed and plan.true_tokens >= 150_000


def _chinese_script(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage) and "步骤" in str(last.content):
        step = str(last.content).split()[1]
        return _call("read_file", f"read-{step}", file_path=f"/docs/{step}.md")
    if isinstance(last, ToolMessage):
        return AIMessage("已读完。" + HAN[:40])
    return AIMessage("好的。")


def test_a_chinese_session_follows_its_usage_and_stays_inside_the_window(tmp_path: Path):
    window = 16_000
    for step in range(16):
        (tmp_path / "docs").mkdir(exist_ok=True)
        lines = [(HAN * 3)[i % 7 : i % 7 + 60] for i in range(40)]
        (tmp_path / "docs" / f"{step}.md").write_text("\n".join(lines))
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = ProviderChatModel(script=_chinese_script, profile={"max_input_tokens": window})
    mw = CompactionMiddleware(backend=backend)
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "zh"}}
    for step in range(16):
        agent.invoke({"messages": [HumanMessage(f"步骤 {step} 请阅读文档")]}, cfg)
    state = agent.get_state(cfg).values
    # About a token a character: the estimate (4 a token) is far below what the provider
    # counts (English code and prose come out at 0.7-1.1; the fallback summaries in
    # this view are English).
    assert state["_fastcompact"]["ratio"] > 1.2
    assert max(c.input_tokens for c in model.calls) <= window
    assert state.get("_summarization_event") or any(
        "Cleared to save context" in str(m.content) for c in model.calls for m in c.messages
    )
    assert all(pair_problems([m for m in c.messages if m.type != "system"]) == [] for c in model.calls)


# --- the price model --------------------------------------------------------------


def _cleared(msgs: list[BaseMessage], pricing: str) -> list[tuple[int, str]]:
    p = fastcompact.plan(msgs, CompactionConfig(pricing=pricing), max_input_tokens=100_000)
    return [(e.index, e.value) for e in p.edits if e.pass_name == "clearing"]


def test_batches_under_two_presets_exact():
    msgs = _reads(5)
    expected = [
        (2, '[Cleared to save context: read_file(f0.py); recall("c0") returns it.]'),
        (4, '[Cleared to save context: read_file(f1.py); recall("c1") returns it.]'),
    ]
    # No cache: clearing pays at once. The newest three results stay.
    assert _cleared(msgs, "none") == expected
    # With a cache, rewriting 6,000 tokens to save 4,000 on each of the next few calls
    # of a six-call session does not pay yet.
    assert _cleared(msgs, "anthropic") == []
    assert _cleared(msgs, "openai") == []
    # A session that has gone on longer pays for the same batch.
    long = [*[m for k in range(40) for m in (HumanMessage(f"q{k}"), AIMessage(f"a{k}"))], *_reads(5)]
    assert [i - 80 for i, _ in _cleared(long, "anthropic")] == [2, 4]


def test_settled_edits_stay_and_new_ones_wait_for_their_batch():
    msgs = _reads(6)
    cfg = CompactionConfig(pricing="anthropic")
    first = _plan(msgs, _progress(settled=9, calls_before=100), config=cfg)
    # Settled at 9: the result at 2 (older than the newest three then) is committed.
    committed = {e.index for e in first.edits if e.pass_name == "clearing"}
    assert 2 in committed
    assert first.settled in (9, len(msgs))
    # Planning again with the state it left changes nothing.
    again = _plan(msgs, _progress(settled=first.settled, calls_before=100), config=cfg)
    assert again.edits == first.edits
    assert again.batch_at is None


def test_pricing_is_validated_and_picked_from_the_provider():
    with pytest.raises(ValueError, match=r"CompactionConfig.pricing: expected one of anthropic, "):
        CompactionConfig(pricing="bedrock-spot")
    assert fastcompact.config.pricing_of(ProviderChatModel()) == "anthropic"
    assert fastcompact.config.pricing_of(ProviderChatModel(provider="google_genai")) == "gemini"


@pytest.mark.parametrize(
    ("provider", "name", "expected"),
    [
        ("amazon_bedrock", "us.anthropic.claude-sonnet-4-6-v1:0", "anthropic"),
        ("google_vertexai", "gemini-2.5-pro", "gemini"),
        ("google_vertexai", "claude-opus-4-1@20250805", "anthropic"),
        ("azure_ai", "gpt-5", "openai"),
        ("openrouter", "anthropic/claude-haiku-4.5", "anthropic"),
        ("amazon_bedrock", "meta.llama3-70b-instruct-v1:0", None),
        ("cohere", "command-a-03-2025", "none"),
    ],
)
def test_a_host_of_another_makers_model_is_priced_as_that_maker(
    tmp_path: Path, provider: str, name: str, expected: str | None
):
    """A cloud or router that serves Anthropic's, OpenAI's or Google's models under its
    own provider name is priced as the model's maker; a provider without a prompt cache
    as ``none``; another maker's model on a cloud stays unpriced."""
    model = ProviderChatModel(provider=provider, model_name=name, profile={"max_input_tokens": 100_000})
    assert fastcompact.config.pricing_of(model) == expected
    agent = compacting_agent(model, FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    cfg = {"configurable": {"thread_id": "host"}}
    agent.invoke({"messages": [HumanMessage("hello")]}, cfg)
    assert agent.get_state(cfg).values["_fastcompact"]["last_plan"]["pricing"] == expected


@pytest.mark.parametrize(("names", "expected"), [(True, "anthropic"), (False, None)])
def test_pricing_is_read_from_the_answers_of_a_model_behind_a_proxy(
    tmp_path: Path, names: bool, expected: str | None
):
    # The model object names no provider; its answers do, or (usage alone) do not.
    model = ProviderChatModel(
        script=_recall_script,
        profile={"max_input_tokens": 100_000},
        declares_provider=False,
        answers_name_provider=names,
    )
    assert fastcompact.config.pricing_of(model) is None
    agent = compacting_agent(model, FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    cfg = {"configurable": {"thread_id": "p"}}
    agent.invoke({"messages": [HumanMessage("hello")]}, cfg)
    agent.invoke({"messages": [HumanMessage("hello again")]}, cfg)
    # The first call has no answer to read yet; the second reads the first answer.
    assert agent.get_state(cfg).values["_fastcompact"]["last_plan"]["pricing"] == expected


# --- nothing cleared is lost ------------------------------------------------------


def _recall_script(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    text = str(last.content)
    if isinstance(last, HumanMessage) and text.startswith("read "):
        k = text.split()[1]
        return _call("read_file", f"read-{k}", file_path=f"/f{k}.txt")
    if isinstance(last, HumanMessage) and text.startswith("recall "):
        return _call("recall", "recall-1", id=text.split()[1])
    return AIMessage("noted")


def test_recall_returns_the_original_of_a_cleared_result_on_a_real_graph(tmp_path: Path):
    for k in range(6):
        (tmp_path / f"f{k}.txt").write_text("\n".join(f"file {k} line {i}" for i in range(90)))
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = ProviderChatModel(script=_recall_script, profile={"max_input_tokens": 100_000})
    mw = CompactionMiddleware(backend=backend, config=CompactionConfig(pricing="none"))
    agent = create_deep_agent(
        model=model, backend=backend, middleware=[mw, RecallMiddleware()], checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "r"}}
    for k in range(6):
        agent.invoke({"messages": [HumanMessage(f"read {k}")]}, cfg)
    seen = model.calls[-1].messages
    # Cleared in place or summed up in a digest line, it names its recall id.
    assert "file 0 line 89" not in "".join(str(m.content) for m in seen)
    assert any('recall("read-0")' in str(m.content) for m in seen)
    agent.invoke({"messages": [HumanMessage("recall read-0")]}, cfg)
    raw = agent.get_state(cfg).values["messages"]
    original = next(m for m in raw if isinstance(m, ToolMessage) and m.tool_call_id == "read-0")
    answer = next(m for m in raw if isinstance(m, ToolMessage) and m.tool_call_id == "recall-1")
    assert "file 0 line 89" in str(original.content)
    assert answer.content == original.content


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(20, 400),
    seed=st.integers(0, 10_000),
    keep_recent=st.integers(0, 6),
    pricing=st.sampled_from(["none", "openai", "anthropic"]),
)
def test_no_cleared_item_is_left_without_a_way_back(n: int, seed: int, keep_recent: int, pricing: str):
    from fastcompact.samples import coding_session

    msgs = coding_session(n, seed=seed)
    cfg = CompactionConfig(
        pricing=pricing,
        clearing={"keep_recent": keep_recent},
        truncate_args={"max_length": 200, "keep": ("messages", 4)},
        collapse={"trigger": ("tokens", 1), "keep_recent_messages": 4},
    )
    p = fastcompact.plan(msgs, cfg, max_input_tokens=20_000, now=None)
    for e in p.edits:
        m = msgs[e.index]
        assert "recall(" in json.dumps(e.value, ensure_ascii=False), e
        if e.field == "content":
            # A rewritten result: its call id gets the original back.
            assert fastcompact.recall(msgs, m.tool_call_id) == m.content
        else:
            call = m.tool_calls[e.call]
            back = json.loads(fastcompact.recall(msgs, f"{call['id']}/args"))
            assert back == {"name": call["name"], "args": call["args"]}


class _Recording(CompactionMiddleware):
    """Records, call by call, whether the plan rewrote older messages (a batch or a
    summary committed on that call)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.rewrote: list[bool] = []

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        from fastcompact.agent.middleware import EVENT_KEY, STATE_KEY

        out = super().wrap_model_call(request, handler)
        update = out.command.update
        batch = update[STATE_KEY].get("batch_at") == len(request.messages)
        self.rewrote.append(EVENT_KEY in update or batch)
        return out


def test_between_batches_each_call_starts_with_the_previous_one(tmp_path: Path):
    from tests.scripted import ScriptedChatModel, coding_script

    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = ProviderChatModel(script=coding_script, profile={"max_input_tokens": 12_000})
    # Summaries from another model, so that `model.calls` are the agent's calls only.
    mw = _Recording(model=ScriptedChatModel(), backend=backend)
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "prefix"}}
    for step in range(1, 16):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    calls = model.calls
    assert len(calls) == len(mw.rewrote) > 60
    rewrites = [i for i in range(1, len(calls)) if mw.rewrote[i]]
    assert 0 < len(rewrites) < len(calls) // 4, "batches are rare"
    for i in range(1, len(calls)):
        if not mw.rewrote[i]:
            # The whole previous input was read from the cache.
            assert calls[i].cached_tokens == calls[i - 1].input_tokens, i

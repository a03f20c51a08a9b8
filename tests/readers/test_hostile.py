"""Huge and hostile input through the public helpers and the middleware: clear errors
or pass-through, never a crash, never a lost message."""

from __future__ import annotations

import logging
from typing import Any

import fastcompact
import pytest
from fastcompact import CompactionConfig, CompactionMiddleware
from fastcompact.samples import coding_session
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


def _call(msgs: list[Any], mw: CompactionMiddleware | None = None, window: int = 200_000) -> list[Any]:
    """One model call through the middleware; what the model received."""
    from tests.scripted import ScriptedChatModel

    mw = mw or CompactionMiddleware()
    seen: list[list[Any]] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage("ok")])

    model = ScriptedChatModel(profile={"max_input_tokens": window})
    request = ModelRequest(
        model=model, messages=msgs, system_message=None, tools=[], state={"messages": msgs}
    )
    mw.wrap_model_call(request, handler)
    return seen[-1]


def test_a_50_mb_tool_result_is_cut_by_the_budget_pass():
    big = "log line with some text\n" * 2_200_000  # about 50 MB
    msgs = [
        HumanMessage("run it"),
        AIMessage("", tool_calls=[{"name": "execute", "args": {"command": "make"}, "id": "c1"}]),
        ToolMessage(big, tool_call_id="c1"),
        AIMessage("done"),
    ]
    view = _call(msgs)
    assert len(view) == 4
    assert len(view[2].content) < 10_000 and "characters cut from this result" in view[2].content
    assert msgs[2].content is big, "the raw message is untouched"
    # The marker names the raw message, which recall returns whole.
    assert 'recall("c1") returns it in full' in view[2].content
    assert fastcompact.recall(msgs, "c1") is big


def test_a_100_000_message_conversation():
    msgs = coding_session(100_000, seed=3)
    total = fastcompact.count_tokens(msgs)
    assert total > 0
    cut = fastcompact.find_cutoff(msgs, ("messages", 20))
    assert 0 < cut < len(msgs) and msgs[cut].type != "tool"
    view, p = fastcompact.model_view(msgs, max_input_tokens=1_000_000)
    assert len(view) == len(msgs) and p.tokens_after < p.tokens_before


def test_deeply_nested_arguments_through_every_pass():
    args: Any = "x" * 5_000
    for _ in range(3_000):
        args = {"a": [args]}
    msgs = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "write_file", "args": args, "id": "c1"}]),
        ToolMessage("ok", tool_call_id="c1"),
    ] + [HumanMessage(f"more {i}") for i in range(30)]
    cfg = CompactionConfig(
        truncate_args={"trigger": ("messages", 1), "keep": ("messages", 5), "min_batch_tokens": 0}
    )
    view, _ = fastcompact.model_view(msgs, cfg)
    assert len(view) == len(msgs)
    assert len(_call(msgs)) == len(msgs)


@pytest.mark.parametrize(
    "content",
    [
        "lone \ud800 surrogate",
        ["text then", {"type": "text", "text": "bad \udfff half"}],
        [{"type": "text", "text": b"\xff\xfe not utf-8"}],
        [{"type": "image", "source": {"type": "base64", "data": b"\x89PNG\xff"}}],
        [{"type": "document", "data": bytes(range(256))}],
        [{"type": "tool_result", "tool_use_id": "c1", "content": b"\xc3\x28"}],
    ],
)
def test_odd_strings_and_bytes_pass_through(content: Any):
    msgs = [
        {"role": "user", "content": content},
        {"role": "assistant", "content": "fine"},
    ]
    assert fastcompact.count_tokens(msgs) > 0
    assert fastcompact.count_tokens(msgs, encoding="o200k_base") > 0
    p = fastcompact.plan(msgs)
    assert p.tokens_after == p.tokens_before
    assert _call(msgs) == msgs


def test_a_list_mutated_between_calls_is_counted_afresh():
    msgs = coding_session(400, seed=9)
    key = "mutated"
    fastcompact.count_tokens(msgs, cache_key=key)

    def fresh() -> int:
        fastcompact.clear_cache()
        n = fastcompact.count_tokens(list(msgs))
        return n

    # Reassigned content, a replaced message, an insertion at the front, a removal.
    msgs[10].content = "short now"
    assert fastcompact.count_tokens(msgs, cache_key=key) == (expected := fresh())
    fastcompact.count_tokens(msgs, cache_key=key)
    msgs[20] = HumanMessage("replaced")
    assert fastcompact.count_tokens(msgs, cache_key=key) == fresh()
    fastcompact.count_tokens(msgs, cache_key=key)
    msgs.insert(0, HumanMessage("first"))
    assert fastcompact.count_tokens(msgs, cache_key=key) == fresh()
    fastcompact.count_tokens(msgs, cache_key=key)
    del msgs[100:150]
    assert fastcompact.count_tokens(msgs, cache_key=key) == fresh()
    assert expected > 0
    # The passes see the same changes.
    view, p = fastcompact.model_view(msgs, cache_key=key)
    assert len(view) == len(msgs) and p.tokens_before == fresh()


@pytest.mark.parametrize(
    ("msgs", "index"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "wizard", "content": "?"}], 1),
        ([{"role": "user", "content": [None, 3, {"no": "type"}]}], 0),
        ([{"role": "user", "content": "hi"}, {"role": "user"}], 1),
        ([{"role": "user", "content": "hi"}, {"role": "tool", "content": "42"}], 1),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
                    ],
                }
            ],
            0,
        ),
    ],
)
def test_malformed_messages_reach_the_model_unchanged_through_the_middleware(msgs: list[Any], index: int):
    with pytest.raises(fastcompact.InputError) as e:
        fastcompact.count_tokens(msgs)
    assert e.value.index == index
    logged: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    handler = Keep(level=logging.WARNING)
    logging.getLogger("fastcompact").addHandler(handler)
    try:
        assert _call(msgs) == msgs
    finally:
        logging.getLogger("fastcompact").removeHandler(handler)
    assert any("cannot plan this call (InputError" in line for line in logged)


class _ListChanger:
    """A message whose content, when read, adds a message to the end of the list it
    is in (or takes the last one away)."""

    type = "human"
    text = "a message that changes its list"

    def __init__(self, msgs: list[Any], grow: bool) -> None:
        self.msgs, self.grow = msgs, grow

    @property
    def content(self) -> str:
        if self.grow:
            self.msgs.append(HumanMessage(f"added while reading {len(self.msgs)}"))
        else:
            self.msgs.pop()
        return self.text


@pytest.mark.parametrize("grow", [True, False])
def test_a_list_changed_while_it_is_read_is_read_to_its_end(grow: bool) -> None:
    """A count reads the list as it is when the count ends: messages added while it
    reads are counted, messages taken away are not."""
    msgs: list[Any] = [HumanMessage(f"question {i} " * (i % 5 + 1)) for i in range(40)]
    msgs[5] = _ListChanger(msgs, grow)
    for turn in range(3):
        n = fastcompact.count_tokens(msgs, cache_key="changing")
        assert len(msgs) == 40 + (turn + 1) * (1 if grow else -1)
        plain = [HumanMessage(_ListChanger.text) if i == 5 else m for i, m in enumerate(msgs)]
        assert n == fastcompact.count_tokens(plain, cache_key=f"plain-{turn}")


class _ArgumentsChanger:
    """An argument whose repr() empties the dict it sits in."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.args = args

    def __repr__(self) -> str:
        self.args.clear()
        return "changer"


def test_arguments_changed_while_their_repr_is_measured() -> None:
    """A tool call's arguments emptied by one of their own values' repr() while the
    count walks them: the count ends, with no crash, and counts again afresh."""
    msg = AIMessage("", tool_calls=[{"name": "t", "args": {"a": "x" * 50, "b": None, "c": 1}, "id": "c1"}])
    args = msg.tool_calls[0]["args"]
    args["b"] = _ArgumentsChanger(args)
    n = fastcompact.count_tokens([msg], cache_key="changer")
    assert args == {}
    assert n >= fastcompact.count_tokens([AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])])

"""Reading every accepted message shape, without model_dump()."""

from __future__ import annotations

import fastcompact
import pytest
from fastcompact import InputError, count_tokens, normalize
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langchain_core.messages.utils import count_tokens_approximately


def test_langchain_objects():
    msgs = [
        SystemMessage("be brief"),
        HumanMessage("list files", id="h1"),
        AIMessage(
            "",
            tool_calls=[{"name": "ls", "args": {"path": "/"}, "id": "c1"}],
            usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
        ),
        ToolMessage("a.py", tool_call_id="c1", name="ls"),
        AIMessageChunk(content="done"),
        ChatMessage(role="critic", content="fine"),
        FunctionMessage(name="f", content="42"),
    ]
    out = normalize(msgs)
    assert [m["role"] for m in out] == ["system", "human", "ai", "tool", "ai", "chat", "function"]
    assert out[1]["id"] == "h1"
    assert out[2]["tool_calls"] == [{"id": "c1", "name": "ls", "args": {"path": "/"}}]
    assert out[2]["usage"] == {"input": 10, "output": 2}
    assert out[3]["tool_call_id"] == "c1" and out[3]["name"] == "ls"
    assert out[5]["role_name"] == "critic"
    assert fastcompact.count_tokens(msgs) == count_tokens_approximately(msgs)


def test_serialized_langchain_dicts():
    msgs = [
        HumanMessage("hi"),
        AIMessage("", tool_calls=[{"name": "grep", "args": {"pattern": "x"}, "id": "c9"}]),
        ToolMessage("match", tool_call_id="c9"),
    ]
    for shape in (messages_to_dict(msgs), [dumpd(m) for m in msgs]):
        out = normalize(shape)
        assert [m["role"] for m in out] == ["human", "ai", "tool"]
        assert out[1]["tool_calls"][0]["args"] == {"pattern": "x"}
        assert out[2]["tool_call_id"] == "c9"
        assert fastcompact.count_tokens(shape) == fastcompact.count_tokens(msgs)


def test_openai_chat_dicts():
    msgs = [
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    ]
    out = normalize(msgs)
    assert out[0]["role"] == "system" and out[0]["role_name"] == "developer"
    assert out[2]["content"] == ""
    assert out[2]["tool_calls"] == [{"id": "call_1", "name": "read_file", "args": {"path": "a.py"}}]
    assert out[3]["tool_call_id"] == "call_1"
    # LangChain converts these dicts the same way before counting.
    assert fastcompact.count_tokens(msgs) == count_tokens_approximately(msgs)


@pytest.mark.parametrize(
    ("message", "field", "reason"),
    [
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "x", "arguments": "{oops"}}
                ],
            },
            "tool_calls[0].function.arguments",
            'not valid JSON (key must be a string at line 1 column 2): "{oops"',
        ),
        ({"role": "tool", "content": "42"}, "tool_call_id", "missing: a tool message needs the id"),
        ({"type": "tool", "data": {"content": "42"}}, "tool_call_id", "missing: a tool message needs the id"),
        ({"role": "user"}, "content", "missing: every message but an assistant's needs content"),
        ({"role": "system", "content": None}, "content", "missing"),
    ],
)
@pytest.mark.parametrize("helper", [normalize, count_tokens, fastcompact.inspect, fastcompact.find_cutoff])
def test_malformed_messages_are_refused_naming_index_and_field(message, field, reason, helper):
    # LangChain's convert_to_messages refuses these too; they are not counted silently.
    msgs = [{"role": "user", "content": "hi"}, message]
    with pytest.raises(InputError) as e:
        helper(msgs)
    assert (e.value.index, e.value.field) == (1, field)
    assert str(e.value).startswith(f"message 1: field '{field}': {reason}")


def test_openai_calls_may_omit_content_and_arguments():
    # OpenAI sends content null beside tool calls, and "" for a call without arguments.
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "now", "arguments": ""}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "noon"},
    ]
    assert normalize(msgs)[0]["tool_calls"][0]["args"] == {}
    assert count_tokens(msgs) > 0


def test_anthropic_blocks():
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look first", "signature": "abc"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        ],
    }
    user = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 100_000}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "B" * 100_000},
            },
        ],
    }
    out = normalize([assistant, user])
    kinds = [b["type"] for b in out[0]["content"]]
    assert kinds == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert [b["type"] for b in out[1]["content"]] == ["tool_result", "image", "document"]
    # base64 never counts as text: the image is 85 tokens and the document 1,500.
    breakdown = fastcompact.token_breakdown([user])
    assert 85 + 1_500 < breakdown.total < 85 + 1_500 + 100


def test_mixed_list_and_shorthand_forms():
    msgs = [
        "hello",
        ("ai", "hi"),
        HumanMessage("more"),
        {"role": "assistant", "content": "sure"},
        {"type": "human", "content": "thanks"},
    ]
    out = normalize(msgs)
    assert [m["role"] for m in out] == ["human", "ai", "human", "ai", "human"]
    assert fastcompact.count_tokens(msgs) == count_tokens_approximately(msgs)


def test_tuple_and_generator_inputs():
    msgs = (HumanMessage("a"), AIMessage("b"))
    assert fastcompact.count_tokens(msgs) == fastcompact.count_tokens(list(msgs))
    assert fastcompact.count_tokens(m for m in msgs) == fastcompact.count_tokens(list(msgs))


def test_lone_surrogates_do_not_crash():
    msgs = [HumanMessage("bad \ud800 text")]
    assert fastcompact.count_tokens(msgs) == count_tokens_approximately(msgs)
    assert fastcompact.count_tokens(msgs, encoding="o200k_base") > 0


@pytest.mark.parametrize(
    ("messages", "index", "field"),
    [
        ([HumanMessage("ok"), {"role": "user", "content": 42}], 1, "content"),
        ([{"role": "wizard", "content": "x"}], 0, "type"),
        ([{"content": "no role"}], 0, "role"),
        ([HumanMessage("ok"), object()], 1, "type"),
        ([{"role": "assistant", "content": "", "tool_calls": "nope"}], 0, "tool_calls"),
        ([{"role": "assistant", "content": "", "tool_calls": [1]}], 0, "tool_calls[0]"),
        ([{"role": "user", "content": [1.5]}], 0, "content[0]"),
        ([("human",)], 0, "tuple"),
    ],
)
def test_malformed_input_names_index_and_field(messages, index, field):
    for fn in (fastcompact.count_tokens, normalize, fastcompact.find_cutoff):
        with pytest.raises(InputError) as info:
            fn(messages)
        assert info.value.index == index
        assert info.value.field == field
        assert f"message {index}" in str(info.value)
        assert isinstance(info.value, ValueError)


def test_not_a_list():
    with pytest.raises(InputError, match="single string or dict"):
        fastcompact.count_tokens("just a string")
    with pytest.raises(InputError, match="list of messages"):
        fastcompact.count_tokens(42)

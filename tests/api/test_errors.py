"""Bad input: a clear InputError or a safe result, never another exception."""

from __future__ import annotations

import json
from typing import Any

import fastcompact
import pytest
from fastcompact import InputError, _core
from fastcompact.api.counting import counting_options
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages.utils import count_tokens_approximately

from tests.api.test_tokens import _any_message

_garbage_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.sampled_from(["human", "ai", "tool", "system", "user", "assistant", "text", "tool_use", "image"]),
)
_garbage = st.recursive(
    _garbage_leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "type",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "name",
                    "id",
                    "function",
                    "arguments",
                    "args",
                    "text",
                    "data",
                    "kwargs",
                    "lc",
                    "usage_metadata",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_garbage, max_size=6))
def test_garbage_gives_input_error_or_a_count(items: list[Any]):
    for call in (
        lambda: fastcompact.count_tokens(items),
        lambda: fastcompact.count_tokens(items, encoding="o200k_base"),
        lambda: fastcompact.token_breakdown(items),
        lambda: fastcompact.find_cutoff(items, keep=("messages", 2)),
        lambda: fastcompact.normalize(items),
    ):
        try:
            call()
        except InputError as e:
            assert "message" in str(e) or "field" in str(e)


def _heuristic_opts() -> Any:
    """The core's options for a plain heuristic count."""
    return counting_options({}, "count_tokens")


@settings(max_examples=200, deadline=None)
@given(st.lists(_any_message(), max_size=10))
def test_fast_reader_agrees_with_full_conversion(msgs):
    opts = _heuristic_opts()
    per = [m.tokens for m in fastcompact.token_breakdown(msgs).messages]
    scanned = _core._read_each(msgs, opts, False)
    assert scanned == _core._read_each(msgs, opts, True)
    assert [tokens for tokens, *_ in scanned] == per
    dicts = fastcompact.normalize(msgs)
    assert len(dicts) == len(msgs)


def _read_each(items: list[Any], convert: bool) -> Any:
    """One reader's view of `items`, or the InputError it gave: (message index, text)."""
    try:
        return _core._read_each(items, _heuristic_opts(), convert)
    except InputError as e:
        return (e.index, str(e))


@settings(max_examples=500, deadline=None)
@given(st.lists(_garbage, max_size=6))
def test_both_readers_take_garbage_alike(items: list[Any]):
    # Conversion reads more fields than counting (message ids, send times, argument
    # JSON), so it may refuse what the scanner took; the rest is the same: what the
    # scanner refuses, conversion refuses with the same error, and where both read a
    # message they see the same pairs. (Tokens may differ here: the scanner counts a
    # LangChain tool call dict as given, conversion as LangChain's own call dict, and
    # the two are the same only for well-formed calls, as the test above checks.)
    scanned, converted = _read_each(items, False), _read_each(items, True)
    if isinstance(scanned, tuple):
        # Refused at message k: conversion refuses it too, or an earlier one.
        assert isinstance(converted, tuple)
        assert converted == scanned or converted[0] < scanned[0]
    elif not isinstance(converted, tuple):
        assert [pairs for _, *pairs in scanned] == [pairs for _, *pairs in converted]


_BAD_ARGS = {"id": "c", "function": {"name": "ls", "arguments": "{bad"}}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "user", "content": [{"type": 5.5}]}, "field 'content[0].type'"),
        ({"role": "user", "content": ["a", {"type": ["text"]}]}, "field 'content[1].type'"),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"id": ["c"], "name": "ls", "args": {}}]},
            "field 'tool_calls[0].id'",
        ),
        ({"role": "tool", "content": "ok", "tool_call_id": {"id": 1}}, "field 'tool_call_id'"),
        ({"role": "tool", "content": "ok", "tool_call_id": "1", "name": 2.5}, "field 'name'"),
        # Two faults: both readers name the first, in one order of fields.
        ({"role": "ai", "name": [], "tool_calls": (None, None)}, "field 'tool_calls'"),
        ({"role": "ai", "content": "", "tool_calls": [_BAD_ARGS], "name": ["x"]}, "field 'name'"),
        ({"role": "ai", "content": [], "tool_calls": [_BAD_ARGS], "name": ["x"]}, "field 'name'"),
    ],
)
def test_a_malformed_field_is_refused_by_both_readers(message: dict[str, Any], error: str):
    scanned, converted = _read_each([message], False), _read_each([message], True)
    assert scanned == converted
    assert isinstance(scanned, tuple) and error in scanned[1], scanned


class _PlainAiMessage:
    """A message object that is neither a LangChain message nor a dict."""

    type = "ai"

    def __init__(self, tool_calls: list[Any]) -> None:
        self.content = ""
        self.tool_calls = tool_calls


def test_openai_calls_are_found_in_any_message_shape():
    # A `function` key parsed from JSON is a string of its own, not the interned one;
    # the fast reader must still see the OpenAI call, wherever in the list it is.
    openai = json.loads('{"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{}"}}')
    langchain = {"name": "read_file", "args": {"path": "a.py"}, "id": "c1", "type": "tool_call"}
    msgs = [
        {"role": "assistant", "content": "", "tool_calls": [langchain, openai]},
        _PlainAiMessage([openai, langchain]),
    ]
    opts = _heuristic_opts()
    per = [m.tokens for m in fastcompact.token_breakdown(msgs).messages]
    assert [tokens for tokens, *_ in _core._read_each(msgs, opts, False)] == per
    assert _core._read_each(msgs, opts, False) == _core._read_each(msgs, opts, True)
    assert per[0] == count_tokens_approximately(msgs[:1])


def test_deeply_nested_arguments_are_bounded():
    args: Any = "leaf"
    for _ in range(5_000):
        args = {"a": args}
    msgs = [{"role": "assistant", "content": "", "tool_calls": [{"name": "t", "args": args, "id": "1"}]}]
    assert fastcompact.count_tokens(msgs) > 0
    assert fastcompact.count_tokens(msgs, encoding="o200k_base") > 0
    assert len(fastcompact.normalize(msgs)) == 1


def test_huge_tool_result():
    big = "x" * 20_000_000
    msgs = [{"role": "tool", "tool_call_id": "1", "content": big}]
    assert fastcompact.count_tokens(msgs) == (len(big) + 1 + 4 + 3) // 4 + 3


@pytest.mark.parametrize("window", [-5, 0, True, 2.5])
def test_a_window_that_is_not_a_positive_int_is_an_input_error(window: Any):
    msgs = ["hello"] * 3
    calls = [
        lambda: fastcompact.find_cutoff(msgs, max_input_tokens=window),
        lambda: fastcompact.should_compact(msgs, ("fraction", 0.5), max_input_tokens=window),
        lambda: fastcompact.plan(msgs, max_input_tokens=window),
        lambda: fastcompact.inspect(msgs, max_input_tokens=window),
    ]
    for call in calls:
        with pytest.raises(fastcompact.InputError) as e:
            call()
        assert e.value.field == "max_input_tokens"


@pytest.mark.parametrize("bad", ["/path/seed.json", {"foo": 1}, None, 42])
def test_inspect_rejects_what_the_other_helpers_reject(bad: Any):
    with pytest.raises(fastcompact.InputError) as e:
        fastcompact.inspect(bad)
    assert e.value.field == "messages"


def test_inspect_reads_a_path(tmp_path: Any):
    from fastcompact.samples import load_session
    from langchain_core.messages import messages_to_dict

    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages_to_dict(load_session("chat"))))
    assert fastcompact.inspect(path).messages == len(load_session("chat"))

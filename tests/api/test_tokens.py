"""Token counting: LangChain parity, exact BPE, usage anchoring, the cache."""

from __future__ import annotations

import collections
import enum
import threading
from typing import Any

import fastcompact
import pytest
from fastcompact import count_text_tokens, count_tokens, token_breakdown
from fastcompact.samples import coding_session
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke


@pytest.mark.parametrize(("n", "seed"), [(1, 0), (50, 1), (400, 2), (2_000, 3)])
def test_heuristic_equals_langchain_on_sessions(n, seed):
    msgs = coding_session(n, seed=seed)
    assert count_tokens(msgs) == count_tokens_approximately(msgs)


def test_heuristic_equals_langchain_per_message():
    msgs = coding_session(300, seed=5)
    b = token_breakdown(msgs)
    for m, counted in zip(msgs, b.messages, strict=True):
        assert counted.tokens == count_tokens_approximately([m]), m


def test_plain_text_is_exact():
    msgs = [HumanMessage("hello world"), AIMessage("hi there!"), HumanMessage("")]
    assert count_tokens(msgs) == count_tokens_approximately(msgs) == 7 + 8 + 4


def test_system_and_tools_are_counted_like_langchain():
    @tool
    def read_file(path: str, limit: int = 100) -> str:
        """Read a file from disk."""
        return ""

    def grep(pattern: str) -> str:
        """Search files for a pattern."""
        return ""

    schema = {
        "name": "ls",
        "description": "List a directory.",
        "parameters": {"type": "object", "properties": {}},
    }
    msgs = coding_session(30, seed=9)
    expected = count_tokens_approximately([SystemMessage("You are terse."), *msgs], tools=[read_file, schema])
    assert count_tokens(msgs, system="You are terse.", tools=[read_file, schema]) == expected
    assert count_tokens(msgs, system=SystemMessage("You are terse.")) == count_tokens_approximately(
        [SystemMessage("You are terse."), *msgs]
    )
    assert count_tokens(msgs, tools=[grep]) > count_tokens(msgs)


def test_tool_schemas_are_kept_but_changes_are_noticed():
    def make(description: str) -> Any:
        @tool("search_docs", description=description)
        def search_docs(query: str) -> str:
            return ""

        return search_docs

    msgs = coding_session(10, seed=4)

    def expected(tools: list[Any]) -> int:
        return count_tokens_approximately(msgs, tools=tools)

    first = make("Search the documentation.")
    assert count_tokens(msgs, tools=[first]) == expected([first])
    # Rebuilt with the same name, description and schema: the same count.
    again = make("Search the documentation.")
    assert count_tokens(msgs, tools=[again, first]) == expected([again, first])
    # A description changed in place, a longer one, a dict changed in place.
    first.description = "Search the documentation, the changelog and the issue tracker."
    assert count_tokens(msgs, tools=[first]) == expected([first])
    schema = {"name": "ls", "description": "List.", "parameters": {"type": "object", "properties": {}}}
    assert count_tokens(msgs, tools=[schema]) == expected([schema])
    schema["description"] = "List a directory, with sizes and modification times."
    assert count_tokens(msgs, tools=[schema]) == expected([schema])
    with pytest.raises(fastcompact.InputError, match=r"'tools'.* a dict or a function, got int"):
        count_tokens(msgs, tools=[42])


def test_anthropic_models_use_denser_ratio():
    msgs = coding_session(40, seed=2)
    approx = count_tokens_approximately(msgs, chars_per_token=3.3)
    assert count_tokens(msgs, model="anthropic:claude-sonnet-4-5") == approx
    assert count_tokens(msgs, chars_per_token=3.3) == approx


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=40)),
    st.builds(
        lambda u: {"type": "image_url", "image_url": {"url": "data:image/png;base64," + u}},
        st.text(max_size=20),
    ),
    st.builds(
        lambda i, a: {"type": "tool_use", "id": i, "name": "t", "input": a}, st.text(max_size=5), _json
    ),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, st.text(max_size=20)),
    st.text(max_size=20),
)


@st.composite
def _any_message(draw: Any) -> Any:
    kind = draw(st.sampled_from(["human", "ai", "ai_blocks", "tool", "system", "result_block"]))
    name = draw(st.one_of(st.none(), st.text(max_size=8)))
    if kind == "human":
        return HumanMessage(draw(st.text(max_size=60)), name=name)
    if kind == "result_block":
        # Anthropic's shape of a tool result, which the core reads as one.
        result = {"type": "tool_result", "tool_use_id": draw(st.text(max_size=10)), "content": draw(_json)}
        return HumanMessage([result], name=name)
    if kind == "system":
        return SystemMessage(draw(st.text(max_size=60)))
    if kind == "tool":
        return ToolMessage(draw(st.text(max_size=60)), tool_call_id=draw(st.text(max_size=10)), name=name)
    calls = [
        {
            "name": draw(st.text(max_size=10)),
            "args": draw(st.dictionaries(st.text(max_size=8), _json, max_size=4)),
            "id": draw(st.one_of(st.none(), st.text(max_size=10))),
            "type": "tool_call",
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    content = draw(st.lists(_blocks, max_size=4)) if kind == "ai_blocks" else draw(st.text(max_size=60))
    return AIMessage(content=content, tool_calls=calls, name=name)


@settings(max_examples=300, deadline=None)
@given(st.lists(_any_message(), max_size=12))
def test_heuristic_parity_on_random_messages(msgs):
    # Exact on every message: content blocks, unicode, quotes, nested arguments.
    b = token_breakdown(msgs)
    for m, counted in zip(msgs, b.messages, strict=True):
        assert counted.tokens == count_tokens_approximately([m])
    assert count_tokens(msgs) == count_tokens_approximately(msgs)


class _Colour(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Point:
    def __repr__(self) -> str:
        return "Point(x=1, y='two')"


def test_arguments_of_any_type_are_counted_as_their_repr_shows_them():
    # Subclasses of the built-in types show themselves their own way; everything else
    # as Python's repr() shows it.
    odd: dict[str, Any] = {
        "ordered": collections.OrderedDict(a=1, b=[2, 3]),
        "default": collections.defaultdict(list, k=["v"]),
        "enum": _Colour.RED,
        "int_enum": _Level.HIGH,
        "tuple": (1, "two", None),
        "set": {"only"},
        "bytes": b"\x00\xff'",
        "big": 10**30,
        "negative": -(2**63),
        "float": 1e-7,
        "object": _Point(),
        "surrogate": "\ud800 lone",
        "nested": [{"deep": [[[]]]}, {}],
        "other_keys": {1: "a", (2, "b"): [None], _Point(): {"in": 2**70}},
    }
    for key, value in odd.items():
        msg = AIMessage("", tool_calls=[{"name": "t", "args": {key: value}, "id": "c1"}])
        assert count_tokens([msg]) == count_tokens_approximately([msg]), key
    msg = AIMessage("", tool_calls=[{"name": "t", "args": odd, "id": "c1"}])
    assert count_tokens([msg]) == count_tokens_approximately([msg])


class _Grabby:
    """A value whose repr() empties the containers it sits in."""

    def __init__(self, *homes: Any) -> None:
        self.homes = homes

    def __repr__(self) -> str:
        for home in self.homes:
            home.clear()
        return "grabbed"


def test_a_repr_that_empties_its_containers_is_counted_without_harm():
    inner: list[Any] = ["kept", "kept too"]
    outer: dict[Any, Any] = {}
    inner.insert(0, _Grabby(inner, outer))
    outer.update({_Grabby(outer, inner): "value", "list": inner, "after": "x" * 50})
    msg = AIMessage("", tool_calls=[{"name": "t", "args": {"outer": outer}, "id": "c1"}])
    # What is left is counted: never a crash, never a read of what was freed.
    assert count_tokens([msg]) > 0


def test_bpe_counts_known_strings():
    # Published cl100k_base counts; o200k_base values recorded from the embedded vocabulary.
    assert count_text_tokens("tiktoken is great!", "cl100k_base") == 6
    assert count_text_tokens("Hello, world!", "cl100k_base") == 4
    assert count_text_tokens("The quick brown fox jumps over the lazy dog.", "cl100k_base") == 10
    assert count_text_tokens("hello world", "o200k_base") == 2
    assert count_text_tokens("tiktoken is great!", "o200k_base") == 6
    assert count_text_tokens("日本語のテキスト", "o200k_base") == 6
    assert count_text_tokens("日本語のテキスト", "cl100k_base") == 8
    assert count_text_tokens("", "o200k_base") == 0


def test_bpe_message_framing():
    # 3 framing tokens + role ("user", 1 token) + text.
    assert count_tokens(["hello world"], encoding="o200k_base") == 3 + 1 + 2
    msgs = coding_session(200, seed=4)
    o200k = count_tokens(msgs, encoding="o200k_base")
    cl100k = count_tokens(msgs, encoding="cl100k_base")
    heuristic = count_tokens(msgs)
    assert o200k > 0 and cl100k > 0
    # Code-like text: the heuristic is within a factor of two of a real tokenizer.
    assert 0.5 < o200k / heuristic < 2.0


def test_bpe_is_repeatable_and_cached():
    msgs = coding_session(500, seed=6)
    first = count_tokens(msgs, encoding="o200k_base")
    assert count_tokens(msgs, encoding="o200k_base") == first
    fastcompact.set_cache_capacity(0)
    assert count_tokens(msgs, encoding="o200k_base") == first


def test_bad_encoding():
    with pytest.raises(fastcompact.InputError, match="unknown encoding"):
        count_tokens(["x"], encoding="gpt2")  # type: ignore[arg-type]
    with pytest.raises(fastcompact.InputError):
        count_text_tokens("x", "heuristic")  # type: ignore[arg-type]


def _usage_session() -> list[Any]:
    return [
        HumanMessage("x" * 400),  # 100 + 1 + 3 = 104 tokens by the heuristic
        AIMessage("y" * 40, usage_metadata={"input_tokens": 200, "output_tokens": 12, "total_tokens": 212}),
        HumanMessage("z" * 400),
    ]


def test_usage_anchors_the_count():
    msgs = _usage_session()
    per = [m.tokens for m in token_breakdown(msgs).messages]
    # Usage 212 for an estimate of per[0] + per[1]: the difference is what the caller
    # did not pass (a system prompt, say), a fixed offset; the message after it counts
    # as estimated.
    assert count_tokens(msgs, use_usage=True) == 212 + per[2]
    assert count_tokens(msgs) == sum(per)


def test_usage_none_fields_and_response_metadata_variants():
    base = _usage_session()
    none_fields = AIMessage(
        "y" * 40, usage_metadata={"input_tokens": 212, "output_tokens": 0, "total_tokens": 212}
    )
    none_fields.usage_metadata["output_tokens"] = None  # type: ignore[index]
    anthropic = AIMessage(
        "y" * 40,
        response_metadata={
            "usage": {
                "input_tokens": 100,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": None,
                "output_tokens": 12,
            }
        },
    )
    openai = AIMessage(
        "y" * 40, response_metadata={"token_usage": {"prompt_tokens": 200, "completion_tokens": 12}}
    )
    assert count_tokens([base[0], anthropic, base[2]], use_usage=True) == count_tokens(base, use_usage=True)
    assert count_tokens([base[0], openai, base[2]], use_usage=True) == count_tokens(base, use_usage=True)
    # `None` counts as zero: 212 + 0 is the same total as 200 + 12.
    assert count_tokens([base[0], none_fields, base[2]], use_usage=True) == count_tokens(base, use_usage=True)


def test_usage_is_read_when_first_asked_for():
    # A plain count leaves the usage unread; a later count that anchors on it reads it
    # then, and agrees with one that anchored from the start.
    msgs = _usage_session()
    anchored = count_tokens(msgs, use_usage=True, cache_key="anchored-first")
    plain = count_tokens(msgs, cache_key="plain-first")
    assert plain != anchored
    assert count_tokens(msgs, use_usage=True, cache_key="plain-first") == anchored
    assert count_tokens(msgs, cache_key="plain-first") == plain


def test_usage_far_from_the_estimate_still_anchors():
    # Chinese text, images and large system prompts are where the estimate is far off:
    # the provider's number is right, however far from it.
    usage = {"input_tokens": 150_000, "output_tokens": 2, "total_tokens": 150_002}
    msgs = [HumanMessage("hi"), AIMessage("ok", usage_metadata=usage), HumanMessage("next")]
    assert count_tokens(msgs) < 20
    assert count_tokens(msgs, use_usage=True) == 150_002 + count_tokens([msgs[2]])


def _reported(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """Usage as Anthropic reports it through langchain-anthropic."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_token_details": {"cache_creation": input_tokens - 3, "cache_read": 0},
    }


def test_a_hidden_system_prompt_is_an_offset_not_a_ratio():
    # An agent with a 6,700-token system prompt the caller's list does not hold: the
    # first answer reports it, then a large file is read. The file must count as its own
    # size, not scaled by 6,836 / 99; and every appended message adds to the count.
    hidden = 6_700
    body = "".join(f"{i:6}\tdef handler_{i}(request):  # checks the request\n" for i in range(500))
    msgs: list[Any] = [HumanMessage("Read app.py, 500 lines at a time, and summarize it.")]
    for k, (text, result) in enumerate(
        [("I'll read it in chunks.", body), ("Next chunk.", body), ("Done.", None)]
    ):
        calls = [
            {"name": "read_file", "args": {"file_path": "/app.py"}, "id": f"toolu_{k}", "type": "tool_call"}
        ]
        answer = AIMessage(text, tool_calls=calls if result else [])
        sent = hidden + count_tokens(msgs)
        answer.usage_metadata = _reported(sent, count_tokens([answer]))
        msgs.append(answer)
        if result:
            msgs.append(ToolMessage(result, tool_call_id=f"toolu_{k}"))
    counts = [count_tokens(msgs[:n], use_usage=True) for n in range(1, len(msgs) + 1)]
    assert counts == [
        count_tokens(msgs[:1]),
        *(hidden + count_tokens(msgs[:n]) for n in range(2, len(msgs) + 1)),
    ]
    assert counts[2] < 15_000


# Text of three kinds whose tokens per character differ as real tokenizers' do:
# English prose, Python code, Chinese (about a token a character). A message is a few
# of its kind's lines, so that its density is its kind's.
_LINES = {
    "english": [
        "The agent reads each file before it changes anything. ",
        "It writes a short note about what the module does and why. ",
        "Tests run after every edit, and a failure stops the step. ",
        "The user asked for smaller functions and clearer names. ",
    ],
    "code": [
        "def handler(request, *, timeout=30):\n    return request.get('id')\n",
        "for index, value in enumerate(values[1:]):\n    total += value * 2\n",
        "if config.get('retries', 0) > 3:\n    raise ValueError(f'too many: {n}')\n",
        "class Store:\n    def __init__(self, path: str) -> None:\n        self.path = path\n",
    ],
    "chinese": [
        "代理在修改任何内容之前会先读取每个文件。",
        "它会写一段简短的说明解释这个模块的作用和原因。",
        "每次编辑之后都会运行测试失败就会停止这一步。",
        "用户希望函数更短名字更清楚。",
    ],
}


def _text_of(kind: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_LINES[kind]), min_size=2, max_size=40).map("".join)


@st.composite
def _provider_session(draw: st.DrawFn) -> tuple[list[Any], list[int]]:
    """A session whose AI messages report usage as a provider does: the input is a hidden
    fixed prefix (system prompt and tools the caller does not pass) plus everything
    before the answer, counted by a real tokenizer (o200k_base), and the output the
    answer itself. Returns the messages and each prefix's true size."""
    text = _text_of(draw(st.sampled_from(sorted(_LINES))))
    # An agent's system prompt and tool schemas: a few hundred tokens at the least.
    hidden = draw(st.integers(500, 8_000))
    msgs: list[Any] = [HumanMessage(draw(text))]
    for step in range(draw(st.integers(2, 12))):
        call = {
            "name": "read_file",
            "args": {"file_path": f"/f{step}"},
            "id": f"c{step}",
            "type": "tool_call",
        }
        answer = AIMessage(draw(text), tool_calls=[call])
        sent = hidden + count_tokens(msgs, encoding="o200k_base")
        out = count_tokens([answer], encoding="o200k_base")
        answer.usage_metadata = {"input_tokens": sent, "output_tokens": out, "total_tokens": sent + out}
        msgs += [answer, ToolMessage(draw(text), tool_call_id=f"c{step}")]
        if draw(st.booleans()):
            msgs.append(HumanMessage(draw(text)))
    truth = [hidden + count_tokens(msgs[:n], encoding="o200k_base") for n in range(1, len(msgs) + 1)]
    return msgs, truth


@settings(max_examples=60, deadline=None)
@given(_provider_session())
def test_usage_counts_stay_near_the_truth_and_never_fall(session: tuple[list[Any], list[int]]):
    msgs, truth = session
    fastcompact.clear_cache()
    counts = [count_tokens(msgs[:n], use_usage=True) for n in range(1, len(msgs) + 1)]
    assert counts == sorted(counts), counts
    # Once the reports span a few hundred tokens of results and requests (the density
    # of a tokenizer cannot be read off less), every count is within 5% of what the
    # provider will see; above that only where it holds an earlier count (a newer
    # report lower than the estimate before it cannot lower the count).
    since_first: int | None = None
    measured = 0
    for n in range(1, len(msgs) + 1):
        m = msgs[n - 1]
        if getattr(m, "usage_metadata", None):
            since_first = since_first or 0
            measured = since_first
        elif since_first is not None:
            since_first += count_tokens([m])
        if measured < 300:
            continue
        count, true = counts[n - 1], truth[n - 1]
        assert count >= 0.95 * true, (n, counts, truth)
        assert count <= 1.05 * true or count == counts[n - 2], (n, counts, truth)


def test_warm_cache_matches_cold_after_append_and_edit():
    msgs = coding_session(1_000, seed=8)
    cold = count_tokens(msgs)
    assert count_tokens(msgs) == cold
    msgs.append(HumanMessage("one more"))
    assert count_tokens(msgs) == count_tokens_approximately(msgs)
    # Replacing a message (model_copy) and reassigning content are both noticed.
    msgs[10] = msgs[10].model_copy(update={"content": "short now"})
    assert count_tokens(msgs) == count_tokens_approximately(msgs)
    msgs[20].content = "edited in place"
    assert count_tokens(msgs) == count_tokens_approximately(msgs)
    # A list mutated in the middle.
    del msgs[5:8]
    assert count_tokens(msgs) == count_tokens_approximately(msgs)


_COUNT_SETTINGS = [
    {},
    {"chars_per_token": 3.0},
    {"encoding": "o200k_base"},
    {"encoding": "cl100k_base"},
    {"use_usage": True},
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["append", "replace", "reassign", "delete", "count"]),
            st.integers(0, 10**6),
            st.sampled_from(range(len(_COUNT_SETTINGS))),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_warm_counts_equal_cold_ones_across_settings(steps):
    """Counts kept from earlier calls (under whatever encoding and ratio) never leak
    into a call under other settings or after the list changed."""
    msgs = coding_session(40, seed=5)
    extra = coding_session(60, seed=6)
    fastcompact.clear_cache()
    for k, (op, pick, which) in enumerate(steps):
        kw = _COUNT_SETTINGS[which]
        if op == "append":
            msgs.append(extra[pick % len(extra)])
        elif op == "replace" and msgs:
            i = pick % len(msgs)
            msgs[i] = msgs[i].model_copy(update={"content": f"replaced {pick}"})
        elif op == "reassign" and msgs:
            msgs[pick % len(msgs)].content = f"reassigned {pick}"
        elif op == "delete" and msgs:
            del msgs[pick % len(msgs) :]
        # A key of its own: the cold count starts from an empty entry.
        cold = count_tokens(msgs, cache_key=f"cold-{k}", **kw)
        assert count_tokens(msgs, **kw) == cold


def test_contents_changed_are_noticed_whatever_the_field_order():
    """A warm check looks for a message's content where it last found one; messages
    whose fields come in other orders (models; dicts with content first, in the
    middle, last), in turns, are checked all the same."""

    def message(i: int) -> Any:
        text = f"question {i} " * (i % 7 + 1)
        return [
            HumanMessage(text),
            {"content": text, "role": "user"},
            {"role": "user", "content": text, "name": "n"},
            {"name": "n", "role": "user", "content": text},
        ][i % 4]

    msgs = [message(i) for i in range(80)]
    count_tokens(msgs)
    for round_ in range(3):
        for i in range(round_, 80, 5):
            longer = f"changed in round {round_}, " * (i % 5 + 2)
            if isinstance(msgs[i], dict):
                msgs[i]["content"] = longer
            else:
                msgs[i].content = longer
        assert count_tokens(msgs) == count_tokens(msgs, cache_key=f"fresh-{round_}")
        assert count_tokens(msgs) == count_tokens_approximately(msgs)

    # Where content was found is only where to look first: an entry there under
    # another key, even holding the old text, says nothing of the content.
    msgs = [{"x": 1, "role": "user", "content": f"question {i} " * 9} for i in range(40)]
    count_tokens(msgs)
    count_tokens(msgs)
    for i in range(0, 40, 3):
        d = msgs[i]
        d["note"] = d.pop("content")
        d["content"] = "short"
    assert count_tokens(msgs) == count_tokens(msgs, cache_key="fresh-moved")


def test_contents_changed_in_dict_messages_are_noticed():
    """A warm count notices a content changed in a dict message, however the dict
    was changed: the key set again, deleted and added back (its entry moves), added
    after the dict grew, deleted, or replaced while the old text stays under another
    key; with keys that are not interned strings (parsed JSON)."""
    import json

    msgs = json.loads(json.dumps([{"role": "user", "content": f"question {i}"} for i in range(30)]))
    count_tokens(msgs)
    count_tokens(msgs)
    changes = [
        lambda: msgs[3].update(content="a much longer question than before, " * 5),
        lambda: (msgs[4].pop("content"), msgs[4].update(content="moved to the end, " * 7)),
        lambda: msgs[5].update({f"extra_{k}": k for k in range(20)}, content="after growing, " * 9),
        lambda: msgs[6].pop("content"),
        lambda: msgs[6].update(content="back again, " * 11),
        lambda: msgs[7].update(note=msgs[7].pop("content"), content="the old text kept as a note, " * 3),
    ]
    for k, change in enumerate(changes):
        change()
        if all("content" in m for m in msgs):
            assert count_tokens(msgs) == count_tokens(msgs, cache_key=f"fresh-{k}")
        else:  # a stale cache would count the deleted content
            with pytest.raises(fastcompact.InputError, match="message 6: field 'content'"):
                count_tokens(msgs)


def test_cache_is_bounded_and_optional():
    fastcompact.set_cache_capacity(3)
    for seed in range(10):
        count_tokens(coding_session(20, seed=seed))
    assert fastcompact.cache_info() == (3, 3)
    fastcompact.set_cache_capacity(0)
    assert fastcompact.cache_info() == (0, 0)
    msgs = coding_session(50, seed=1)
    assert count_tokens(msgs) == count_tokens_approximately(msgs)
    with pytest.raises(fastcompact.InputError):
        fastcompact.set_cache_capacity(-1)


def test_threads_count_concurrently():
    sessions = [coding_session(300, seed=s) for s in range(8)]
    expected = [count_tokens_approximately(s) for s in sessions]
    bpe_expected = [
        count_tokens(s, encoding="cl100k_base", cache_key=f"t{i}") for i, s in enumerate(sessions)
    ]
    fastcompact.clear_cache()
    results: dict[int, tuple[int, int]] = {}

    def work(i: int) -> None:
        for _ in range(3):
            results[i] = (count_tokens(sessions[i]), count_tokens(sessions[i], encoding="cl100k_base"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(8)] == list(zip(expected, bpe_expected, strict=True))


def test_breakdown_attributes_tool_results():
    msgs = [
        HumanMessage("go"),
        AIMessage(
            "", tool_calls=[{"name": "grep", "args": {}, "id": "a"}, {"name": "ls", "args": {}, "id": "b"}]
        ),
        ToolMessage("x" * 400, tool_call_id="a"),
        ToolMessage("y" * 40, tool_call_id="b", name="ls"),
    ]
    b = token_breakdown(msgs)
    assert set(b.per_tool) == {"grep", "ls"}
    assert b.per_tool["grep"] == b.messages[2].tokens
    assert b.per_role["tool"] == b.messages[2].tokens + b.messages[3].tokens
    assert sum(b.per_role.values()) == b.total
    assert b.largest(1)[0].index == 2
    assert "grep" in str(b)


def test_reloaded_copies_reuse_the_cache_and_changes_are_noticed():
    """A conversation reloaded from a checkpointer arrives as new, equal objects."""
    import copy

    from langchain_core.messages import messages_from_dict, messages_to_dict

    msgs = coding_session(300, seed=12)
    dicts = messages_to_dict(msgs)
    fastcompact.count_tokens(msgs, cache_key="reload")
    fastcompact.count_tokens(dicts, cache_key="reload-dicts")

    def fresh(m: list) -> int:
        fastcompact.set_cache_capacity(0)
        try:
            return fastcompact.count_tokens(m)
        finally:
            fastcompact.set_cache_capacity(1_000)

    reloaded = messages_from_dict(copy.deepcopy(dicts))
    assert fastcompact.count_tokens(reloaded, cache_key="reload") == fresh(reloaded)
    # Equal-looking but changed: a different content, a different tool call.
    changed = messages_from_dict(copy.deepcopy(dicts))
    changed[5] = changed[5].model_copy(update={"content": "a different text"})
    ai = next(i for i, m in enumerate(changed) if getattr(m, "tool_calls", None))
    calls = [dict(changed[ai].tool_calls[0], args={"file_path": "x" * 5_000})]
    changed[ai] = changed[ai].model_copy(update={"tool_calls": calls})
    assert fastcompact.count_tokens(changed, cache_key="reload") == fresh(changed)
    # Serialized dicts, reloaded.
    again = copy.deepcopy(dicts)
    again[7]["data"]["content"] = "changed"
    assert fastcompact.count_tokens(again, cache_key="reload-dicts") == fresh(again)
    # The passes agree too.
    view, p = fastcompact.model_view(reloaded, cache_key="reload")
    fastcompact.clear_cache()
    view2, p2 = fastcompact.model_view(reloaded)
    assert p == p2 and [m.content for m in view] == [m.content for m in view2]


def test_reasoning_blocks_count_their_text_as_thinking_blocks_do():
    text = "weigh the options before answering " * 40
    thinking = [{"role": "assistant", "content": [{"type": "thinking", "thinking": text, "signature": "s"}]}]
    reasoning = [{"role": "assistant", "content": [{"type": "reasoning", "reasoning": text}]}]
    for enc in ("o200k_base", "cl100k_base"):
        assert count_tokens(reasoning, encoding=enc) == count_tokens(thinking, encoding=enc)
        assert count_tokens(reasoning, encoding=enc) == count_tokens(
            [{"role": "assistant", "content": [{"type": "text", "text": text}]}], encoding=enc
        )


def test_message_sizes_read_as_the_list_they_stand_for():
    """A breakdown's messages are built on demand, and read as a list of
    `MessageTokens` would: indices, slices, equality, and the largest by rank."""
    msgs = coding_session(300, seed=21)
    sizes = token_breakdown(msgs).messages
    as_list = list(sizes)
    assert len(sizes) == len(msgs) == len(as_list)
    assert [m.index for m in as_list] == list(range(len(msgs)))
    assert sizes == as_list and as_list == sizes
    # One message read alone (a picture's few) is the one read with all the others.
    assert [sizes[i] for i in range(len(sizes))] == as_list
    assert {m.tool for m in as_list} > {None} and {m.role for m in as_list} >= {"ai", "tool", "human"}
    assert sizes[-1] == as_list[-1] and sizes[10:20:3] == as_list[10:20:3]
    with pytest.raises(IndexError):
        sizes[len(msgs)]
    assert sizes != as_list[:-1]
    ranked = sorted(as_list, key=lambda m: (-m.tokens, m.index))
    for n in (0, 1, 5, len(msgs) + 3):
        assert sizes.largest(n) == ranked[:n]
    # Equal sizes rank by position.
    tied = token_breakdown([HumanMessage("same"), HumanMessage("same"), HumanMessage("x")]).messages
    assert [m.index for m in tied.largest(2)] == [0, 1]
    assert sizes.tokens == [m.tokens for m in as_list]

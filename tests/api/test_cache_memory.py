"""The conversation cache bounded in bytes: the bound holds however many
conversations go through, resident memory stops growing with it, and clearing the
cache hands the memory back to the OS. Run in a subprocess, so that the resident set
measured is one process's own."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import fastcompact
import pytest
from fastcompact.samples import coding_session

_SCRIPT = r"""
import gc, json, os, sys, fastcompact
from fastcompact.samples import coding_session

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

bound = 48 << 20
fastcompact.set_cache_capacity(bytes=bound)
base = coding_session(300, seed=1)
start = rss()
over, marks = 0, {}
for k in range(300):
    msgs = [m.model_copy(update={"id": f"c{k}-{m.id}"}) for m in base]
    for _ in range(int(sys.argv[1])):
        fastcompact.model_view(msgs, max_input_tokens=200_000)
    del msgs
    held, most = fastcompact.cache_bytes()
    over += held > most
    if k + 1 in (100, 300):
        gc.collect()
        marks[k + 1] = {"rss": rss() - start, "held": held, "cached": fastcompact.cache_info()[0]}
before = rss()
fastcompact.clear_cache()
gc.collect()
print(json.dumps({"bound": bound, "over": over, "marks": marks, "returned": before - rss()}))
"""


@pytest.mark.parametrize("calls", [1, 2])
def test_a_byte_bound_holds_and_clearing_returns_the_memory(calls: int):
    # Called twice, a conversation is seen kept by its caller (its texts weighed as
    # the caller's) before the caller drops it: the cache must notice.
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(calls)], capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout)
    bound, at_100, at_300 = r["bound"], r["marks"]["100"], r["marks"]["300"]
    assert r["over"] == 0
    # Full: many conversations cached, the oldest gone, and the bound nearly used.
    assert 10 <= at_300["cached"] < 300 and at_300["held"] > bound // 2
    # Two hundred more conversations add nothing lasting to the resident set.
    assert at_300["rss"] - at_100["rss"] < bound // 4, r
    # What the cache says it holds is no less than what it takes.
    assert at_300["rss"] < 1.5 * bound, r
    # Cleared, most of it goes back to the OS.
    assert r["returned"] > at_300["rss"] // 2, r


def test_the_count_and_the_byte_bounds_both_hold():
    try:
        fastcompact.set_cache_capacity(2, bytes=2**40)
        for k in range(4):
            fastcompact.count_tokens([f"conversation {k}"], cache_key=f"k{k}")
        assert fastcompact.cache_info() == (2, 2)
        held, most = fastcompact.cache_bytes()
        assert (held > 0, most) == (True, 2**40)
        fastcompact.set_cache_capacity(bytes=0)
        assert fastcompact.cache_info()[0] == 0 and fastcompact.cache_bytes()[0] == 0
        for bad in (-1, 2**60, 1.5, True):
            with pytest.raises(fastcompact.InputError):
                fastcompact.set_cache_capacity(bytes=bad)  # type: ignore[arg-type]
    finally:
        fastcompact.set_cache_capacity(2**32, bytes=2**30)


def _texts(messages: list[Any]) -> int:
    return sum(len(m.content) for m in messages if isinstance(m.content, str))


def _copies(messages: list[Any], k: int) -> list[Any]:
    return [m.model_copy(update={"id": f"c{k}-{m.id}"}) for m in messages]


@pytest.fixture
def cache() -> Iterator[None]:
    before = fastcompact.cache_info()[1], fastcompact.cache_bytes()[1]
    fastcompact.clear_cache()
    try:
        yield
    finally:
        fastcompact.clear_cache()
        fastcompact.set_cache_capacity(before[0], bytes=before[1])


def test_the_callers_messages_weigh_as_the_caches_only_once_it_lets_go(cache: None):
    msgs = _copies(coding_session(120, seed=3), 0)
    # The caller holds what it passes: the cache weighs what it adds, from the first call.
    view = fastcompact.model_view(msgs, max_input_tokens=200_000)
    light = fastcompact.cache_bytes()[0]
    view = fastcompact.model_view(msgs, max_input_tokens=200_000)
    assert fastcompact.cache_bytes()[0] == light
    # Equal copies (as a checkpointer hands them back) are adopted, the same weight.
    copies = [m.model_copy() for m in msgs]
    fastcompact.model_view(copies, max_input_tokens=200_000)
    assert fastcompact.cache_bytes()[0] == light
    # Other calls go on; once the caller lets the copies go, only the cache keeps them
    # alive, and within a few puts it weighs them (objects and texts) as its own.
    fastcompact.count_tokens(["another conversation"], cache_key="other")
    small = fastcompact.cache_bytes()[0] - light
    for _ in range(200):
        fastcompact.count_tokens(["another conversation"], cache_key="other")
    assert fastcompact.cache_bytes()[0] == light + small
    del copies
    for _ in range(200):
        fastcompact.count_tokens(["another conversation"], cache_key="other")
    theirs = fastcompact.cache_bytes()[0] - light - small
    assert _texts(msgs) < theirs < 2 * (_texts(msgs) + 1_000 * len(msgs))
    # The caller's own objects again: adopted, and its own once more.
    fastcompact.model_view(msgs, max_input_tokens=200_000)
    assert fastcompact.cache_bytes()[0] == light + small
    del view


_WEIGHED = r"""
import gc, json, os, tracemalloc, fastcompact
from fastcompact.samples import coding_session

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

fastcompact.set_cache_capacity(bytes=2**40)
base = coding_session(1_000, seed=6)
conversations = [[m.model_copy(update={"id": f"c{k}-{m.id}"}) for m in base] for k in range(20)]
gc.collect()
before = rss()
for msgs in conversations:
    fastcompact.plan(msgs, max_input_tokens=200_000)
gc.collect()
planned = {"grown": rss() - before, "weighed": fastcompact.cache_bytes()[0]}
tracemalloc.start()
start = tracemalloc.get_traced_memory()[0]
for msgs in conversations:
    fastcompact.model_view(msgs, max_input_tokens=200_000)
gc.collect()
copies = {"grown": tracemalloc.get_traced_memory()[0] - start,
          "weighed": fastcompact.cache_bytes()[0] - planned["weighed"]}
print(json.dumps({"planned": planned, "copies": copies}))
"""


def test_the_weight_reported_is_the_memory_the_cache_takes():
    """A known load, in a process of its own: what the converted messages and the
    passes' memos weigh against the growth of the resident set, and what the edited
    copies of the model views weigh against the growth of the Python heap."""
    out = subprocess.run([sys.executable, "-c", _WEIGHED], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    for part in ("planned", "copies"):
        grown, weighed = r[part]["grown"], r[part]["weighed"]
        assert weighed > 0 and abs(weighed - grown) <= 0.15 * grown, r


def test_edited_copies_the_cache_keeps_are_out_of_the_collectors_sight(cache: None):
    msgs = _copies(coding_session(300, seed=5), 2)
    view, _ = fastcompact.model_view(msgs, max_input_tokens=200_000)
    copies = [(v, m) for v, m in zip(view, msgs, strict=True) if v is not m]
    assert len(copies) > 50
    made = [part for v, _ in copies for part in (v, v.__dict__, v.__pydantic_fields_set__)]
    assert not any(gc.is_tracked(part) for part in made)
    # The messages, and what a copy shares with its message, stay the collector's.
    assert all(gc.is_tracked(m) and gc.is_tracked(m.__dict__) for m in msgs)
    shared = [v.additional_kwargs for v, m in copies if v.additional_kwargs is m.additional_kwargs]
    assert shared and all(gc.is_tracked(d) for d in shared if d)
    # A collection leaves them whole, the next call reuses them, and once the cache and
    # the views let go, reference counting frees them.
    gc.collect()
    again, _ = fastcompact.model_view(msgs, max_input_tokens=200_000)
    assert all(again[msgs.index(m)] is v for v, m in copies)
    one = copies[0][0]
    text = one.content
    del view, again, copies, made, shared
    assert one.content == text
    fastcompact.clear_cache()
    assert sys.getrefcount(one) == 2


def test_a_plan_counting_with_a_bpe_encoding_keeps_its_messages_as_slim(cache: None):
    """The BPE count reads a message's arguments whole; once it is made, the message is
    kept as slim as with the heuristic count, and weighed so (the memos differ a little:
    other counts, other placeholders; the arguments kept whole would be tens of KB)."""
    msgs = _copies(coding_session(300, seed=9), 4)
    weights = []
    for encoding in ("heuristic", "o200k_base"):
        fastcompact.clear_cache()
        fastcompact.plan(msgs, max_input_tokens=200_000, encoding=encoding)
        weights.append(fastcompact.cache_bytes()[0])
    assert weights[0] > 0 and abs(weights[1] - weights[0]) < 0.01 * weights[0], weights


def test_a_planned_conversation_is_cut_and_broken_down_as_a_counted_one(cache: None):
    """A planned conversation's entries keep no pair shapes of their own (their messages
    have them): a cut and a breakdown read through the same entries agree with fresh
    ones."""
    msgs = _copies(coding_session(300, seed=10), 5)
    fresh = fastcompact.token_breakdown(msgs, cache_key="fresh-breakdown")
    cut = fastcompact.find_cutoff(msgs, ("messages", 40), cache_key="fresh-cut")
    fastcompact.plan(msgs, max_input_tokens=200_000, cache_key="planned")
    assert fastcompact.token_breakdown(msgs, cache_key="planned") == fresh
    assert fastcompact.find_cutoff(msgs, ("messages", 40), cache_key="planned") == cut

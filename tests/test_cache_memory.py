"""The conversation cache bounded in bytes: the bound holds however many
conversations go through, resident memory stops growing with it, and clearing the
cache hands the memory back to the OS. Run in a subprocess, so that the resident set
measured is one process's own."""

from __future__ import annotations

import json
import subprocess
import sys

import fastcompact
import pytest

_SCRIPT = r"""
import gc, json, os, fastcompact
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


def test_a_byte_bound_holds_and_clearing_returns_the_memory():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True)
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

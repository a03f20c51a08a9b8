"""Token counting, side by side with langchain-core's count_tokens_approximately.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_tokens.py            # prints a Markdown table
    python benches/bench_tokens.py --quick    # fewer repetitions

Every figure is the median of interleaved repetitions on the same input, so both sides
see the same machine load; ratios are of those medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from typing import Any

import fastcompact
from fastcompact.samples import coding_session
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from timing import time_call

SIZES = (100, 1_000, 10_000)
SEED = 42


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def bench_heuristic(n: int, reps: int) -> dict[str, float]:
    msgs = coding_session(n, seed=SEED)
    assert fastcompact.count_tokens(msgs) == count_tokens_approximately(msgs), "parity broken"
    extra = HumanMessage("one more question about the failing test")
    lc, cold, warm = [], [], []
    for _ in range(reps):
        lc.append(time_call(lambda: count_tokens_approximately(msgs)))
        fastcompact.clear_cache()
        cold.append(time_call(lambda: fastcompact.count_tokens(msgs)))
        # Warm: the conversation was counted last turn; one message was appended since.
        msgs.append(extra)
        warm.append(time_call(lambda: fastcompact.count_tokens(msgs)))
        msgs.pop()
        fastcompact.count_tokens(msgs)
    return {"n": n, "langchain_ms": _median_ms(lc), "cold_ms": _median_ms(cold), "warm_ms": _median_ms(warm)}


def _text_bytes(msgs: list[Any]) -> int:
    total = 0
    for m in msgs:
        total += len(m.content.encode("utf-8")) if isinstance(m.content, str) else 0
        for c in getattr(m, "tool_calls", []) or []:
            total += len(json.dumps(c["args"]).encode("utf-8")) + len(c["name"])
    return total


def bench_bpe(n: int, reps: int) -> dict[str, float]:
    """o200k_base throughput on this process's rayon pool (RAYON_NUM_THREADS sets it)."""
    msgs = coding_session(n, seed=SEED)
    size = _text_bytes(msgs)
    fastcompact.set_cache_capacity(0)  # every call tokenizes everything
    samples = [time_call(lambda: fastcompact.count_tokens(msgs, encoding="o200k_base")) for _ in range(reps)]
    med = statistics.median(samples)
    return {"n": n, "mb": size / 1e6, "seconds": med, "mb_per_s": size / 1e6 / med}


def _bpe_in_subprocess(threads: int, n: int, reps: int) -> dict[str, float]:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads)}
    out = subprocess.run(
        [sys.executable, __file__, "--bpe-only", str(n), str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bpe-only", nargs=2, type=int, metavar=("N", "REPS"))
    args = parser.parse_args()
    if args.bpe_only:
        print(json.dumps(bench_bpe(*args.bpe_only)))
        return

    reps = 7 if args.quick else 21
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    print("| messages | count_tokens_approximately | fastcompact cold | speed-up", end=" ")
    print("| fastcompact warm (+1 message) |")
    print("|---:|---:|---:|---:|---:|")
    for n in SIZES:
        r = bench_heuristic(n, reps)
        print(
            f"| {n:,} | {r['langchain_ms']:.2f} ms | {r['cold_ms']:.2f} ms | "
            f"{r['langchain_ms'] / r['cold_ms']:.1f}x | {r['warm_ms'] * 1e3:.0f} µs |"
        )
    print()
    n, bpe_reps = 2_000, 3 if args.quick else 5
    one = _bpe_in_subprocess(1, n, bpe_reps)
    two = _bpe_in_subprocess(2, n, bpe_reps)
    print(f"o200k_base on {n:,} messages ({one['mb']:.1f} MB of text):")
    print()
    print("| threads | time | throughput |")
    print("|---:|---:|---:|")
    for threads, r in ((1, one), (2, two)):
        print(f"| {threads} | {r['seconds'] * 1e3:.0f} ms | {r['mb_per_s']:.1f} MB/s |")


if __name__ == "__main__":
    main()

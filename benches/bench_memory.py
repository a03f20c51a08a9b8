"""Resident memory over 10,000 conversations: the per-conversation cache is bounded
in bytes.

Run from the repository root:

    python benches/bench_memory.py            # prints a Markdown table
    python benches/bench_memory.py --quick

Each conversation is a fresh copy (new objects, new ids) of a 120-message coding
session, planned once with `model_view` as a middleware call would; the caller keeps
no reference to it afterwards, so only fastcompact's caches can hold it. Resident set
size is read from /proc (Linux).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
from pathlib import Path

import fastcompact
from fastcompact.samples import coding_session


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def run(conversations: int, capacity: int, every: int) -> list[tuple[int, float, int]]:
    fastcompact.set_cache_capacity(bytes=capacity)
    fastcompact.clear_cache()
    template = coding_session(120, seed=5)
    rows = []
    for i in range(1, conversations + 1):
        msgs = [m.model_copy(update={"id": f"c{i}-{j}"}) for j, m in enumerate(template)]
        fastcompact.model_view(msgs, max_input_tokens=200_000)
        del msgs
        if i % every == 0:
            gc.collect()
            rows.append((i, rss_mb(), fastcompact.cache_info()[0]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--capacity", type=int, default=None, help="run one bound in bytes (in this process)")
    args = parser.parse_args()
    n = 2_000 if args.quick else 10_000
    if args.capacity is not None:
        start = rss_mb()
        rows = run(n, args.capacity, n // 10)
        print(json.dumps({"start": start, "rows": rows}))
        return
    # Each capacity in a process of its own, so that one run's heap does not hide the other's.
    for capacity in (256 << 20, 64 << 20):
        cmd = [sys.executable, __file__, "--capacity", str(capacity), *(["--quick"] if args.quick else [])]
        result = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        print(f"Cache bound {capacity >> 20:,} MB (resident {result['start']:.0f} MB before the first):")
        print()
        print("| conversations seen | resident MB | conversations cached |")
        print("|---:|---:|---:|")
        for seen, mb, cached in result["rows"]:
            print(f"| {seen:,} | {mb:.0f} | {cached:,} |")
        print()


if __name__ == "__main__":
    main()

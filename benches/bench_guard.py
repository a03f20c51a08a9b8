"""A speed guard for the core's calls: each timed cold and warm at 1,000, 10,000 and
100,000 messages beside the peers' calls in the same run, and compared with a saved run
of the build before, so that a change that slows the core shows before it lands.

    python benches/bench_guard.py [--quick] [--json FILE] [--compare FILE]

Timed, median of interleaved repetitions (ms): `count_tokens` (against langchain-core's
`count_tokens_approximately`), `plan()` (against compact-middleware's `evaluate`),
`model_view` and `search`, each cold (the cache cleared) and warm (the conversation seen
last call, one message appended since). `--compare` prints each figure's ratio to the
saved run's and marks those more than 20% slower; the machine is noisy, so a mark is a
reason to time the two builds against each other, not a verdict.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastcompact
from bench_passes import NEVER, SYSTEM, TOOLS, WINDOW
from fastcompact.samples import coding_session
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from timing import time_call

SEED = 42
# A ratio to the saved run past which a figure is marked.
SLOWER = 1.2


def _peers() -> dict[str, Callable[[list[Any]], Any]]:
    from compact_middleware import config as cm
    from compact_middleware.decision import evaluate

    config = cm.CompactionConfig(trigger=NEVER, keep=("fraction", 0.10))
    return {
        "count_tokens": count_tokens_approximately,
        "plan": lambda msgs: evaluate(msgs, SYSTEM, TOOLS, config, WINDOW),
    }


def _ours() -> dict[str, Callable[[list[Any]], Any]]:
    return {
        "count_tokens": fastcompact.count_tokens,
        "plan": lambda msgs: fastcompact.plan(msgs, max_input_tokens=WINDOW),
        "model_view": lambda msgs: fastcompact.model_view(msgs, max_input_tokens=WINDOW),
        "search": lambda msgs: fastcompact.search(msgs, "failing test in the parser"),
    }


def _cold_and_warm(call: Callable[[list[Any]], Any], msgs: list[Any], reps: int) -> tuple[float, float]:
    """Median seconds of `call` on `msgs` cold, and warm: the conversation seen on the
    call before (itself warm), one message appended since."""
    cold, warm = [], []
    for _ in range(reps):
        fastcompact.clear_cache()
        cold.append(time_call(lambda: call(msgs)))
        msgs.append(HumanMessage("one more question about the failing test"))
        call(msgs)
        msgs.append(HumanMessage("and one about the parser"))
        warm.append(time_call(lambda: call(msgs)))
        del msgs[-2:]
    return statistics.median(cold), statistics.median(warm)


def _median_ms(call: Callable[[list[Any]], Any], msgs: list[Any], reps: int) -> float:
    return statistics.median(time_call(lambda: call(msgs)) for _ in range(reps)) * 1e3


def measure(sizes: list[int], reps: int) -> dict[str, float]:
    """Every figure, in ms, by name (`count_tokens warm 10000`, ...)."""
    figures: dict[str, float] = {}
    peers, ours = _peers(), _ours()
    for n in sizes:
        msgs = coding_session(n, seed=SEED)
        times = max(2, reps if n <= 10_000 else reps // 3)
        for name, call in ours.items():
            cold, warm = _cold_and_warm(call, msgs, times)
            figures[f"{name} cold {n}"] = cold * 1e3
            figures[f"{name} warm {n}"] = warm * 1e3
        for name, call in peers.items():
            if name == "plan" and n > 10_000:
                continue  # evaluate at 100,000 messages takes minutes a call
            figures[f"peer {name} {n}"] = _median_ms(call, msgs, times)
        print(f"{n:,} messages measured", file=sys.stderr, flush=True)
    return figures


def table(figures: dict[str, float], sizes: list[int]) -> str:
    rows = [
        "| messages | call | cold ms | warm ms | peer ms | peer / cold | peer / warm |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        for name in _ours():
            peer = figures.get(f"peer {name} {n}")
            cold, warm = figures[f"{name} cold {n}"], figures[f"{name} warm {n}"]
            ratios = f"{peer / cold:.1f}x | {peer / warm:.1f}x" if peer else " | "
            shown = f"{peer:.2f}" if peer else ""
            rows.append(f"| {n:,} | {name} | {cold:.2f} | {warm:.3f} | {shown} | {ratios} |")
    return "\n".join(rows)


def compare(figures: dict[str, float], before: dict[str, float]) -> str:
    rows = ["| figure | before ms | now ms | now / before |", "|---|---:|---:|---:|"]
    for name, now in figures.items():
        was = before.get(name)
        if not was or name.startswith("peer"):
            continue
        mark = " slower" if now > SLOWER * was else ""
        rows.append(f"| {name} | {was:.3f} | {now:.3f} | {now / was:.2f}{mark} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 messages, fewer repetitions")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--compare", help="a saved run (--json) of the build before")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    figures = measure(sizes, 5 if args.quick else 11)
    print(table(figures, sizes))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if args.compare:
        print()
        print(compare(figures, json.loads(Path(args.compare).read_text())))


if __name__ == "__main__":
    main()

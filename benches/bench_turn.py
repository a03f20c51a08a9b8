"""fastcompact's own per-turn path, alone: the figures the core's low-level reads are
kept (or dropped) by.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_turn.py            # prints a Markdown table
    python benches/bench_turn.py --quick

On a coding session of 1,000 and 10,000 messages:

- warm turn: `model_view()` on the conversation with one new message appended, as an
  agent's tool loop calls it (the same message objects as the turn before), with the
  window out of reach (nothing to edit) and with a 200,000-token one (thousands of
  edits, kept from turn to turn);
- resumed turn: `model_view()` on equal messages that are new objects, as after a
  checkpointer load;
- cold count: `count_tokens()` of messages it has not seen (the heuristic).

Each figure is the median of many runs, in milliseconds.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import fastcompact
from fastcompact.samples import coding_session
from langchain_core.messages import HumanMessage

WINDOW = 10**9


def _median_ms(run: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _on_copies(msgs: list[Any], reps: int, run: Callable[[list[Any]], object]) -> float:
    """The median of `run` on copies of `msgs` it has not seen (equal, new objects)."""
    n = max(3, reps // 10)
    copies = iter([copy.deepcopy(msgs) for _ in range(n)])
    gc.collect()
    return _median_ms(lambda: run(next(copies)), n)


def measure(n: int, reps: int) -> dict[str, float]:
    msgs = coding_session(n, seed=7)
    grown = [*msgs, HumanMessage("and the next step?")]
    out: dict[str, float] = {}
    # Out of reach (the no-summary path, nothing to edit), then a 200,000-token window
    # (the passes edit thousands of messages; their edits are kept from turn to turn).
    for name, window in (("warm", 10**9), ("warm, edited", 200_000)):
        key = f"bench-{n}-{window}"
        fastcompact.model_view(msgs, max_input_tokens=window, cache_key=key)
        gc.collect()
        out[name] = _median_ms(
            lambda w=window, k=key: fastcompact.model_view(grown, max_input_tokens=w, cache_key=k), reps
        )
    # Copies are made after the warm turns are timed: so many objects would crowd them.
    out["resumed"] = _on_copies(
        msgs, reps, lambda m: fastcompact.model_view(m, max_input_tokens=WINDOW, cache_key=f"resumed-{n}")
    )
    out["cold count"] = _on_copies(msgs, reps, fastcompact.count_tokens)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 20 if args.quick else 200
    print("| messages | warm turn (ms) | warm turn, edited (ms) | resumed turn (ms) | cold count (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for n in (1_000, 10_000):
        r = measure(n, reps if n < 10_000 else reps // 2)
        cells = [f"{r[k]:.3f}" for k in ("warm", "warm, edited")]
        cells += [f"{r[k]:.2f}" for k in ("resumed", "cold count")]
        print(f"| {n:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

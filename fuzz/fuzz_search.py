"""Fuzz the search with texts made to be slow: runs of one letter, one short pattern
repeated, long words, Chinese runs, mixed scripts, markup and numbers.

    python fuzz/fuzz_search.py --iterations 40 [--seed 0]

Each case makes a text of one kind at two sizes, eight times apart, puts it in a
conversation and searches it with words drawn from it. A case passes when the search
returns, and the larger text takes at most --most-ratio times the time of the smaller
(linear work is about 8; quadratic, 64) plus a small allowance for a noisy machine. A
failing case is printed with its seed and ends the run with status 1.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable

import fastcompact
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

SMALL = 128 * 1024
# The allowance for timer noise and fixed costs, in seconds.
ALLOWANCE = 0.1
# Each size is timed this many times and the best taken: a busy machine's hiccup is not
# the search's.
TRIES = 3


def _one_letter(rng: random.Random, n: int) -> str:
    return rng.choice("yaé漢0 ") * n


def _repeated(rng: random.Random, n: int) -> str:
    unit = "".join(rng.choice("ab xy.-_/") for _ in range(rng.randint(2, 7)))
    return (unit * (n // len(unit) + 1))[:n]


def _long_words(rng: random.Random, n: int) -> str:
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(50, 5000))) for _ in range(8)]
    out: list[str] = []
    size = 0
    while size < n:
        out.append(rng.choice(words))
        size += len(out[-1]) + 1
    return " ".join(out)[:n]


def _chinese(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("缓存索引解析器记录窗口令牌队列线程错误修复") for _ in range(n // 3))


def _mixed(rng: random.Random, n: int) -> str:
    alphabet = "abc XYZ 123 é ü 漢字 🙃 \n\t{}[]<>\"'=:;,."
    return "".join(rng.choice(alphabet) for _ in range(n))


def _markup(rng: random.Random, n: int) -> str:
    unit = '<div class="row"><span id="k%d">v</span></div>\n'
    out = "".join(unit % rng.randint(0, 99) for _ in range(n // 40 + 1))
    return out[:n]


Kind = Callable[[random.Random, int], str]
KINDS: list[Kind] = [_one_letter, _repeated, _long_words, _chinese, _mixed, _markup]


def _conversation(text: str) -> list[object]:
    call = {"name": "read_file", "args": {"file_path": "/big.txt"}, "id": "c1"}
    return [
        HumanMessage("Read the big file."),
        AIMessage("", tool_calls=[call]),
        ToolMessage(text, tool_call_id="c1"),
        AIMessage("Read it."),
    ]


def _query(rng: random.Random, text: str) -> str:
    words = text.split() or [text[:20]]
    picked = [rng.choice(words)[:40] for _ in range(rng.randint(1, 3))]
    return " ".join(w for w in picked if w.strip()) or "y"


def _timed(messages: list[object], query: str) -> float:
    started = time.perf_counter()
    fastcompact.search(messages, query)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--most-ratio", type=float, default=20.0)
    args = parser.parse_args()
    failures = 0
    for i in range(args.iterations):
        seed = args.seed + i
        rng = random.Random(seed)
        kind = KINDS[i % len(KINDS)]
        big = kind(rng, SMALL * 8)
        small = big[: len(big) // 8]
        query = _query(rng, small)
        fast = min(_timed(_conversation(small), query) for _ in range(TRIES))
        slow = min(_timed(_conversation(big), query) for _ in range(TRIES))
        if slow > args.most_ratio * fast + ALLOWANCE:
            failures += 1
            print(
                f"seed {seed} ({kind.__name__}, query {query!r}): {len(small):,} chars in {fast:.3f} s, "
                f"{len(big):,} in {slow:.3f} s",
                file=sys.stderr,
            )
    print(f"{args.iterations} cases, {failures} slower than linear")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Fuzz the message reader and every pass with random JSON-shaped input.

    python fuzz/fuzz_inputs.py --iterations 2000 [--seed 0] [--max-seconds 5]

Each case is a random list of message-like values (dicts with the keys the reader
looks at, holding random JSON-shaped values, bytes, lone surrogates, huge numbers, NaN,
deep nesting; plus LangChain messages, tuples and strings) sent through the public
helpers and through `plan` with settings under which every pass acts. A case passes
when each call returns or raises `fastcompact.InputError`, within --max-seconds. Any
other exception (a Rust panic included) or a slow case is printed with its seed and
ends the run with status 1.

A seeded generator stands in for cargo-fuzz (which needs a nightly toolchain): the
same seed always replays the same cases.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
import traceback
from typing import Any

import fastcompact
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

KEYS = [
    "type", "role", "content", "tool_calls", "tool_call_id", "name", "id", "additional_kwargs",
    "response_metadata", "usage_metadata", "data", "lc", "kwargs", "function", "arguments", "args",
    "text", "input", "tool_use_id", "source", "thinking", "signature", "status", "timestamp",
]  # fmt: skip
TYPES = ["human", "ai", "tool", "system", "user", "assistant", "function", "developer", "text",
         "tool_use", "tool_result", "image", "image_url", "document", "thinking", "redacted_thinking", "",
         "wizard"]  # fmt: skip
STRINGS = ["", "a", "hello world", "\ud800", "x\udfffy", "é漢字🙃", "\x00\x01", "{\"a\": 1}", "not json {",
           "read_file", "2026-11-29T10:00:00Z", "1e400", "[", "\\u0000"]  # fmt: skip

# Every pass acts from the first message on.
EAGER = fastcompact.CompactionConfig(
    trigger=("messages", 2),
    keep=("messages", 1),
    token_budget={"per_tool_chars": 3_000, "per_message_chars": 6_000, "file_preview_chars": 1_000},
    truncate_args={
        "trigger": ("messages", 1),
        "keep": ("messages", 1),
        "max_length": 5,
        "min_batch_tokens": 0,
    },
    clearing={"trigger": ("messages", 1), "keep_recent": 0, "clear_at_least": 0},
    dedupe={"min_batch_tokens": 0},
    collapse={
        "trigger": ("messages", 1),
        "keep_recent_messages": 0,
        "min_batch_tokens": 0,
        "min_group_size": 1,
    },
    microcompact={"gap_threshold_minutes": 0.001, "keep_recent": 0},
)
# Clearing would take every old result first: without it dedupe and collapse act too.
CONFIGS = [
    EAGER,
    dataclasses.replace(EAGER, clearing=fastcompact.ClearingConfig(enabled=False)),
    dataclasses.replace(
        EAGER,
        clearing=fastcompact.ClearingConfig(enabled=False),
        dedupe=fastcompact.DedupeConfig(enabled=False),
        microcompact=fastcompact.MicrocompactConfig(enabled=False),
    ),
]


def _text_of(value: Any) -> str:
    """`value` as an arguments string, whatever it holds."""
    try:
        return json.dumps(value, default=repr)
    except (TypeError, ValueError, RecursionError):
        return "{not json"


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def scalar(self) -> Any:
        r = self.r
        return r.choice(
            [
                lambda: r.choice(STRINGS),
                lambda: r.choice(STRINGS) * r.choice([1, 2, 50, 5_000]),
                lambda: "".join(chr(r.randrange(0, 0x110000)) for _ in range(r.randrange(0, 20))),
                lambda: r.randrange(-(2**70), 2**70),
                lambda: r.choice([0.0, -1.5, math.nan, math.inf, -math.inf, 1e308]),
                lambda: None,
                lambda: r.choice([True, False]),
                lambda: bytes(r.randrange(256) for _ in range(r.randrange(0, 16))),
            ]
        )()

    def value(self, depth: int = 0) -> Any:
        r = self.r
        if depth > 6 or r.random() < 0.45:
            return self.scalar()
        if r.random() < 0.03:  # a deep chain
            v: Any = self.scalar()
            for _ in range(r.choice([50, 500, 3_000])):
                v = {"k": v} if r.random() < 0.5 else [v]
            return v
        if r.random() < 0.5:
            return [self.value(depth + 1) for _ in range(r.randrange(0, 5))]
        return {self.key(): self.value(depth + 1) for _ in range(r.randrange(0, 6))}

    def key(self) -> Any:
        r = self.r
        return r.choice(KEYS) if r.random() < 0.85 else r.choice([self.scalar(), 3, None, "k"])

    def call(self) -> Any:
        r = self.r
        call = {
            k: self.value(2) for k in r.sample(["name", "args", "id", "type", "function"], r.randrange(0, 5))
        }
        if r.random() < 0.7:
            call["name"] = r.choice(["read_file", "grep", "ls", "execute", "write_file", self.scalar()])
            call["id"] = r.choice([f"c{r.randrange(6)}", self.scalar()])
        return call

    def text(self) -> str:
        r = self.r
        return "".join(r.choice(STRINGS) for _ in range(r.randrange(1, 4))) * r.choice([1, 1, 30, 3_000])

    def args(self, strict: bool = False) -> Any:
        """Tool-call arguments (always a dict with string keys when ``strict``)."""
        r = self.r
        if r.random() < 0.2 and not strict:
            return self.value(1)
        return {
            r.choice(["file_path", "path", "pattern", "command", "content", "query", "x"]): r.choice(
                [self.text(), self.value(2), [self.text(), {"deep": self.text()}]]
            )
            for _ in range(r.randrange(0, 4))
        }

    def good(self, i: int) -> Any:
        """A well-formed message in one of the accepted shapes."""
        r = self.r
        cid = f"c{r.randrange(8)}"
        name = r.choice(["read_file", "grep", "ls", "execute", "write_file", "edit_file", "web_fetch"])
        stamp = (
            {"timestamp": r.choice([1e9 + i * 4_000, "2026-11-29T10:00:00Z", i])} if r.random() < 0.3 else {}
        )
        shape = r.random()
        if shape < 0.5:
            return r.choice(
                [
                    lambda: HumanMessage(self.text(), additional_kwargs=stamp),
                    lambda: AIMessage(
                        self.text() if r.random() < 0.5 else "",
                        tool_calls=[
                            {"name": name, "args": self.args(strict=True), "id": f"c{r.randrange(8)}"}
                        ]
                        * r.randrange(0, 3),
                        additional_kwargs=stamp,
                    ),
                    lambda: ToolMessage(self.text(), tool_call_id=cid, name=name, additional_kwargs=stamp),
                ]
            )()
        if shape < 0.8:  # OpenAI chat dicts
            return r.choice(
                [
                    {"role": "user", "content": self.text()},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {
                                    "name": name,
                                    "arguments": r.choice([_text_of(self.args()), "{bad", "{}"]),
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": cid, "content": self.text()},
                ]
            )
        # Anthropic blocks
        return r.choice(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": self.text(), "signature": "s"},
                        {"type": "tool_use", "id": cid, "name": name, "input": self.args()},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": cid,
                            "content": r.choice([self.text(), [self.block()]]),
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "data": self.text()}},
                        {"type": "text", "text": self.text()},
                    ],
                },
            ]
        )

    def junk(self) -> Any:
        r = self.r
        if r.random() < 0.3:
            return self.value(1)
        m: dict[str, Any] = {r.choice(["type", "role"]): r.choice(TYPES)}
        for k in r.sample(KEYS, r.randrange(0, 6)):
            m[k] = self.value(1)
        if r.random() < 0.5:
            m["content"] = r.choice([self.scalar(), [self.block() for _ in range(r.randrange(0, 4))]])
        if r.random() < 0.3:
            m["tool_calls"] = [self.call() for _ in range(r.randrange(0, 3))]
        if r.random() < 0.2:
            m = {"type": m.get("type", "ai"), "data": m} if r.random() < 0.5 else {"lc": 1, "kwargs": m}
        return m

    def block(self) -> Any:
        r = self.r
        if r.random() < 0.2:
            return self.value(2)
        b = {"type": r.choice(TYPES)}
        for k in r.sample(KEYS, r.randrange(0, 4)):
            b[k] = self.value(2)
        return b

    def step(self, n: int) -> list[Any]:
        """An AI message and its results (reads of a few paths, so that reads repeat)."""
        r = self.r
        calls = [
            {
                "name": r.choice(["read_file", "read_file", "grep", "execute"]),
                "args": {"file_path": f"/src/{r.randrange(4)}.py"},
                "id": f"s{n}-{k}",
            }
            for k in range(r.randrange(1, 4))
        ]
        results = [ToolMessage(self.text(), tool_call_id=c["id"], name=c["name"]) for c in calls]
        return [AIMessage("", tool_calls=calls), *r.sample(results, len(results))]

    def conversation(self) -> list[Any]:
        """Clean conversations exercise every pass; some junk, the reader's errors."""
        r = self.r
        junk_rate = r.choice([0.0, 0.0, 0.03, 0.3, 1.0])
        out: list[Any] = []
        for i in range(r.choice([0, 1, 2, 5, 20, 60, 200])):
            if r.random() < junk_rate:
                out.append(self.junk())
            elif r.random() < 0.5:
                out.extend(self.step(i))
            else:
                out.append(self.good(i))
        return out


def one_case(msgs: list[Any]) -> None:
    """Every public entry point on `msgs`; only InputError may come out."""
    calls = [
        lambda: fastcompact.count_tokens(msgs),
        lambda: fastcompact.count_tokens(msgs, encoding="o200k_base"),
        lambda: fastcompact.count_tokens(msgs, use_usage=True),
        lambda: fastcompact.token_breakdown(msgs),
        lambda: fastcompact.find_cutoff(msgs, ("messages", 1)),
        lambda: fastcompact.should_compact(msgs, ("messages", 2)),
        lambda: fastcompact.normalize(msgs),
        *(lambda c=c: fastcompact.plan(msgs, c, now=1e10) for c in CONFIGS),
        lambda: fastcompact.model_view(msgs, EAGER, max_input_tokens=1_000),
    ]
    for call in calls:
        try:
            call()
        except fastcompact.InputError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=5.0)
    args = parser.parse_args()
    started = time.perf_counter()
    slowest = 0.0
    for i in range(args.iterations):
        seed = args.seed * 1_000_003 + i
        msgs = Gen(seed).conversation()
        t = time.perf_counter()
        try:
            one_case(msgs)
        except BaseException:  # a panic surfaces as PanicException, a BaseException
            print(f"case seed {seed}: unexpected failure", file=sys.stderr)
            traceback.print_exc()
            return 1
        elapsed = time.perf_counter() - t
        slowest = max(slowest, elapsed)
        if elapsed > args.max_seconds:
            print(f"case seed {seed}: took {elapsed:.1f} s", file=sys.stderr)
            return 1
    total = time.perf_counter() - started
    print(f"{args.iterations:,} cases, no failure; slowest {slowest * 1e3:.0f} ms; {total:.1f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

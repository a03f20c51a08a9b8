"""The per-turn cheap-pass plan, side by side with the peers, and the cache-prefix ratio.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_passes.py            # prints Markdown tables
    python benches/bench_passes.py --quick

Per turn, each side gets the same conversation, system prompt and 23 tools, with the
summary trigger set out of reach so that only the no-summary path runs:

- fastcompact: `model_view()` (all passes plus counting, edits applied);
- fastcompact plan(): `plan()`, as a notebook calls it (the edits and the figures of
  its picture, no view);
- compact-middleware: `decision.evaluate()`;
- DeepAgents: `SummarizationMiddleware.wrap_model_call()` with a handler that returns
  at once.

The cache-prefix ratio replays a 300-turn session (3 messages a turn) and measures the
share of each turn's model-input tokens that repeat the previous turn's model input as
a prefix, which is what a provider's prompt cache can reuse.
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from typing import Any, Protocol

import fastcompact
from fastcompact.samples import coding_session, load_session
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from timing import time_call

WINDOW = 200_000
NEVER = ("tokens", 10**9)
SYSTEM = SystemMessage("You are a careful coding agent. Read before you edit; run the tests after.")


def _tools() -> list[Any]:
    def make(i: int) -> Any:
        @tool(f"tool_{i}")
        def _t(path: str, limit: int = 100) -> str:
            """Read or change something in the workspace and report what happened."""
            return ""

        return _t

    return [make(i) for i in range(23)]


TOOLS = _tools()


class Side(Protocol):
    """One implementation under test: the model input it makes of a conversation."""

    name: str

    def view(self, msgs: list[Any]) -> list[Any]: ...


class FastCompact:
    name = "fastcompact"

    def __init__(self) -> None:
        self.config = fastcompact.CompactionConfig(trigger=NEVER)

    def view(self, msgs: list[Any]) -> list[Any]:
        view, _ = fastcompact.model_view(
            msgs, self.config, max_input_tokens=WINDOW, system=SYSTEM, tools=TOOLS
        )
        return view


class FastCompactPlan:
    """`plan()` as a notebook calls it: the edits and the picture's figures, no view."""

    name = "fastcompact plan()"

    def __init__(self) -> None:
        self.config = fastcompact.CompactionConfig(trigger=NEVER)

    def view(self, msgs: list[Any]) -> list[Any]:
        fastcompact.plan(msgs, self.config, max_input_tokens=WINDOW, system=SYSTEM, tools=TOOLS)
        return msgs


class CompactMiddleware:
    name = "compact-middleware"

    def __init__(self) -> None:
        from compact_middleware import config as cm

        self.evaluate = __import__("compact_middleware.decision", fromlist=["evaluate"]).evaluate
        self.config = cm.CompactionConfig(
            trigger=NEVER,
            keep=("fraction", 0.10),
            truncate_args=cm.TruncateArgsConfig(trigger=("fraction", 0.85), keep=("fraction", 0.10)),
        )

    def view(self, msgs: list[Any]) -> list[Any]:
        return self.evaluate(msgs, SYSTEM, TOOLS, self.config, WINDOW).messages


class DeepAgents:
    name = "deepagents"

    def __init__(self) -> None:
        from deepagents.backends import StateBackend
        from deepagents.middleware.summarization import SummarizationMiddleware
        from langchain.agents.middleware.types import ModelRequest, ModelResponse

        # A window the conversation fits in: otherwise DeepAgents summarizes regardless of
        # the trigger (its request budget check), and this measures the no-summary path.
        self.model = GenericFakeChatModel(messages=iter([]), profile={"max_input_tokens": 10**9})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.mw = SummarizationMiddleware(model=self.model, backend=StateBackend, trigger=NEVER)
        self.request_type = ModelRequest
        self.response = ModelResponse(result=[AIMessage("ok")])

    def view(self, msgs: list[Any]) -> list[Any]:
        seen: list[Any] = []

        def handler(request: Any) -> Any:
            seen.append(request.messages)
            return self.response

        request = self.request_type(
            model=self.model, messages=msgs, system_message=SYSTEM, tools=TOOLS, state={"messages": msgs}
        )
        self.mw.wrap_model_call(request, handler)
        return seen[-1]


def bench_turn(sides: list[Side], n: int, reps: int, turns: int = 3) -> dict[str, tuple[float, float]]:
    """Median seconds of one turn on `n` messages: cold (first sight) and warm (each of
    `turns` turns in a row that append one message to the conversation seen the turn
    before, as an agent's turns do)."""
    history = coding_session(n, seed=42)
    extras = [HumanMessage(f"and now failing test {i}, please") for i in range(turns)]
    cold: dict[str, list[float]] = {s.name: [] for s in sides}
    warm: dict[str, list[float]] = {s.name: [] for s in sides}
    for _ in range(reps):
        for s in sides:
            fastcompact.clear_cache()
            msgs = list(history)
            cold[s.name].append(time_call(lambda s=s, msgs=msgs: s.view(msgs)))
            for extra in extras:
                msgs.append(extra)
                warm[s.name].append(time_call(lambda s=s, msgs=msgs: s.view(msgs)))
    return {k: (statistics.median(cold[k]), statistics.median(warm[k])) for k in cold}


def prefix_ratio(side: Side, session: list[Any], step: int = 3) -> float:
    previous: list[Any] | None = None
    reused = total = 0
    for end in range(step, len(session) + 1, step):
        view = side.view(session[:end])
        tokens = [m.tokens for m in fastcompact.token_breakdown(view).messages]
        if previous is not None:
            same = 0
            for a, b in zip(previous, view, strict=False):
                if a.content != b.content or getattr(a, "tool_calls", None) != getattr(b, "tool_calls", None):
                    break
                same += 1
            reused += sum(tokens[:same])
            total += sum(tokens)
        previous = view
    return reused / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    sides: list[Side] = [FastCompact(), CompactMiddleware(), DeepAgents()]
    planned = FastCompactPlan()

    print("Per-turn no-summary path, median ms", end=" ")
    print("(cold / warm: three turns in a row, each appending one message):")
    print()
    timed = [*sides, planned]
    print("| messages | " + " | ".join(s.name for s in timed), end=" ")
    print("| speed-up vs faster peer (warm) | plan() vs evaluate() (warm) |")
    print("|---:|" + "---:|" * (len(timed) + 2))
    for n in (100, 1_000, 10_000):
        r = bench_turn(timed, n, reps if n < 10_000 else max(2, reps // 2))
        # Two decimals: a warm fastcompact turn is a fraction of a millisecond.
        cells = [f"{r[s.name][0] * 1e3:.1f} / {r[s.name][1] * 1e3:.2f}" for s in timed]
        best_peer = min(r[s.name][1] for s in sides[1:])
        evaluate = r[CompactMiddleware.name][1]
        ratios = f"{best_peer / r[sides[0].name][1]:.1f}x | {evaluate / r[planned.name][1]:.1f}x"
        print(f"| {n:,} | " + " | ".join(cells) + f" | {ratios} |")
    print()
    session = coding_session(600 if args.quick else 900, seed=11)
    print(f"Cache-prefix ratio over {len(session) // 3} turns (higher is better):")
    print()
    print("| " + " | ".join(s.name for s in sides) + " |")
    print("|" + "---:|" * len(sides))
    print("| " + " | ".join(f"{prefix_ratio(s, session):.3f}" for s in sides) + " |")
    print()
    bundled = load_session("coding")
    print(f"The same on the bundled coding session ({len(bundled)} messages):")
    print()
    print("| " + " | ".join(s.name for s in sides) + " |")
    print("|" + "---:|" * len(sides))
    print("| " + " | ".join(f"{prefix_ratio(s, bundled):.3f}" for s in sides) + " |")


if __name__ == "__main__":
    main()

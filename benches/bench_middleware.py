"""Per-call overhead of each compaction middleware inside a real DeepAgents graph.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_middleware.py            # prints a Markdown table
    python benches/bench_middleware.py --quick

Each side runs inside `create_deep_agent` with its default tools and backend, on the
same conversation of 100 / 1,000 / 10,000 messages plus one new question, with a model
window so large that no summary is due (the no-summary path). The overhead of a call is
the time spent in the middleware's `wrap_model_call` minus the time spent in the model
handler it wraps. The first call on a conversation is cold; the later ones (the same
history, a new question appended) are warm, as in an agent's tool loop; resumed calls
start a turn of a conversation loaded from a checkpointer (equal messages, new objects).

- fastcompact: `CompactionMiddleware`, which replaces DeepAgents' built-in by name;
- deepagents: the built-in `SummarizationMiddleware`;
- compact-middleware: its `CompactionMiddleware`, added to the stack (timed alone).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import StateBackend
from fastcompact import CompactionMiddleware
from fastcompact.samples import coding_session
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

WINDOW = 10**9


class Answering(BaseChatModel):
    """Answers every call at once, so that only the middleware is measured."""

    @property
    def _llm_type(self) -> str:
        return "answering"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        # A provider with a prompt cache, so fastcompact plans with its price model.
        return {"ls_provider": "anthropic", "ls_model_name": "answering", "ls_model_type": "chat"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> Answering:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])


def _timed(cls: type, samples: list[float]) -> Callable[[], None]:
    """Record the overhead of `cls.wrap_model_call` (handler time excluded); returns
    the undo."""
    original = cls.wrap_model_call

    def wrap(self: Any, request: Any, handler: Any) -> Any:
        inner = 0.0

        def timed_handler(req: Any) -> Any:
            nonlocal inner
            t = time.perf_counter()
            try:
                return handler(req)
            finally:
                inner += time.perf_counter() - t

        t0 = time.perf_counter()
        result = original(self, request, timed_handler)
        samples.append(time.perf_counter() - t0 - inner)
        return result

    cls.wrap_model_call = wrap  # type: ignore[method-assign]

    def undo() -> None:
        cls.wrap_model_call = original  # type: ignore[method-assign]

    return undo


def _middleware_class(side: str) -> type:
    if side == "fastcompact":
        return CompactionMiddleware
    if side == "deepagents":
        from deepagents.middleware.summarization import _DeepAgentsSummarizationMiddleware

        return _DeepAgentsSummarizationMiddleware
    from compact_middleware import CompactionMiddleware as PeerMiddleware

    return PeerMiddleware


def _agent(side: str, model: Answering, checkpointer: Any = None) -> Any:
    backend = StateBackend()
    if side == "fastcompact":
        middleware: list[Any] = [CompactionMiddleware(backend=backend)]
    elif side == "deepagents":
        middleware = []
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            middleware = [_middleware_class(side)(model=model, backend=backend)]
    return create_deep_agent(model=model, backend=backend, middleware=middleware, checkpointer=checkpointer)


def bench(side: str, n: int, reps: int) -> tuple[float, float, float]:
    """(cold, median warm, median resumed) overhead in seconds on `n` messages."""
    model = Answering(profile={"max_input_tokens": WINDOW})
    history = coding_session(n, seed=42)
    samples: list[float] = []
    # The graph binds the hooks when it is built: time them first.
    undo = _timed(_middleware_class(side), samples)
    try:
        agent = _agent(side, model)
        for rep in range(reps + 1):
            messages = [*history, HumanMessage(f"question {rep}")]
            agent.invoke({"messages": messages}, {"configurable": {"thread_id": f"{side}-{n}"}})
        cold, warm = samples[0], statistics.median(samples[1:])
        # Resumed: each turn loads the conversation from a checkpointer (new objects).
        samples.clear()
        agent = _agent(side, model, checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": f"{side}-{n}-saved"}}
        agent.invoke({"messages": history}, cfg)
        for rep in range(reps):
            agent.invoke({"messages": [HumanMessage(f"question {rep}")]}, cfg)
        resumed = statistics.median(samples[1:])
    finally:
        undo()
    return cold, warm, resumed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the figures (seconds, by side and size) to this file")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    figures: list[dict[str, Any]] = []
    sides = ["fastcompact", "deepagents", "compact-middleware"]
    print("Middleware overhead per model call in create_deep_agent, median ms (cold / warm / resumed):")
    print()
    print("| messages | " + " | ".join(sides) + " | lower than the faster peer (warm; resumed) |")
    print("|---:|" + "---:|" * len(sides) + "---:|")
    for n in (100, 1_000, 10_000):
        r = {s: bench(s, n, reps if n < 10_000 else max(2, reps // 2)) for s in sides}
        figures += [
            {"side": s, "messages": n, "cold": r[s][0], "warm": r[s][1], "resumed": r[s][2]} for s in sides
        ]
        cells = [" / ".join(f"{x * 1e3:.2f}" for x in r[s]) for s in sides]
        warm = min(r[s][1] for s in sides[1:]) / r["fastcompact"][1]
        resumed = min(r[s][2] for s in sides[1:]) / r["fastcompact"][2]
        print(f"| {n:,} | " + " | ".join(cells) + f" | {warm:.1f}x; {resumed:.1f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

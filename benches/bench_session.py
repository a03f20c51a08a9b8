"""What a long agent session costs with each compaction middleware, and what the agent
still knows.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_session.py                 # every session, a Markdown table
    python benches/bench_session.py --sessions coding chat --json out.json

Each session (see `sessions.py`) is replayed through a real `create_deep_agent` graph with
a real `FilesystemBackend` in a fresh folder. The agent's model is scripted and answers as
a provider does: usage on every answer, `input_tokens` the exact o200k size of what it
was sent (system prompt and tool schemas included), and the prompt-cache read the prefix
shared with the previous call. Summaries are written by a faithful model that returns
every user message it was handed. Side by side, on the same session:

- none: no compaction (DeepAgents' built-in replaced by a pass-through);
- deepagents: DeepAgents' `SummarizationMiddleware` with its model-aware defaults;
- compact-middleware: its `CompactionMiddleware` with its defaults;
- langchain: `ContextEditingMiddleware(ClearToolUsesEdit(trigger=50% of the window,
  keep=3))` with LangChain's `SummarizationMiddleware(trigger=85%, keep=10%)`;
- fastcompact: `CompactionMiddleware` and its `recall` tool, defaults.

Cost is input only, in millions of input-token prices, under three presets: Anthropic
(cache write 1.25, read 0.1), OpenAI-style (uncached 1.0, cached 0.1) and no cache (1.0);
summary input is priced at 1.0 in every preset. Fidelity: the share of user messages
that, at every later call, the model still sees or had handed to the summarizer; and the
share of tool results no longer in the final view whose full text the agent can get back
(an archive on the backend, or `recall`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend, LocalShellBackend
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field
from sessions import SESSIONS, SYSTEM_PROMPT, Session

from tests.scripted import ProviderChatModel, TokenMeter, message_text

WINDOW = 40_000
PRESETS = {
    # name: (cache read, cache write / uncached input, summary input)
    "anthropic": (0.1, 1.25, 1.0),
    "openai": (0.1, 1.0, 1.0),
    "none": (1.0, 1.0, 1.0),
}
SIDES = ["none", "deepagents", "compact-middleware", "langchain", "fastcompact"]


class FaithfulSummarizer(BaseChatModel):
    """Summarizes by returning every user message it was handed, verbatim."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    user_texts: list[str] = Field(default_factory=list)
    agent: Any = None
    meter: Any = Field(default_factory=TokenMeter)
    # (agent calls made before this summary, its prompt, its input tokens)
    records: list[tuple[int, str, int]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "faithful-summarizer"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {"ls_provider": "anthropic", "ls_model_name": "scripted-1", "ls_model_type": "chat"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> FaithfulSummarizer:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = "\n".join(message_text(m) for m in messages)
        tokens = sum(self.meter(message_text(m)) for m in messages)
        self.records.append((len(self.agent.calls) if self.agent else 0, prompt, tokens))
        kept = [u for u in self.user_texts if u in prompt]
        text = "The user's messages so far, verbatim:\n" + "\n".join(f"- {u}" for u in kept)
        usage = {"input_tokens": tokens, "output_tokens": self.meter(text), "total_tokens": tokens}
        reply = AIMessage(text, usage_metadata=usage, response_metadata={"model_provider": "anthropic"})
        return ChatResult(generations=[ChatGeneration(message=reply)])


class PassThrough(AgentMiddleware):
    """Takes the place of DeepAgents' built-in summarizer and does nothing."""

    @property
    def name(self) -> str:
        return "SummarizationMiddleware"


def _stack(
    side: str, summarizer: BaseChatModel, backend: Any, trigger: float | None = None
) -> tuple[list[Any], Callable[..., Any]]:
    """The middleware list of one side, and how it gets a cleared result back (or None)."""
    if side == "none":
        return [PassThrough()], _no_recall
    if side == "deepagents":
        from deepagents.middleware.summarization import create_summarization_middleware

        return [create_summarization_middleware(summarizer, backend)], _no_recall
    if side == "compact-middleware":
        import compact_middleware

        return [
            PassThrough(),
            compact_middleware.CompactionMiddleware(summarizer, backend=backend),
        ], _no_recall
    if side == "langchain":
        from langchain.agents.middleware import (
            ClearToolUsesEdit,
            ContextEditingMiddleware,
            SummarizationMiddleware,
        )

        return [
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=WINDOW // 2, keep=3)]),
            SummarizationMiddleware(model=summarizer, trigger=("fraction", 0.85), keep=("fraction", 0.10)),
        ], _no_recall
    if side == "fastcompact":
        import fastcompact

        config = fastcompact.CompactionConfig(trigger=("fraction", trigger)) if trigger else None
        mw = fastcompact.CompactionMiddleware(summarizer, backend=backend, config=config)
        return [mw, fastcompact.RecallMiddleware()], _fastcompact_recall
    raise ValueError(side)


def _no_recall(state: dict[str, Any], call_id: str) -> str | None:
    return None


def _fastcompact_recall(state: dict[str, Any], call_id: str) -> str | None:
    import fastcompact

    try:
        return fastcompact.recall(state, call_id)
    except KeyError:
        return None


@dataclass
class Outcome:
    session: str
    side: str
    calls: int
    input_tokens: int
    peak_input: int
    over_window: int
    cache_hit: float
    summary_calls: int
    summary_input: int
    cost: dict[str, float]
    user_fidelity: float
    recoverable: float
    cleared: int
    failed_turns: int
    seconds: float


def run(session: Session, side: str, trigger: float | None = None) -> Outcome:
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=f"fc-session-{session.name}-"))
    for path, text in session.files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    backend = (LocalShellBackend if session.shell else FilesystemBackend)(root_dir=root, virtual_mode=True)
    profile = {"max_input_tokens": WINDOW}
    model = ProviderChatModel(script=session.script, profile=profile)
    summarizer = FaithfulSummarizer(user_texts=session.requests, agent=model, profile=profile)
    middleware, recall = _stack(side, summarizer, backend, trigger)
    agent = create_deep_agent(
        model=model,
        backend=backend,
        tools=session.tools,
        system_prompt=SYSTEM_PROMPT,
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    failures: list[str] = []
    cfg = {"configurable": {"thread_id": f"{session.name}-{side}"}, "recursion_limit": 10_000}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for request in session.requests:
            try:
                agent.invoke({"messages": [HumanMessage(request)]}, cfg)
            except Exception as e:  # a side that gives up: the turn is lost, the session goes on
                failures.append(f"{type(e).__name__}: {e}"[:200])
    state = agent.get_state(cfg).values
    return _measure(
        session, side, model, summarizer, root, state, recall, time.perf_counter() - started, failures
    )


def _measure(
    session: Session,
    side: str,
    model: ProviderChatModel,
    summarizer: FaithfulSummarizer,
    root: Path,
    state: dict[str, Any],
    recall: Callable[..., Any],
    seconds: float,
    failures: list[str],
) -> Outcome:
    calls = model.calls
    total = sum(c.input_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    summary_input = sum(r[2] for r in summarizer.records)
    cost = {
        name: (read * cached + write * (total - cached) + summary * summary_input) / 1e6
        for name, (read, write, summary) in PRESETS.items()
    }
    # User fidelity: from its first call on, each user message is in every view, or
    # was handed to the summarizer before the view lost it.
    users = session.requests
    first: dict[str, int] = {}
    lost: set[str] = set()
    originals: dict[str, str] = {}
    final_text = ""
    for i, call in enumerate(calls):
        text = "\n".join(message_text(m) for m in call.messages)
        handed = [r[1] for r in summarizer.records if r[0] <= i]
        for u in users:
            if u in text:
                first.setdefault(u, i)
            elif u in first and not any(u in h for h in handed):
                lost.add(u)
        for m in call.messages:
            if isinstance(m, ToolMessage) and isinstance(m.content, str):
                originals.setdefault(m.tool_call_id, m.content)
        final_text = text
    seen = [u for u in users if u in first]
    fidelity = 1.0 - len(lost) / max(len(seen), 1)
    files = "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())
    cleared = [i for i, text in originals.items() if text not in final_text]
    back = sum(1 for i in cleared if originals[i] in files or recall(state, i) == originals[i])
    return Outcome(
        session=session.name,
        side=side,
        calls=len(calls),
        input_tokens=total,
        peak_input=max((c.input_tokens for c in calls), default=0),
        over_window=sum(1 for c in calls if c.input_tokens > WINDOW),
        cache_hit=cached / max(total, 1),
        summary_calls=len(summarizer.records),
        summary_input=summary_input,
        cost=cost,
        user_fidelity=fidelity,
        recoverable=back / len(cleared) if cleared else 1.0,
        cleared=len(cleared),
        failed_turns=len(failures),
        seconds=seconds,
    )


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| session | middleware | calls | input tokens | peak | over window | cache hit | summaries (input) "
        "| Anthropic | OpenAI | no cache | vs cheaper peer | user fidelity | recoverable |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in dict.fromkeys(o.session for o in outcomes):
        rows = [o for o in outcomes if o.session == name]
        peers = [o.cost["anthropic"] for o in rows if o.side in ("deepagents", "compact-middleware")]
        cheaper = min(peers) if peers else None
        for o in rows:
            ratio = f"{o.cost['anthropic'] / cheaper:.2f}x" if cheaper else ""
            failed = f" ({o.failed_turns} turns failed)" if o.failed_turns else ""
            back = f"{100 * o.recoverable:.0f}% of {o.cleared}" if o.cleared else "nothing cleared"
            lines.append(
                f"| {o.session} | {o.side}{failed} | {o.calls} | {o.input_tokens:,} | {o.peak_input:,} | "
                f"{o.over_window} | {o.cache_hit:.3f} | {o.summary_calls} ({o.summary_input:,}) | "
                f"{o.cost['anthropic']:.3f} | {o.cost['openai']:.3f} | {o.cost['none']:.3f} | {ratio} | "
                f"{100 * o.user_fidelity:.0f}% | {back} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", nargs="*", default=list(SESSIONS), choices=list(SESSIONS))
    parser.add_argument("--sides", nargs="*", default=SIDES, choices=SIDES)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--fastcompact-trigger", type=float, help="fastcompact's summary trigger, a fraction of the window"
    )
    args = parser.parse_args()
    outcomes = []
    for name in args.sessions:
        session = SESSIONS[name]()
        for side in args.sides:
            o = run(session, side, args.fastcompact_trigger if side == "fastcompact" else None)
            outcomes.append(o)
            print(
                f"{name:>9} {side:>18}: {o.calls} calls, anthropic {o.cost['anthropic']:.3f}, "
                f"peak {o.peak_input:,}, over {o.over_window}, failed {o.failed_turns}, {o.seconds:.0f} s",
                file=sys.stderr,
            )
    print(table(outcomes))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


if __name__ == "__main__":
    main()

"""What real agent sessions would have cost: each transcript replayed through each side's
middleware, its recorded calls in order, billed as providers bill.

    python benches/bench_replay.py PATH... [--sides ...] [--room 3] [--json FILE]

A transcript is any file ``fastcompact.read_transcript`` reads (a Claude Code session
log, a Codex rollout, a mini-swe-agent trajectory, LangChain / OpenAI / Anthropic
messages). It is played through ``create_agent`` with its own tools: each user message
starts a turn, the model gives the answers recorded for that turn in order, whatever the
view holds (every side makes the same calls: a replay has no model to ask what it would
have done with less), and each tool returns the recorded result of its call. The window
is the tool schemas plus the history divided by ``--room``, so the history is that many
times the room; the summary model is the agent's, billed in the same cache (see
``provider.py``).

Printed for each transcript and side: the calls, those refused or failed, the peak
input, the bill (Anthropic's prices, in millions of input-token prices, summary calls
included) and its ratio to the cheaper peer that gave up no turn, and what stays in
view: the share of the user's messages (an earlier compactor's summary in the log
aside) whose opening words are in the model's last input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastcompact
from bench_session import _stack
from deepagents.backends import FilesystemBackend
from fastcompact.agent.summarize import is_summary
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from provider import BilledModel, Provider
from pydantic import BaseModel, ConfigDict

from tests.scripted import message_text

SIDES = ["fastcompact", "deepagents", "compact-middleware"]
PEERS = ("deepagents", "compact-middleware")
# How many words of a user message stand for it in view.
OPENING_WORDS = 12


def as_langchain(path: str) -> list[BaseMessage]:
    """A transcript's messages as LangChain's, read the one way the core reads them."""
    out: list[BaseMessage] = []
    for m in fastcompact.normalize(fastcompact.read_transcript(path)):
        text = m["content"] if isinstance(m["content"], str) else _text(m["content"])
        if m["role"] == "human":
            out.append(HumanMessage(text))
        elif m["role"] == "system":
            out.append(SystemMessage(text))
        elif m["role"] == "tool":
            out.append(ToolMessage(text, tool_call_id=str(m["tool_call_id"] or ""), name=m.get("name")))
        elif m["role"] == "ai":
            calls = [
                {"name": str(c.get("name")), "args": c.get("args") or {}, "id": str(c.get("id"))}
                for c in m["tool_calls"]
            ]
            out.append(AIMessage(text, tool_calls=calls))
    return out


def _text(content: Any) -> str:
    if not isinstance(content, list):
        return str(content or "")
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


@dataclass
class Recording:
    """The recorded answers of each turn, in order, and what each call returned."""

    system: str
    requests: list[str]
    turns: list[list[AIMessage]]
    results: dict[str, str]
    tools: list[str]
    # The answers of the turn under way still to give.
    pending: list[AIMessage] = field(default_factory=list)

    @classmethod
    def of(cls, messages: list[BaseMessage]) -> Recording:
        requests: list[str] = []
        turns: list[list[AIMessage]] = []
        for m in messages:
            if isinstance(m, HumanMessage) and m.text.strip():
                requests.append(m.text)
                turns.append([])
            elif isinstance(m, AIMessage) and turns:
                turns[-1].append(m)
        tools = sorted({c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls})
        return cls(
            system="\n".join(m.text for m in messages if isinstance(m, SystemMessage)),
            requests=requests,
            turns=turns,
            results={m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)},
            tools=tools,
        )

    def start(self, turn: int) -> None:
        self.pending = list(self.turns[turn])

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        """The turn's next recorded answer, whatever the view holds (every side makes
        the same calls); an answer with no call ends a turn whose recording ran out."""
        if not self.pending:
            return AIMessage("(nothing more was recorded for this turn)")
        found = self.pending.pop(0)
        return AIMessage(found.text, tool_calls=[dict(c) for c in found.tool_calls])

    def tool(self, name: str) -> Any:
        results = self.results

        class Args(BaseModel):
            model_config = ConfigDict(extra="allow")
            tool_call_id: Annotated[str, InjectedToolCallId]

        def run(tool_call_id: str, **_: Any) -> str:
            return results.get(tool_call_id, "(no result was recorded)")

        described = f"The agent's {name} tool."
        return StructuredTool.from_function(run, name=name, description=described, args_schema=Args)


@dataclass
class Outcome:
    transcript: str
    side: str
    window: int
    calls: int
    refused: int
    failed: int
    peak: int
    bill: float
    summary_calls: int
    in_view: float


def replay(path: str, side: str, room: float) -> Outcome:
    messages = as_langchain(path)
    recording = Recording.of(messages)
    tools = [recording.tool(name) for name in recording.tools]
    history = fastcompact.count_tokens(messages, encoding="o200k_base")
    fixed = fastcompact.count_tokens([], encoding="o200k_base", tools=tools, system=recording.system)
    window = int(fixed + max(history / room, 4_000))
    provider = Provider(window=window, user_texts=recording.requests)
    profile = {"max_input_tokens": window}
    model = BilledModel(provider=provider, script=recording.answer, profile=profile)
    summarizer = BilledModel(provider=provider, summarizer=True, profile=profile)
    root = Path(tempfile.mkdtemp(prefix="fc-replay-"))
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    middleware, _ = _stack(side, summarizer, backend, window=window)
    agent = create_agent(
        model,
        tools=tools,
        system_prompt=recording.system or None,
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": f"replay-{side}"}, "recursion_limit": 10_000}
    failed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sent, request in enumerate(recording.requests, 1):
            provider.sent = sent
            recording.start(sent - 1)
            try:
                agent.invoke({"messages": [HumanMessage(request)]}, cfg)
            except Exception:  # a side that gives up: the turn is lost, the replay goes on
                failed += 1
    calls = provider.agent_calls()
    last = "\n".join(message_text(m) for m in calls[-1].messages) if calls else ""
    # An earlier compactor's summary in the log (Claude Code writes one) is no request.
    asked = [r for r in recording.requests if not is_summary(HumanMessage(r))]
    openings = [" ".join(r.split()[:OPENING_WORDS]) for r in asked]
    flat = " ".join(last.split())
    in_view = sum(1 for o in openings if o and o in flat) / max(len(openings), 1)
    bill = sum(c.cost("anthropic") for c in provider.calls) / 1e6
    return Outcome(
        transcript=Path(path).name,
        side=side,
        window=window,
        calls=len(calls),
        refused=provider.refused,
        failed=failed,
        peak=max((c.input_tokens for c in calls), default=0),
        bill=bill,
        summary_calls=len(provider.summary_calls()),
        in_view=in_view,
    )


def table(outcomes: list[Outcome]) -> str:
    cheaper: dict[str, float] = defaultdict(lambda: float("inf"))
    for o in outcomes:
        # A peer that gave up a turn did less of the work: it is no measure.
        if o.side in PEERS and o.failed == 0:
            cheaper[o.transcript] = min(cheaper[o.transcript], o.bill)
    rows = [
        "| transcript | side | window | calls | refused / failed | peak | summary calls | bill "
        "| vs cheaper peer | user messages in view |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        peer = cheaper[o.transcript]
        ratio = f"{o.bill / peer:.2f}x" if peer not in (0.0, float("inf")) else "-"
        rows.append(
            f"| {o.transcript} | {o.side} | {o.window:,} | {o.calls} | {o.refused} / {o.failed} | {o.peak:,} "
            f"| {o.summary_calls} | {o.bill:.3f} | {ratio} | {o.in_view:.2f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="transcripts to replay")
    parser.add_argument("--sides", nargs="*", default=SIDES, choices=SIDES)
    parser.add_argument("--room", type=float, default=3.0, help="the history is this many times the room")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    outcomes = []
    for path in args.paths:
        for side in args.sides:
            o = replay(path, side, args.room)
            done = f"{o.calls} calls, bill {o.bill:.3f}, in view {o.in_view:.2f}"
            print(f"{o.transcript} {side}: {done}", flush=True)
            outcomes.append(o)
    print(table(outcomes))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


if __name__ == "__main__":
    main()

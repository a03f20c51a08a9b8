"""What a long agent session costs with each compaction middleware, and what the agent
still knows.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_session.py                 # every session, a Markdown table
    python benches/bench_session.py --sessions coding chat --json out.json

Each session (see `sessions.py`) is replayed through a real `create_deep_agent` graph with
a real `FilesystemBackend` in a fresh folder. The model is scripted and billed as a
provider bills (see `provider.py`): one prompt cache for the agent's calls and every
summary call, output priced, a call over the window refused and counted. Summaries are
written to one rule for every side: the user messages handed over, verbatim (the newest
within 4,000 tokens: a reply has an output budget), and notes of about a tenth of the
input (at most 2,000 tokens). The sessions come short (30-160 requests) and long (300
steps; the chat 400 turns of about 130-token messages). Side by side, on the same
session:

- none: no compaction (DeepAgents' built-in replaced by a pass-through);
- deepagents: DeepAgents' `SummarizationMiddleware` with its model-aware defaults;
- compact-middleware: its `CompactionMiddleware` with its defaults;
- langchain: `ContextEditingMiddleware(ClearToolUsesEdit(trigger=50% of the window,
  keep=3))` with LangChain's `SummarizationMiddleware(trigger=85%, keep=10%)`;
- fastcompact: `CompactionMiddleware`, defaults (it gives the agent its `recall` tool;
  summaries by the agent's own model).

The peers are handed a summary model on the same provider (they call it with a prompt
of their own); fastcompact uses the agent's model, in the agent's own request.

The bill, in millions of input-token prices at Anthropic's list prices (cache read 0.1,
write 1.25, output 5): "bill" is what compaction controls (every input, and the summary
calls' output), "whole" adds the agent's own output, the same for every side but for
the extra calls a side needs to get findings back. "vs cheaper peer" divides the bill by
the cheaper of DeepAgents and compact-middleware; "x floor" by the session's floor: every
token of its messages written once, and the fixed prefix (tools, system prompt) read on
every call.

Fidelity: every user message of a generated session gives a rule with a code of its own;
after each agent call, the share of the codes sent so far that are in the model's input
(not in a summary call's input, not only in a file), averaged over the calls, with the
least of any call beside it ("user's codes in view"); findings: every fifth request needs what an answer 10-40
calls earlier found: seen in view, or got back with one more call through what the view
shows (`recall` on an id a line of that answer names; where the agent has the tool, a
`recall` search in the words the request names the earlier one by, never the finding's
code, which counts only when the results shown hold the finding, "search recall@3" being
how many searches showed it among the first three; a grep of an archive folder the view
names; a read of an archive file it names), or lost; and the share of tool results no
longer in the final view whose full text the agent can get back (an archive on the
backend, or `recall`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend, LocalShellBackend
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from provider import PRICES, BilledModel, Provider
from sessions import SESSIONS, SYSTEM_PROMPT, WAYS_BACK, Session, codes_of

from tests.scripted import message_text

WINDOW = 40_000
SIDES = ["none", "deepagents", "compact-middleware", "langchain", "fastcompact"]
PEERS = ("deepagents", "compact-middleware")


class PassThrough(AgentMiddleware):
    """Takes the place of DeepAgents' built-in summarizer and does nothing."""

    @property
    def name(self) -> str:
        return "SummarizationMiddleware"


def _stack(
    side: str,
    summarizer: BilledModel,
    backend: Any,
    trigger: float | None = None,
    restore: bool = False,
    window: int = WINDOW,
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
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=window // 2, keep=3)]),
            SummarizationMiddleware(model=summarizer, trigger=("fraction", 0.85), keep=("fraction", 0.10)),
        ], _no_recall
    if side == "fastcompact":
        import fastcompact

        config = fastcompact.CompactionConfig(
            trigger=("fraction", trigger) if trigger else None,
            restoration=fastcompact.RestorationConfig(on_schedule=restore),
        )
        # Summaries by the agent's own model, in its own request (its prompt cache); the
        # middleware gives the agent its recall tool.
        mw = fastcompact.CompactionMiddleware(backend=backend, config=config)
        return [mw], _fastcompact_recall
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
    refused: int
    peak_input: int
    cache_hit: float
    summary_calls: int
    summary_input: int
    # In millions of input-token prices, by preset: what compaction controls, the
    # output of every call, and the whole bill.
    bill: dict[str, float]
    output_cost: dict[str, float]
    whole: dict[str, float]
    floor: float
    user_fidelity: float
    # The user's codes in view: after each agent call, the share of the codes of the user
    # messages sent so far that are in the model's input, averaged over the calls.
    codes_in_view: float
    # The least share of any one call.
    codes_in_view_min: float
    findings: dict[str, int]
    # Of the searches for a finding, how many showed the answer holding it among the
    # first three results, and how many there were.
    search_top3: int
    searches: int
    recoverable: float
    cleared: int
    failed_turns: int
    seconds: float
    # The Anthropic bill so far (as `bill`) after each user request: the picture of a
    # session's cost over its turns.
    bill_by_request: list[float] = field(default_factory=list)


def run(
    session: Session, side: str, trigger: float | None = None, restore: bool = False, window: int = WINDOW
) -> Outcome:
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=f"fc-session-{session.name}-"))
    for path, text in session.files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    backend = (LocalShellBackend if session.shell else FilesystemBackend)(root_dir=root, virtual_mode=True)
    profile = {"max_input_tokens": window}
    provider = Provider(window=window, user_texts=session.requests)
    model = BilledModel(provider=provider, script=session.script, profile=profile)
    summarizer = BilledModel(provider=provider, summarizer=True, profile=profile)
    middleware, recall = _stack(side, summarizer, backend, trigger, restore, window)
    agent = create_deep_agent(
        model=model,
        backend=backend,
        tools=session.tools,
        system_prompt=SYSTEM_PROMPT,
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    session.findings.clear()
    session.search_ranks.clear()
    # The script searches with recall only on the side that gives the agent the tool.
    session.agent_tools.clear()
    if side == "fastcompact":
        session.agent_tools.add("recall")
    failures: list[str] = []
    cfg = {"configurable": {"thread_id": f"{session.name}-{side}"}, "recursion_limit": 10_000}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sent, request in enumerate(session.requests, 1):
            provider.sent = sent
            try:
                agent.invoke({"messages": [HumanMessage(request)]}, cfg)
            except Exception as e:  # a side that gives up: the turn is lost, the session goes on
                failures.append(f"{type(e).__name__}: {e}"[:200])
    state = agent.get_state(cfg).values
    return _measure(session, side, provider, root, state, recall, time.perf_counter() - started, failures)


def _measure(
    session: Session,
    side: str,
    provider: Provider,
    root: Path,
    state: dict[str, Any],
    recall: Callable[..., Any],
    seconds: float,
    failures: list[str],
) -> Outcome:
    calls = provider.agent_calls()
    summaries = provider.summary_calls()
    total = sum(c.input_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    bill, output, whole = {}, {}, {}
    for name, (_, _, out) in PRICES.items():
        inputs = sum(c.cost(name, output=False) for c in calls)
        summary = sum(c.cost(name) for c in summaries)
        agent_output = out * sum(c.output_tokens for c in calls)
        bill[name] = (inputs + summary) / 1e6
        output[name] = (agent_output + out * sum(c.output_tokens for c in summaries)) / 1e6
        whole[name] = (inputs + summary + agent_output) / 1e6
    # The floor: every token of the session's messages written once, the fixed prefix
    # read on every later call.
    read, write, _ = PRICES["anthropic"]
    prefix = calls[0].prefix_tokens if calls else 0
    new = prefix + sum(provider.meter(message_text(m)) for m in state.get("messages", []))
    floor = (write * new + read * prefix * max(len(calls) - 1, 0)) / 1e6
    # User fidelity: from its first call on, each user message is in every view, or
    # was handed to a summary call before the view lost it.
    users = session.requests
    first: dict[str, int] = {}
    lost: set[str] = set()
    originals: dict[str, str] = {}
    final_text = ""
    handed_texts = [(c.at_call, "\n".join(message_text(m) for m in c.messages)) for c in summaries]
    for i, call in enumerate(calls):
        text = "\n".join(message_text(m) for m in call.messages)
        for u in users:
            if u in text:
                first.setdefault(u, i)
            elif u in first and not any(u in h for at, h in handed_texts if at <= i):
                lost.add(u)
        for m in call.messages:
            if isinstance(m, ToolMessage) and isinstance(m.content, str):
                originals.setdefault(m.tool_call_id, m.content)
        final_text = text
    seen = [u for u in users if u in first]
    fidelity = 1.0 - len(lost) / max(len(seen), 1)
    in_view = _codes_in_view(codes_of(users), calls)
    files = "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())
    cleared = [i for i, text in originals.items() if text not in final_text]
    back = sum(1 for i in cleared if originals[i] in files or recall(state, i) == originals[i])
    # Each call's part of the bill, by the request it was made for, then summed so far.
    by_request = [0.0] * (len(users) + 1)
    for c in calls:
        by_request[min(c.sent, len(users))] += c.cost("anthropic", output=False)
    for c in summaries:
        by_request[min(c.sent, len(users))] += c.cost("anthropic")
    by_request = list(itertools.accumulate(by_request))[1:]
    outcomes = list(session.findings.values())
    findings = {"needed": len(outcomes), **{way: outcomes.count(way) for way in WAYS_BACK}}
    return Outcome(
        session=session.name,
        side=side,
        calls=len(calls),
        refused=provider.refused,
        peak_input=max((c.input_tokens for c in calls), default=0),
        cache_hit=cached / max(total, 1),
        summary_calls=len(summaries),
        summary_input=sum(c.input_tokens for c in summaries),
        bill=bill,
        output_cost=output,
        whole=whole,
        floor=floor,
        user_fidelity=fidelity,
        codes_in_view=sum(in_view) / len(in_view) if in_view else 1.0,
        codes_in_view_min=min(in_view, default=1.0),
        findings=findings,
        search_top3=sum(1 for r in session.search_ranks.values() if 1 <= r <= 3),
        searches=len(session.search_ranks),
        recoverable=back / len(cleared) if cleared else 1.0,
        cleared=len(cleared),
        failed_turns=len(failures),
        seconds=seconds,
        bill_by_request=[b / 1e6 for b in by_request],
    )


def _codes_in_view(codes: list[str | None], calls: list[Any]) -> list[float]:
    """For each agent call, the share of the codes sent so far that its input holds:
    what the model saw at that call, not what a summarizer or a file was handed."""
    shares = []
    for call in calls:
        sent = [c for c in codes[: call.sent] if c]
        if not sent:
            continue
        text = "\n".join(message_text(m) for m in call.messages)
        shares.append(sum(1 for c in sent if c in text) / len(sent))
    return shares


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| session | middleware | calls | refused | peak | cache hit | summaries (input) | output "
        "| bill | whole | vs cheaper peer | x floor | user's codes in view (least) "
        "| findings needed / in view / recall / search / grep / read / lost | search recall@3 "
        "| recoverable |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in dict.fromkeys(o.session for o in outcomes):
        rows = [o for o in outcomes if o.session == name]
        peers = [o.bill["anthropic"] for o in rows if o.side in PEERS]
        cheaper = min(peers) if peers else None
        # The session's own messages: the side that kept all of them counted most.
        floor = max(o.floor for o in rows)
        for o in rows:
            a = "anthropic"
            ratio = f"{o.bill[a] / cheaper:.2f}x" if cheaper else ""
            failed = f" ({o.failed_turns} turns failed)" if o.failed_turns else ""
            back = f"{100 * o.recoverable:.0f}% of {o.cleared}" if o.cleared else "nothing cleared"
            f = o.findings
            top3 = f"{o.search_top3} of {o.searches}" if o.searches else ""
            lines.append(
                f"| {o.session} | {o.side}{failed} | {o.calls} | {o.refused} | {o.peak_input:,} | "
                f"{o.cache_hit:.3f} | {o.summary_calls} ({o.summary_input:,}) | {o.output_cost[a]:.3f} | "
                f"{o.bill[a]:.3f} | {o.whole[a]:.3f} | {ratio} | {o.bill[a] / floor:.2f} | "
                f"{o.codes_in_view:.3f} ({o.codes_in_view_min:.2f}) | "
                f"{' / '.join(str(f[k]) for k in ('needed', *WAYS_BACK))} | "
                f"{top3} | {back} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", nargs="*", default=list(SESSIONS), choices=list(SESSIONS))
    parser.add_argument("--sides", nargs="*", default=SIDES, choices=SIDES)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--window", type=int, default=WINDOW, help="the model's window, in tokens")
    parser.add_argument(
        "--fastcompact-trigger", type=float, help="fastcompact's summary trigger, a fraction of the window"
    )
    parser.add_argument(
        "--fastcompact-restore",
        action="store_true",
        help="fastcompact restores recently read files after a scheduled compaction too",
    )
    args = parser.parse_args()
    outcomes = []
    for name in args.sessions:
        session = SESSIONS[name]()
        for side in args.sides:
            ours = side == "fastcompact"
            o = run(
                session,
                side,
                args.fastcompact_trigger if ours else None,
                ours and args.fastcompact_restore,
                args.window,
            )
            outcomes.append(o)
            print(
                f"{name:>9} {side:>18}: {o.calls} calls, bill {o.bill['anthropic']:.3f}, "
                f"peak {o.peak_input:,}, refused {o.refused}, failed {o.failed_turns}, "
                f"findings {o.findings}, {o.seconds:.0f} s",
                file=sys.stderr,
            )
    print(table(outcomes))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


if __name__ == "__main__":
    main()

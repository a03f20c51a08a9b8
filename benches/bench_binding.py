"""What binds stays in view: the user's rules, limits, preferences, facts and goal,
through compaction, at windows where the history is 3, 5 and 10 times the room.

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_binding.py                        # every session, ratio and side
    python benches/bench_binding.py --sessions chat --ratios 5 --sides fastcompact deepagents

Each session (see `binding_sessions.py`: about 65 user messages, twenty of them
statements that bind later work, six updated later in other words) is played turn by
turn through a real `create_deep_agent` graph with a scripted model billed as Anthropic
bills (see `provider.py`), in a window of the fixed part (system prompt and tools) plus
the history's tokens over the ratio. The summary model is weak: one generic sentence,
as a cheap model may write. At the last call the model's input is read for each
statement still standing: it counts when every term that says it (its subject and its
value) is there. An update's old value still there counts against it.

Then the same conversation, offline, through five successive compactions
(`fastcompact.app.offline.compact`, the command line's, on its own output with the next
part of the conversation appended), with the same weak summary model.

Sides: fastcompact's `CompactionMiddleware` as it comes, and with `summarizer="digest"`;
DeepAgents' `SummarizationMiddleware` and compact-middleware's `CompactionMiddleware`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import warnings
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_session import _stack
from binding_sessions import SESSIONS, BindingSession
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from provider import BilledModel, Provider
from sessions import HAN, SYSTEM_PROMPT, prose

from tests.scripted import message_text

SIDES = ["fastcompact", "fastcompact-digest", "deepagents", "compact-middleware"]
RATIOS = [3, 5, 10]
# The one sentence a weak summarizer writes, whatever it is handed.
WEAK_SUMMARY = "The user and the assistant talked through several topics and made progress on the work."


@dataclasses.dataclass
class WeakProvider(Provider):
    """The provider, whose summary calls get one generic sentence."""

    def summary(self, messages: list[BaseMessage], input_tokens: int) -> str:
        return WEAK_SUMMARY


class WeakSummarizer(BaseChatModel):
    """The weak summary model, for the offline compactions (no bill)."""

    @property
    def _llm_type(self) -> str:
        return "weak-summarizer"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(WEAK_SUMMARY))])


@tool
def lookup(query: str) -> str:
    """Look a topic up in the team's notes and return what they say."""
    seed = zlib.crc32(query.encode())
    if any("\u4e00" <= c <= "\u9fff" for c in query):
        return prose(("lookup", seed), 1_800, HAN, "")
    return prose(("lookup", seed), 5_000)


def _script(session: BindingSession):
    """The agent: a reply to each user message (for a tool session, a lookup first),
    decided from the last message alone."""

    def reply(text: str, chars: int) -> str:
        seed = zlib.crc32(text.encode())
        if session.chinese:
            return "好的。" + prose(("reply", seed), chars // 3, HAN, "")
        return "Understood. " + prose(("reply", seed), chars)

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(reply(message_text(last)[:200], 600))
        text = message_text(last)
        if session.tools:
            call = {
                "name": "lookup",
                "args": {"query": text[:80]},
                "id": f"lookup-{zlib.crc32(text.encode())}",
            }
            return AIMessage("", tool_calls=[call])
        return AIMessage(reply(text, 2_400))

    return script


@dataclasses.dataclass
class Result:
    session: str
    ratio: int
    side: str
    kept: float
    stale: int
    updates: int
    bill: float
    refused: int
    failed: int
    window: int


def _present(term: str, text: str) -> bool:
    """Whether a term is in a text: as a word (any case) for Latin terms, anywhere for
    Chinese ones."""
    if any(ord(c) > 0x2E80 for c in term):
        return term in text
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w])", text, re.IGNORECASE) is not None


def _score(session: BindingSession, text: str) -> tuple[float, int, int]:
    """The share of standing statements whose terms are all in `text`, and how many
    updates' old values are still there, of how many updates."""
    standing = [s for i, s in enumerate(session.statements) if i not in session.superseded]
    kept = sum(1 for s in standing if all(_present(t, text) for t in s.terms))
    updates = [s for s in session.statements if s.old_value is not None]
    stale = sum(1 for s in updates if s.old_value is not None and _present(s.old_value, text))
    return kept / len(standing), stale, len(updates)


def _agent(
    session: BindingSession, side: str, window: int, weak: bool = True
) -> tuple[Provider, dict[str, Any], int]:
    """The session played through an agent with `side`'s middleware: the provider (its
    calls), the final state, and the turns that failed."""
    root = Path(tempfile.mkdtemp(prefix=f"fc-binding-{session.name}-"))
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    profile = {"max_input_tokens": window}
    provider = (WeakProvider if weak else Provider)(window=window, user_texts=session.users)
    model = BilledModel(provider=provider, script=_script(session), profile=profile)
    summarizer = BilledModel(provider=provider, summarizer=True, profile=profile)
    digest = side == "fastcompact-digest"
    middleware, _ = _stack("fastcompact" if digest else side, summarizer, backend, window=window)
    if digest:
        import fastcompact

        middleware = [
            fastcompact.CompactionMiddleware(
                backend=backend, config=fastcompact.CompactionConfig(summarizer="digest")
            )
        ]
    agent = create_deep_agent(
        model=model,
        backend=backend,
        tools=[lookup] if session.tools else [],
        system_prompt=SYSTEM_PROMPT,
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": f"{session.name}-{side}"}, "recursion_limit": 10_000}
    failed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sent, text in enumerate(session.users, 1):
            provider.sent = sent
            try:
                agent.invoke({"messages": [HumanMessage(text)]}, cfg)
            except Exception:
                failed += 1
    return provider, agent.get_state(cfg).values, failed


def _sizes(session: BindingSession) -> tuple[int, int, list[BaseMessage]]:
    """The fixed part of every call and the whole history's tokens (played with no
    compaction in a window that holds it all), and the history itself."""
    provider, state, _ = _agent(session, "none", 10_000_000, weak=False)
    calls = provider.agent_calls()
    fixed = calls[0].prefix_tokens
    return fixed, calls[-1].input_tokens - fixed, list(state["messages"])


def _offline(session: BindingSession, history: list[BaseMessage], window: int) -> tuple[float, int, int]:
    """The conversation compacted five times in a row, offline, each time with the next
    sixth of it appended; scored on the last one's messages."""
    from fastcompact.app.offline import compact

    starts = [i for i, m in enumerate(history) if isinstance(m, HumanMessage)]
    bounds = [starts[len(starts) * k // 6] for k in range(6)] + [len(history)]
    conversation: list[Any] = list(history[: bounds[1]])
    for k in range(1, 6):
        conversation += history[bounds[k] : bounds[k + 1]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conversation = list(
                compact(conversation, max_input_tokens=window, model=WeakSummarizer()).messages
            )
    return _score(session, "\n".join(message_text(m) for m in conversation))


def run(names: list[str], ratios: list[int], sides: list[str]) -> tuple[list[Result], list[Result]]:
    agents: list[Result] = []
    offline: list[Result] = []
    for name in names:
        session = SESSIONS[name]()
        fixed, history_tokens, history = _sizes(session)
        for ratio in ratios:
            window = fixed + history_tokens // ratio
            for side in sides:
                provider, _, failed = _agent(session, side, window)
                last = provider.agent_calls()[-1]
                kept, stale, updates = _score(session, "\n".join(message_text(m) for m in last.messages))
                bill = sum(c.cost("anthropic") for c in provider.calls) / 1e6
                agents.append(
                    Result(name, ratio, side, kept, stale, updates, bill, provider.refused, failed, window)
                )
                print(
                    f"{name} x{ratio} {side}: {kept:.2f} kept, {stale}/{updates} stale, bill {bill:.3f}, "
                    f"refused {provider.refused}, failed {failed}",
                    file=sys.stderr,
                )
            kept, stale, updates = _offline(session, history, history_tokens // ratio)
            offline.append(
                Result(
                    name,
                    ratio,
                    "fastcompact, 5 compactions",
                    kept,
                    stale,
                    updates,
                    0.0,
                    0,
                    0,
                    history_tokens // ratio,
                )
            )
    return agents, offline


def table(agents: list[Result], offline: list[Result]) -> str:
    sides = list(dict.fromkeys(r.side for r in agents))
    head = "| session | history / room | " + " | ".join(sides) + " | fastcompact offline, 5 compactions |"
    lines = [head, "|---|---:|" + "---:|" * (len(sides) + 1)]
    for key in dict.fromkeys((r.session, r.ratio) for r in agents):
        cells = []
        for side in sides:
            r = next(r for r in agents if (r.session, r.ratio, r.side) == (*key, side))
            extra = f"; {r.refused} over, {r.failed} failed" if r.refused or r.failed else ""
            cells.append(f"{r.kept:.2f} ({r.stale}/{r.updates} stale; bill {r.bill:.2f}{extra})")
        o = next((r for r in offline if (r.session, r.ratio) == key), None)
        cells.append("" if o is None else f"{o.kept:.2f} ({o.stale}/{o.updates} stale)")
        lines.append(f"| {key[0]} | {key[1]}x | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", nargs="*", default=list(SESSIONS), choices=list(SESSIONS))
    parser.add_argument("--ratios", nargs="*", type=int, default=RATIOS)
    parser.add_argument("--sides", nargs="*", default=SIDES, choices=SIDES)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    agents, offline = run(args.sessions, args.ratios, args.sides)
    print(table(agents, offline))
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(r) for r in [*agents, *offline]], indent=2))


if __name__ == "__main__":
    main()

"""One process of the restart test: run a DeepAgents session on a SQLite checkpointer
and report what the model saw, as JSON on stdout.

    python -m tests.restart_session DB ROOT FIRST LAST [priced] [at=SECONDS]

With ``priced`` the model reports an Anthropic provider and usage, and its window is so
large that only the price model compacts. With ``at=`` the middleware's clock stands at
that time (no idle gap, whenever the session is resumed).
"""

from __future__ import annotations

import json
import sqlite3
import sys

from deepagents import create_deep_agent
from deepagents.backends import LocalShellBackend
from fastcompact import CompactionMiddleware
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.scripted import ProviderChatModel, ScriptedChatModel, model_calls


def main() -> None:
    db, root, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    options = sys.argv[5:]
    priced = "priced" in options
    at = [float(o[3:]) for o in options if o.startswith("at=")]
    if at:
        import fastcompact.agent.reading

        fastcompact.agent.reading._now = lambda: at[0]  # type: ignore[attr-defined]
    conn = sqlite3.connect(db, check_same_thread=False)
    backend = LocalShellBackend(root_dir=root, virtual_mode=True)
    model: ScriptedChatModel | ProviderChatModel = (
        ProviderChatModel(profile={"max_input_tokens": 1_000_000})
        if priced
        else ScriptedChatModel(profile={"max_input_tokens": 30_000})
    )
    agent = create_deep_agent(
        model=model,
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend), TodoListMiddleware()],
        checkpointer=SqliteSaver(conn),
    )
    cfg = {"configurable": {"thread_id": "restart"}}
    before = agent.get_state(cfg).values
    for step in range(first, last + 1):
        agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
    after = agent.get_state(cfg).values
    calls = [c.messages for c in model.calls] if isinstance(model, ProviderChatModel) else model_calls(model)
    first_call = [m for m in calls[0] if not isinstance(m, SystemMessage)]

    def event_of(state: dict) -> dict | None:
        e = state.get("_summarization_event")
        return e and {"cutoff_index": e["cutoff_index"], "summary": e["summary_message"].content}

    print(
        json.dumps(
            {
                "event_before": event_of(before),
                "event_after": event_of(after),
                "raw_ids_before": [m.id for m in before.get("messages", [])],
                "first_call": [{"id": m.id, "content": str(m.content)} for m in first_call],
                "summary_calls": len(getattr(model, "summary_calls", [])),
                "last_call": [str(m.content) for m in calls[-1]],
                "counters": {
                    k: (after.get("_fastcompact") or {}).get(k)
                    for k in ("calls_since_compaction", "grown_reads", "base_size")
                },
            }
        )
    )
    conn.close()


if __name__ == "__main__":
    main()

"""One process of the restart test: run a DeepAgents session on a SQLite checkpointer
and report what the model saw, as JSON on stdout.

    python -m tests.restart_session DB ROOT FIRST LAST
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

from tests.scripted import ScriptedChatModel, model_calls


def main() -> None:
    db, root, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    conn = sqlite3.connect(db, check_same_thread=False)
    backend = LocalShellBackend(root_dir=root, virtual_mode=True)
    model = ScriptedChatModel(profile={"max_input_tokens": 30_000})
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
    calls = model_calls(model)
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
                "summary_calls": len(model.summary_calls),
            }
        )
    )
    conn.close()


if __name__ == "__main__":
    main()

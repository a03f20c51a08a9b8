"""One worker process of the multi-worker test: serves turns of shared conversations
from a PostgreSQL checkpointer, with its own middleware instance.

    python -m tests.pg_worker URL THREAD...

Reads `STEP` lines on stdin; for each, runs that step in every thread and answers one
JSON line: per thread, the summarizer calls this worker made and the event it left.
"""

from __future__ import annotations

import json
import sys

from deepagents import create_deep_agent
from deepagents.backends import StateBackend
from fastcompact import CompactionMiddleware
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver

from tests.scripted import ScriptedChatModel


def main() -> None:
    url, threads = sys.argv[1], sys.argv[2:]
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        model = ScriptedChatModel(profile={"max_input_tokens": 30_000})
        backend = StateBackend()
        agent = create_deep_agent(
            model=model,
            backend=backend,
            middleware=[CompactionMiddleware(backend=backend)],
            checkpointer=saver,
        )
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            step = int(line)
            out = {}
            for thread in threads:
                before = len(model.summary_calls)
                cfg = {"configurable": {"thread_id": thread}}
                agent.invoke({"messages": [HumanMessage(f"Please do step {step}.")]}, cfg)
                event = agent.get_state(cfg).values.get("_summarization_event")
                out[thread] = {
                    "summaries": len(model.summary_calls) - before,
                    "cutoff": event and event["cutoff_index"],
                }
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

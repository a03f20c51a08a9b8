"""Two worker processes alternate turns of the same conversations through
`PostgresSaver`, each with its own middleware instance: the compaction state stays
consistent and no span is summarized twice.

Needs a PostgreSQL server: `scripts/test.sh` starts one (see `scripts/pg.sh`) and sets
FASTCOMPACT_PG_URL. Without it the test is skipped, except under CI, where it fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.scripted import messages_of_steps

REPO = Path(__file__).resolve().parent.parent
URL = os.environ.get("FASTCOMPACT_PG_URL")
THREADS = ["pg-a", "pg-b", "pg-c"]
STEPS = range(1, 41)


def _worker() -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.pg_worker", str(URL), *THREADS],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert json.loads(_line(proc)) == {"ready": True}
    return proc


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"worker {proc.pid} ended (exit {proc.poll()})"
    return line


def _turn(proc: subprocess.Popen[str], step: int) -> dict[str, Any]:
    assert proc.stdin is not None
    proc.stdin.write(f"{step}\n")
    proc.stdin.flush()
    return json.loads(_line(proc))


def _fresh_database() -> None:
    import psycopg

    with psycopg.connect(str(URL), autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", "checkpoint_migrations"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.skipif(
    URL is None and not os.environ.get("CI"), reason="no PostgreSQL server (FASTCOMPACT_PG_URL)"
)
def test_two_workers_alternate_turns_through_postgres():
    assert URL, "CI must provide a PostgreSQL server: scripts/test.sh starts one"
    _fresh_database()
    workers = [_worker()]
    workers.append(_worker())
    summaries = {t: 0 for t in THREADS}
    cutoffs: dict[str, list[int]] = {t: [] for t in THREADS}
    try:
        for step in STEPS:
            answer = _turn(workers[step % 2], step)
            for t in THREADS:
                summaries[t] += answer[t]["summaries"]
                if answer[t]["cutoff"] is not None and (
                    not cutoffs[t] or cutoffs[t][-1] != answer[t]["cutoff"]
                ):
                    cutoffs[t].append(answer[t]["cutoff"])
    finally:
        for w in workers:
            assert w.stdin is not None
            w.stdin.close()
            w.wait(timeout=60)

    from deepagents import create_deep_agent
    from deepagents.backends import StateBackend
    from fastcompact import CompactionMiddleware
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.scripted import ScriptedChatModel

    with PostgresSaver.from_conn_string(str(URL)) as saver:
        reader = create_deep_agent(
            model=ScriptedChatModel(),
            backend=StateBackend(),
            middleware=[CompactionMiddleware()],
            checkpointer=saver,
        )
        for t in THREADS:
            values = reader.get_state({"configurable": {"thread_id": t}}).values
            assert len(values["messages"]) == messages_of_steps(STEPS), "no message lost"
            event = values["_summarization_event"]
            # Both workers compacted; each compaction happened once, moving forward.
            assert summaries[t] == len(cutoffs[t]) >= 2
            assert cutoffs[t] == sorted(cutoffs[t]) and cutoffs[t][-1] == event["cutoff_index"]
            archives = {
                p: f for p, f in values["files"].items() if p.startswith(f"/conversation_history/{t}/")
            }
            assert len(archives) == summaries[t]
            indices = [
                int(i) for f in archives.values() for i in re.findall(r"^### \[(\d+)\]", f["content"], re.M)
            ]
            assert sorted(indices) == list(range(event["cutoff_index"])), "every span archived exactly once"

"""Two worker processes alternate turns of the same conversations through
`PostgresSaver`, each with its own middleware instance: the compaction state stays
consistent and no span is summarized twice.

Uses the server named by FASTCOMPACT_PG_URL (`scripts/test.sh` installs and starts
one), or starts a throwaway one itself with `scripts/pg.sh` when PostgreSQL is
installed. Without one it skips, unless the full check is asked for
(FASTCOMPACT_FULL_CHECK=1, as `scripts/test.sh` does when run as root).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scripted import messages_of_steps

REPO = Path(__file__).resolve().parents[2]
THREADS = ["pg-a", "pg-b", "pg-c"]
STEPS = range(1, 41)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    found = os.environ.get("FASTCOMPACT_PG_URL")
    if found:
        yield found
        return
    env = {**os.environ, "FASTCOMPACT_PG_DIR": "/tmp/fastcompact-pg-test", "FASTCOMPACT_PG_PORT": "54330"}
    started = subprocess.run(
        ["bash", "scripts/pg.sh", "start"], cwd=REPO, env=env, capture_output=True, text=True
    )
    if started.returncode != 0:
        reason = f"no PostgreSQL server and none could be started: {started.stderr.strip()}"
        if os.environ.get("FASTCOMPACT_FULL_CHECK") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    yield started.stdout.strip().split("=", 1)[1].strip("'")
    subprocess.run(["bash", "scripts/pg.sh", "stop"], cwd=REPO, env=env, capture_output=True)


def _worker(url: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.pg_worker", url, *THREADS],
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


def _fresh_database(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", "checkpoint_migrations"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_two_workers_alternate_turns_through_postgres(url: str):
    _fresh_database(url)
    workers = [_worker(url)]
    workers.append(_worker(url))
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

    with PostgresSaver.from_conn_string(url) as saver:
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

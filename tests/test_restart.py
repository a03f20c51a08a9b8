"""State survives a process restart: a session on SQLite is stopped after a compaction
and resumed in a new process with a new middleware instance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _session(db: Path, root: Path, first: int, last: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.restart_session", str(db), str(root), str(first), str(last)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_resumed_process_sees_the_same_view_and_does_not_summarize_again(tmp_path: Path):
    db, root = tmp_path / "checkpoints.sqlite", tmp_path / "work"
    root.mkdir()
    # Long enough for one compaction, stopped well before the next one.
    first = _session(db, root, 1, 21)
    event = first["event_after"]
    assert first["summary_calls"] == 1 and event is not None

    resumed = _session(db, root, 22, 22)
    assert resumed["event_before"] == event
    assert resumed["summary_calls"] == 0
    assert resumed["event_after"] == event
    # The resumed turn's first model call: the stored summary, then raw[cutoff:] and
    # the new message.
    view = resumed["first_call"]
    assert view[0]["content"] == event["summary"]
    raw_ids = resumed["raw_ids_before"]
    assert [m["id"] for m in view[1:-1]] == raw_ids[event["cutoff_index"] :]
    assert view[-1]["content"] == "Please do step 22."

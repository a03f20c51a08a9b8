"""State survives a process restart: a session on SQLite is stopped after a compaction
and resumed in a new process with a new middleware instance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _session(db: Path, root: Path, first: int, last: int, *extra: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.restart_session", str(db), str(root), str(first), str(last), *extra],
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


def test_the_price_models_schedule_carries_on_across_a_restart(tmp_path: Path):
    db, root = tmp_path / "checkpoints.sqlite", tmp_path / "work"
    root.mkdir()
    first = _session(db, root, 1, 14, "priced")
    event = first["event_after"]
    assert event is not None and first["summary_calls"] == 0
    assert first["counters"]["calls_since_compaction"] > 0
    resumed = _session(db, root, 15, 20, "priced")
    assert resumed["event_before"] == event
    assert resumed["first_call"][0]["content"] == event["summary"]
    # The growth paid since the last digest was read back, not started again: the
    # resumed session compacts at the very calls one uninterrupted process does.
    once_db, once_root = tmp_path / "once.sqlite", tmp_path / "once"
    once_root.mkdir()
    once = _session(once_db, once_root, 1, 20, "priced")
    assert resumed["event_after"]["cutoff_index"] == once["event_after"]["cutoff_index"]
    assert resumed["event_after"]["cutoff_index"] > event["cutoff_index"]
    assert resumed["counters"] == once["counters"]
    # The digests chain: every request of both processes is still in view.
    view = "\n".join(resumed["last_call"])
    for step in range(1, 21):
        assert f"Please do step {step}." in view

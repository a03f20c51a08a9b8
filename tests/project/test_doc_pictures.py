"""The docs' pictures: the script draws what the benchmarks' JSON says, every picture
under docs/pictures/ is shown by a page, and every picture a page shows is there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "doc_pictures.py"


def test_the_pictures_are_drawn_from_the_benchmarks_json(tmp_path: Path) -> None:
    session = [
        {"session": "coding-long", "side": "fastcompact", "bill_by_request": [0.1, 0.25, 0.375]},
        {"session": "coding-long", "side": "deepagents", "bill_by_request": [0.2, 0.5, 0.875]},
    ]
    middleware = [
        {"side": side, "messages": n, "cold": 0.01, "warm": w, "resumed": 0.002}
        for side, w in (("fastcompact", 0.0002), ("deepagents", 0.002))
        for n in (100, 1_000)
    ]
    scale = {
        side: {"first": {}, "warm": {"p50": w, "p90": 2 * w, "p99": 5 * w, "max": 9 * w}}
        for side, w in (("fastcompact", 0.4), ("deepagents", 2.6))
    }
    (tmp_path / "c.json").write_text(json.dumps(scale))
    (tmp_path / "s.json").write_text(json.dumps(session))
    (tmp_path / "m.json").write_text(json.dumps(middleware))
    out = tmp_path / "pictures"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--session",
            str(tmp_path / "s.json"),
            "--middleware",
            str(tmp_path / "m.json"),
            "--scale",
            str(tmp_path / "c.json"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    made = sorted(p.name for p in out.glob("*.svg"))
    assert made == ["architecture.svg", "bill-coding-long.svg", "overhead.svg", "server-latency.svg"]
    assert len(done.stdout.splitlines()) == 4
    bill = (out / "bill-coding-long.svg").read_text()
    # Each side's line is labelled with its bill at the session's end.
    assert "fastcompact: 0.38" in bill and "DeepAgents' SummarizationMiddleware: 0.88" in bill
    assert "compact-middleware" not in bill
    latency = (out / "server-latency.svg").read_text()
    assert "p99" in latency and "no middleware" not in latency
    # The same figures make the same file (no date, a fixed id salt).
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--session", str(tmp_path / "s.json"), "--out", str(again)],
        check=True,
        capture_output=True,
    )
    assert (again / "bill-coding-long.svg").read_text() == bill


def test_every_picture_is_shown_and_every_picture_shown_is_there() -> None:
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    shown: set[Path] = set()
    for page in pages:
        for ref in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.svg)\)", page.read_text(encoding="utf-8")):
            path = (page.parent / ref).resolve()
            assert path.is_file(), f"{page.name} shows {ref}, which is not there"
            shown.add(path)
    committed = {p.resolve() for p in (ROOT / "docs" / "pictures").glob("*.svg")}
    assert len(committed) >= 2
    assert committed <= shown, f"not shown by any page: {sorted(p.name for p in committed - shown)}"

"""The `fastcompact` command through its real entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from fastcompact.samples import coding_session
from langchain_core.messages import messages_to_dict

EXE = shutil.which("fastcompact")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [EXE, *args] if EXE else [sys.executable, "-m", "fastcompact.cli", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)


def test_inspect_builtin_sample():
    r = run("inspect")
    assert r.returncode == 0, r.stderr
    assert "built-in sample coding session" in r.stdout
    assert "tokens by role" in r.stdout and "FIRES" in r.stdout


def test_inspect_file_json(tmp_path):
    msgs = coding_session(300, seed=2)
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages_to_dict(msgs)))
    r = run("inspect", str(path), "--max-input-tokens", "200000", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["messages"] == 300
    assert report["keep"] == ["fraction", 0.1]
    assert 0 < report["cutoff"] < 300


def test_inspect_jsonl_from_stdin():
    lines = "\n".join(
        json.dumps(m) for m in [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    r = run("inspect", "-", "--json", stdin=lines)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["messages"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "neither JSON nor JSON Lines"),
        ("[]", "empty"),
        ('{"a": 1}', "expected a list"),
        ('[{"role": "wizard", "content": "x"}]', "message 0"),
    ],
)
def test_inspect_bad_files_fail_in_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    r = run("inspect", str(path))
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_inspect_missing_file():
    r = run("inspect", "/nonexistent/session.json")
    assert r.returncode == 2 and "cannot read" in r.stderr

"""The command line where a new user meets its edges: pipes that close early, closed
stdin, odd encodings and line endings, folders that are not the demo's, repeated
options and inputs, a model that cannot be reached, media in archived messages."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastcompact.samples import load_session
from langchain_core.messages import messages_to_dict

from tests.app.test_cli import _command, run


def _seed(path: Path, session: str = "research") -> Path:
    path.write_text(json.dumps(messages_to_dict(load_session(session))))
    return path


@pytest.mark.parametrize(
    "args", [["inspect"], ["inspect", "--sample", "research"], ["demo", "--fast"]], ids=" ".join
)
def test_a_pipe_that_closes_after_one_line_ends_quietly(args: list[str]):
    proc = subprocess.Popen([*_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()  # as `| head -1` reads one line, then closes
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def _one_line_error(r: subprocess.CompletedProcess[str], text: str) -> None:
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert text in line, line


def test_tracebacks_become_one_line(tmp_path: Path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    _one_line_error(run("demo", "--root", str(a_file)), "not a directory")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_error(run("inspect", str(deep)), "nested too deeply")
    closed = subprocess.run(
        ["bash", "-c", " ".join(_command()) + " inspect - <&-"], capture_output=True, text=True, timeout=60
    )
    _one_line_error(closed, "cannot read stdin")


def test_the_demo_keeps_out_of_folders_that_are_not_its_own(tmp_path: Path):
    _one_line_error(run("demo", "--root", "/"), "not empty and not an earlier demo's")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    _one_line_error(run("demo", "--root", str(busy)), "not empty")
    assert (busy / "notes.txt").read_text() == "mine"
    # An earlier demo's folder is reused, and its archives are not counted again.
    root = tmp_path / "demo"
    first = run("demo", "--fast", "--root", str(root), timeout=300)
    assert first.returncode == 0, first.stderr
    again = run("demo", "--fast", "--root", str(root), timeout=300)
    assert again.returncode == 0, again.stderr
    count = re.compile(r"Archive: (\d+) files")
    assert count.search(again.stdout).group(1) == count.search(first.stdout).group(1)  # type: ignore[union-attr]
    # Without --root the temporary project is removed at the end, unless --keep.
    gone = run("demo", "--fast", timeout=300)
    where = re.search(r"Project copied to (\S+)", gone.stdout).group(1)  # type: ignore[union-attr]
    assert not Path(where).exists() and "--keep keeps it" in gone.stdout
    kept = run("demo", "--fast", "--keep", timeout=300)
    where = re.search(r"Project copied to (\S+)", kept.stdout).group(1)  # type: ignore[union-attr]
    assert (Path(where) / "conversation_history" / "demo").is_dir()


def test_a_byte_order_mark_and_windows_line_endings_are_read_and_kept(tmp_path: Path):
    msgs = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": "hi"}]
    body = json.dumps(msgs, indent=2).replace("\n", "\r\n") + "\r\n"
    src = tmp_path / "notepad.json"
    src.write_bytes(("\ufeff" + body).encode("utf-8"))
    r = run("inspect", str(src), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["messages"] == 2
    out = tmp_path / "out.json"
    r = run("compact", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == src.read_bytes()


def test_a_repeated_trigger_is_any_of_them(tmp_path: Path):
    src = _seed(tmp_path / "r.json")
    one = json.loads(run("inspect", str(src), "--trigger", "tokens:900000000", "--json").stdout)
    assert one["trigger_fires"] is False
    both = run("inspect", str(src), "--trigger", "tokens:900000000", "--trigger", "messages:10", "--json")
    report = json.loads(both.stdout)
    assert report["trigger"] == [["tokens", 900000000], ["messages", 10]] and report["trigger_fires"]
    out = tmp_path / "o.json"
    r = run("compact", str(src), "-o", str(out), "--trigger", "tokens:900000000", "--trigger", "messages:10")
    assert r.returncode == 0, r.stderr
    assert "summarized" in r.stdout and "cheap passes only" not in r.stdout


def test_several_inputs_need_a_directory_and_each_input_counts_once(tmp_path: Path):
    a, b = _seed(tmp_path / "a.json"), _seed(tmp_path / "b.json", "chat")
    r = run("compact", str(a), str(b), "-o", str(tmp_path / "single.json"))
    _one_line_error(r, "names a file, but 2 inputs need a directory")
    assert not (tmp_path / "single.json").exists()
    out = tmp_path / "out"
    r = run("compact", str(a), str(tmp_path / "." / "a.json"), "-o", f"{out}/", "--max-input-tokens", "30000")
    assert r.returncode == 0, r.stderr
    assert "is the same file as" in r.stderr and "compacting it once" in r.stderr
    assert r.stdout.count("\n") == 1 and "(as " not in r.stdout
    assert sorted(p.name for p in out.iterdir()) == ["a.archive.md", "a.json"]


def test_a_json_and_a_jsonl_output_of_one_stem_keep_separate_archives(tmp_path: Path):
    src = _seed(tmp_path / "s.json")
    lines = tmp_path / "s.jsonl"
    lines.write_text("".join(json.dumps(m) + "\n" for m in json.loads(src.read_text())))
    out = tmp_path / "out"
    out.mkdir()
    for given in (src, lines):
        r = run("compact", str(given), "-o", str(out / given.name), "--max-input-tokens", "30000")
        assert r.returncode == 0, r.stderr
    assert {"s.archive.md", "s.jsonl.archive.md"} <= {p.name for p in out.iterdir()}


def test_force_refuses_a_summary_that_shrinks_nothing(tmp_path: Path):
    # Short turns: the summary message and its boilerplate outweigh what it replaces.
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(12)]
    src = tmp_path / "short.json"
    src.write_text(json.dumps(msgs))
    r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--force", "--json")
    assert r.returncode == 0, r.stderr
    [figures] = json.loads(r.stdout)
    assert figures["summarized"] == 0 and figures["tokens_after"] <= figures["tokens_before"]
    assert figures["reason"].startswith("a summary would not make it smaller")


def test_output_that_is_not_utf8_gets_ascii_bars():
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run(
        [*_command(), "demo", "--fast"], capture_output=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr.decode("cp1252", "replace")
    text = done.stdout.decode("cp1252")
    assert re.search(r"^turn  1 [#-]{24} ", text, flags=re.M), text[:500]
    inspect = subprocess.run([*_command(), "inspect"], capture_output=True, env=env, timeout=120)
    assert inspect.returncode == 0 and b"Traceback" not in inspect.stderr


def test_the_system_prompt_stays_at_the_top_of_a_compacted_transcript(tmp_path: Path):
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful research assistant."}]
    for i in range(40):
        msgs += [
            {"role": "user", "content": f"question {i}: " + "why? " * 300},
            {"role": "assistant", "content": "because"},
        ]
    src = tmp_path / "sys.json"
    src.write_text(json.dumps(msgs))
    out = tmp_path / "o.json"
    r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "8000", "--json")
    assert r.returncode == 0, r.stderr
    written = json.loads(out.read_text())
    assert written[0] == msgs[0]
    assert written[1]["role"] == "user" and "compacted" in written[1]["content"]
    archive = (tmp_path / "o.archive.md").read_text()
    assert "careful research assistant" not in archive and "question 0" in archive


def test_inline_media_is_saved_beside_the_archive(tmp_path: Path):
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
    picture = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, picture]}
    ]
    msgs += [{"role": "assistant", "content": "a chart " * 400}]
    saved = _the_media_saved(tmp_path, msgs)
    assert saved.startswith(str(tmp_path / "o.archive.media")) and saved.endswith(".png")
    assert Path(saved).read_bytes() == base64.b64decode(png)
    # The archive names it from the output file's folder.
    assert Path(saved).relative_to(tmp_path).as_posix() in (tmp_path / "o.archive.md").read_text()


def _the_media_saved(tmp_path: Path, msgs: list[dict[str, Any]]) -> str:
    """The one media file ``compact`` saves for ``msgs`` followed by twenty long turns
    (enough to summarize them on a 6,000-token window) into ``o.json``."""
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "more " * 300} for i in range(20)]
    src = tmp_path / "in.json"
    src.write_text(json.dumps(msgs + turns))
    r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--max-input-tokens", "6000", "--json")
    assert r.returncode == 0, r.stderr
    [figures] = json.loads(r.stdout)
    [saved] = figures["media"]
    return str(saved)


def test_an_image_inside_a_tool_result_is_saved_beside_the_archive_too(tmp_path: Path):
    """Anthropic's shape: a screenshot tool answers with an image inside its
    tool_result block. The archive names the saved file; no base64 in it."""
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200, 256))).decode()
    picture = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    call = {"type": "tool_use", "id": "s1", "name": "screenshot", "input": {}}
    taken = [picture, {"type": "text", "text": "taken"}]
    result = {"type": "tool_result", "tool_use_id": "s1", "content": taken}
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "take a screenshot"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": "a chart " * 400},
    ]
    saved = _the_media_saved(tmp_path, msgs)
    assert Path(saved).read_bytes() == base64.b64decode(png)
    archive = (tmp_path / "o.archive.md").read_text()
    assert Path(saved).relative_to(tmp_path).as_posix() in archive
    assert png not in archive and png[:40] not in archive


def test_a_model_that_cannot_be_reached_falls_back_to_the_digest(tmp_path: Path):
    src = _seed(tmp_path / "r.json")
    # A provider at a closed port: the call fails at once, as it does offline.
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    done = subprocess.run(
        [*_command(), "compact", str(src), "-o", str(tmp_path / "o.json"), "--max-input-tokens", "30000",
         "--model", "anthropic:claude-sonnet-4-5", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [figures] = json.loads(done.stdout)
    assert figures["summarized"] > 0 and figures["summarizer"] == "digest"
    [line] = [e for e in done.stderr.splitlines() if "the model failed" in e]
    assert "used the digest" in line
    # Said once, naming the file: the agent's log does not say it again.
    assert "the summarizer failed" not in done.stderr
    assert (tmp_path / "o.json").is_file()


def test_an_unknown_model_is_refused_before_any_work(tmp_path: Path):
    src = _seed(tmp_path / "r.json")
    r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--model", "nosuch:model")
    _one_line_error(r, "--model nosuch:model:")
    assert not (tmp_path / "o.json").exists()


def test_messages_speak_of_the_command_line_and_its_counts(tmp_path: Path):
    r = run("inspect", "--trigger", "fraction:0.85")
    _one_line_error(r, "needs --max-input-tokens")
    assert "field 'max_input_tokens'" not in r.stderr
    src = _seed(tmp_path / "r.json")
    _one_line_error(run("inspect", str(src), "--sample", "chat"), "give FILE or --sample, not both")
    # Edits are counted with their noun, thousands separated, as the tokens beside them.
    table = run("inspect", "--sample", "research", "--max-input-tokens", "20000").stdout
    assert re.search(r"│ (\d{1,3}(,\d{3})*) edits?\b", table), table
    assert not re.search(r"\d{4,} edits", table)

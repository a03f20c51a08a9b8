"""The `fastcompact` command through its real entry point, on the bundled sessions and
on malformed files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from fastcompact.samples import load_session
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)

EXE = shutil.which("fastcompact")


def _command() -> list[str]:
    return [EXE] if EXE else [sys.executable, "-m", "fastcompact.app.cli"]


def run(*args: str, stdin: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_command(), *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def _anthropic(messages: list[Any]) -> list[dict[str, Any]]:
    """The session in Anthropic's Messages API shape: tool_use / tool_result blocks."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.type == "human":
            out.append({"role": "user", "content": m.content})
        elif m.type == "ai":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            out.append({"role": "user", "content": [block]})
    return out


SHAPES = {
    "messages_to_dict": lambda msgs: messages_to_dict(msgs),
    "dumpd": lambda msgs: [dumpd(m) for m in msgs],
    "openai": lambda msgs: convert_to_openai_messages(msgs),
    "anthropic": _anthropic,
}


def test_inspect_defaults_to_the_bundled_coding_session():
    r = run("inspect")
    assert r.returncode == 0, r.stderr
    for text in (
        "bundled coding session: 511 messages",
        "tokens by role",
        "read_file",
        "what each cheap pass",
    ):
        assert text in r.stdout


@pytest.mark.parametrize("name", ["coding", "research", "chat"])
def test_inspect_each_bundled_session_as_json(name: str):
    r = run("inspect", "--sample", name, "--max-input-tokens", "50000", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    msgs = load_session(name)
    assert report["messages"] == len(msgs)
    assert report["trigger"] == [["fraction", 0.85]] and report["keep"] == ["fraction", 0.1]
    assert [p["name"] for p in report["passes"]] == [
        "budget",
        "truncate_args",
        "clearing",
        "dedupe",
        "collapse",
        "time_gap",
    ]
    assert report["tokens_after_passes"] == report["total_tokens"] - sum(p["saved"] for p in report["passes"])
    assert 0 < report["cutoff"] < len(msgs)
    assert msgs[report["cutoff"]].type != "tool"


def test_inspect_and_compact_count_as_the_model_counts(tmp_path: Path):
    plain = json.loads(run("inspect", "--sample", "research", "--json").stdout)
    r = run("inspect", "--sample", "research", "--json", "--count-as", "claude-sonnet-4-6")
    assert r.returncode == 0, r.stderr
    claude = json.loads(r.stdout)
    # Anthropic's tokens are shorter than the estimate's: the same text counts more.
    assert claude["model"] == "claude-sonnet-4-6" and plain["model"] is None
    assert claude["total_tokens"] > 1.1 * plain["total_tokens"]
    r = run("inspect", "--sample", "research", "--count-as", "claude-sonnet-4-6")
    assert "tokens (heuristic, as claude-sonnet-4-6's provider counts)" in r.stdout.splitlines()[0]
    # Compact measures its trigger and its result the same way: at a window whose
    # trigger the cheap passes bring the estimate under, Claude's count is still over.
    src = tmp_path / "research.json"
    src.write_text(json.dumps(messages_to_dict(load_session("research"))))
    window = "60000"
    r = run("compact", str(src), "-o", str(tmp_path / "a.json"), "--max-input-tokens", window, "--json")
    [as_estimated] = json.loads(r.stdout)
    r = run(
        "compact", str(src), "-o", str(tmp_path / "b.json"), "--max-input-tokens", window, "--json",
        "--count-as", "claude-sonnet-4-6",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    [as_claude] = json.loads(r.stdout)
    assert as_claude["tokens_before"] > as_estimated["tokens_before"]
    assert as_estimated["summarized"] == 0 and "under the trigger" in as_estimated["reason"]
    assert as_claude["summarized"] > 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_inspect_reads_every_shape(tmp_path: Path, shape: str):
    msgs = load_session("coding")[:120]
    path = tmp_path / f"{shape}.json"
    path.write_text(json.dumps(SHAPES[shape](msgs)))
    r = run("inspect", str(path), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["messages"] == 120
    # Tool results are tool results in every shape, Anthropic's too (whose results sit
    # in user messages), and attributed to their tool.
    assert "read_file" in report["per_tool"]
    humans = sum(1 for m in msgs if m.type == "human")
    assert report["per_role"]["human"] < 200 * humans
    assert report["per_role"]["tool"] == sum(report["per_tool"].values())


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
        ("{not json", "not valid JSON: Expecting property name enclosed in double quotes: line 1, column 2"),
        ("[]", "empty"),
        ("", "the file is empty; expected LangChain messages"),
        ("  \n", "the file is empty; expected LangChain messages"),
        ('{"a": 1}', "expected a list"),
        ('[{"role": "wizard", "content": "x"}]', "message 0"),
        ('[{"foo": 1}]', "has none of 'type', 'role', 'lc'"),
        ("[42]", "message 0 is a int"),
    ],
)
def test_bad_files_fail_in_one_line(tmp_path: Path, content: str, message: str):
    path = tmp_path / "bad.json"
    path.write_text(content)
    for command in (["inspect", str(path)], ["compact", str(path), "-o", str(tmp_path / "out.json")]):
        r = run(*command)
        assert r.returncode == 2, r.stdout
        assert message in r.stderr
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_missing_and_binary_files(tmp_path: Path):
    r = run("inspect", "/nonexistent/session.json")
    assert r.returncode == 2 and "cannot read" in r.stderr
    path = tmp_path / "blob.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    r = run("inspect", str(path))
    assert r.returncode == 2 and "not UTF-8" in r.stderr and "Traceback" not in r.stderr


def _archived(path: Path) -> list[int]:
    return [int(i) for i in re.findall(r"^### \[(\d+)\]", path.read_text(), flags=re.M)]


def test_compact_one_file_writes_the_conversation_and_the_archive(tmp_path: Path):
    msgs = load_session("research")
    src = tmp_path / "research.json"
    src.write_text(json.dumps(messages_to_dict(msgs)))
    out = tmp_path / "small.json"
    r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "30000", "--json")
    assert r.returncode == 0, r.stderr
    [figures] = json.loads(r.stdout)
    written = json.loads(out.read_text())
    assert figures["messages_after"] == len(written) == len(msgs) - figures["summarized"] + 1
    assert (
        written[0]["type"] == "human"
        and written[0]["data"]["additional_kwargs"]["lc_source"] == "summarization"
    )
    # The summary names the archive from the output file's folder.
    assert "saved at small.archive.md." in written[0]["data"]["content"]
    assert str(tmp_path) not in written[0]["data"]["content"]
    assert _archived(tmp_path / "small.archive.md") == list(range(figures["summarized"]))
    assert figures["tokens_after"] < 30_000 * 0.85
    # The kept messages are the originals (or their edited copies), in order.
    assert [m["data"]["id"] for m in written[1:]] == [m.id for m in msgs[figures["summarized"] :]]


def test_compact_many_files_in_parallel_keeps_each_layout(tmp_path: Path):
    chat = messages_to_dict(load_session("chat"))
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(m) + "\n" for m in chat))
    coding = convert_to_openai_messages(load_session("coding"))
    (tmp_path / "coding.json").write_text(json.dumps({"messages": coding}))
    research = messages_to_dict(load_session("research"))
    (tmp_path / "research.json").write_text(json.dumps(research))
    outdir = tmp_path / "out"
    files = [str(tmp_path / n) for n in ("chat.jsonl", "coding.json", "research.json")]
    r = run("compact", *files, "-o", str(outdir), "--max-input-tokens", "20000")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("summarized") == 3
    # Each output keeps its input's whole name, and so its layout's suffix.
    chat_out = [json.loads(line) for line in (outdir / "chat.jsonl").read_text().splitlines()]
    assert chat_out[0]["data"]["additional_kwargs"]["lc_source"] == "summarization"
    coding_out = json.loads((outdir / "coding.json").read_text())["messages"]
    assert coding_out[0]["role"] == "user" and "compacted" in coding_out[0]["content"]
    # A .json output's archive is named after its stem, another's after its whole name
    # (so that x.json and x.jsonl never share one).
    for name, n in (("chat.jsonl", len(chat)), ("coding", len(coding)), ("research", len(research))):
        archived = _archived(outdir / f"{name}.archive.md")
        assert archived == list(range(len(archived))) and 0 < len(archived) < n


def test_compact_below_the_trigger_only_runs_the_cheap_passes(tmp_path: Path):
    src = tmp_path / "chat.json"
    src.write_text(json.dumps(messages_to_dict(load_session("chat"))))
    r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--json")
    assert r.returncode == 0, r.stderr
    [figures] = json.loads(r.stdout)
    assert figures["summarized"] == 0 and figures["archive"] is None
    assert not (tmp_path / "o.archive.md").exists()
    r = run("compact", str(src), "-o", str(tmp_path / "f.json"), "--force", "--json")
    assert json.loads(r.stdout)[0]["summarized"] > 0


def test_demo_fast_compacts_and_archives(tmp_path: Path):
    r = run("demo", "--fast", "--root", str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "SUMMARY #1" in r.stdout and "nothing was lost" in r.stdout
    archives = sorted((tmp_path / "conversation_history" / "demo").glob("*.md"))
    assert archives and all(a.read_text().startswith("# Conversation history") for a in archives)
    turns = re.findall(r"^turn +\d+ ", r.stdout, flags=re.M)
    assert len(turns) == 14


def _seed(path: Path, session: str = "research") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(messages_to_dict(load_session(session))))
    return path


def test_two_inputs_of_one_name_never_share_an_output(tmp_path: Path):
    a, b = _seed(tmp_path / "a" / "s.json"), _seed(tmp_path / "b" / "s.json", "chat")
    out = tmp_path / "out"
    r = run("compact", str(a), str(b), "-o", str(out), "--max-input-tokens", "20000")
    assert r.returncode == 0, r.stderr
    outputs = sorted(p.name for p in out.iterdir())
    assert outputs == ["b_s.archive.md", "b_s.json", "s.archive.md", "s.json"] or outputs == [
        "a_s.archive.md",
        "a_s.json",
        "s.archive.md",
        "s.json",
    ]
    assert "another input is also named s.json" in r.stdout
    # Both conversations are there, each whole.
    texts = [(out / n).read_text() for n in outputs if n.endswith(".json")]
    assert sum("lc_source" in t for t in texts) == 2
    assert len({t for t in texts}) == 2


def test_outputs_keep_the_whole_stem(tmp_path: Path):
    files = [str(_seed(tmp_path / f"run.{k}.json")) for k in (1, 2)]
    out = tmp_path / "out"
    r = run("compact", *files, "-o", str(out), "--max-input-tokens", "20000")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "run.1.archive.md",
        "run.1.json",
        "run.2.archive.md",
        "run.2.json",
    ]


def test_an_existing_output_is_refused_without_overwrite(tmp_path: Path):
    src = _seed(tmp_path / "s.json")
    out = tmp_path / "o.json"
    out.write_text("keep me")
    r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "20000")
    assert r.returncode == 2 and "exists; give --overwrite" in r.stderr
    assert out.read_text() == "keep me"
    r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "20000", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert "lc_source" in out.read_text()


def test_a_trailing_slash_names_a_directory(tmp_path: Path):
    src = _seed(tmp_path / "seed.json")
    r = run("compact", str(src), "-o", f"{tmp_path / 'new'}/", "--max-input-tokens", "20000")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new").is_dir() and (tmp_path / "new" / "seed.json").is_file()


@pytest.mark.parametrize("value", ["-5", "0", "lots"])
def test_bad_sizes_on_the_command_line_get_one_line_and_exit_2(tmp_path: Path, value: str):
    src = _seed(tmp_path / "s.json", "chat")
    for command in (["inspect", str(src)], ["compact", str(src), "-o", str(tmp_path / "o.json")]):
        r = run(*command, "--max-input-tokens", value)
        assert r.returncode == 2
        assert r.stderr.strip().count("\n") == 0, r.stderr
        assert f"expected a whole number of at least 1, got '{value}'" in r.stderr
        assert "Traceback" not in r.stderr


def test_counts_are_singular_for_one(tmp_path: Path):
    src = tmp_path / "one.json"
    src.write_text(json.dumps([{"role": "user", "content": "hello there"}]))
    r = run("inspect", str(src))
    assert r.returncode == 0, r.stderr
    assert "1 message," in r.stdout and "1 messages" not in r.stdout


def test_help_describes_each_command_and_option():
    for command in ("inspect", "compact", "demo"):
        r = run(command, "--help")
        assert r.returncode == 0
        # The description line under the usage, not only the parent's list.
        assert r.stdout.split("\n\n")[1].strip()
    assert "how tokens are counted" in run("inspect", "--help").stdout


def test_a_reader_that_stops_early_is_not_an_error():
    proc = subprocess.Popen(
        [*_command(), "inspect", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head` does once it has what it wants
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "BrokenPipe" not in err and "Traceback" not in err


def test_compact_reads_stdin_and_writes_stdout(tmp_path: Path):
    seed = json.dumps(messages_to_dict(load_session("research")))
    out = tmp_path / "x.json"
    r = run("compact", "-", "-o", str(out), "--max-input-tokens", "30000", stdin=seed)
    assert r.returncode == 0, r.stderr
    assert "lc_source" in out.read_text() and (tmp_path / "x.archive.md").is_file()
    # To stdout: the conversation alone there, its figures on stderr, and no archive
    # unless asked for, which is said.
    r = run("compact", "-", "-o", "-", "--max-input-tokens", "30000", stdin=seed)
    assert r.returncode == 0, r.stderr
    written = json.loads(r.stdout)
    assert written[0]["data"]["additional_kwargs"]["lc_source"] == "summarization"
    assert "summarized" in r.stderr and "are not saved with the output; --archive PATH saves them" in r.stderr
    archive = tmp_path / "kept.md"
    r = run("compact", "-", "-o", "-", "--archive", str(archive), "--max-input-tokens", "30000", stdin=seed)
    assert r.returncode == 0, r.stderr
    assert str(archive) in json.loads(r.stdout)[0]["data"]["content"]
    assert _archived(archive) and "not saved" not in r.stderr


def test_stdout_takes_one_input_and_no_json(tmp_path: Path):
    a, b = _seed(tmp_path / "a.json"), _seed(tmp_path / "b.json")
    for args, message in (
        ([str(a), str(b), "-o", "-"], "writes one conversation to stdout"),
        ([str(a), "-o", "-", "--json"], "--json cannot share it"),
        ([str(a), str(b), "-o", str(tmp_path / "d"), "--archive", "x.md"], "--archive names one file"),
        (["-", "-", "-o", str(tmp_path / "d")], "stdin ('-') can be read once"),
    ):
        r = run("compact", *args, stdin="[]")
        assert r.returncode == 2 and message in r.stderr, r.stderr


def test_parse_errors_name_the_real_line_and_column(tmp_path: Path):
    lines = [json.dumps({"role": "user", "content": f"question {i}"}) for i in range(120)]
    whole = "[\n" + ",\n".join(lines) + "\n]\n"
    cut = whole[: whole.index("question 101") + 5]  # inside a string on line 103
    path = tmp_path / "cut.json"
    path.write_text(cut)
    r = run("inspect", str(path))
    assert r.returncode == 2
    assert (
        r.stderr
        == f"fastcompact: {path}: not valid JSON: Unterminated string starting at: line 103, column 29\n"
    )
    jsonl = "\n".join(lines[:7]) + "\n\n" + lines[7][:-3] + "\n"  # a blank line, then line 9 cut
    path = tmp_path / "cut.jsonl"
    path.write_text(jsonl)
    r = run("inspect", str(path))
    assert r.returncode == 2
    assert r.stderr == (
        f"fastcompact: {path}: not valid JSON Lines: Unterminated string starting at: line 9, column 29\n"
    )


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user"}, "content"),
        ({"role": "tool", "content": "42"}, "tool_call_id"),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}],
            },
            "tool_calls[0].function.arguments",
        ),
    ],
)
def test_malformed_messages_are_refused_with_file_index_and_field(tmp_path: Path, message: Any, field: str):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, message]))
    for command in (["inspect", str(path)], ["compact", str(path), "-o", str(tmp_path / "o.json")]):
        r = run(*command)
        assert r.returncode == 2
        assert r.stderr.startswith(f"fastcompact: {path}: message 1: field '{field}': "), r.stderr
        assert r.stderr.count("\n") == 1
    assert not (tmp_path / "o.json").exists()


def test_results_cut_by_the_budget_are_saved_whole_and_named(tmp_path: Path):
    log = "".join(f"line {i}: compiling module {i}\n" for i in range(20_000))
    msgs = [
        {"role": "user", "content": "build it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "execute", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": log},
        {"role": "assistant", "content": "built"},
    ]
    src = tmp_path / "build.json"
    src.write_text(json.dumps(msgs))
    r = run("compact", str(src), "-o", f"{tmp_path / 'out'}/")
    assert r.returncode == 0, r.stderr
    saved = tmp_path / "out" / "build.results" / "2.txt"
    assert saved.read_text() == log
    assert f"1 tool result saved whole in {saved.parent}" in r.stdout
    result = json.loads((tmp_path / "out" / "build.json").read_text())[2]["content"]
    assert "characters cut from this result; the full output is saved at build.results/2.txt " in result
    assert len(result) < 10_000
    # Nowhere to save them: that is said.
    r = run("compact", str(src), "-o", "-")
    unsaved = "the whole text of the cut, cleared or shortened messages are not saved with the output"
    assert r.returncode == 0 and unsaved in r.stderr


def test_compact_measures_as_inspect_does(tmp_path: Path):
    src = _seed(tmp_path / "s.json", "research")
    r = run("compact", str(src), "-o", str(tmp_path / "a.json"), "--trigger", "tokens:5000", "--json")
    assert r.returncode == 0, r.stderr
    [small] = json.loads(r.stdout)
    assert small["summarized"] > 0
    r = run(
        "compact",
        str(src),
        "-o",
        str(tmp_path / "b.json"),
        "--trigger",
        "tokens:5000",
        "--keep",
        "messages:2",
        "--encoding",
        "o200k_base",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    [kept] = json.loads(r.stdout)
    assert kept["summarized"] > small["summarized"] and kept["messages_after"] < small["messages_after"]
    exact = run("inspect", str(src), "--encoding", "o200k_base", "--json")
    assert kept["tokens_before"] == json.loads(exact.stdout)["total_tokens"]


def test_force_says_why_nothing_could_be_cut(tmp_path: Path):
    src = tmp_path / "six.json"
    src.write_text(
        json.dumps(
            [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(6)]
        )
    )
    r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--force")
    assert r.returncode == 0, r.stderr
    assert "nothing to summarize: keeping messages:6 leaves no older message to cut" in r.stdout
    assert "no summary needed" not in r.stdout


@pytest.mark.parametrize("indent", [2, 4, "\t", None])
def test_the_output_keeps_the_input_layout(tmp_path: Path, indent: int | str | None):
    msgs = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": "hi"}]
    src = tmp_path / "s.json"
    for ascii_only in (True, False):
        body = json.dumps(msgs, indent=indent, ensure_ascii=ascii_only)
        src.write_text(body)
        r = run("compact", str(src), "-o", str(tmp_path / "o.json"), "--overwrite")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "o.json").read_text() == body + "\n"
    # An object keeps its other keys, in their places.
    wrapped = json.dumps({"id": "run-7", "messages": msgs, "meta": {"k": 1}}, indent=indent)
    src.write_text(wrapped)
    r = run("compact", str(src), "-o", str(tmp_path / "w.json"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "w.json").read_text() == wrapped + "\n"


def test_archive_names_where_the_archive_of_an_output_file_goes(tmp_path: Path):
    src = _seed(tmp_path / "s.json")
    archive = tmp_path / "kept" / "history.md"
    r = run(
        "compact",
        str(src),
        "-o",
        str(tmp_path / "o.json"),
        "--archive",
        str(archive),
        "--max-input-tokens",
        "20000",
    )
    assert r.returncode == 0, r.stderr
    assert _archived(archive) and not (tmp_path / "o.archive.md").exists()
    assert "saved at kept/history.md." in json.loads((tmp_path / "o.json").read_text())[0]["data"]["content"]


def test_the_paths_an_output_names_resolve_from_its_own_folder(tmp_path: Path):
    """``compact seed.json -o out/seed.json`` run from elsewhere: the summary names
    the archive as the output's folder sees it, and so does the cut result's marker."""
    _seed(tmp_path / "seed.json")
    log = "".join(f"line {i}: compiling module {i}\n" for i in range(20_000))
    call = {"id": "c1", "type": "function", "function": {"name": "execute", "arguments": "{}"}}
    build = [
        {"role": "user", "content": "build it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": log},
        {"role": "assistant", "content": "built"},
    ]
    (tmp_path / "build.json").write_text(json.dumps(build))
    args = ["--max-input-tokens", "20000"]
    for name in ("seed", "build"):
        done = subprocess.run(
            [*_command(), "compact", f"{name}.json", "-o", f"out/{name}.json", *args],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    summary = json.loads((out / "seed.json").read_text())[0]["data"]["content"]
    named = re.search(r"saved at (\S+)\. Read it", summary)
    assert named is not None and named.group(1) == "seed.archive.md"
    assert _archived(out / named.group(1))
    marker = json.loads((out / "build.json").read_text())[2]["content"]
    cut = re.search(r"the full output is saved at (\S+) ", marker)
    assert cut is not None and (out / cut.group(1)).read_text() == log


def test_every_result_an_output_clears_resolves_through_it_in_every_shape(tmp_path: Path):
    """Thirty file reads, compacted to a file in each shape: a result the passes
    cleared comes back whole from the output (LangChain's shapes keep it inline, a
    provider's shape in a file beside it, which the placeholder names), so recall
    on the output returns the same in every shape."""
    body = "".join(f"def f{k}(): return {k} * {{i}}\n" for k in range(150))
    files = {f"/src/m{i}.py": body.replace("{i}", str(i)) for i in range(30)}
    msgs: list[Any] = []
    for i, (path, text) in enumerate(files.items()):
        msgs += [
            HumanMessage(f"Read {path} please."),
            AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": path}, "id": f"c{i}"}]),
            ToolMessage(text, tool_call_id=f"c{i}", name="read_file"),
            AIMessage(f"{path} defines 150 functions."),
        ]
    for name in ("messages_to_dict", "openai", "anthropic"):
        src = tmp_path / name / "in.json"
        src.parent.mkdir()
        src.write_text(json.dumps(SHAPES[name](msgs)))
        out = tmp_path / name / "out.json"
        r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "60000")
        assert r.returncode == 0, r.stderr
        cleared = _summary_text(json.loads(out.read_text())[4 * 4 + 2])
        placeholder = '[Cleared to save context: read_file(/src/m4.py); recall("c4") returns it.]'
        assert cleared.startswith(placeholder)
        for i in range(30):
            assert fastcompact.recall(out, f"c{i}") == files[f"/src/m{i}.py"], (name, i)
        # On stdout there is nowhere beside it: a provider's shape loses them, and says so.
        r = run("compact", str(src), "-o", "-", "--max-input-tokens", "60000")
        unsaved = "the whole text of the cut, cleared or shortened messages are not saved with the output"
        assert r.returncode == 0 and (unsaved in r.stderr) == (name != "messages_to_dict"), r.stderr
        if name != "messages_to_dict":
            assert cleared.endswith(" Its whole text is saved at out.results/18.txt.")


def test_every_argument_an_output_shortens_resolves_through_it_in_every_shape(tmp_path: Path):
    """Forty files written through a shell call, compacted to a file in each shape
    with room for the writes only once shortened: every call's whole arguments come
    back from the output by ``<id>/args`` (LangChain's shapes inline, a provider's shape
    in a file beside it that the shortened argument names)."""
    msgs: list[Any] = []
    for i in range(40):
        body = "".join(f"line {j} of module_{i} value={i * j}\n" for j in range(150))
        command = f"cat > mod_{i}.py << 'EOF'\n{body}EOF"
        msgs += [
            HumanMessage(f"Write module {i}."),
            AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": f"c{i}"}]),
            ToolMessage(f"wrote mod_{i}.py", tool_call_id=f"c{i}", name="bash"),
        ]
    for name in sorted(SHAPES):
        src = tmp_path / name / "in.json"
        src.parent.mkdir()
        given = SHAPES[name](msgs)
        src.write_text(json.dumps(given))
        out = tmp_path / name / "out.json"
        r = run("compact", str(src), "-o", str(out), "--max-input-tokens", "40000")
        assert r.returncode == 0, r.stderr
        assert out.read_text().count("[shortened from") >= 20, name
        for i in range(40):
            assert fastcompact.recall(out, f"c{i}/args") == fastcompact.recall(given, f"c{i}/args"), (name, i)
        if name in ("openai", "anthropic"):
            assert f"calls' arguments saved whole in {out.parent / 'out.results'}" in r.stdout


def test_the_input_is_never_the_output(tmp_path: Path):
    """Writing the compacted conversation over its input would lose what the passes cut
    for good: refused, with --overwrite too, and the input is left as it was."""
    src = _seed(tmp_path / "s.json", "coding")
    before = src.read_bytes()
    for target in (str(src), str(tmp_path / "." / "s.json"), f"{tmp_path}/"):
        r = run("compact", str(src), "-o", target, "--max-input-tokens", "20000", "--overwrite")
        assert r.returncode == 2, r.stderr
        assert "is the input" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert src.read_bytes() == before


def _summary_text(message: dict[str, Any]) -> str:
    fields = message.get("data") or message.get("kwargs") or message
    content = fields["content"]
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "tool_result":
        content = content[0]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def _reads_and_a_write() -> list[Any]:
    """A note written, twelve files read, the first read again."""
    body = "".join(f"def f{k}(): return {k} * {{i}}\n" for k in range(150))
    msgs: list[Any] = [
        HumanMessage("Write the notes."),
        AIMessage(
            "",
            tool_calls=[
                {"name": "write_file", "args": {"path": "/n.md", "content": "n\n" * 2_000}, "id": "w"}
            ],
        ),
        ToolMessage("ok", tool_call_id="w", name="write_file"),
        AIMessage("Written."),
    ]
    for i in [*range(12), 0]:
        call = {"name": "read_file", "args": {"path": f"/src/m{i}.py"}, "id": f"c{len(msgs)}"}
        msgs += [
            HumanMessage(f"Read /src/m{i}.py please."),
            AIMessage("", tool_calls=[call]),
            ToolMessage(body.replace("{i}", str(i)), tool_call_id=call["id"], name="read_file"),
            AIMessage(f"/src/m{i}.py defines 150 functions."),
        ]
    return msgs


def test_the_cheap_passes_edit_every_shape_alike():
    """The same conversation in each shape gets the same edits from the same passes, and
    each shape's output holds them where that shape keeps a result or an argument
    (Anthropic's: inside the tool_result and tool_use blocks), counted as planned."""
    cfg = fastcompact.CompactionConfig(
        truncate_args=fastcompact.TruncateArgsConfig(
            trigger=("messages", 1), keep=("messages", 4), min_batch_tokens=0
        ),
        clearing=fastcompact.ClearingConfig(trigger=("messages", 1), keep_recent=8, clear_at_least=0),
    )
    msgs = _reads_and_a_write()
    edits = {}
    for name, shape in SHAPES.items():
        given = shape(msgs)
        plan = fastcompact.plan(given, cfg, max_input_tokens=200_000)
        edits[name] = [(e.index, e.pass_name, e.field, e.call, e.value) for e in plan.edits]
        out = fastcompact.apply_edits(given, plan.edits)
        assert fastcompact.count_tokens(out) == plan.tokens_after, name
        assert _summary_text(out[6]).startswith(
            '[Cleared to save context: read_file(/src/m0.py); recall("c4")'
        )
        assert "[shortened from 4000 characters" in fastcompact.recall(out, "w/args")
    assert {p for _, p, *_ in edits["anthropic"]} == {"truncate_args", "clearing"}
    assert all(found == edits["openai"] for found in edits.values())
    # Anthropic's result blocks and call blocks are edited in place: the pairs stay.
    out = fastcompact.apply_edits(
        SHAPES["anthropic"](msgs), fastcompact.plan(SHAPES["anthropic"](msgs), cfg).edits
    )
    assert out[6]["role"] == "user" and out[6]["content"][0]["tool_use_id"] == "c4"
    assert out[1]["content"][0]["type"] == "tool_use" and out[1]["content"][0]["id"] == "w"


def test_a_summary_numbers_the_requests_alike_in_every_shape(tmp_path: Path):
    """The same session in each shape, summarized: the same requests, numbered alike.
    Anthropic's tool results come in user messages, and open no request."""
    msgs = load_session("research")
    numbered = {}
    for name, shape in SHAPES.items():
        src = _seed(tmp_path / name / "s.json")
        src.write_text(json.dumps(shape(msgs)))
        out = tmp_path / name / "o.json"
        r = run("compact", str(src), "-o", str(out), "--force", "--keep", "messages:6")
        assert r.returncode == 0, r.stderr
        text = _summary_text(json.loads(out.read_text())[0])
        numbered[name] = re.findall(r"^### (R\d+)\n(.*)$", text, flags=re.M)
        assert "[tool result]" not in text
    requests = [m.content for m in msgs if m.type == "human"]
    expected = [(f"R{i}", r.splitlines()[0]) for i, r in enumerate(requests[: len(numbered["openai"])], 1)]
    assert numbered["openai"] == expected and len(expected) > 5
    assert all(found == expected for found in numbered.values()), numbered


def test_help_names_the_defaults_the_commands_use(monkeypatch: pytest.MonkeyPatch):
    """The size options' help names the configuration's own defaults, with a window and
    without one, and the demo's its windows."""
    monkeypatch.setenv("COLUMNS", "300")  # one line per option: nothing wraps
    compact = run("compact", "--help").stdout
    assert "(default: fraction:0.85 with --max-input-tokens, else tokens:170000)" in compact
    assert "(default: fraction:0.1 with --max-input-tokens, else messages:6)" in compact
    assert "the model's context window (fraction: sizes need it; default: none)" in compact
    demo = run("demo", "--help").stdout
    assert "the model's window in tokens (default: 24,000; 16,000 with --fast)" in demo


def _agent_session(tool: str, requests: int = 12) -> list[dict[str, Any]]:
    """A session whose bulk is the results of one tool, in LangChain's dict shape."""
    msgs: list[Any] = []
    for i in range(requests):
        call = {"id": f"c{i}", "name": tool, "args": {"command": f"cat part{i}.sql"}}
        msgs += [
            HumanMessage(f"Look at part {i}."),
            AIMessage("", tool_calls=[call]),
            ToolMessage(f"row {i} " * 3_000, tool_call_id=f"c{i}", name=tool),
            AIMessage(f"Part {i} is read."),
        ]
    return messages_to_dict(msgs)


# A window the sessions below are well over, so that clearing runs.
WINDOW = ("--max-input-tokens", "40000")


def test_clearing_knows_other_agents_tools_and_is_told_more_on_the_command_line(tmp_path: Path):
    def cleared(report: dict[str, Any]) -> int:
        return next(p for p in report["passes"] if p["name"] == "clearing")["edits"]

    # Claude Code's shell is a shell: its old results are cleared as DeepAgents' are.
    reports = {}
    for tool in ("execute", "Bash"):
        src = tmp_path / f"{tool}.json"
        src.write_text(json.dumps(_agent_session(tool)))
        reports[tool] = json.loads(run("inspect", str(src), "--json", *WINDOW).stdout)
    assert cleared(reports["Bash"]) == cleared(reports["execute"]) > 6
    assert reports["Bash"]["unclearable"] == []
    # A tool of the user's own: named, with the flag that clears it.
    src = tmp_path / "own.json"
    src.write_text(json.dumps(_agent_session("run_query")))
    r = run("inspect", str(src), *WINDOW)
    assert "note: run_query takes 9" in r.stdout and "--clear-tools run_query" in r.stdout
    report = json.loads(run("inspect", str(src), "--json", *WINDOW).stdout)
    assert cleared(report) == 0 and report["unclearable"][0][0] == "run_query"
    told = json.loads(run("inspect", str(src), "--json", "--clear-tools", "run_query", *WINDOW).stdout)
    assert cleared(told) == cleared(reports["execute"])
    assert told["unclearable"] == [] and told["tokens_after_passes"] < report["tokens_after_passes"] / 2
    out = tmp_path / "out.json"
    r = run("compact", str(src), "-o", str(out), "--clear-tools", "other,run_query", "--json", *WINDOW)
    assert r.returncode == 0, r.stderr
    written = json.loads(out.read_text())
    assert sum("Cleared to save context: run_query" in m["data"]["content"] for m in written) == cleared(told)

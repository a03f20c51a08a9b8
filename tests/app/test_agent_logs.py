"""Agents' own logs (Claude Code, Codex, mini-swe-agent, SWE-agent) read as the
conversations their models saw, by the command line and ``read_transcript``."""

from __future__ import annotations

import json
from pathlib import Path

import fastcompact
import pytest
from fastcompact import _core
from fastcompact.app.cli import main


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


USAGE = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 900,
    "cache_read_input_tokens": 100,
    "output_tokens": 40,
}


def claude_code_log() -> list[dict]:
    """A response written over three lines, its two parallel results between and after
    them, the lines the model never saw, and a summary of Claude Code's own."""

    def line(kind: str, message: dict, **extra: object) -> dict:
        return {"type": kind, "uuid": f"u{len(message)}", "sessionId": "s", "message": message, **extra}

    def part(block: dict) -> dict:
        return line("assistant", {"id": "msg_1", "role": "assistant", "content": [block], "usage": USAGE})

    return [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        {"type": "progress", "data": {"type": "hook_progress"}},
        line("user", {"role": "user", "content": "Find the flaky test, ticket QA-77."}),
        part({"type": "thinking", "thinking": "Look first.", "signature": "sig"}),
        part({"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "flaky"}}),
        line(
            "user",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
        ),
        part({"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a.py"}}),
        line(
            "user",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "def t(): pass"}],
            },
        ),
        {"type": "system", "subtype": "stop_hook_summary", "content": "hooks ran"},
        line(
            "user",
            {
                "role": "user",
                "content": "This session is being continued from a previous conversation. Summary: QA-77.",
            },
            isCompactSummary=True,
        ),
        line(
            "assistant", {"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}
        ),
    ]


def test_a_claude_code_log_reads_as_the_api_messages_it_was(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "session.jsonl", claude_code_log())
    messages = fastcompact.read_transcript(path)
    assert messages == [
        {"role": "user", "content": "Find the flaky test, ticket QA-77."},
        {
            "role": "assistant",
            "id": "msg_1",
            "content": [
                {"type": "thinking", "thinking": "Look first.", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "flaky"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a.py"}},
            ],
            "response_metadata": {"usage": USAGE},
        },
        # The parallel results, one message each, as LangChain holds them.
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "def t(): pass"}],
        },
        {
            "role": "user",
            "content": "This session is being continued from a previous conversation. Summary: QA-77.",
        },
        {"role": "assistant", "id": "msg_2", "content": [{"type": "text", "text": "Fixed."}]},
    ]
    read = _core.normalize(messages)
    assert [m["role"] for m in read] == ["human", "ai", "tool", "tool", "human", "ai"]
    # The usage the call reported, cache tokens included, anchors the counts.
    assert read[1]["usage"] == {"input": 1003, "output": 40}


def test_a_codex_rollout_reads_as_openai_messages(tmp_path: Path) -> None:
    def item(payload: dict) -> dict:
        return {"timestamp": "2025-11-17T21:30:45Z", "type": "response_item", "payload": payload}

    call = {"command": ["bash", "-lc", "ls"]}
    path = _jsonl(
        tmp_path / "rollout.jsonl",
        [
            {"type": "session_meta", "payload": {"id": "r1", "cwd": "/w"}},
            item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list it"}]}),
            {"type": "turn_context", "payload": {"model": "gpt-5.1-codex"}},
            item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
            item({"type": "function_call", "name": "shell", "arguments": json.dumps(call), "call_id": "c1"}),
            item({"type": "function_call", "name": "shell", "arguments": json.dumps(call), "call_id": "c2"}),
            item({"type": "function_call_output", "call_id": "c1", "output": "a.py"}),
            item({"type": "function_call_output", "call_id": "c2", "output": "b.py"}),
            {"type": "event_msg", "payload": {"type": "user_message", "message": "list it"}},
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"last_token_usage": {"input_tokens": 500, "output_tokens": 7}},
                },
            },
            item(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Two files."}],
                }
            ),
        ],
    )
    shell = {"name": "shell", "arguments": json.dumps(call)}
    assert fastcompact.read_transcript(path) == [
        {"role": "user", "content": "list it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": shell},
                {"id": "c2", "type": "function", "function": shell},
            ],
            "response_metadata": {
                "token_usage": {"prompt_tokens": 500, "completion_tokens": 7, "total_tokens": 507}
            },
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "tool", "tool_call_id": "c2", "content": "b.py"},
        {"role": "assistant", "content": "Two files."},
    ]


def mini_swe_trajectory() -> dict:
    return {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You solve tasks with a shell."},
            {"role": "user", "content": "Fix issue 1413."},
            {
                "role": "assistant",
                "content": "```bash\nls\n```",
                "extra": {"response": {}},
                "tool_calls": None,
            },
            {"role": "user", "content": "<output>a.py</output>"},
            {"role": "exit", "content": "diff --git a/a.py b/a.py"},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "pydicom-1413",
    }


def test_a_mini_swe_agent_trajectory_keeps_its_exit_record_after_the_messages(tmp_path: Path) -> None:
    path = tmp_path / "task.traj.json"
    path.write_text(json.dumps(mini_swe_trajectory(), indent=2))
    assert [m["role"] for m in fastcompact.read_transcript(path)] == ["system", "user", "assistant", "user"]
    out = tmp_path / "out.json"
    assert main(["compact", str(path), "-o", str(out), "--max-input-tokens", "100000"]) == 0
    written = json.loads(out.read_text())
    assert list(written) == ["info", "messages", "trajectory_format", "instance_id"]
    assert written["messages"][-1] == {"role": "exit", "content": "diff --git a/a.py b/a.py"}
    assert len(written["messages"]) == 5


def test_a_swe_agent_trajectory_names_each_result_s_call(tmp_path: Path) -> None:
    path = tmp_path / "task.traj"
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
    }
    path.write_text(
        json.dumps(
            {
                "trajectory": [{"action": "ls", "observation": "a.py"}],
                "history": [
                    {"role": "system", "content": "You are SWE-agent.", "agent": "main"},
                    {"role": "user", "content": "Fix it.", "agent": "main", "message_type": "observation"},
                    {"role": "assistant", "content": "", "tool_calls": [call], "agent": "main"},
                    {"role": "tool", "content": "a.py", "tool_call_ids": ["call_1"], "agent": "main"},
                ],
            }
        )
    )
    messages = fastcompact.read_transcript(path)
    assert messages[-1] == {"role": "tool", "content": "a.py", "tool_call_id": "call_1"}
    assert [m["role"] for m in _core.normalize(messages)] == ["system", "human", "ai", "tool"]


def test_inspect_says_whose_log_it_read_and_counts_by_its_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _jsonl(tmp_path / "session.jsonl", claude_code_log())
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path} (Claude Code session): 6 messages" in out
    # The call reported 1,003 tokens sent (cache reads and writes among them).
    report = fastcompact.inspect(fastcompact.read_transcript(path))
    assert report.usage_tokens is not None and report.usage_tokens > 1_003 > report.total_tokens
    assert f"{report.usage_tokens:,} by the usage its last call reported" in out
    assert fastcompact.inspect([("human", "hi"), ("ai", "hello")]).usage_tokens is None


def test_what_is_no_conversation_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"title": "not a conversation"}')
    with pytest.raises(fastcompact.InputError, match="messages"):
        fastcompact.read_transcript(path)


def test_parallel_results_in_a_file_are_cleared_one_by_one_and_recalled(tmp_path: Path) -> None:
    messages: list[dict] = [{"role": "user", "content": "Read every module."}]
    for i in range(8):
        calls = [
            {"type": "tool_use", "id": f"{k}{i}", "name": "Read", "input": {"file_path": f"/{k}{i}.py"}}
            for k in "ab"
        ]
        messages.append({"role": "assistant", "content": calls})
        results = [
            {"type": "tool_result", "tool_use_id": f"{k}{i}", "content": f"module {k}{i} " + "word " * 1500}
            for k in "ab"
        ]
        messages.append({"role": "user", "content": results})
    messages.append({"role": "user", "content": "Now sum it up."})
    path = tmp_path / "parallel.json"
    path.write_text(json.dumps(messages))
    out = tmp_path / "out.json"
    assert main(["compact", str(path), "-o", str(out), "--max-input-tokens", "30000"]) == 0
    written = json.loads(out.read_text())
    results = [
        b for m in written if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
    ]
    cleared = [b for b in results if b["content"].startswith("[Cleared to save context")]
    assert cleared, "no parallel result was cleared"
    # Every call still has its result, and every cleared one comes back whole.
    calls = [b["id"] for m in written if m["role"] == "assistant" for b in m["content"]]
    assert sorted(b["tool_use_id"] for b in results) == sorted(calls)
    for block in cleared:
        call = block["tool_use_id"]
        assert fastcompact.recall(str(out), call) == f"module {call} " + "word " * 1500

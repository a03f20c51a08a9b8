"""Agents' own session logs read as the conversations their models saw: Claude Code's
session JSONL, Codex's rollout JSONL, and mini-swe-agent / SWE-agent trajectories,
recognized by their content.

Each becomes messages in its provider's shape: Claude Code's in Anthropic's (one API
response written over several lines is one message again, the parallel results of its
tool calls one user message), Codex's and the trajectories' in OpenAI's. The usage each
call reported stays with its answer (``response_metadata``), where counting anchors on
it. Lines that are not messages (progress, snapshots, hooks, encrypted reasoning, the
user interface's events) are left out: the model never saw them.

Examples:
    >>> log = [
    ...     {"type": "user", "uuid": "1", "message": {"role": "user", "content": "ls"}},
    ...     {"type": "progress", "uuid": "2", "data": {}},
    ...     {"type": "assistant", "uuid": "3", "message": {"id": "m1", "role": "assistant",
    ...      "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
    ...     {"type": "user", "uuid": "4", "message": {"role": "user",
    ...      "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]}},
    ... ]
    >>> read = read_agent_log(log)
    >>> read.source, [m["role"] for m in read.messages]
    ('Claude Code session', ['user', 'assistant', 'user'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AgentLog:
    """A log read: which agent wrote it, its messages, and what follows them in the
    file that is not a message (a trajectory's exit record), to be written back after
    them."""

    source: str
    messages: list[dict[str, Any]]
    trailer: list[Any] = field(default_factory=list)


def read_agent_log(data: Any) -> AgentLog | None:
    """``data`` (a JSON document, or JSON Lines' values in a list) as the agent log it
    is, or ``None`` when it is none of them."""
    if isinstance(data, list) and data and all(isinstance(r, Mapping) for r in data):
        if any(
            r.get("type") in ("user", "assistant") and isinstance(r.get("message"), Mapping) for r in data
        ):
            return AgentLog("Claude Code session", _claude_code(data))
        if any(r.get("type") in ("session_meta", "response_item") and "payload" in r for r in data):
            return AgentLog("Codex rollout", _codex(data))
    if isinstance(data, Mapping):
        if str(data.get("trajectory_format", "")).startswith("mini-swe-agent") and isinstance(
            data.get("messages"), list
        ):
            messages = [
                m for m in data["messages"] if not (isinstance(m, Mapping) and m.get("role") == "exit")
            ]
            trailer = [m for m in data["messages"] if isinstance(m, Mapping) and m.get("role") == "exit"]
            return AgentLog("mini-swe-agent trajectory", [_openai(m) for m in messages], trailer)
        if isinstance(data.get("history"), list) and isinstance(data.get("trajectory"), list):
            return AgentLog(
                "SWE-agent trajectory", [_swe_agent(m) for m in data["history"] if isinstance(m, Mapping)]
            )
    return None


def _claude_code(records: list[Any]) -> list[dict[str, Any]]:
    """Claude Code's lines as the API messages they were: the lines of one response
    (one id) joined, the tool results that came between and after them in one user
    message after it."""
    out: list[dict[str, Any]] = []
    answer: dict[str, Any] | None = None
    results: list[Any] = []

    def flush() -> None:
        nonlocal answer
        if answer is not None:
            out.append(answer)
        if results:
            out.append({"role": "user", "content": list(results)})
        answer = None
        results.clear()

    for r in records:
        message = r.get("message")
        if r.get("type") not in ("user", "assistant") or not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if r["type"] == "assistant":
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
            if answer is None or answer.get("id") != message.get("id") or message.get("id") is None:
                flush()
                answer = {"role": "assistant", "id": message.get("id"), "content": []}
            answer["content"].extend(blocks)
            if isinstance(message.get("usage"), Mapping):
                answer["response_metadata"] = {"usage": dict(message["usage"])}
        elif (
            isinstance(content, list)
            and content
            and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
        ):
            results.extend(content)
        else:
            flush()
            out.append({"role": "user", "content": content if content is not None else ""})
    flush()
    for m in out:
        if m.get("id") is None:
            m.pop("id", None)
    return out


def _codex(records: list[Any]) -> list[dict[str, Any]]:
    """A Codex rollout's response items as OpenAI chat messages: calls made together in
    one assistant message, each output a tool message, the token counts the client
    logged after a response on its answer."""
    out: list[dict[str, Any]] = []
    for r in records:
        payload = r.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind = payload.get("type")
        if r.get("type") == "event_msg" and kind == "token_count":
            usage = (payload.get("info") or {}).get("last_token_usage")
            answer = next((m for m in reversed(out) if m["role"] == "assistant"), None)
            if isinstance(usage, Mapping) and answer is not None:
                prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
                answer["response_metadata"] = {
                    "token_usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    }
                }
            continue
        if r.get("type") != "response_item":
            continue
        if kind == "message":
            role = {"developer": "system"}.get(str(payload.get("role")), str(payload.get("role")))
            out.append({"role": role, "content": _codex_text(payload.get("content"))})
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            arguments = payload.get("arguments")
            if kind == "custom_tool_call":
                arguments = json.dumps({"input": payload.get("input", "")})
            elif kind == "local_shell_call":
                arguments = json.dumps(payload.get("action") or {})
            call = {
                "id": str(payload.get("call_id") or payload.get("id") or ""),
                "type": "function",
                "function": {
                    "name": str(payload.get("name") or "shell"),
                    "arguments": str(arguments or "{}"),
                },
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and "response_metadata" not in last:
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            output = payload.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            out.append({"role": "tool", "tool_call_id": str(payload.get("call_id") or ""), "content": text})
    return out


def _codex_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""


def _openai(message: Mapping[str, Any]) -> dict[str, Any]:
    """A trajectory's message with only what the chat API takes."""
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    return {k: message[k] for k in keep if message.get(k) is not None}


def _swe_agent(message: Mapping[str, Any]) -> dict[str, Any]:
    """SWE-agent's history entry: its tool results name their call in a list."""
    out = _openai(message)
    ids = message.get("tool_call_ids")
    if out.get("role") == "tool" and "tool_call_id" not in out and isinstance(ids, list) and ids:
        out["tool_call_id"] = str(ids[0])
    return out

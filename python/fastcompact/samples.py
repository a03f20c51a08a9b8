"""Sample agent conversations for demos, tests and benchmarks.

Three recorded sessions ship with the package (:func:`load_session`): ``"coding"``, a
coding agent reading, editing and running a small Python project (recorded from a real
DeepAgents run, with the files it started from); ``"research"``, a research agent whose
searches and page fetches return large results; ``"chat"``, a long conversation with
few tool calls.

:func:`coding_session` makes synthetic coding sessions of any length:

The sessions imitate a coding agent: a user asks for work, the assistant answers with
(sometimes parallel) calls to ``read_file``, ``grep``, ``glob``, ``execute``,
``edit_file`` and ``write_file``, the tools return results of 200 B to 40 KB, and some
assistant messages carry provider ``usage_metadata``. The same ``seed`` always gives the
same conversation.

Examples:
    >>> from fastcompact.samples import coding_session
    >>> msgs = coding_session(50, seed=1)
    >>> len(msgs), msgs[0].type
    (50, 'human')
"""

from __future__ import annotations

import gzip
import json
import math
import random
from importlib import resources
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["SESSIONS", "OfflineChatModel", "coding_session", "load_session", "session_files"]

SESSIONS = ("coding", "research", "chat")
"""The bundled sessions, by name."""


def _bundled(name: str) -> dict[str, Any]:
    if name not in SESSIONS:
        raise ValueError(f"unknown session {name!r}; the bundled ones are {', '.join(SESSIONS)}")
    data = resources.files("fastcompact").joinpath("data", f"{name}.json.gz").read_bytes()
    session: dict[str, Any] = json.loads(gzip.decompress(data))
    return session


def load_session(name: str) -> list[Any]:
    """A bundled session's messages, as LangChain messages.

    Examples:
        >>> from fastcompact.samples import load_session
        >>> msgs = load_session("research")
        >>> len(msgs), msgs[0].type, msgs[1].tool_calls[0]["name"]
        (96, 'human', 'web_search')
    """
    from langchain_core.messages import messages_from_dict

    return messages_from_dict(_bundled(name)["messages"])


def session_files(name: str) -> dict[str, str]:
    """The files a bundled session started from (path -> text); empty when it used none.

    Examples:
        >>> from fastcompact.samples import session_files
        >>> sorted(session_files("coding"))[0]
        '/inventory/README.md'
    """
    return dict(_bundled(name).get("files", {}))


_REQUESTS = [
    "Refactor the auth module so that tokens are validated in one place.",
    "The CI job fails on test_pagination; find out why and fix it.",
    "Add retry with exponential backoff to the HTTP client.",
    "Rename `UserRecord` to `Account` across the code base and update the docs.",
    "Why is the importer so slow on large CSV files? Profile it and speed it up.",
    "Write unit tests for the rate limiter, including the burst case.",
    "Port the config loader from INI to TOML, keeping backwards compatibility.",
    "Summarise what changed in the storage layer since last week.",
]

_CODE_LINES = [
    "def validate_token(token: str, *, leeway: int = 30) -> Claims:",
    "    claims = decode(token, key=settings.jwt_key, algorithms=['HS256'])",
    "    if claims.expires_at < now() - leeway:",
    "        raise TokenExpired(claims.subject)",
    "    return claims",
    "class RateLimiter:",
    "    def __init__(self, rate: float, burst: int) -> None:",
    "        self._tokens = burst",
    "for row in reader:",
    "    records.append(Account.from_row(row))  # TODO: batch inserts",
    "import logging",
    "logger = logging.getLogger(__name__)",
    "    except (ConnectionError, TimeoutError) as exc:",
    "        delay = min(cap, base * 2 ** attempt) * random.uniform(0.5, 1.5)",
    "async def fetch_page(client, cursor=None, limit=100):",
    '    resp = await client.get("/items", params={"cursor": cursor, "limit": limit})',
    "",
    "# storage/backends/sqlite.py",
    "    return [Item(**r) for r in rows]",
]

_LOG_LINES = [
    "============================= test session starts ==============================",
    "collected 214 items",
    "tests/test_pagination.py::test_next_cursor PASSED",
    "tests/test_pagination.py::test_last_page FAILED",
    "E       AssertionError: assert 99 == 100",
    "src/importer.py:88: 1.92s in parse_row (41% of total)",
    "warning: unused variable `limit`",
    "ok: 213 passed, 1 failed in 12.41s",
]

_PATHS = [
    "src/auth/tokens.py",
    "src/auth/middleware.py",
    "src/http/client.py",
    "src/importer.py",
    "src/storage/sqlite.py",
    "src/ratelimit.py",
    "tests/test_pagination.py",
    "tests/test_ratelimit.py",
    "docs/config.md",
    "pyproject.toml",
]


def _text_of_size(rng: random.Random, size: int, lines: list[str]) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(lines)
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)[:size]


def _result_size(rng: random.Random) -> int:
    # Log-uniform between 200 bytes and 40 KB: most results are small, a few are huge.
    return int(math.exp(rng.uniform(math.log(200), math.log(40_000))))


def _tool_call(rng: random.Random, n: int) -> tuple[str, dict[str, Any]]:
    name = rng.choice(["read_file", "read_file", "grep", "glob", "execute", "edit_file", "write_file"])
    path = rng.choice(_PATHS)
    if name == "read_file":
        return name, {"file_path": path, "offset": 0, "limit": 2000}
    if name == "grep":
        return name, {
            "pattern": rng.choice(["validate_token", "RateLimiter", "TODO", "cursor"]),
            "path": "src/",
        }
    if name == "glob":
        return name, {"pattern": rng.choice(["**/*.py", "tests/**/test_*.py", "docs/*.md"])}
    if name == "execute":
        return name, {"command": rng.choice(["pytest -x -q", "python -m importer bench.csv", "ruff check ."])}
    if name == "edit_file":
        old = rng.choice(_CODE_LINES)
        return name, {
            "file_path": path,
            "old_string": old,
            "new_string": old.replace("token", "tok") + "  # edited",
        }
    content = _text_of_size(rng, rng.randint(300, 6_000), _CODE_LINES)
    return name, {"file_path": path, "content": content}


def _tool_result(rng: random.Random, name: str) -> str:
    if name in ("edit_file", "write_file"):
        return f"Successfully updated file ({rng.randint(1, 400)} lines)"
    if name == "execute":
        return _text_of_size(rng, _result_size(rng), _LOG_LINES)
    return _text_of_size(rng, _result_size(rng), _CODE_LINES)


def coding_session(n_messages: int, seed: int = 0) -> list[Any]:
    """Return a synthetic coding-agent conversation of exactly ``n_messages`` messages.

    Messages are LangChain objects (``HumanMessage``, ``AIMessage``, ``ToolMessage``)
    with stable ids. Every tool call has its result, except when the conversation is so
    short that the last turn cannot be completed (then it ends with plain text).

    Examples:
        >>> msgs = coding_session(12, seed=3)
        >>> [m.type for m in msgs][:3]
        ['human', 'ai', 'tool']
    """
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    if n_messages < 0:
        raise ValueError("n_messages must be >= 0")
    rng = random.Random(seed)
    out: list[Any] = []
    input_tokens = 2_000

    def add(msg: Any) -> None:
        msg.id = f"s{seed}-m{len(out):06d}"
        out.append(msg)

    while len(out) < n_messages:
        room = n_messages - len(out)
        if not out or rng.random() < 0.08:
            add(HumanMessage(content=rng.choice(_REQUESTS)))
            continue
        n_calls = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        if room < n_calls + 1:
            add(AIMessage(content=_text_of_size(rng, rng.randint(40, 400), _CODE_LINES)))
            continue
        calls: list[dict[str, Any]] = []
        for i in range(n_calls):
            name, args = _tool_call(rng, i)
            calls.append(
                {"name": name, "args": args, "id": f"call_{seed}_{len(out)}_{i}", "type": "tool_call"}
            )
        ai = AIMessage(
            content=rng.choice(["", "Let me look at that.", "Checking the tests next."]), tool_calls=calls
        )
        if rng.random() < 0.3:
            output_tokens = rng.randint(20, 400)
            ai.usage_metadata = {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            }
            ai.response_metadata = {"model_provider": "anthropic"}
        add(ai)
        for call in calls:
            result = _tool_result(rng, call["name"])
            input_tokens += len(result) // 4
            add(ToolMessage(content=result, tool_call_id=call["id"], name=call["name"]))
    return out


class OfflineChatModel(BaseChatModel):
    """A chat model that answers with no network and no key, for trying fastcompact's
    examples as they are pasted: it answers a request with ``Done:`` and the request's
    opening words, calls no tool, writes a short summary when the middleware asks for
    one, and reports usage as a provider does. Swap in a real model
    (``init_chat_model("anthropic:claude-sonnet-4-6")``) for real work.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from fastcompact.samples import OfflineChatModel
        >>> reply = OfflineChatModel().invoke([HumanMessage("What is the staging port?")])
        >>> reply.content, reply.usage_metadata["input_tokens"] > 0
        ('Done: What is the staging port?', True)
    """

    @property
    def _llm_type(self) -> str:
        return "offline"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        from fastcompact import count_tokens

        asked = next((m for m in reversed(messages) if m.type == "human"), None)
        words = " ".join(str(asked.text if asked is not None else "").split())
        summary = "fastcompact:summary" in (getattr(run_manager, "tags", None) or [])
        text = f"Done: {words[:80]}"
        if summary:
            text = "The user asked for work; it went as the transcript shows."
        sent = count_tokens(messages)
        usage = {"input_tokens": sent, "output_tokens": 20, "total_tokens": sent + 20}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text, usage_metadata=usage))])

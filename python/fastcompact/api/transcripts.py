"""Conversation files as the command line and ``inspect`` read them: JSON (a list, or an
object with a ``messages`` list) or JSON Lines, from a path or stdin, and the layout
they came in (indentation, other keys, escaping, line endings, a byte-order mark), so
that what is written back looks like what was read.

Examples:
    >>> messages, layout = read_file("chat.json", '[{"role": "user", "content": "hi"}]')
    >>> layout.dumps(messages)
    '[{"role": "user", "content": "hi"}]\\n'
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from fastcompact.api.agent_logs import read_agent_log
from fastcompact.api.parallel import one_result_a_message


class FileError(Exception):
    """A conversation file that cannot be read as one, said in one line."""


_SHAPE_HINT = "expected LangChain messages (messages_to_dict / dumpd), OpenAI or Anthropic chat messages"


def _check_shape(messages: list[Any], path: str) -> None:
    for i, m in enumerate(messages):
        if not isinstance(m, dict | list | str):
            raise FileError(f"{path}: message {i} is a {type(m).__name__}; {_SHAPE_HINT}")
        if isinstance(m, dict) and not ({"type", "role", "lc", "data"} & set(m)):
            raise FileError(f"{path}: message {i} has none of 'type', 'role', 'lc'; {_SHAPE_HINT}")


@dataclass(frozen=True)
class Layout:
    """How a conversation file was written, so that its output is written alike:
    ``kind`` is ``list``, ``object`` (``{"messages": [...]}``, other keys kept) or
    ``jsonl``; ``indent`` as ``json.dumps`` takes it; non-ASCII text raw or escaped."""

    kind: str = "list"
    indent: int | str | None = None
    ascii_only: bool = True
    #: The object's items, in order ("messages" among them, replaced when written).
    items: tuple[tuple[str, Any], ...] = ()
    #: Line endings (``"\r\n"`` as Windows editors write them) and a leading byte-order mark.
    newline: str = "\n"
    bom: bool = False
    #: The agent whose own log it was (see :mod:`agent_logs`), and what followed its
    #: messages that is not one (written back after them).
    source: str = ""
    trailer: tuple[Any, ...] = ()

    def dumps(self, messages: list[Any]) -> str:
        """The messages in this layout."""
        messages = [*messages, *self.trailer]
        options: dict[str, Any] = {"ensure_ascii": self.ascii_only, "default": str}
        if self.kind == "jsonl":
            text = "".join(json.dumps(m, **options) + "\n" for m in messages)
        else:
            data: Any = messages
            if self.kind == "object":
                data = {k: messages if k == "messages" else v for k, v in self.items}
            text = json.dumps(data, indent=self.indent, **options) + "\n"
        # JSON escapes the line breaks inside strings: every one left is the layout's.
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return ("\ufeff" if self.bom else "") + text


def _indent_of(text: str) -> int | str | None:
    """The indentation of a JSON document's first nested line: ``None`` for one line."""
    found = re.match(r"\s*[\[{][ \t]*\r?\n([ \t]*)\S", text)
    if found is None:
        return None
    ws = found.group(1)
    return "\t" if ws.startswith("\t") else len(ws)


def _where(e: json.JSONDecodeError, line: int | None = None) -> str:
    return f"{e.msg}: line {line or e.lineno}, column {e.colno}"


def _loads(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise FileError(f"{path}: the JSON is nested too deeply to be a conversation") from None


def _parse(text: str, path: str) -> tuple[Any, str]:
    """The JSON document, or the list of JSON Lines' values, and which it was. An error
    names the real line and column, with the parser's whole reason."""
    if not text.strip():
        raise FileError(f"{path}: the file is empty; {_SHAPE_HINT}")
    try:
        return _loads(text, path), "list"
    except json.JSONDecodeError as whole:
        # Split on "\n" only: JSON strings may hold other line separators.
        lines = text.split("\n")
        first = next((line for line in lines if line.strip()), "")
        try:
            _loads(first, path)
        except json.JSONDecodeError:
            # Not JSON Lines either: the document's own error is the one to report.
            raise FileError(f"{path}: not valid JSON: {_where(whole)}") from None
        values = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                values.append(_loads(line, path))
            except json.JSONDecodeError as e:
                raise FileError(f"{path}: not valid JSON Lines: {_where(e, number)}") from None
        return values, "jsonl"


def read_text(path: str) -> str:
    """The text of ``path`` (``-``: stdin), or a one-line error. Line endings are kept
    as they are; so is a byte-order mark, which :func:`read_file` notes."""
    try:
        if path != "-":
            with open(path, encoding="utf-8", newline="") as f:
                return f.read()
        if sys.stdin is None or sys.stdin.closed:
            raise FileError("cannot read stdin: it is closed")
        return sys.stdin.read()
    except OSError as e:
        where = "stdin" if path == "-" else path
        raise FileError(f"cannot read {where}: {e.strerror or e}") from e
    except (UnicodeDecodeError, ValueError) as e:
        raise FileError(f"{path} is not UTF-8 text") from e


def read_file(path: str, text: str | None = None) -> tuple[list[Any], Layout]:
    """Messages from a JSON list, a JSON object with a ``messages`` list, or JSON Lines
    (``-``: stdin; ``text`` when already read), and the layout they came in."""
    if text is None:
        text = read_text(path)
    bom = text.startswith("\ufeff")
    text = text.removeprefix("\ufeff")
    data, kind = _parse(text, path)
    items: tuple[tuple[str, Any], ...] = ()
    log = read_agent_log(data)
    source, trailer = (log.source, tuple(log.trailer)) if log is not None else ("", ())
    if log is not None and isinstance(data, dict) and "messages" in data:
        items = tuple(data.items())
        data, kind = log.messages, "object"
    elif log is not None:
        data = log.messages
        kind = "jsonl" if kind == "jsonl" else "list"
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        items = tuple(data.items())
        data, kind = data["messages"], "object"
    if not isinstance(data, list):
        raise FileError(f"{path}: expected a list of messages or an object with a 'messages' list")
    if not data:
        raise FileError(f"{path}: the conversation is empty")
    _check_shape(data, path)
    data = one_result_a_message(data)
    indent = None if kind == "jsonl" else _indent_of(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    return data, Layout(kind, indent, text.isascii(), items, newline, bom, source, trailer)


def load_conversation(path: str) -> list[Any]:
    """Messages from a file (see :func:`read_file`)."""
    return read_file(path)[0]


def read_transcript(path: str | os.PathLike[str]) -> list[Any]:
    """The messages of a conversation file, as the command line reads it: LangChain
    messages (``messages_to_dict`` / ``dumpd``), OpenAI or Anthropic chat messages, as
    a JSON list, an object with a ``messages`` list or JSON Lines; or an agent's own
    log, read natively (Claude Code's session JSONL, Codex's rollout JSONL, mini-swe-agent
    and SWE-agent trajectories; see :mod:`fastcompact.api.agent_logs`).

    Raises:
        InputError: the file cannot be read as a conversation (the message says why).

    Examples:
        >>> import json, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "session.jsonl")
        >>> lines = [
        ...     {"type": "user", "message": {"role": "user", "content": "run the tests"}},
        ...     {"type": "assistant", "message": {"id": "m1", "role": "assistant",
        ...      "content": [{"type": "text", "text": "All 12 pass."}]}},
        ... ]
        >>> _ = open(path, "w").write("".join(json.dumps(line) + "\\n" for line in lines))
        >>> [m["role"] for m in read_transcript(path)]
        ['user', 'assistant']
    """
    from fastcompact._core import InputError

    try:
        return read_file(os.fspath(path))[0]
    except FileError as e:
        raise InputError(str(e)) from None

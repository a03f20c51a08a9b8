"""``recall``: the full original of anything compaction cleared, shortened or
summarized, read back from the raw messages (which the middleware never rewrites), so
the agent never has to run a tool with side effects again.

Every placeholder says that ``recall("<id>")`` returns what it replaced (the call's
id; ``<id>/args`` for a call's shortened arguments); a summarized message is found by
its message id. An agent that knows no id searches instead (:func:`search`): every
message whose text or tool call holds a string, or matches a pattern, with the id
that returns it.

Example:
    >>> from langchain_core.messages import AIMessage, ToolMessage
    >>> msgs = [
    ...     AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "a.py"}, "id": "c1"}]),
    ...     ToolMessage("print('hi')", tool_call_id="c1"),
    ... ]
    >>> recall(msgs, "c1")
    "print('hi')"
    >>> recall(msgs, "c1/args")
    '{"name": "read_file", "args": {"file_path": "a.py"}}'
    >>> recall(msgs, "nope")
    Traceback (most recent call last):
    ...
    KeyError: "nothing in this conversation has the id 'nope'"
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# After a call id: that call's arguments rather than its result.
ARGS_SUFFIX = "/args"
# Where a saved, compacted conversation keeps what an edited message was (see
# ``pipeline.with_originals``).
ORIGINAL_KEY = "fastcompact_original"

RECALL_DESCRIPTION = (
    "Get back, in full, something that was cleared or shortened to save context: a tool "
    "result, a tool call's arguments, or a summarized message. Pass the id its placeholder "
    'names (as in recall("<id>")), or a message id. Without an id, search the whole '
    "conversation: query finds the messages that contain a string (any case), pattern "
    "those that match a regular expression; each match comes with its id."
)
# What a search shows of each match, either side of it, and how many matches at most.
EXCERPT_CHARS = 160
SEARCH_LIMIT = 10


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _kept_original(message: Any) -> Mapping[str, Any] | None:
    """What an edited message of a saved, compacted conversation was, when it says."""
    kwargs = getattr(message, "additional_kwargs", None)
    if isinstance(message, Mapping):
        inner = message.get("data") if "data" in message else message.get("kwargs")
        kwargs = (
            inner.get("additional_kwargs") if isinstance(inner, Mapping) else message.get("additional_kwargs")
        )
    found = kwargs.get(ORIGINAL_KEY) if isinstance(kwargs, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _own_content(message: Any, read: Any) -> str:
    """A message's content as given, when it is a string (a large result is handed back,
    not copied); else its text as the reader made it. An edited message of a saved,
    compacted conversation gives what it was."""
    kept = _kept_original(message)
    if kept is not None and "content" in kept:
        return _text(kept["content"])
    fields = message
    if isinstance(message, Mapping):
        inner = message.get("kwargs") if message.get("lc") else message.get("data")
        fields = inner if isinstance(inner, Mapping) and "content" not in message else message
        content = fields.get("content")
    else:
        content = getattr(message, "content", None)
    return content if isinstance(content, str) else _text(read)


def _blocks(content: Any, kind: str) -> list[Mapping[str, Any]]:
    """The content blocks of one kind (Anthropic's ``tool_use`` / ``tool_result``)."""
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == kind]


def recall(messages: Sequence[Any] | Mapping[str, Any], ref: str) -> str:
    """The original of ``ref`` in ``messages`` (or a state holding ``"messages"``): the
    result of the tool call with that id; with ``/args`` after the id, that call's
    arguments (as JSON); else the content of the message with that id. Messages may be
    in any shape the other helpers read (LangChain objects, ``messages_to_dict`` /
    ``dumpd`` output, OpenAI or Anthropic dicts). Raises ``KeyError`` when nothing has
    it, and :class:`~fastcompact.InputError` for input that is not messages."""
    from fastcompact.helpers import _input_error, normalize

    if isinstance(messages, Mapping) and "messages" in messages:
        messages = messages.get("messages") or []
    if not isinstance(ref, str):
        raise _input_error("id", f"expected a str, got {type(ref).__name__}")
    read = normalize(messages)  # the one message reader: it says what is not a message
    ref = ref.strip().strip("\"'")
    wants_args = ref.endswith(ARGS_SUFFIX)
    if wants_args:
        ref = ref[: -len(ARGS_SUFFIX)]
    arguments = None
    content = None
    for original, m in zip(messages, read, strict=True):
        if not wants_args:
            if m["tool_call_id"] == ref:
                return _own_content(original, m["content"])
            for block in _blocks(m["content"], "tool_result"):
                if block.get("tool_use_id") == ref:
                    return _text(block.get("content", ""))
        uses = [
            {"id": b.get("id"), "name": b.get("name"), "args": b.get("input")}
            for b in _blocks(m["content"], "tool_use")
        ]
        kept = _kept_original(original)
        if kept is not None:
            earlier = {
                c.get("id"): c.get("args") for c in kept.get("tool_calls") or [] if isinstance(c, Mapping)
            }
            uses = [{**u, "args": earlier.get(u.get("id"), u.get("args"))} for u in uses]
            calls = [{**c, "args": earlier.get(c.get("id"), c.get("args"))} for c in m["tool_calls"]]
        else:
            calls = m["tool_calls"]
        for call in [*calls, *uses]:
            if call.get("id") == ref and arguments is None:
                arguments = json.dumps(
                    {"name": call.get("name"), "args": call.get("args")}, ensure_ascii=False, default=str
                )
        if content is None and m["id"] == ref:
            content = _own_content(original, m["content"])
    if arguments is not None:
        return arguments
    if content is not None:
        return content
    raise KeyError(f"nothing in this conversation has the id {ref!r}")


@dataclasses.dataclass(frozen=True)
class Match:
    """A message a search found: its place in the conversation, the id that
    ``recall`` returns it by, its role, and the text around the match."""

    index: int
    id: str | None
    role: str
    excerpt: str

    def __str__(self) -> str:
        name = f'recall("{self.id}")' if self.id else "no id"
        return f"[message {self.index}, {self.role}, {name}] {self.excerpt}"


def _searchable(m: Mapping[str, Any]) -> str:
    """What a search looks through in one message: its text and its tool calls."""
    parts = [_text(m["content"])]
    for call in m["tool_calls"]:
        parts.append(
            json.dumps({"name": call.get("name"), "args": call.get("args")}, ensure_ascii=False, default=str)
        )
    return "\n".join(p for p in parts if p)


def search(
    messages: Sequence[Any] | Mapping[str, Any],
    query: str | None = None,
    *,
    pattern: str | None = None,
    limit: int = SEARCH_LIMIT,
) -> list[Match]:
    r"""The messages that hold ``query`` (any case) or match the regular expression
    ``pattern``, newest last, at most ``limit`` of them (the newest). Each comes with
    the id :func:`recall` returns it by: a tool result's call id, else the message's.
    Raises :class:`~fastcompact.InputError` for a bad pattern or input that is not
    messages.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> msgs = [HumanMessage("Where is the config?", id="u1"),
        ...         AIMessage("The config is in settings/app.toml.", id="a1")]
        >>> [str(m) for m in search(msgs, "app.TOML")]
        ['[message 1, ai, recall("a1")] The config is in settings/app.toml.']
        >>> search(msgs, pattern=r"conf\w+ is in")[0].id
        'a1'
    """
    from fastcompact.helpers import _input_error, normalize

    if isinstance(messages, Mapping) and "messages" in messages:
        messages = messages.get("messages") or []
    if (query is None) == (pattern is None):
        raise _input_error("query", "give a query or a pattern, one of them")
    needle = query if query is not None else pattern
    if not isinstance(needle, str) or not needle:
        raise _input_error("query", f"expected a non-empty str, got {needle!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise _input_error("limit", f"expected a positive int, got {limit!r}")
    try:
        found = re.compile(re.escape(needle) if query is not None else needle, re.IGNORECASE if query else 0)
    except re.error as e:
        raise _input_error("pattern", f"not a regular expression: {e}") from e
    matches: list[Match] = []
    for i, m in enumerate(normalize(messages)):
        text = _searchable(m)
        hit = found.search(text)
        if hit is None:
            continue
        start, end = max(hit.start() - EXCERPT_CHARS, 0), min(hit.end() + EXCERPT_CHARS, len(text))
        excerpt = " ".join(text[start:end].split())
        excerpt = ("…" if start > 0 else "") + excerpt + ("…" if end < len(text) else "")
        matches.append(Match(index=i, id=m["tool_call_id"] or m["id"], role=m["role"], excerpt=excerpt))
    return matches[-limit:]


def search_text(messages: Sequence[Any] | Mapping[str, Any], query: str | None, pattern: str | None) -> str:
    """A search's answer as the ``recall`` tool gives it."""
    every = search(messages, query, pattern=pattern, limit=10**9)
    if not every:
        return f"Nothing in this conversation matches {query or pattern!r}."
    shown = every[-SEARCH_LIMIT:]
    more = len(every) - len(shown)
    head = f"{len(every)} messages match" + (f"; the newest {len(shown)}:" if more else ":")
    return "\n".join([head, *map(str, shown)])

"""Searching a conversation's whole history, as a model asks: in a few words of its
own (ranked in the core: BM25F over each message's text, the tool it calls or answers
and that call's arguments, with stemming, identifiers split and kept whole, Chinese and
Japanese by characters), or by a regular expression. Each match comes with the request
it belongs to (the memory's numbering), its role and tool, the id ``recall`` returns it
by, and the passage of it that matched best. The ``recall`` tool's own calls and
results are never found.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> msgs = [HumanMessage("Where does staging keep its database?", id="u1"),
    ...         AIMessage("Staging's database listens on port 5433.", id="a1"),
    ...         HumanMessage("Thanks, now the logs.", id="u2")]
    >>> [m.id for m in search(msgs, "staging db port")]
    ['a1', 'u1']
    >>> print(search(msgs, "staging db port")[0])
    R1 · ai · recall("a1")
        Staging's database listens on port 5433.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import fastcompact._core as _core
from fastcompact.api.counting import message_list

# How many matches a search shows by default, and at most.
SEARCH_LIMIT = 5
MAX_LIMIT = 50
# What a pattern's match shows either side of it.
EXCERPT_CHARS = 160
# The tool whose own calls and results a search never finds.
RECALL_TOOL = "recall"
ROLES = ("human", "ai", "tool", "system")


@dataclasses.dataclass(frozen=True)
class Match:
    """A message a search found: its place in the conversation, the request it
    belongs to (0: before the first), its role and tool, the id ``recall`` returns it
    by, and the passage that matched."""

    index: int
    id: str | None
    role: str
    excerpt: str
    request: int = 0
    tool: str | None = None
    # For a request: the answer that closed it, its excerpt how it ended.
    answer: Match | None = None
    # How well it matched the words, against the other matches (0 for a pattern).
    score: float = 0.0

    def __str__(self) -> str:
        where = f"R{self.request}" if self.request else "before R1"
        tool = f" {self.tool}" if self.tool else ""
        out = f"{where} · {self.role}{tool} · {_named(self.id)}\n    {self.excerpt}"
        if self.answer is not None:
            out += f"\n    answered ({_named(self.answer.id)}): {self.answer.excerpt}"
        return out


def _named(ref: str | None) -> str:
    return f'recall("{ref}")' if ref else "no id"


def _messages(messages: Sequence[Any] | Mapping[str, Any]) -> Sequence[Any]:
    """The messages of a list, or of a state that holds them (anything else is the
    readers' to refuse)."""
    if isinstance(messages, Mapping) and "messages" in messages:
        messages = messages.get("messages") or []
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return messages
    return message_list(messages)


def _cache_key(messages: Sequence[Any]) -> str | None:
    """The search's key in the conversation cache, apart from the middleware's (which
    holds the view the model was sent, not the raw history)."""
    first = messages[0] if len(messages) else None
    first_id = getattr(first, "id", None) if first is not None else None
    return f"search {first_id}" if isinstance(first_id, str) and first_id else None


def _requests(value: Any) -> tuple[int, int] | None:
    """A request range: ``(3, 7)``, ``"R3-R7"``, ``"3-7"`` or one number."""
    from fastcompact.api.counting import _input_error

    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, tuple | list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (int(value[0]), int(value[1]))
    if isinstance(value, str):
        found = re.fullmatch(r"\s*R?(\d+)\s*(?:(?:-|to|\.\.)\s*R?(\d+))?\s*", value, re.IGNORECASE)
        if found:
            first = int(found.group(1))
            return (first, int(found.group(2) or first))
    raise _input_error("requests", f'expected a request number or a range such as "R3-R7", got {value!r}')


def add_short_forms(forms: str | os.PathLike[str]) -> int:
    """Teach every later search in this process more short forms: a search for any word
    of a group also finds the others. ``forms`` is the text of the groups, or the path
    of a file holding it (a ``pathlib.Path``), in the shape of the built-in list: one
    group a line, ``short, forms = long, forms``; blank lines and ``#`` comments are
    skipped. Returns how many groups it took. Raises :class:`~fastcompact.InputError`
    naming the first line it cannot read (and then adds nothing).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> msgs = [HumanMessage("Ship it when quality assurance signs off.", id="u1")]
        >>> search(msgs, "qa")
        []
        >>> add_short_forms("qa = quality")
        1
        >>> [m.id for m in search(msgs, "qa")]
        ['u1']
    """
    from fastcompact.api.counting import text_or_file

    return _core.add_short_forms(text_or_file(forms, "forms"))


def narrowed(only: str | None) -> dict[str, Any]:
    """The filters the ``recall`` tool's ``only`` names, in any order: a role
    (``human``, ``ai``, ``tool``), a request range (``R3-R7``, ``R4``), or else a
    tool's name (one parameter where three would lengthen every request's tool
    schemas).

    Examples:
        >>> narrowed("human R3-R7"), narrowed("read_file")
        ({'role': 'human', 'requests': 'R3-R7'}, {'tool': 'read_file'})
    """
    out: dict[str, Any] = {}
    for word in (only or "").replace(",", " ").split():
        if word.lower() in {"user", "assistant", *ROLES}:
            out["role"] = {"user": "human", "assistant": "ai"}.get(word.lower(), word.lower())
        elif re.fullmatch(r"R?\d+(?:-R?\d+)?", word, re.IGNORECASE):
            out["requests"] = word
        else:
            out["tool"] = word
    return out


def search(
    messages: Sequence[Any] | Mapping[str, Any],
    query: str | None = None,
    *,
    pattern: str | None = None,
    limit: int = SEARCH_LIMIT,
    role: str | None = None,
    tool: str | None = None,
    requests: Any = None,
    language: str = "english",
) -> list[Match]:
    r"""The messages of ``messages`` (or a state holding ``"messages"``) that best
    match ``query``, best first, at most ``limit``: a few words (a part in double quotes
    is a phrase a message must hold as it is). Or, with ``pattern``, those matching that
    regular expression, newest last. ``role`` (``human``, ``ai``, ``tool``), ``tool``
    (a tool's name) and ``requests`` (``"R3-R7"``) narrow it; ``language`` is the
    Snowball stemmer's. Raises :class:`~fastcompact.InputError` for a bad pattern,
    filter or input that is not messages.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> msgs = [HumanMessage("Where is the config?", id="u1"),
        ...         AIMessage("The config is in settings/app.toml.", id="a1")]
        >>> [m.id for m in search(msgs, "app.TOML")]
        ['a1']
        >>> search(msgs, pattern=r"conf\w+ is in")[0].id
        'a1'
    """
    return _search(messages, query, pattern, limit, role, tool, requests, language)[0]


def _search(
    messages: Sequence[Any] | Mapping[str, Any],
    query: str | None,
    pattern: str | None,
    limit: int,
    role: str | None,
    tool: str | None,
    requests: Any,
    language: str,
    skip_open_request: bool = False,
) -> tuple[list[Match], int, int]:
    """The matches shown, how many matched in all, and how many requests there are."""
    from fastcompact.api.counting import _input_error

    messages = _messages(messages)
    if (query is None) == (pattern is None):
        raise _input_error("query", "give a query or a pattern, one of them")
    needle = query if query is not None else pattern
    if not isinstance(needle, str) or not needle.strip():
        raise _input_error("query", f"expected a non-empty str, got {needle!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise _input_error("limit", f"expected an int from 1 to {MAX_LIMIT}, got {limit!r}")
    if role is not None and role not in ROLES:
        raise _input_error("role", f"expected one of {', '.join(ROLES)}, got {role!r}")
    span = _requests(requests)
    if pattern is not None:
        return _by_pattern(messages, pattern, limit, role, tool, span, skip_open_request)
    try:
        rows, matched, total = _core.search(
            messages,
            needle,
            limit=limit,
            role=role,
            tool=tool,
            requests=span,
            language=language,
            cache_key=_cache_key(messages),
            skip_open_request=skip_open_request,
        )
    except _core.InputError:
        raise
    except ValueError as e:  # a language it does not know
        raise _input_error("language", str(e)) from e
    found = [
        Match(
            index=i,
            id=ref,
            role=kind,
            excerpt=excerpt,
            request=number,
            tool=name,
            answer=None if answer is None else Match(answer[0], answer[1], "ai", answer[2], number),
            score=score,
        )
        for i, score, excerpt, kind, name, number, ref, answer in rows
    ]
    return found, matched, total


def _pattern_text(m: Mapping[str, Any]) -> str:
    """What a pattern is matched against in one message: its text and its tool calls."""
    content = m["content"]
    parts = [content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)]
    for call in m["tool_calls"]:
        parts.append(
            json.dumps({"name": call.get("name"), "args": call.get("args")}, ensure_ascii=False, default=str)
        )
    return "\n".join(p for p in parts if p)


def _by_pattern(
    messages: Sequence[Any],
    pattern: str,
    limit: int,
    role: str | None,
    tool: str | None,
    span: tuple[int, int] | None,
    skip_open_request: bool,
) -> tuple[list[Match], int, int]:
    from fastcompact.api.counting import _input_error, normalize

    try:
        found = re.compile(pattern)
    except re.error as e:
        raise _input_error("pattern", f"not a regular expression: {e}") from e
    matches: list[Match] = []
    request = 0
    opened = -1
    tools: dict[str, str] = {}
    for i, m in enumerate(normalize(messages)):
        text = _pattern_text(m)
        kind = m["role"]
        if kind == "human" and str(m["content"]).strip():
            request += 1
            opened = i
        names = [str(c.get("name")) for c in m["tool_calls"]]
        for c in m["tool_calls"]:
            tools[str(c.get("id"))] = str(c.get("name"))
        name = names[0] if names else m.get("name") or tools.get(str(m["tool_call_id"]))
        own = (names and all(n == RECALL_TOOL for n in names) and not str(m["content"]).strip()) or (
            kind == "tool" and name == RECALL_TOOL
        )
        wanted = (
            not own
            and (role is None or role == kind)
            and (tool is None or tool == name)
            and (span is None or span[0] <= request <= span[1])
        )
        hit = found.search(text) if wanted else None
        if hit is None:
            continue
        start, end = max(hit.start() - EXCERPT_CHARS, 0), min(hit.end() + EXCERPT_CHARS, len(text))
        excerpt = " ".join(text[start:end].split())
        excerpt = ("… " if start > 0 else "") + excerpt + (" …" if end < len(text) else "")
        ref = m["tool_call_id"] or m["id"]
        matches.append(Match(index=i, id=ref, role=kind, excerpt=excerpt, request=request, tool=name))
    if skip_open_request:
        matches = [m for m in matches if m.index != opened]
    return matches[-limit:], len(matches), request


def search_text(
    messages: Sequence[Any] | Mapping[str, Any],
    query: str | None,
    pattern: str | None,
    *,
    role: str | None = None,
    tool: str | None = None,
    requests: Any = None,
    limit: int = SEARCH_LIMIT,
) -> str:
    """A search's answer as the ``recall`` tool gives it: the best matches, each with
    its request, role, tool, id and passage (a request with how its answer ended); then
    how many more matched and how to narrow. The request being answered (the newest)
    is left out: the model reads it already."""
    from fastcompact.api.counting import plural

    found, matched, total = _search(
        messages, query, pattern, limit, role, tool, requests, "english", skip_open_request=True
    )
    asked = query if query is not None else pattern
    if not found:
        return (
            f"Nothing in this conversation matches {asked!r}. Try other words (fewer, or the names "
            "and numbers you expect), or a pattern."
        )
    order = "best first" if query is not None else "newest last"
    head = (
        f"{len(found)} of {plural(matched, 'matching message')}, {order}:"
        if matched > len(found)
        else f"{plural(matched, 'matching message')}:"
    )
    lines = [head, *(f"{n}. {m}" for n, m in enumerate(found, 1))]
    if matched > len(found):
        span = f"R1-R{total}" if total > 1 else "R1"
        lines.append(
            f"{matched - len(found)} more match: narrow with only= a role (human, ai, tool), a tool's "
            f'name or requests (this conversation has {span}, e.g. only="R{max(total - 5, 1)}-R{total}").'
        )
    lines.append('recall("<id>") returns any of them whole.')
    return "\n".join(lines)

"""``recall``: the full original of anything compaction cleared, shortened or
summarized, read back from the raw messages (which the middleware never rewrites), so
the agent never has to run a tool with side effects again.

Every placeholder says that ``recall("<id>")`` returns what it replaced (the call's
id; ``<id>/args`` for a call's shortened arguments); a summarized message is found by
its message id. An agent that knows no id searches instead
(:func:`~fastcompact.api.search_history.search`), in words of its own, and gets the id.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> msgs = [
    ...     AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "a.py"}, "id": "c1"}]),
    ...     ToolMessage("print('hi')", tool_call_id="c1"),
    ... ]
    >>> recall(msgs, "c1")
    "print('hi')"
    >>> recall(msgs, "c1/args")
    '{"name": "read_file", "args": {"file_path": "a.py"}}'
    >>> recall([HumanMessage("Keep rule Q7 for every table")], "R1")
    'Keep rule Q7 for every table'
    >>> recall(msgs, "nope")
    Traceback (most recent call last):
    ...
    KeyError: "nothing in this conversation has the id 'nope'"
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fastcompact._core as _core

# A request by its number, as the memory names it ("R12").
REQUEST_REF = re.compile(r"R(\d+)", re.IGNORECASE)
# After a call id: that call's arguments rather than its result.
ARGS_SUFFIX = "/args"
# Where a saved, compacted conversation keeps what an edited message was (see
# ``pipeline.with_originals``).
ORIGINAL_KEY = "fastcompact_original"

RECALL_DESCRIPTION = (
    "Get back in full anything said or done earlier, cleared or summarized too: by the id "
    'a placeholder or memory line names, or by a search: query (a few words; "an exact '
    'phrase" in quotes) or pattern (a regex); only narrows it: "human", "ai", a tool\'s '
    'name, "R3-R7".'
)


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


def recall(messages: Sequence[Any] | Mapping[str, Any] | str | os.PathLike[str], ref: str) -> str:
    """The original of ``ref`` in ``messages`` (or a state holding ``"messages"``): the
    result of the tool call with that id; with ``/args`` after the id, that call's
    arguments (as JSON); else the content of the message with that id; else, for
    ``"R<n>"``, the user's message that opened request n (as the memory numbers them,
    the first in the conversation being R1). Messages may be
    in any shape the other helpers read (LangChain objects, ``messages_to_dict`` /
    ``dumpd`` output, OpenAI or Anthropic dicts), or the path of a saved conversation
    (``fastcompact compact``'s output: a result its text says is saved beside it comes
    from that file), an archive file a compaction wrote, or a folder of them (the ids
    ``fastcompact search`` prints there, ``"1.md:12"`` for message 12 of ``1.md``).
    Raises ``KeyError`` when nothing has it, and
    :class:`~fastcompact.InputError` for input that is not messages."""
    if isinstance(messages, str | os.PathLike):
        return _unless_placeholder(ref, _recall_in_file(Path(messages), ref))
    return _unless_placeholder(ref, _recalled(messages, ref))


def _recalled(messages: Sequence[Any] | Mapping[str, Any], ref: str) -> str:
    """What ``messages`` hold of ``ref`` (see :func:`recall`), a placeholder too."""
    from fastcompact.api.counting import _input_error, normalize

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
            for block in _blocks(m["content"], "tool_result"):
                if block.get("tool_use_id") == ref:
                    return _text(block.get("content", ""))
            if m["tool_call_id"] == ref:
                return _own_content(original, m["content"])
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
    request = REQUEST_REF.fullmatch(ref)
    if request is not None and not wants_args:
        listed = list(messages)
        found = _request(listed, int(request.group(1)))
        if found is not None:
            return _own_content(listed[found], read[found]["content"])
    raise KeyError(f"nothing in this conversation has the id {ref!r}")


def _unless_placeholder(ref: str, text: str) -> str:
    """``text``, unless all this list holds of ``ref`` is a pass's placeholder: then a
    ``KeyError`` that says so (the original is in the list the pass was given)."""
    if _core.is_placeholder(text):
        raise KeyError(
            f"all these messages hold of {ref!r} is a placeholder ({text[:100]}): a pass cleared it; its "
            "original is where the placeholder says, or in the messages the pass was given"
        )
    return text


def _request(messages: Sequence[Any], number: int) -> int | None:
    """Where the user's message that opens request ``number`` is, numbered as search
    numbers requests."""
    from fastcompact.api.search_history import search

    if number < 1:
        return None
    found = search(messages, pattern=r"\S", role="human", requests=(number, number), limit=1)
    return found[0].index if found else None


# How an output's text names the file beside it that holds a result whole: the note a
# result of a provider's shape ends with, and (in the core) the budget pass's marker.
SAVED_NOTE = " Its whole text is saved at {path}."
# A path ends at a space or, inside a call's arguments given as JSON, at a quote.
_SAVED_AT = re.compile(r'(?:whole text is|full output is) saved at ([^\s"\\]+)')


def _recall_in_file(path: Path, ref: str) -> str:
    """``ref`` in the conversation saved at ``path``, from the file beside it that its
    text names when it was saved there; in an archive file, or in the archive files of
    a folder (oldest first), what that file holds of it."""
    from fastcompact.api.archives import conversations
    from fastcompact.api.counting import _input_error
    from fastcompact.api.transcripts import FileError, read_file

    if path.is_dir() or path.suffix == ".md":
        try:
            archived = conversations(path)
        except OSError as e:
            raise _input_error("messages", f"cannot read {path}: {e.strerror or e}") from None
        for conversation in archived:
            try:
                return _recalled(conversation.messages, ref)
            except KeyError:
                continue
        raise KeyError(f"no archive file in {path} has the id {ref!r}")
    try:
        messages, _ = read_file(str(path))
    except FileError as e:
        raise _input_error("messages", str(e)) from None
    found = _recalled(messages, ref)
    named = _SAVED_AT.search(found)
    if named is not None:
        saved = path.parent / named.group(1).rstrip(".")
        if saved.is_file():
            return saved.read_text(encoding="utf-8")
    return found

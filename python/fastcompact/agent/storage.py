"""The history archive and the files restored after a summary, through a DeepAgents
backend (``StateBackend``, ``FilesystemBackend``, ``StoreBackend``, ``CompositeBackend``
or anything with their ``read`` / ``write`` / ``download_files`` methods).

Writes are append-only: each compaction event gets a file of its own, and a name that
is already taken is never written over.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import html
import logging
import mimetypes
import urllib.parse
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import HumanMessage

import fastcompact._core as _core
from fastcompact.agent.setup import safe_name
from fastcompact.agent.steps import Io, Steps
from fastcompact.agent.summarize import is_summary

if TYPE_CHECKING:
    from fastcompact.agent.setup import Setup
    from fastcompact.agent.state import Draft, Turn

logger = logging.getLogger("fastcompact")

READ_TOOLS = frozenset({"read_file", "Read", "view", "cat"})


def resolve_backend(backend: Any, runtime: Any) -> Any:
    """The backend instance: a factory (``lambda runtime: StateBackend(runtime)``) is
    called with the runtime; an instance is used as it is."""
    if backend is None:
        return None
    if callable(backend) and not hasattr(backend, "write"):
        return backend(runtime)
    return backend


def archive_text(messages: Sequence[Any], first: int, thread: str, number: int) -> str:
    """The archive file's content: a header, then the transcript numbered by the raw
    state index of each message."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    last = first + len(messages) - 1
    header = (
        f"# Conversation history, part {number}\n\n"
        f"Messages {first}-{last} of thread {thread}, archived at {stamp} when they were summarized.\n\n"
    )
    return header + _core.render_transcript(list(messages), first)


def notes_path(archive: str, attempt: int = 0) -> str:
    """Where the notes a memory cut for space are saved whole: beside the archive file
    of the same compaction.

    Examples:
        >>> notes_path("/conversation_history/t1/3.md")
        '/conversation_history/t1/3.notes.md'
        >>> notes_path("/conversation_history/t1/3.md", attempt=1)
        '/conversation_history/t1/3.notes-2.md'
    """
    suffix = f"-{attempt + 1}" if attempt else ""
    return f"{archive.removesuffix('.md')}.notes{suffix}.md"


def notes_text(notes: Sequence[str]) -> str:
    """A notes file's content: each summary's notes, whole."""
    return "".join(f"# The summary's notes, whole\n\n{n.strip()}\n\n" for n in notes)


def _backend(backend: Any, name: str, *args: Any, or_sync: bool = False) -> Io:
    """A call of the backend's method ``name``; awaited as its ``a``-prefixed twin when
    it has one. ``or_sync``: when the twin fails, the plain method is tried (for
    reads only, which are safe to repeat)."""

    def call() -> Any:
        return getattr(backend, name)(*args)

    async def acall() -> Any:
        method = getattr(backend, f"a{name}", None)
        if method is None:
            return call()
        if not or_sync:
            return await method(*args)
        try:
            return await method(*args)
        except Exception:
            return call()

    return Io(call, acall)


def _taken(backend: Any, path: str) -> Steps[bool]:
    try:
        responses = yield _backend(backend, "download_files", [path], or_sync=True)
    except Exception:  # a backend without downloads: rely on the unique name
        return False
    return bool(responses) and getattr(responses[0], "content", None) is not None


def _exists(reason: str) -> bool:
    """Whether a failed write says the file is there already (an existence check can
    miss it: the write's own answer is what counts, and the next name is tried)."""
    return "exist" in reason.lower()


def _failed(result: Any) -> str | None:
    if result is None:
        return "the backend returned nothing"
    error = getattr(result, "error", None)
    return str(error) if error else None


def _warn(path: str, reason: str) -> None:
    # It opens with the words of DeepAgents' own warning, so that a filter written for
    # the built-in summarizer (by message) keeps working with the drop-in.
    msg = (
        "fastcompact: Offloading conversation history to backend failed: "
        f"could not archive to {path}: {reason}. Compaction goes on; the messages stay in the graph state."
    )
    logger.warning(msg)
    warnings.warn(msg, UserWarning, stacklevel=3)


def write_archive(backend: Any, name: Callable[[int], str], text: str) -> Steps[str | None]:
    """Write ``text`` to a new archive file, the first of ``name(0)``, ``name(1)``, ...
    not taken (steps, see :mod:`fastcompact.agent.steps`); its path, or ``None``
    (logged and warned) when the backend failed."""
    return (yield from _write_new(backend, name, text))


def write_notes(backend: Any, archive: str, notes: Sequence[str]) -> Steps[str | None]:
    """Write ``notes`` whole to a new notes file beside ``archive`` (see
    :func:`notes_path`); its path, or ``None`` (logged and warned) when the backend
    failed."""
    return (yield from _write_new(backend, lambda attempt: notes_path(archive, attempt), notes_text(notes)))


def _write_new(backend: Any, name: Callable[[int], str], text: str) -> Steps[str | None]:
    """Write ``text`` to the first of the names ``name(0)``, ``name(1)``, ... not taken."""
    path = name(0)
    try:
        for attempt in range(8):
            path = name(attempt)
            if (yield from _taken(backend, path)):
                continue
            reason = _failed((yield _backend(backend, "write", path, text)))
            if reason is None:
                return path
            if _exists(reason):
                continue
            _warn(path, reason)
            return None
        _warn(path, "every candidate file name is taken")
    except Exception as e:
        _warn(path, f"{type(e).__name__}: {e}")
    return None


def _calls(message: Any) -> list[Mapping[str, Any]]:
    calls = getattr(message, "tool_calls", None)
    if calls is None and isinstance(message, Mapping):
        calls = message.get("tool_calls")
    return [c for c in calls or () if isinstance(c, Mapping)]


@dataclasses.dataclass(frozen=True)
class Read:
    """A file as a read call read it: its path, and the window (``offset``, ``limit``
    in lines) when the call gave one."""

    path: str
    offset: int | None = None
    limit: int | None = None


class Restored(NamedTuple):
    """A file restored after a compaction: its path, its text as it is now, and the
    lines it holds when the read was of a part (``"315-588"``). A tuple, so that the
    summary message takes it as it takes a plain ``(path, text)``."""

    path: str
    text: str
    lines: str | None = None


def _whole_number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _read_of(call: Mapping[str, Any]) -> Read | None:
    if call.get("name") not in READ_TOOLS:
        return None
    args = call.get("args")
    if not isinstance(args, Mapping):
        return None
    path = args.get("file_path") or args.get("path")
    if not isinstance(path, str) or not path:
        return None
    return Read(path, _whole_number(args.get("offset")), _whole_number(args.get("limit")))


def recent_reads(summarized: Sequence[Any], kept: Sequence[Any], limit: int) -> list[Read]:
    """The newest distinct files read in the summarized span, newest first, each with
    the window its newest read read, leaving out files read again in the kept messages
    (those reads are still in view)."""
    in_view = {r.path for m in kept for c in _calls(m) if (r := _read_of(c))}
    out: list[Read] = []
    if limit <= 0:
        return out
    for m in reversed(summarized):
        for c in reversed(_calls(m)):
            read = _read_of(c)
            if read and read.path not in in_view and all(r.path != read.path for r in out):
                out.append(read)
                if len(out) == limit:  # the newest are found: older reads cannot displace them
                    return out
    return out


def _file_text(result: Any) -> str | None:
    """The text of a backend read: a ``ReadResult`` (``file_data["content"]``) or, from
    older backends, the string itself."""
    if isinstance(result, str):
        return None if result.startswith("Error") else result
    if getattr(result, "error", None):
        return None
    data = getattr(result, "file_data", None)
    if isinstance(data, Mapping):
        content = data.get("content")
        if isinstance(content, list):  # legacy line lists
            return "\n".join(str(line) for line in content)
        if isinstance(content, str):
            return content
    return None


def _cut(text: str, limit: int) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit} more characters not shown]"
    )


def _within_budget(found: Sequence[Restored], per_file_chars: int, total_chars: int) -> list[Restored]:
    """The files read, each cut to ``per_file_chars``, until ``total_chars`` are used."""
    out: list[Restored] = []
    used = 0
    for f in found:
        room = min(per_file_chars, total_chars - used)
        if room <= 0:
            break
        text = _cut(f.text, room)
        used += min(len(text), room)
        out.append(f._replace(text=text))
    return out


def _unreadable(path: str, error: Exception) -> None:
    logger.warning(
        "fastcompact: could not restore %s after the summary: %s: %s", path, type(error).__name__, error
    )


def _lines(read: Read, text: str) -> str | None:
    """The lines a windowed read's text holds, 1-based (``None`` for a whole read)."""
    if read.offset is None and read.limit is None:
        return None
    first = (read.offset or 0) + 1
    return f"{first}-{first + max(len(text.splitlines()), 1) - 1}"


def restore_files(
    backend: Any, reads: Sequence[Read], per_file_chars: int, total_chars: int
) -> Steps[list[Restored]]:
    """Re-read ``reads`` through the backend (steps, see :mod:`fastcompact.agent.steps`), each
    the part its read read, within ``per_file_chars``, all within ``total_chars``;
    files that cannot be read are left out (and logged)."""
    found: list[Restored] = []
    for read in reads:
        window: tuple[int, ...] = ()
        if read.offset is not None or read.limit is not None:
            window = (read.offset or 0,) if read.limit is None else (read.offset or 0, read.limit)
        try:
            text = _file_text((yield _backend(backend, "read", read.path, *window)))
        except Exception as e:
            _unreadable(read.path, e)
            continue
        if text is not None:
            found.append(Restored(read.path, text, _lines(read, text)))
    return _within_budget(found, per_file_chars, total_chars)


# --- the newest turn alone overflows: clip its results ----------------------------

LARGE_RESULTS_PREFIX = "/large_tool_results"


def _content(backend: Any, path: str) -> bytes | None:
    try:
        responses = backend.download_files([path])
    except Exception:
        return None
    return getattr(responses[0], "content", None) if responses else None


def offload_result(backend: Any, call_id: str, text: str) -> str | None:
    """Write a tool result's full text to ``/large_tool_results/<id>``; its path (the same
    file when an earlier call already wrote it), or ``None`` when the backend failed.
    Nothing is overwritten: a name taken by other text moves on to ``<id>-2`` and on."""
    base = f"{LARGE_RESULTS_PREFIX}/{safe_name(call_id)}"
    data = text.encode()
    try:
        for attempt in range(8):
            path = base if attempt == 0 else f"{base}-{attempt + 1}"
            found = _content(backend, path)
            if found is not None:
                if found == data:
                    return path
                continue
            reason = _failed(backend.write(path, text))
            if reason is None:
                return path
            if not _exists(reason):
                logger.warning("fastcompact: could not save a large tool result to %s: %s", path, reason)
                return None
    except Exception as e:
        logger.warning("fastcompact: could not save a large tool result: %s: %s", type(e).__name__, e)
    return None


def clip_text(
    text: str,
    call_id: str,
    read_path: str | None,
    saved_at: str | None,
    head_chars: int,
) -> str:
    """A result's head, and where the whole of it is."""
    head = text[:head_chars]
    cut = len(text) - len(head)
    if read_path is not None:
        where = f"the whole file is {read_path}: read_file with offset and limit reads the rest"
    elif saved_at is not None:
        where = f"the full output is saved at {saved_at}: read_file reads it in parts"
    else:
        where = f'recall("{call_id}") returns the full output'
    return f"{head}\n\n[... {cut:,} more characters cut so that this turn fits the context window; {where}.]"


# --- inline media in archived messages ---------------------------------------------
# A summarized message may carry an image, audio, a video, a PDF or another file inline
# (base64 data or a `data:` URL), in LangChain's, OpenAI's or Anthropic's block shape.
# The text archive cannot hold those bytes, so each is written once under
# `<prefix>/media/<sha256 prefix>.<ext>` (the same content, the same file) and the
# block becomes a reference to that path. A URL stays as it is. A media file that
# cannot be written becomes a placeholder saying so; the text archive is still
# written, and the message itself stays whole in the graph state.


_KINDS = {"image": "image", "image_url": "image", "audio": "audio", "input_audio": "audio",
          "video": "video", "file": "file", "document": "file", "pdf": "file"}  # fmt: skip


def _data_url(url: str) -> tuple[str, str] | None:
    """(mime type, base64 data) of a ``data:`` URL, its data in base64 or
    percent-encoded (``data:image/svg+xml,%3Csvg...``).

    Examples:
        >>> _data_url("data:text/plain;charset=utf-8,hi%21")
        ('text/plain', 'aGkh')
    """
    if not url.startswith("data:") or "," not in url:
        return None
    head, data = url[5:].split(",", 1)
    params = head.split(";")
    if params[-1] != "base64":
        data = base64.b64encode(urllib.parse.unquote_to_bytes(data)).decode()
    return params[0] or "application/octet-stream", data


def _inline(block: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(mime type, base64 data, URL) of a media block, in any of the shapes."""
    mime = block.get("mime_type") or block.get("media_type")
    if isinstance(block.get("base64"), str):
        return mime, block["base64"], None
    if block.get("source_type") == "base64" and isinstance(block.get("data"), str):
        return mime, block["data"], None
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return source.get("media_type") or mime, source["data"], None
        if isinstance(source.get("url"), str):
            return mime, None, source["url"]
    nested = block.get("image_url") or block.get("file") or block.get("input_audio")
    url = block.get("url")
    if isinstance(nested, Mapping):
        url = nested.get("url") or nested.get("file_data") or url
        if isinstance(nested.get("data"), str):
            return mime or f"audio/{nested.get('format', 'wav')}", nested["data"], None
    elif isinstance(nested, str):
        url = nested
    if isinstance(url, str):
        found = _data_url(url)
        if found is None:
            return mime, None, url
        found_mime, data = found
        return found_mime, data, None
    return mime, None, None


def save_media(backend: Any, folder: str, groups: Sequence[Sequence[Any]]) -> Steps[list[list[Any]]]:
    """Each group of ``messages`` with its inline media blocks (inside a tool result
    too) written under ``folder`` and replaced by a reference to the file (a URL block
    by a reference to its URL); messages without media are the same objects. A file
    is written once for all the groups, through the backend's async methods when the
    caller is async; one that cannot be written leaves a placeholder with the reason.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from fastcompact.agent.steps import run
        >>> m = HumanMessage(content=[{"type": "image", "url": "https://example.org/cat.png"}])
        >>> [[saved]] = run(save_media(None, "/conversation_history/media", [[m]]))
        >>> saved.content
        [{'type': 'text', 'text': '<image url="https://example.org/cat.png" />'}]
    """
    files, placed = yield Io.in_thread(_media_files, folder, groups)
    saved: dict[str, str] = {}
    if files:
        reasons = yield tuple(
            Io.of(functools.partial(_write, backend, path, data)) for path, (_, _, data) in files.items()
        )
        for (path, (kind, mime, data)), reason in zip(files.items(), reasons, strict=True):
            if reason is None:
                saved[path] = _tag(kind, url=path)
                continue
            if backend is None:
                logger.warning(
                    "fastcompact: could not save a %s from the archived messages: %s", kind, reason
                )
            else:
                _warn_media(kind, f"writing {path} failed: {reason}")
            saved[path] = _tag(kind, error=_NOT_SAVED, mime=mime, bytes=len(data), reason=reason)
    out: list[list[Any]] = yield Io.in_thread(_media_saved, groups, placed, saved)
    return out


def _write(backend: Any, path: str, data: bytes) -> Steps[str | None]:
    """Write ``data`` to ``path`` unless the same bytes are there; the reason it failed."""
    if backend is None:
        return "no backend"
    try:
        found = yield _backend(backend, "download_files", [path])
        if found and getattr(found[0], "content", None) == data:
            return None
        responses = yield _backend(backend, "upload_files", [(path, data)])
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    error = getattr(responses[0], "error", None) if responses else "the backend returned nothing"
    return str(error) if error else None


_Found = Callable[[str, str | None, str], str]
# The files of a compaction's media by path (kind, mime type, bytes), and what each
# block's data (by mime type and base64) goes to: its file's path, or the placeholder
# when the data cannot be decoded.
_Files = dict[str, tuple[str, str | None, bytes]]
_Placed = dict[tuple[str | None, str], str]


def _media_files(folder: str, groups: Sequence[Sequence[Any]]) -> tuple[_Files, _Placed]:
    """The inline media files of ``groups``, each decoded once, and where each block goes."""
    files: _Files = {}
    placed: _Placed = {}

    def found(kind: str, mime: str | None, data64: str) -> str:
        if (mime, data64) in placed:
            return ""
        try:
            data = base64.b64decode(data64, validate=False)
        except (binascii.Error, ValueError) as e:
            _warn_media(kind, f"its data could not be decoded ({e})")
            why = f"its data could not be decoded: {e}"
            placed[mime, data64] = _tag(kind, error=_NOT_SAVED, mime=mime, reason=why)
            return ""
        ext = mimetypes.guess_extension(mime or "") or ".bin"
        # Named by its content, so the same bytes are one file.
        path = f"{folder.rstrip('/')}/{hashlib.sha256(data).hexdigest()[:16]}{ext}"
        files.setdefault(path, (kind, mime, data))
        placed[mime, data64] = path
        return ""

    for messages in groups:
        _rewritten(messages, found)
    return files, placed


def _media_saved(
    groups: Sequence[Sequence[Any]], placed: _Placed, saved: Mapping[str, str]
) -> list[list[Any]]:
    """``groups`` with each inline media block replaced by what ``saved`` says of its
    file, or the placeholder of data that could not be decoded."""

    def found(kind: str, mime: str | None, data64: str) -> str:
        where = placed[mime, data64]
        return saved.get(where, where)

    return [_rewritten(messages, found) for messages in groups]


def _rewritten(messages: Sequence[Any], found: _Found) -> list[Any]:
    """``messages`` with each inline media block replaced by the text ``found`` gives
    for it, and each URL block by a reference to its URL."""
    out = []
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else getattr(m, "content", None)
        new = _blocks(content, found)
        if new is None:
            out.append(m)
            continue
        out.append({**m, "content": new} if isinstance(m, Mapping) else m.model_copy(update={"content": new}))
    return out


def _blocks(content: Any, found: _Found) -> list[Any] | None:
    """``content`` with its media blocks replaced, those in a ``tool_result`` block's
    content as well (Anthropic's shape); ``None`` when it holds none."""
    if not isinstance(content, Sequence) or isinstance(content, str):
        return None
    out = list(content)
    changed = False
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            inner = _blocks(block.get("content"), found)
            if inner is not None:
                out[i], changed = {**block, "content": inner}, True
            continue
        if kind not in _KINDS:
            continue
        mime, data, url = _inline(block)
        if data is not None:
            out[i] = {"type": "text", "text": found(_KINDS[str(kind)], mime, data)}
        elif url is not None:
            out[i] = {"type": "text", "text": _tag(_KINDS[str(kind)], url=url)}
        else:
            continue
        changed = True
    return out if changed else None


# What a media block that could not be saved says, in DeepAgents' words.
_NOT_SAVED = "failed_to_offload"


def _tag(kind: str, **attrs: str | int | None) -> str:
    """What stands in for a media block: ``<image url="..." />`` for a saved file or a
    URL (as DeepAgents' archive shows it), ``<image error="failed_to_offload" ... />``
    with the reason when it could not be saved; the message itself stays whole in the
    graph state.

    Examples:
        >>> _tag("image", url="/conversation_history/media/0a1b.png")
        '<image url="/conversation_history/media/0a1b.png" />'
    """
    given = " ".join(f'{k}="{html.escape(str(v))}"' for k, v in attrs.items() if v is not None)
    return f"<{kind} {given} />"


def _warn_media(kind: str, why: str) -> None:
    # A failed write is warned about as the archive's own failure is ("could not be
    # offloaded" is the phrase DeepAgents' built-in warns with, so its filters hold).
    msg = (
        f"fastcompact: inline {kind} in the archived messages could not be offloaded: {why}. The archive "
        "keeps a placeholder in its place; the message stays whole in the graph state."
    )
    logger.warning(msg)
    warnings.warn(msg, UserWarning, stacklevel=2)


# --- a draft's files: the archive, the restored files, its media --------------------------


def restored_for(setup: Setup, backend: Any, draft: Draft) -> Steps[list[Restored]]:
    """The files the draft's span read, read again within the restoration budgets."""
    if backend is None or not draft.reads:
        return []
    r = setup.config.restoration
    return (yield from restore_files(backend, draft.reads, r.per_file_chars, r.file_budget_chars))


def archived(setup: Setup, backend: Any, turn: Turn, draft: Draft, leaving: list[Any]) -> Steps[str | None]:
    """The archive of ``leaving`` (the messages the draft summarizes, their media
    saved) written, and its path; ``None`` without a backend or when it failed."""
    if backend is None or not leaving:
        return None
    # An earlier summary in the state (another summarizer's) is not archived again: what
    # it stood for was archived before it, and its text goes on in the memory.
    kept = [_EARLIER_SUMMARY if is_summary(m) else m for m in leaving]
    text = archive_text(kept, turn.first_index + turn.prior_cutoff, draft.thread, draft.number)
    name = functools.partial(setup.archive_path, draft.thread, draft.number)
    return (yield from write_archive(backend, name, text))


_EARLIER_SUMMARY = HumanMessage("(an earlier summary of the conversation, not archived again)")


def with_media_saved(setup: Setup, backend: Any, draft: Draft) -> Steps[tuple[list[Any], list[Any]]]:
    """The draft's span and the messages leaving the state, with inline media saved
    beside the archive and referenced by path, so that the summary and the archive
    both name the files; each file is written once."""
    if backend is None:
        return draft.span, draft.leaving
    span, leaving = yield from save_media(backend, setup.media_folder(), [draft.span, draft.leaving])
    return span, leaving

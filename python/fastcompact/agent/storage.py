"""The history archive and the files restored after a summary, through a DeepAgents
backend (``StateBackend``, ``FilesystemBackend``, ``StoreBackend``, ``CompositeBackend``
or anything with their ``read`` / ``write`` / ``download_files`` methods).

Writes are append-only: each compaction event gets a file of its own, and a name that
is already taken is never written over.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import fastcompact._core as _core
from fastcompact.agent.steps import Io, Steps

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


def archive_path(prefix: str, thread: str, number: int, attempt: int = 0) -> str:
    """``<prefix>/<thread>/<number>.md`` (``-2``, ``-3`` … when the name is taken).

    Examples:
        >>> archive_path("/conversation_history", "t1", 3)
        '/conversation_history/t1/3.md'
        >>> archive_path("/conversation_history/", "t1", 3, attempt=1)
        '/conversation_history/t1/3-2.md'
    """
    suffix = f"-{attempt + 1}" if attempt else ""
    return f"{prefix.rstrip('/')}/{_safe(thread)}/{number}{suffix}.md"


def media_folder(prefix: str, thread: str) -> str:
    """Where the media of a thread's archived messages go.

    Examples:
        >>> media_folder("/conversation_history", "t1")
        '/conversation_history/t1/media'
    """
    return f"{prefix.rstrip('/')}/{_safe(thread)}/media"


def file_path(file: str, attempt: int = 0) -> str:
    """A given archive file's name (``-2``, ``-3`` … before ``.md`` when it is taken).

    Examples:
        >>> file_path("out/run.archive.md"), file_path("out/run.archive.md", attempt=1)
        ('out/run.archive.md', 'out/run.archive-2.md')
    """
    if not attempt:
        return file
    stem = file.removesuffix(".md")
    return f"{stem}-{attempt + 1}.md" if stem != file else f"{file}-{attempt + 1}"


def media_beside(file: str) -> str:
    """Where the media of a given archive file go: ``run.archive.md`` -> ``run.archive.media``.

    Examples:
        >>> media_beside("out/run.archive.md")
        'out/run.archive.media'
    """
    return f"{file.removesuffix('.md')}.media"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "default"


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


@dataclasses.dataclass(frozen=True)
class Restored:
    """A file restored after a compaction: its path, its text as it is now, and the
    lines it holds when the read was of a part (``"315-588"``)."""

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
        out.append(dataclasses.replace(f, text=text))
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
    base = f"{LARGE_RESULTS_PREFIX}/{_safe(call_id)}"
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

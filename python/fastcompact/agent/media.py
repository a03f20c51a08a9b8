"""Inline media in archived messages: written as files beside the archive.

A summarized message may carry an image, audio, a video, a PDF or another file inline
(base64 data or a ``data:`` URL), in LangChain's, OpenAI's or Anthropic's block shape.
The text archive cannot hold those bytes, so each is written once under
``<archive folder>/media/<sha256 prefix>.<ext>`` (the same content, the same file) and
the block becomes a text reference to that path. A URL stays as it is. A media file
that cannot be written becomes a placeholder saying so; the text archive is still
written, and the message itself stays whole in the graph state.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> m = HumanMessage(content=[{"type": "image", "url": "https://example.org/cat.png"}])
    >>> offload(None, "/conversation_history/t/media", [m])[0].content
    [{'type': 'text', 'text': '[image: https://example.org/cat.png]'}]
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import mimetypes
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

logger = logging.getLogger("fastcompact")

_KINDS = {"image": "image", "image_url": "image", "audio": "audio", "input_audio": "audio",
          "video": "video", "file": "file", "document": "file", "pdf": "file"}  # fmt: skip


def _data_url(url: str) -> tuple[str, str] | None:
    """(mime type, base64 data) of a ``data:`` URL."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, data = url[5:].split(";base64,", 1)
    return head or "application/octet-stream", data


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


def _write(backend: Any, path: str, data: bytes) -> str | None:
    """Write ``data`` to ``path`` unless the same bytes are there; the reason it failed."""
    try:
        found = backend.download_files([path])
        if found and getattr(found[0], "content", None) == data:
            return None
        responses = backend.upload_files([(path, data)])
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    error = getattr(responses[0], "error", None) if responses else "the backend returned nothing"
    return str(error) if error else None


def offload(backend: Any, folder: str, messages: Sequence[Any]) -> list[Any]:
    """``messages`` with each inline media block (inside a tool result too) written
    under ``folder`` and replaced by a reference to its file (a URL block by a
    reference to its URL); messages without media are the same objects."""
    out = []
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else getattr(m, "content", None)
        new = _offloaded(backend, folder, content)
        if new is None:
            out.append(m)
            continue
        out.append({**m, "content": new} if isinstance(m, Mapping) else m.model_copy(update={"content": new}))
    return out


def _offloaded(backend: Any, folder: str, content: Any) -> list[Any] | None:
    """``content`` with its media blocks saved, those in a ``tool_result`` block's
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
            inner = _offloaded(backend, folder, block.get("content"))
            if inner is not None:
                out[i], changed = {**block, "content": inner}, True
            continue
        if kind not in _KINDS:
            continue
        mime, data, url = _inline(block)
        if data is not None:
            out[i] = {"type": "text", "text": _saved(backend, folder, _KINDS[str(kind)], mime, data)}
        elif url is not None:
            out[i] = {"type": "text", "text": f"[{_KINDS[str(kind)]}: {url}]"}
        else:
            continue
        changed = True
    return out if changed else None


def _saved(backend: Any, folder: str, kind: str, mime: str | None, data64: str) -> str:
    """Write one inline media block; the reference (or the placeholder) that replaces it."""
    try:
        data = base64.b64decode(data64, validate=False)
    except (binascii.Error, ValueError) as e:
        _warn(kind, f"its data could not be decoded ({e})")
        return f"[{kind} ({mime or 'unknown type'}) could not be decoded: {e}; it stays in the state]"
    ext = mimetypes.guess_extension(mime or "") or ".bin"
    path = f"{folder.rstrip('/')}/{hashlib.sha256(data).hexdigest()[:16]}{ext}"
    reason = None if backend is None else _write(backend, path, data)
    if backend is None or reason is not None:
        why = reason or "no backend"
        if backend is None:
            logger.warning("fastcompact: could not save a %s from the archived messages: %s", kind, why)
        else:
            _warn(kind, f"writing {path} failed: {why}")
        return f"[{kind} ({mime or 'unknown type'}, {len(data):,} bytes) could not be saved: {why}]"
    return f"[{kind} saved at {path} ({mime or 'unknown type'}, {len(data):,} bytes)]"


def _warn(kind: str, why: str) -> None:
    # A failed write is warned about as the archive's own failure is ("could not be
    # offloaded" is the phrase DeepAgents' built-in warns with, so its filters hold).
    msg = (
        f"fastcompact: inline {kind} in the archived messages could not be offloaded: {why}. The archive "
        "keeps a placeholder in its place; the message stays whole in the graph state."
    )
    logger.warning(msg)
    warnings.warn(msg, UserWarning, stacklevel=4)

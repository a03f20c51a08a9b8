"""Where a compaction left what it took out of view, read back as messages: its archive
files (one a compaction, ``### [n] Role`` headings, a tool call a ``-> call`` line) and
the folders that hold them, beside saved conversations. What ``fastcompact search`` and
``recall`` read when given a path.

Examples:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "1.md"), "w") as f:
    ...     _ = f.write("# Conversation history, part 1\\n\\n### [1] Human\\nfix the parser\\n")
    >>> [(c.name, [m["id"] for m in c.messages]) for c in conversations(folder)]
    [('1.md', ['1.md:1'])]
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastcompact.api.transcripts import load_conversation

# A message's heading in an archive file ("### [12] Tool result (call c7)"), and a
# tool call's line under it.
_HEADING = re.compile(r"^### \[(\d+)\] (.+)$")
_CALL = re.compile(r"^-> call (\S+?)(?: \(([^)]*)\))?: (.*)$")


def archive_messages(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The messages of an archive file, as dicts the readers take, each with where it
    is (``file [n]``)."""
    out: list[tuple[str, dict[str, Any]]] = []
    current: dict[str, Any] | None = None
    text: list[str] = []

    def close() -> None:
        if current is not None:
            current["content"] = "\n".join(text).strip()
            out.append((f"{path.name} [{current['id'].rsplit(':', 1)[1]}]", current))

    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        heading = _HEADING.match(line)
        if heading:
            close()
            number, title = heading.groups()
            kind = title.split(" ", 1)[0].lower()
            role = {"human": "human", "ai": "ai", "tool": "tool", "system": "system"}.get(kind, "human")
            current = {"type": role, "id": f"{path.name}:{number}", "tool_calls": []}
            call = re.search(r"\(call ([^)]*)\)", title)
            if role == "tool":
                current["tool_call_id"] = call.group(1) if call else f"{path.name}:{number}"
            text = []
            continue
        found = _CALL.match(line) if current is not None and current["type"] == "ai" else None
        if found and current is not None:
            name, call_id, args = found.groups()
            try:
                parsed = json.loads(args)
            except json.JSONDecodeError:
                parsed = {"text": args}
            current["tool_calls"].append(
                {
                    "name": name,
                    "id": call_id or "",
                    "args": parsed if isinstance(parsed, dict) else {"value": parsed},
                }
            )
        elif current is not None:
            text.append(line)
    close()
    return out


def archive_files(folder: Path) -> list[Path]:
    """A folder's archive files (notes files aside), oldest first."""

    def order(p: Path) -> tuple[int, str]:
        head = p.stem.split("-")[0].split(".")[0]
        return (int(head) if head.isdigit() else 1 << 30, p.name)

    return sorted((p for p in folder.rglob("*.md") if ".notes" not in p.name), key=order)


@dataclass(frozen=True)
class Saved:
    """One file's messages, each with where it is (``file [n]``, ``message n``)."""

    name: str
    messages: list[Any]
    places: list[str]


def conversations(path: str | os.PathLike[str]) -> list[Saved]:
    """The conversations at ``path``: a saved conversation (JSON, JSON Lines, an agent's
    log), an archive file, or a folder of archive files, one each (a folder's requests
    are numbered file by file)."""
    p = Path(path)
    if p.is_dir() or p.suffix == ".md":
        out = []
        for f in archive_files(p) if p.is_dir() else [p]:
            found = archive_messages(f)
            out.append(Saved(f.name, [m for _, m in found], [where for where, _ in found]))
        return out
    messages = load_conversation(str(p))
    return [Saved(p.name, messages, [f"message {i}" for i in range(len(messages))])]

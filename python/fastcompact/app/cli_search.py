"""``fastcompact search PATH "a few words"``: the search the ``recall`` tool gives an
agent, over a saved transcript or the archive files a compaction wrote (a file, or a
folder of them), as a person at a terminal asks it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

from fastcompact.api.search_history import MAX_LIMIT, ROLES, SEARCH_LIMIT, Match, search
from fastcompact.api.transcripts import load_conversation

# A message's heading in an archive file ("### [12] Tool result (call c7)"), and a
# tool call's line under it.
_HEADING = re.compile(r"^### \[(\d+)\] (.+)$")
_CALL = re.compile(r"^-> call (\S+?)(?: \(([^)]*)\))?: (.*)$")


def _archive_messages(path: Path) -> list[tuple[str, dict[str, Any]]]:
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


def _archive_files(folder: Path) -> list[Path]:
    """A folder's archive files (notes files aside), oldest first."""

    def order(p: Path) -> tuple[int, str]:
        head = p.stem.split("-")[0].split(".")[0]
        return (int(head) if head.isdigit() else 1 << 30, p.name)

    return sorted((p for p in folder.rglob("*.md") if ".notes" not in p.name), key=order)


def _load(path: str) -> tuple[list[Any], list[str]]:
    """The messages to search and where each is: a transcript, an archive file, or a
    folder of archive files."""
    p = Path(path)
    if p.is_dir() or p.suffix == ".md":
        files = _archive_files(p) if p.is_dir() else [p]
        found = [pair for f in files for pair in _archive_messages(f)]
        return [m for _, m in found], [where for where, _ in found]
    messages = load_conversation(path)
    return messages, [f"message {i}" for i in range(len(messages))]


def _row(m: Match, places: list[str]) -> dict[str, object]:
    """A match as JSON: its fields and where it is (a request's answer too)."""
    answer = None if m.answer is None else _row(m.answer, places)
    return {**dataclasses.asdict(m), "where": places[m.index], "answer": answer}


def _print(found: list[Match], places: list[str], as_json: bool) -> None:
    if as_json:
        rows = [_row(m, places) for m in found]
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return
    if not found:
        sys.stdout.write("Nothing matches.\n")
    for n, m in enumerate(found, 1):
        sys.stdout.write(f"{n}. {places[m.index]} · {m}\n")


def _run(args: argparse.Namespace) -> int:
    messages, places = _load(args.path)
    words = " ".join(args.query)
    found = search(
        messages,
        None if args.regex else words,
        pattern=words if args.regex else None,
        limit=args.limit,
        role=args.role,
        tool=args.tool,
        requests=args.requests,
    )
    _print(found, places, args.json)
    return 0


def add_command(sub: Any) -> None:
    """The ``search`` command, on the command line's subcommands."""
    what = "search a transcript or an archive folder in a few words, best matches first"
    s = sub.add_parser("search", help=what, description=what)
    s.add_argument("path", help="a JSON or JSONL conversation, an archive .md file, or a folder of them")
    s.add_argument("query", nargs="+", help='a few words ("an exact phrase" in quotes)')
    s.add_argument("--regex", action="store_true", help="the query is a regular expression")
    s.add_argument(
        "--limit",
        type=int,
        default=SEARCH_LIMIT,
        help=f"how many to show (default {SEARCH_LIMIT}, most {MAX_LIMIT})",
    )
    s.add_argument("--role", choices=ROLES, default=None, help="only messages of this role")
    s.add_argument("--tool", default=None, help="only calls of this tool and their results")
    s.add_argument("--requests", default=None, help='only these requests, e.g. "R3-R7"')
    s.add_argument("--json", action="store_true", help="print the matches as JSON")
    s.set_defaults(run=_run)

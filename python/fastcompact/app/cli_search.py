"""``fastcompact search PATH "a few words"``: the search the ``recall`` tool gives an
agent, over a saved transcript or the archive files a compaction wrote (a file, or a
folder of them), as a person at a terminal asks it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from fastcompact.api.archives import conversations
from fastcompact.api.search_history import MAX_LIMIT, ROLES, SEARCH_LIMIT, Match, search


def _row(m: Match, places: list[str]) -> dict[str, object]:
    """A match as JSON: its fields and where it is (a request's answer too)."""
    answer = None if m.answer is None else _row(m.answer, places)
    return {**dataclasses.asdict(m), "where": places[m.index], "answer": answer}


def _print(found: list[tuple[Match, list[str]]], as_json: bool) -> None:
    if as_json:
        rows = [_row(m, places) for m, places in found]
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return
    if not found:
        sys.stdout.write("Nothing matches.\n")
    for n, (m, places) in enumerate(found, 1):
        sys.stdout.write(f"{n}. {places[m.index]} · {m}\n")


def _run(args: argparse.Namespace) -> int:
    words = " ".join(args.query)
    # Each file is searched as the conversation it is (its requests numbered from R1),
    # then the best of all shown: by score, or for a pattern the newest last.
    found: list[tuple[Match, list[str]]] = []
    for saved in conversations(args.path):
        matches = search(
            saved.messages,
            None if args.regex else words,
            pattern=words if args.regex else None,
            limit=args.limit,
            role=args.role,
            tool=args.tool,
            requests=args.requests,
        )
        found += [(m, saved.places) for m in matches]
    if args.regex:
        found = found[-args.limit :]
    else:
        found = sorted(found, key=lambda pair: -pair[0].score)[: args.limit]
    _print(found, args.json)
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

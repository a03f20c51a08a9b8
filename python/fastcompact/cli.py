"""The ``fastcompact`` command.

``fastcompact inspect [FILE]`` reports where a conversation's tokens go, whether it has
reached the compaction trigger and where the cutoff would fall. Without a file it
inspects a built-in sample coding session, so it runs anywhere with no setup.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import fastcompact
from fastcompact.helpers import (
    DEFAULT_KEEP,
    DEFAULT_KEEP_WITH_PROFILE,
    DEFAULT_TRIGGER,
    DEFAULT_TRIGGER_WITH_PROFILE,
)
from fastcompact.samples import coding_session

SAMPLE_MESSAGES = 2_000


class CliError(Exception):
    """A problem to report in one line, with exit status 2."""


def load_conversation(path: str) -> list[Any]:
    """Messages from a JSON list, a JSON object with a ``messages`` list, or JSONL."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise CliError(f"{path} is not UTF-8 text") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise CliError(f"{path} is neither JSON nor JSON Lines (line {e.lineno}: {e.msg})") from e
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        raise CliError(f"{path}: expected a list of messages or an object with a 'messages' list")
    if not data:
        raise CliError(f"{path}: the conversation is empty")
    return data


def _size(text: str) -> tuple[str, float]:
    kind, _, value = text.partition(":")
    try:
        return kind, float(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"expected KIND:VALUE such as messages:6 or fraction:0.1, got {text!r}"
        ) from e


def inspect_report(messages: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    max_tokens = args.max_input_tokens
    trigger = args.trigger or (DEFAULT_TRIGGER_WITH_PROFILE if max_tokens else DEFAULT_TRIGGER)
    keep = args.keep or (DEFAULT_KEEP_WITH_PROFILE if max_tokens else DEFAULT_KEEP)
    breakdown = fastcompact.token_breakdown(messages, encoding=args.encoding)
    fires = fastcompact.should_compact(messages, trigger, max_input_tokens=max_tokens, encoding=args.encoding)
    cutoff = fastcompact.find_cutoff(messages, keep, max_tokens, encoding=args.encoding)
    kept = sum(m.tokens for m in breakdown.messages[cutoff:])
    return {
        "messages": len(messages),
        "encoding": args.encoding,
        "total_tokens": breakdown.total,
        "per_role": breakdown.per_role,
        "per_tool": breakdown.per_tool,
        "largest": [m.__dict__ for m in breakdown.largest(5)],
        "trigger": list(trigger),
        "trigger_fires": fires,
        "keep": list(keep),
        "cutoff": cutoff,
        "summarized_messages": cutoff,
        "kept_tokens": kept,
    }


def _print_report(r: dict[str, Any], source: str) -> None:
    out = sys.stdout.write
    out(f"{source}: {r['messages']:,} messages, {r['total_tokens']:,} tokens ({r['encoding']})\n\n")
    out("tokens by role\n")
    for role, n in sorted(r["per_role"].items(), key=lambda kv: -kv[1]):
        out(f"  {role:<12} {n:>12,}  {100 * n / max(r['total_tokens'], 1):5.1f}%\n")
    if r["per_tool"]:
        out("tool results by tool\n")
        for tool, n in sorted(r["per_tool"].items(), key=lambda kv: -kv[1]):
            out(f"  {tool:<12} {n:>12,}  {100 * n / max(r['total_tokens'], 1):5.1f}%\n")
    out("largest messages\n")
    for m in r["largest"]:
        label = f"{m['role']}" + (f" ({m['tool']})" if m["tool"] else "")
        out(f"  #{m['index']:<6} {label:<22} {m['tokens']:>10,}\n")
    kind, value = r["trigger"]
    out(f"\ntrigger {kind}={value:g}: {'FIRES' if r['trigger_fires'] else 'not reached'}\n")
    kind, value = r["keep"]
    if r["cutoff"]:
        out(
            f"keep {kind}={value:g}: cutoff at message {r['cutoff']:,} "
            f"(summarize {r['summarized_messages']:,} messages, keep {r['kept_tokens']:,} tokens)\n"
        )
    else:
        out(f"keep {kind}={value:g}: nothing to summarize\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastcompact", description="Context compaction for LLM agents.")
    parser.add_argument("--version", action="version", version=f"fastcompact {fastcompact.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="where a conversation's tokens go and where it would be cut")
    p.add_argument(
        "file", nargs="?", help="JSON or JSONL conversation ('-' for stdin); default: a built-in sample"
    )
    p.add_argument("--encoding", default="heuristic", choices=["heuristic", "o200k_base", "cl100k_base"])
    p.add_argument("--max-input-tokens", type=int, default=None, help="the model's context window")
    p.add_argument("--trigger", type=_size, default=None, help="e.g. tokens:170000 or fraction:0.85")
    p.add_argument("--keep", type=_size, default=None, help="e.g. messages:6 or fraction:0.1")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)

    try:
        if args.file is None:
            messages: list[Any] = coding_session(SAMPLE_MESSAGES, seed=0)
            source = f"built-in sample coding session (seed 0, {SAMPLE_MESSAGES:,} messages)"
        else:
            messages = load_conversation(args.file)
            source = args.file
        report = inspect_report(messages, args)
    except (CliError, fastcompact.InputError) as e:
        sys.stderr.write(f"fastcompact: {e}\n")
        return 2
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_report(report, source)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``fastcompact`` command.

- ``fastcompact inspect [FILE]``: where a conversation's tokens go, what each cheap pass
  would save, where the trigger and the cutoff fall (a bundled session by default).
- ``fastcompact compact FILE... -o OUT``: compact saved transcripts; writes each
  compacted conversation and the archive of what its summary replaced.
- ``fastcompact demo``: a real DeepAgents agent, replayed offline, kept inside a small
  window by the middleware.

Problems (an unreadable file, an unknown format, an empty conversation) are reported
in one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, NoReturn

import fastcompact
from fastcompact.helpers import plural
from fastcompact.samples import SESSIONS, load_session


class CliError(Exception):
    """A problem to report in one line, with exit status 2."""


_SHAPE_HINT = "expected LangChain messages (messages_to_dict / dumpd), OpenAI or Anthropic chat messages"


def _check_shape(messages: list[Any], path: str) -> None:
    for i, m in enumerate(messages):
        if not isinstance(m, dict | list | str):
            raise CliError(f"{path}: message {i} is a {type(m).__name__}; {_SHAPE_HINT}")
        if isinstance(m, dict) and not ({"type", "role", "lc", "data"} & set(m)):
            raise CliError(f"{path}: message {i} has none of 'type', 'role', 'lc'; {_SHAPE_HINT}")


def read_file(path: str) -> tuple[list[Any], str]:
    """Messages from a JSON list, a JSON object with a ``messages`` list, or JSON Lines
    (``-``: stdin), and the layout they came in (``list``, ``object`` or ``jsonl``)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise CliError(f"{path} is not UTF-8 text") from e
    layout = "list"
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
            layout = "jsonl"
        except json.JSONDecodeError as e:
            raise CliError(f"{path} is neither JSON nor JSON Lines (line {e.lineno}: {e.msg})") from e
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data, layout = data["messages"], "object"
    if not isinstance(data, list):
        raise CliError(f"{path}: expected a list of messages or an object with a 'messages' list")
    if not data:
        raise CliError(f"{path}: the conversation is empty")
    _check_shape(data, path)
    return data, layout


def load_conversation(path: str) -> list[Any]:
    """Messages from a file (see :func:`read_file`)."""
    return read_file(path)[0]


def _size(text: str) -> tuple[str, float]:
    kind, _, value = text.partition(":")
    try:
        return kind, float(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"expected KIND:VALUE such as messages:6 or fraction:0.1, got {text!r}"
        ) from e


# --- inspect -------------------------------------------------------------------------------


def _print_rich(report: fastcompact.Report) -> None:
    from rich.table import Table

    console = _console()
    total = max(report.total_tokens, 1)
    console.print(
        f"[bold]{report.source}[/bold]: {plural(report.messages, 'message')}, "
        f"{report.total_tokens:,} tokens ({report.encoding})"
    )

    def table(title: str, rows: Sequence[tuple[str, int]], extra: Sequence[str] | None = None) -> Table:
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        t.add_column("")
        t.add_column("tokens", justify="right")
        t.add_column("share", justify="right")
        if extra is not None:
            t.add_column("", justify="left")
        for i, (label, n) in enumerate(rows):
            cells = [label, f"{n:,}", f"{100 * n / total:.1f}%"]
            t.add_row(*cells, *([extra[i]] if extra is not None else []))
        return t

    console.print(table("tokens by role", sorted(report.per_role.items(), key=lambda kv: -kv[1])))
    if report.per_tool:
        console.print(table("tool results by tool", sorted(report.per_tool.items(), key=lambda kv: -kv[1])))
    largest = [
        (f"#{m.index} {m.role}" + (f" ({m.tool})" if m.tool else ""), m.tokens) for m in report.largest
    ]
    console.print(table("largest messages", largest))
    passes = [(p.name, p.saved) for p in report.plan.passes]
    console.print(
        table("what each cheap pass would save", passes, [f"{p.edits} edits" for p in report.plan.passes])
    )
    console.print(f"after the cheap passes: {report.plan.tokens_after:,} tokens")
    for line in report.verdict():
        console.print(line.replace("FIRES", "[bold red]FIRES[/bold red]"))


def _inspect(args: argparse.Namespace) -> int:
    if args.file is None:
        messages: list[Any] = load_session(args.sample)
        source = f"bundled {args.sample} session"
    else:
        messages = load_conversation(args.file)
        source = args.file
    report = fastcompact.inspect(
        messages,
        max_input_tokens=args.max_input_tokens,
        trigger=args.trigger,
        keep=args.keep,
        encoding=args.encoding,
        source=source,
    )
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        _print_rich(report)
    return 0


# --- compact -------------------------------------------------------------------------------


def _archive_of(target: Path) -> Path:
    """``session.v2.json`` -> ``session.v2.archive.md``: the whole stem is kept."""
    return target.with_name(f"{target.stem or 'conversation'}.archive.md")


def _console() -> Any:
    """Rich output on stdout: lines wrap to fit a terminal, never in a pipe or a file."""
    from rich.console import Console

    console = Console(highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


class _Parser(argparse.ArgumentParser):
    """Bad arguments get one line (and exit status 2), not the usage text: ``--help``
    shows that."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _positive(text: str) -> int:
    """A size on the command line: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def plan_outputs(files: list[str], output: str, overwrite: bool) -> list[tuple[str, Path, Path, str]]:
    """Where each input's conversation and archive go, and a note when a name was
    changed: (input, output, archive, note). Several inputs, an existing directory or a
    path ending in ``/`` name a directory, where each output keeps its input's whole
    name; two inputs of the same name are told apart by their folder, then a counter.
    No two outputs share a name, and an existing file is refused unless ``overwrite``."""
    out = Path(output)
    if len(files) == 1 and not output.endswith(("/", os.sep)) and not out.is_dir():
        plans = [(files[0], out, _archive_of(out), "")]
    else:
        if out.exists() and not out.is_dir():
            raise CliError(f"{out} is a file; give a directory for several inputs")
        taken: set[Path] = set()
        plans = []
        for src in files:
            name = "stdin.json" if src == "-" else Path(src).name or "conversation.json"
            target, note = out / name, ""
            if target in taken or _archive_of(target) in taken:
                folder = Path(src).resolve().parent.name or "input"
                target = out / f"{folder}_{name}"
                k = 2
                while target in taken or _archive_of(target) in taken:
                    target = out / f"{Path(name).stem}-{k}{Path(name).suffix}"
                    k += 1
                note = f" (as {target.name}: another input is also named {name})"
            taken |= {target, _archive_of(target)}
            plans.append((src, target, _archive_of(target), note))
    if not overwrite:
        for _, target, archive, _ in plans:
            for path in (target, archive):
                if path.exists():
                    raise CliError(f"{path} exists; give --overwrite to replace it")
    return plans


def _write(target: Path, messages: list[Any], layout: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if layout == "jsonl":
        text = "".join(json.dumps(m, default=str) + "\n" for m in messages)
    elif layout == "object":
        text = json.dumps({"messages": messages}, indent=1, default=str) + "\n"
    else:
        text = json.dumps(messages, indent=1, default=str) + "\n"
    target.write_text(text, encoding="utf-8")


def compact_file(src: str, target: str, archive: str, options: dict[str, Any]) -> dict[str, Any]:
    """Compact one file into ``target`` (and ``archive``); the figures of what was done
    (run in a worker)."""
    messages, layout = read_file(src)
    try:
        return _compact_messages(src, messages, layout, Path(target), Path(archive), options)
    except fastcompact.InputError as e:
        raise CliError(f"{src}: {e}") from None


def _compact_messages(
    src: str, messages: list[Any], layout: str, target: Path, archive: Path, options: dict[str, Any]
) -> dict[str, Any]:
    from fastcompact.pipeline import compact

    model = None
    if options.get("model"):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(options["model"])
    result = compact(
        messages,
        max_input_tokens=options.get("max_input_tokens"),
        model=model,
        force=options.get("force", False),
        archive_path=str(archive),
        source=Path(src).name,
    )
    from langchain_core.messages import BaseMessage, message_to_dict

    out_messages = [message_to_dict(m) if isinstance(m, BaseMessage) else m for m in result.messages]
    _write(target, out_messages, layout)
    if result.archive is not None:
        archive.write_text(result.archive, encoding="utf-8")
    return {
        "file": src,
        "output": str(target),
        "archive": str(archive) if result.archive is not None else None,
        "messages_before": len(messages),
        "messages_after": len(result.messages),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "summarized": result.summarized,
        "summarizer": result.summarizer,
    }


def _compact(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    files: list[str] = args.files
    many = len(files) > 1
    plans = plan_outputs(files, args.output, args.overwrite)
    notes = {src: note for src, _, _, note in plans}
    options = {"max_input_tokens": args.max_input_tokens, "model": args.model, "force": args.force}
    console = Console(stderr=True, highlight=False)
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    # Processes for the offline summarizer (CPU-bound); threads when calling a model.
    pool: Executor = (
        ThreadPoolExecutor(max_workers=8)
        if args.model
        else ProcessPoolExecutor(max_workers=os.cpu_count() or 1)
    )
    with pool, Progress(console=console, transient=True, disable=not many) as progress:
        task = progress.add_task("compacting", total=len(files))
        futures = {
            pool.submit(compact_file, src, str(target), str(archive), options): src
            for src, target, archive, _ in plans
        }
        for future in as_completed(futures):
            try:
                results.append(future.result())
            except (CliError, fastcompact.InputError) as e:
                errors.append(str(e))
            except Exception as e:  # a worker's failure is one file's failure
                errors.append(f"{futures[future]}: {type(e).__name__}: {e}")
            progress.advance(task)
    if args.json:
        sys.stdout.write(json.dumps(sorted(results, key=lambda r: r["file"]), indent=2) + "\n")
    else:
        for r in sorted(results, key=lambda r: r["file"]):
            what = (
                f"summarized {plural(r['summarized'], 'message')} ({r['summarizer']}), archive {r['archive']}"
                if r["summarized"]
                else "cheap passes only (no summary needed)"
            )
            sys.stdout.write(
                f"{r['file']}: {r['messages_before']:,} -> {plural(r['messages_after'], 'message')}, "
                f"{r['tokens_before']:,} -> {r['tokens_after']:,} tokens; {what}; wrote {r['output']}"
                f"{notes.get(r['file'], '')}\n"
            )
    for e in errors:
        sys.stderr.write(f"fastcompact: {e}\n")
    return 2 if errors else 0


# --- demo ----------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    try:
        from fastcompact import demo
    except ImportError as e:
        raise CliError(f"the demo needs DeepAgents: pip install 'fastcompact[demo]' ({e})") from e
    try:
        import deepagents  # noqa: F401
    except ImportError as e:
        raise CliError("the demo needs DeepAgents: pip install 'fastcompact[demo]'") from e

    console = _console()
    result = demo.run(fast=args.fast, window=args.window, root=args.root, echo=console.print)
    return 0 if result.summaries and result.archive_files else 1


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="fastcompact", description="Context compaction for LLM agents.")
    parser.add_argument("--version", action="version", version=f"fastcompact {fastcompact.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    what = "where a conversation's tokens go and where it would be cut"
    p = sub.add_parser("inspect", help=what, description=what)
    p.add_argument(
        "file", nargs="?", help="JSON or JSONL conversation ('-' for stdin); default: a bundled session"
    )
    p.add_argument(
        "--sample", choices=SESSIONS, default="coding", help="the bundled session inspected without FILE"
    )
    p.add_argument(
        "--encoding",
        default="heuristic",
        choices=["heuristic", "o200k_base", "cl100k_base"],
        help="how tokens are counted: LangChain's estimate (default) or exact BPE",
    )
    p.add_argument("--max-input-tokens", type=_positive, default=None, help="the model's context window")
    p.add_argument("--trigger", type=_size, default=None, help="e.g. tokens:170000 or fraction:0.85")
    p.add_argument("--keep", type=_size, default=None, help="e.g. messages:6 or fraction:0.1")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=_inspect)

    what = "compact saved transcripts (the summary is offline unless --model)"
    c = sub.add_parser("compact", help=what, description=what)
    c.add_argument("files", nargs="+", help="JSON or JSONL conversations")
    c.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file, or a directory (several inputs, or a path ending in /)",
    )
    c.add_argument("--max-input-tokens", type=_positive, default=None, help="the model's context window")
    c.add_argument(
        "--model", default=None, help="summarize with provider:name (init_chat_model; needs its key)"
    )
    c.add_argument("--force", action="store_true", help="summarize even below the trigger")
    c.add_argument("--overwrite", action="store_true", help="replace outputs that exist already")
    c.add_argument("--json", action="store_true", help="print the figures as JSON")
    c.set_defaults(run=_compact)

    what = "a DeepAgents coding agent kept inside a small window, offline (no key, no network)"
    d = sub.add_parser("demo", help=what, description=what)
    d.add_argument("--fast", action="store_true", help="a shorter session")
    d.add_argument("--window", type=_positive, default=None, help="the model's window in tokens")
    d.add_argument("--root", default=None, help="work directory (default: a new temporary one)")
    d.set_defaults(run=_demo)

    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except (CliError, fastcompact.InputError, ValueError) as e:
        sys.stderr.write(f"fastcompact: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("fastcompact: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader stopped (`| head`): that is not an error. Later writes go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

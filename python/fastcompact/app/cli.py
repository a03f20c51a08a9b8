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
import logging
import os
import sys
from collections.abc import Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, NoReturn

import fastcompact
from fastcompact.api.counting import plural
from fastcompact.api.transcripts import FileError, Layout, read_file, read_text
from fastcompact.app import cli_search
from fastcompact.app.cli_outputs import CliError, Output, Writes, distinct_inputs, plan_outputs
from fastcompact.samples import SESSIONS, load_session


class Interrupted(Exception):
    """Ctrl-C: the outputs written before it (every one whole; no other was started)."""

    def __init__(self, written: list[str]) -> None:
        self.written = written
        super().__init__(f"interrupted; wrote {plural(len(written), 'output')}")


def _ignore_interrupts() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _quiet_log()


def _quiet_log() -> None:
    """Silence the agent's log: each input's line says what went wrong, naming its
    file, where the log would say it again without."""
    log = logging.getLogger("fastcompact")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
        log.propagate = False


def _write_exact(stream: Any, text: str) -> None:
    """``text`` on ``stream`` with every character kept: as UTF-8 bytes when the
    stream's own encoding (ASCII, say) cannot hold it."""
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except UnicodeEncodeError:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            stream.flush()
            buffer.write(text.encode("utf-8"))
            buffer.flush()
            return
    stream.write(text)


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
        f"{report.total_tokens:,} tokens ({report.counted()})"
    )
    for note in report.notes():
        console.print(note, markup=False)

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
    edits = [plural(p.edits, "edit") for p in report.plan.passes]
    console.print(table("what each cheap pass would save", passes, edits))
    console.print(f"after the cheap passes: {report.plan.tokens_after:,} tokens")
    for line in report.verdict():
        console.print(line.replace("FIRES", "[bold red]FIRES[/bold red]"))


def _flags(e: fastcompact.InputError) -> str:
    """An error in the command line's words: its flags, not the API's fields."""
    return (
        str(e)
        .replace("field 'max_input_tokens': ", "")
        .replace("needs max_input_tokens (from the model profile or given)", "needs --max-input-tokens")
    )


def _inspect(args: argparse.Namespace) -> int:
    if args.file is not None and args.sample is not None:
        raise CliError("give FILE or --sample, not both")
    args.sample = args.sample or "coding"
    if args.file is None:
        messages: list[Any] = load_session(args.sample)
        source = f"bundled {args.sample} session"
    else:
        messages, layout = read_file(args.file)
        # An agent's own log says whose it was.
        source = f"{args.file} ({layout.source})" if layout.source else args.file
    try:
        report = fastcompact.inspect(
            messages,
            max_input_tokens=args.max_input_tokens,
            trigger=args.trigger,
            keep=args.keep,
            encoding=args.encoding,
            model=args.count_as,
            config=fastcompact.CompactionConfig(clearing=_clearing(args.clear_tools)),
            source=source,
        )
    except fastcompact.InputError as e:
        raise CliError(f"{source}: {_flags(e)}") from None
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        _print_rich(report)
    return 0


# --- compact -------------------------------------------------------------------------------


def _console() -> Any:
    """Rich output on stdout: lines wrap to fit a terminal, never in a pipe or a file;
    a reader that stops (``| head``) ends the command quietly, with status 0."""
    from rich.console import Console

    class Quiet(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    console = Quiet(highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


def _encodes(text: str) -> bool:
    """Whether stdout can show ``text`` (a Windows console or a cp1252 redirect cannot
    show the bar characters)."""
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Parser(argparse.ArgumentParser):
    """Bad arguments get one line (and exit status 2), not the usage text: ``--help``
    shows that."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


class _Version(argparse.Action):
    """``--version``: the installed metadata is read only when asked (it takes a while)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(f"fastcompact {fastcompact.__version__}\n")
        parser.exit()


def _positive(text: str) -> int:
    """A size on the command line: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def compact_file(plan: Output, options: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """Compact one input as ``plan`` says (``text``: the input, when already read); the
    figures of what was done, with the conversation itself when it goes to stdout (run
    in a worker)."""
    messages, layout = read_file(plan.source, text)
    try:
        return _compact_messages(plan, messages, layout, options)
    except fastcompact.InputError as e:
        raise CliError(f"{plan.source}: {_flags(e)}") from None


def _clearing(extra: list[str] | None) -> fastcompact.ClearingConfig:
    """The clearing settings with the tools --clear-tools names beside the defaults."""
    clearing = fastcompact.ClearingConfig()
    clearing.tools |= {t.strip() for names in extra or [] for t in names.split(",") if t.strip()}
    return clearing


def _compact_messages(
    plan: Output, messages: list[Any], layout: Layout, options: dict[str, Any]
) -> dict[str, Any]:
    from langchain_core.messages import BaseMessage, message_to_dict

    from fastcompact.app.offline import compact, kept_elsewhere

    model = _chat_model(options["model"]) if options.get("model") else None
    trigger = options.get("trigger")
    # A repeated --trigger is any of them, as the API's list is.
    if isinstance(trigger, list):
        trigger = trigger[0] if len(trigger) == 1 else trigger
    config = fastcompact.CompactionConfig(
        trigger=trigger, keep=options.get("keep"), clearing=_clearing(options.get("clear_tools"))
    )
    result = compact(
        messages,
        max_input_tokens=options.get("max_input_tokens"),
        config=config,
        model=model,
        force=options.get("force", False),
        archive_path=plan.named(plan.archive),
        results_dir=plan.named(plan.results),
        encoding=options.get("encoding", "heuristic"),
        count_as=options.get("count_as"),
        source=Path(plan.source).name,
    )
    out_messages = [message_to_dict(m) if isinstance(m, BaseMessage) else m for m in result.messages]
    text = layout.dumps(out_messages)
    writes = Writes()
    saved = {plan.real(path): full for path, full in result.saved_results.items()}
    media_files = {plan.real(path): data for path, data in result.media.items()}
    if plan.results is not None:
        for path, full in saved.items():
            writes.add(path, full.encode("utf-8"))
    archive = plan.archive if result.archive is not None else None
    if archive is not None and result.archive is not None:
        for path, data in media_files.items():
            writes.add(path, data)
        writes.add(archive, result.archive.encode("utf-8"))
    # The output last: it is there only when everything it names is.
    if plan.target is not None:
        writes.add(plan.target, text.encode("utf-8"))
    writes.commit()
    unkept = []
    if result.summarized and archive is None:
        unkept.append(f"the {plural(result.summarized, 'summarized message')}")
    if plan.results is None and kept_elsewhere(messages, result.plan.edits):
        unkept.append("the whole text of the cut, cleared or shortened messages")
    return {
        "file": plan.source,
        "output": "-" if plan.target is None else str(plan.target),
        "archive": None if archive is None else str(archive),
        "results": sorted(map(str, saved)),
        "messages_before": len(messages),
        "messages_after": len(result.messages),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "summarized": result.summarized,
        "summarizer": result.summarizer,
        "reason": result.reason,
        "warning": result.warning,
        "media": sorted(map(str, media_files)),
        "unkept": " and ".join(unkept) or None,
        **({"conversation": text} if plan.target is None else {}),
    }


def _chat_model(name: str) -> Any:
    """The chat model ``provider:name`` names, or a one-line error."""
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(name)
    except Exception as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CliError(f"--model {name}: {reason}") from None


def _line(r: dict[str, Any], note: str) -> str:
    """One input's figures, in a line."""
    if r["summarized"]:
        what = f"summarized {plural(r['summarized'], 'message')} ({r['summarizer']})"
        if r["archive"]:
            what += f", archive {r['archive']}"
    else:
        what = f"cheap passes only ({r['reason']})"
    if r["results"]:
        where = Path(r["results"][0]).parent
        args = sum(1 for path in r["results"] if path.endswith(".args.json"))
        kept = [
            plural(len(r["results"]) - args, "tool result"),
            plural(args, "call's arguments", "calls' arguments"),
        ]
        what += f"; {' and '.join(k for k in kept if not k.startswith('0 '))} saved whole in {where}"
    return (
        f"{r['file']}: {r['messages_before']:,} -> {plural(r['messages_after'], 'message')}, "
        f"{r['tokens_before']:,} -> {r['tokens_after']:,} tokens; {what}; wrote {r['output']}{note}"
    )


def _compact(args: argparse.Namespace) -> int:
    files = distinct_inputs(args.files)
    to_stdout = args.output == "-"
    if to_stdout and len(files) > 1:
        raise CliError("-o - writes one conversation to stdout; give one input")
    if to_stdout and args.json:
        raise CliError("-o - puts the conversation on stdout; --json cannot share it")
    if args.model:
        # Refused before any work: an unknown provider, a missing integration package.
        _chat_model(args.model)
    plans = plan_outputs(files, args.output, args.overwrite, args.archive)
    options = {
        "max_input_tokens": args.max_input_tokens,
        "model": args.model,
        "force": args.force,
        "trigger": args.trigger,
        "keep": args.keep,
        "encoding": args.encoding,
        "count_as": args.count_as,
        "clear_tools": args.clear_tools,
    }
    # stdin is this process's: read it here, whichever worker compacts it.
    stdin_text = read_text("-") if "-" in files else None
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    if len(plans) == 1:
        # One input: no worker to start.
        try:
            results.append(compact_file(plans[0], options, stdin_text))
        except (CliError, FileError, fastcompact.InputError) as e:
            errors.append(str(e))
        except Exception as e:  # a summarizer's failure, say: one line, as for many inputs
            errors.append(f"{plans[0].source}: {type(e).__name__}: {e}")
    else:
        _compact_in_workers(plans, options, stdin_text, bool(args.model), results, errors)
    results.sort(key=lambda r: r["file"])
    _report(
        results, errors, {plan.source: plan.note for plan in plans}, as_json=args.json, to_stdout=to_stdout
    )
    return 2 if errors else 0


def _compact_in_workers(
    plans: list[Output],
    options: dict[str, Any],
    stdin_text: str | None,
    threads: bool,
    results: list[dict[str, Any]],
    errors: list[str],
) -> None:
    """Compact several inputs in parallel, with a progress bar, into ``results`` and
    ``errors``: processes for the offline summarizer (CPU-bound), ``threads`` when
    calling a model. Workers ignore Ctrl-C: the file in progress is finished (or not
    written at all), the rest never start."""
    from rich.console import Console
    from rich.progress import Progress

    pool: Executor = (
        ThreadPoolExecutor(max_workers=8)
        if threads
        else ProcessPoolExecutor(max_workers=os.cpu_count() or 1, initializer=_ignore_interrupts)
    )
    console = Console(stderr=True, highlight=False)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("compacting", total=len(plans))
        futures = {
            pool.submit(compact_file, plan, options, stdin_text if plan.source == "-" else None): plan
            for plan in plans
        }

        seen: set[Future[dict[str, Any]]] = set()

        def settle(future: Future[dict[str, Any]]) -> None:
            seen.add(future)
            try:
                results.append(future.result())
            except (CliError, FileError, fastcompact.InputError) as e:
                errors.append(str(e))
            except Exception as e:  # a worker's failure is one file's failure
                errors.append(f"{futures[future].source}: {type(e).__name__}: {e}")
            progress.advance(task)

        try:
            for future in as_completed(futures):
                settle(future)
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            for future in futures:
                if future.done() and not future.cancelled() and future not in seen:
                    settle(future)
            raise Interrupted(sorted(r["output"] for r in results)) from None
        pool.shutdown()


def _report(
    results: list[dict[str, Any]], errors: list[str], notes: dict[str, str], *, as_json: bool, to_stdout: bool
) -> None:
    """The conversation (on stdout), then each input's figures (a line, or JSON;
    on stderr when the conversation took stdout), its warnings and the errors."""
    if to_stdout and results:
        _write_exact(sys.stdout, results[0].pop("conversation"))
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    else:
        figures = sys.stderr if to_stdout else sys.stdout
        for r in results:
            figures.write(_line(r, notes.get(r["file"], "")) + "\n")
    for r in results:
        if r["warning"]:
            sys.stderr.write(f"fastcompact: {r['file']}: {r['warning']}\n")
        if r["unkept"]:
            sys.stderr.write(
                f"fastcompact: {r['unkept']} are not saved with the output; --archive PATH saves them\n"
            )
    for error in errors:
        sys.stderr.write(f"fastcompact: {error}\n")


# --- demo ----------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    try:
        from fastcompact.app import demo
    except ImportError as e:
        raise CliError(f"the demo needs DeepAgents: pip install 'fastcompact[demo]' ({e})") from e
    try:
        import deepagents  # noqa: F401
    except ImportError as e:
        raise CliError("the demo needs DeepAgents: pip install 'fastcompact[demo]'") from e

    console = _console()
    try:
        result = demo.run(
            fast=args.fast,
            window=args.window,
            root=args.root,
            keep=args.keep,
            ascii_bars=not _encodes(demo.BARS),
            echo=console.print,
        )
    except demo.DemoError as e:
        raise CliError(str(e)) from None
    return 0 if result.summaries and result.archive_files else 1


def _sizes(p: argparse.ArgumentParser) -> None:
    """The options that say how a conversation is measured, the same for every command."""
    p.add_argument(
        "--encoding",
        default="heuristic",
        choices=["heuristic", "o200k_base", "cl100k_base"],
        help="how tokens are counted: LangChain's estimate (default) or exact BPE",
    )
    p.add_argument(
        "--clear-tools",
        metavar="NAME,...",
        action="append",
        default=None,
        help="clear the old results of these tools too (repeated or comma-separated), beside the"
        " read, search, list, shell and fetch tools of common agents",
    )
    p.add_argument(
        "--count-as",
        metavar="MODEL",
        default=None,
        help="count as this model's provider does, e.g. claude-sonnet-4-6 or anthropic:claude-sonnet-4-6"
        " (the estimate takes Anthropic's characters a token); usage the transcript records anchors"
        " the count either way",
    )
    bare, windowed = _default_sizes()
    p.add_argument(
        "--max-input-tokens",
        type=_positive,
        default=None,
        help="the model's context window (fraction: sizes need it; default: none)",
    )
    p.add_argument(
        "--trigger",
        type=_size,
        action="append",
        default=None,
        help="e.g. tokens:170000 or fraction:0.85; repeated, any of them fires"
        f" (default: {windowed['trigger']} with --max-input-tokens, else {bare['trigger']})",
    )
    p.add_argument(
        "--keep",
        type=_size,
        default=None,
        help=f"e.g. messages:6 or fraction:0.1 (default: {windowed['keep']} with --max-input-tokens,"
        f" else {bare['keep']})",
    )


def _default_sizes() -> tuple[dict[str, str], dict[str, str]]:
    """The configuration's own trigger and keep, without a window and with one, as the
    options spell them."""

    def spelled(resolved: dict[str, Any]) -> dict[str, str]:
        return {
            "trigger": " or ".join(f"{kind}:{value:g}" for kind, value in resolved["trigger"]),
            "keep": "{}:{:g}".format(*resolved["keep"]),
        }

    config = fastcompact.CompactionConfig()
    return spelled(config.resolved(None)), spelled(config.resolved(200_000))


def main(argv: list[str] | None = None) -> int:
    _quiet_log()
    parser = _Parser(prog="fastcompact", description="Context compaction for LLM agents.")
    parser.add_argument("--version", action=_Version, help="show the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    what = "where a conversation's tokens go and where it would be cut"
    p = sub.add_parser("inspect", help=what, description=what)
    p.add_argument(
        "file", nargs="?", help="JSON or JSONL conversation ('-' for stdin); default: a bundled session"
    )
    p.add_argument(
        "--sample", choices=SESSIONS, default=None, help="the bundled session inspected without FILE (coding)"
    )
    _sizes(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=_inspect)

    what = "compact saved transcripts (the summary is offline unless --model)"
    c = sub.add_parser("compact", help=what, description=what)
    c.add_argument("files", nargs="+", help="JSON or JSONL conversations ('-' for stdin)")
    c.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file ('-' for stdout), or a directory (several inputs, or a path ending in /)",
    )
    c.add_argument(
        "--archive", default=None, help="where the archive goes (default: beside the output; with -o -, none)"
    )
    _sizes(c)
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
    from fastcompact.app.demo import FAST_WINDOW, WINDOW

    d.add_argument(
        "--window",
        type=_positive,
        default=None,
        help=f"the model's window in tokens (default: {WINDOW:,}; {FAST_WINDOW:,} with --fast)",
    )
    d.add_argument(
        "--root",
        default=None,
        help="work directory, empty or an earlier demo's (default: a new temporary one)",
    )
    d.add_argument("--keep", action="store_true", help="keep the temporary project when the run ends")
    d.set_defaults(run=_demo)
    cli_search.add_command(sub)

    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # Text a stream cannot encode (cp1252, a Windows console) prints as "?", never fails.
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        return int(args.run(args))
    except (CliError, FileError, fastcompact.InputError, ValueError) as e:
        sys.stderr.write(f"fastcompact: {e}\n")
        return 2
    except Interrupted as e:
        written = "".join(f"\n  {w}" for w in e.written)
        sys.stderr.write(f"fastcompact: {e}{':' if written else ''}{written}\n")
        return 130
    except KeyboardInterrupt:
        sys.stderr.write("fastcompact: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader stopped (`| head`): that is not an error. Later writes go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

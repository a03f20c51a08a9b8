"""The command line's outputs: where each input's conversation, archive and saved
results go (named so that no two inputs share one, and named from the output's folder
inside it), and writing one input's files whole or not at all.

Examples:
    >>> [plan] = plan_outputs(["run.json"], "out/run.v2.json", overwrite=True)
    >>> plan.archive.name, plan.results.name, plan.named(plan.archive)
    ('run.v2.archive.md', 'run.v2.results', 'run.v2.archive.md')
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


class CliError(Exception):
    """A problem to report in one line, with exit status 2."""


def distinct_inputs(files: list[str]) -> list[str]:
    """The inputs, each once (a file given twice, under any spelling of its path, is
    compacted once, and says so)."""
    seen: dict[str, str] = {}
    out = []
    for f in files:
        if f == "-":  # stdin twice is refused where outputs are planned
            out.append(f)
            continue
        key = os.path.realpath(f)
        if key in seen:
            sys.stderr.write(f"fastcompact: {f} is the same file as {seen[key]}; compacting it once\n")
            continue
        seen[key] = f
        out.append(f)
    return out


def _base_of(target: Path) -> str:
    """What an output's companions are named after: its stem for a ``.json`` file,
    its whole name otherwise, so that ``x.json`` and ``x.jsonl`` never share one."""
    if target.suffix == ".json":
        return target.stem or "conversation"
    return target.name or "conversation"


def _archive_of(target: Path) -> Path:
    """``session.v2.json`` -> ``session.v2.archive.md`` (the whole stem is kept);
    ``session.jsonl`` -> ``session.jsonl.archive.md``."""
    return target.with_name(f"{_base_of(target)}.archive.md")


def _results_of(target: Path) -> Path:
    """``session.v2.json`` -> ``session.v2.results``: the folder of results cut whole."""
    return target.with_name(f"{_base_of(target)}.results")


@dataclass(frozen=True)
class Output:
    """Where one input's outputs go: the conversation (``None``: stdout), the archive
    of what a summary replaced and the folder of the results kept whole beside it
    (``None``: not kept), and a note when a name was changed."""

    source: str
    target: Path | None
    archive: Path | None
    results: Path | None
    note: str = ""

    def paths(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.target, self.archive, self.results) if p is not None)

    def named(self, path: Path | None) -> str | None:
        """``path`` as the output names it: from the output file's folder, so that an
        agent resumed anywhere beside the file finds it (from here when on stdout)."""
        if path is None:
            return None
        if self.target is None:
            return str(path)
        try:
            return os.path.relpath(path.absolute(), self.target.absolute().parent)
        except ValueError:  # another drive: only the whole path names it
            return str(path.absolute())

    def real(self, named: str) -> Path:
        """Where a path the output names is (see :meth:`named`)."""
        path = Path(named)
        return path if self.target is None or path.is_absolute() else self.target.parent / path


def plan_outputs(files: list[str], output: str, overwrite: bool, archive: str | None = None) -> list[Output]:
    """Where each input's outputs go. ``-`` writes the one conversation to stdout (its
    archive only to ``archive``). Several inputs, an existing directory or a path
    ending in ``/`` name a directory, where each output keeps its input's whole name;
    two inputs of the same name are told apart by their folder, then a counter. No two
    outputs share a name, and an existing one is refused unless ``overwrite``."""
    if files.count("-") > 1:
        raise CliError("stdin ('-') can be read once")
    out = Path(output)
    several = len(files) > 1 or output.endswith(("/", os.sep)) or (output != "-" and out.is_dir())
    if several and archive is not None:
        raise CliError("--archive names one file, for one input and an output file")
    if len(files) > 1 and not out.is_dir() and out.suffix in (".json", ".jsonl"):
        raise CliError(f"-o {output} names a file, but {len(files)} inputs need a directory (-o DIR/)")
    if output == "-":
        kept = Path(archive) if archive is not None else None
        plans = [Output(files[0], None, kept, _results_of(kept) if kept is not None else None)]
    elif not several:
        plans = [Output(files[0], out, Path(archive) if archive else _archive_of(out), _results_of(out))]
    else:
        if out.exists() and not out.is_dir():
            raise CliError(f"{out} is a file; give a directory for several inputs")
        taken: set[Path] = set()
        plans = []

        def clash(target: Path) -> bool:
            return bool({target, _archive_of(target), _results_of(target)} & taken)

        for src in files:
            name = "stdin.json" if src == "-" else Path(src).name or "conversation.json"
            target, note = out / name, ""
            if clash(target):
                folder = Path(src).resolve().parent.name or "input"
                target = out / f"{folder}_{name}"
                k = 2
                while clash(target):
                    target = out / f"{Path(name).stem}-{k}{Path(name).suffix}"
                    k += 1
                note = f" (as {target.name}: another input is also named {name})"
            plan = Output(src, target, _archive_of(target), _results_of(target), note)
            taken |= set(plan.paths())
            plans.append(plan)
    for plan in plans:
        for path in plan.paths():
            if plan.source != "-" and os.path.realpath(path) == os.path.realpath(plan.source):
                raise CliError(f"{path} is the input; write the compacted conversation elsewhere")
    if not overwrite:
        for plan in plans:
            for path in plan.paths():
                if path.exists():
                    raise CliError(f"{path} exists; give --overwrite to replace it")
    return plans


class Writes:
    """One input's files, written so that a failure (a full disk, say) leaves none of
    them: each goes to a temporary file beside its place first; once all are written,
    they are renamed into place in order (the output last); on any failure, what was
    written is removed and the error raised."""

    def __init__(self) -> None:
        self.files: list[tuple[Path, bytes]] = []

    def add(self, path: Path, data: bytes) -> None:
        self.files.append((path, data))

    def commit(self) -> None:
        staged: list[tuple[Path, Path]] = []
        placed: list[Path] = []
        try:
            for path, data in self.files:
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
                staged.append((temporary, path))
                temporary.write_bytes(data)
            for temporary, path in staged:
                os.replace(temporary, path)
                placed.append(path)
        except BaseException:
            for temporary, _ in staged:
                temporary.unlink(missing_ok=True)
            for path in placed:
                path.unlink(missing_ok=True)
            raise

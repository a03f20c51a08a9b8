"""The example outputs the README and the docs show, made by running them:
``fastcompact demo``'s report, the ``fastcompact inspect`` transcript, the ``plan()``
figures and the configuration reference. Each sits between two markers in README.md or a page under docs/,

    <!-- example: NAME -->
    ...
    <!-- end of example -->

``--check`` (what ``scripts/test.sh`` runs) fails, naming the example and its file,
when a page no longer shows what the code prints, or no page shows an example;
``--write`` puts the fresh output in.

    python tools/readme_examples.py --check | --write
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- example: (\w+) -->\n)(.*?)(<!-- end of example -->)", re.S)


def _inspect() -> str:
    from fastcompact.samples import load_session
    from langchain_core.messages import messages_to_dict

    command = "fastcompact inspect session.json --max-input-tokens 200000"
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "session.json").write_text(json.dumps(messages_to_dict(load_session("coding"))))
        done = subprocess.run(
            [sys.executable, "-m", "fastcompact.app.cli", *command.split()[1:]],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
        )
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    return "```text\n$ " + command + "\n" + "\n".join(lines) + "\n```\n"


def _plan() -> str:
    from fastcompact import plan
    from fastcompact.samples import coding_session

    p = plan(coding_session(2_000, seed=0), max_input_tokens=200_000)
    first, *rest = repr(p).splitlines()
    shown = [f"p        # {first}", *(f"         # {line}" for line in rest)]
    return "\n".join(
        [
            "```python",
            "from fastcompact import apply_edits, model_view, plan",
            "from fastcompact.samples import coding_session",
            "",
            "msgs = coding_session(2_000, seed=0)",
            "p = plan(msgs, max_input_tokens=200_000)",
            *shown,
            "p.passes # tokens before/after and edits per pass; in Jupyter the plan draws itself",
            "view = apply_edits(msgs, p.edits)   # new objects for edited messages, the same objects"
            " for the rest",
            "view, p = model_view(msgs, max_input_tokens=200_000)  # both in one step, as an agent turn does",
            "```",
            "",
        ]
    )


def _demo() -> str:
    """``fastcompact demo``'s lines: the first turns, the summaries' and the last, its
    report; the temporary folder and the time, which change run to run, elided."""
    from fastcompact.app import demo

    lines: list[str] = []
    demo.run(echo=lines.append)
    turns = [i for i, line in enumerate(lines) if line.startswith("turn ")]
    shown = set(turns[:3]) | {turns[-1]} | {i for i in turns if "SUMMARY" in lines[i]}
    out, skipped = [], False
    for i, line in enumerate(lines):
        if line.startswith("Project copied to"):
            continue
        if i in turns and i not in shown:
            if not skipped:
                out.append("...")
            skipped = True
            continue
        skipped = False
        line = re.sub(r"/tmp/fastcompact-demo-\w+", "/tmp/fastcompact-demo-…", line)
        out.append(re.sub(r"Done in [\d.]+ s\.", "Done in … s.", line))
    return "```text\n" + "\n".join(line.rstrip() for line in out) + "\n```\n"


def _config() -> str:
    from config_reference import reference

    return reference()


EXAMPLES: dict[str, Callable[[], str]] = {
    "inspect": _inspect,
    "plan": _plan,
    "demo": _demo,
    "config": _config,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when the README is out of date")
    mode.add_argument("--write", action="store_true", help="put the fresh outputs in the README")
    args = parser.parse_args(argv)
    found: set[str] = set()
    stale: list[str] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT)

        def fresh(m: re.Match[str], name: Path = name) -> str:
            found.add(m.group(2))
            made = EXAMPLES[m.group(2)]()
            if made != m.group(3):
                stale.append(f"{m.group(2)} in {name}")
            return m.group(1) + made + m.group(4)

        updated = BLOCK.sub(fresh, text)
        if args.write and updated != text:
            page.write_text(updated, encoding="utf-8")
    missing = sorted(set(EXAMPLES) - found)
    if missing:
        print(f"no page has markers for: {', '.join(missing)}", file=sys.stderr)
        return 1
    if args.write:
        print(f"{len(stale)} examples updated ({', '.join(stale) or 'none'})")
        return 0
    if stale:
        fix = "python tools/readme_examples.py --write"
        print(f"stale output for: {', '.join(stale)} ({fix})")
        return 1
    print(f"{len(found)} examples match what the code prints")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The house's size limits, checked: a module a newcomer can read in one sitting, and
functions whose inputs fit in one's head."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "fastcompact"
MOST_LINES = 700
MOST_PARAMETERS = 6
# The middleware's constructor takes the documented keywords of the middleware it
# replaces, as they are.
PUBLIC_SIGNATURES = {("middleware.py", "CompactionMiddleware.__init__")}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_or_core_file_is_longer_than_the_house_keeps():
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "src").rglob("*.rs")]
    long = {str(f.relative_to(ROOT)): n for f in files if (n := _lines(f)) > MOST_LINES}
    assert long == {}


def test_the_compaction_module_holds_the_compaction_alone():
    assert _lines(PACKAGE / "agent" / "compaction.py") <= 450


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    count = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return count - (1 if names and names[0].arg in ("self", "cls") else 0)


def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def test_no_agent_function_takes_more_than_six_parameters():
    wide = []
    for path in sorted((PACKAGE / "agent").glob("*.py")):
        for name, fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if _parameters(fn) > MOST_PARAMETERS and (path.name, name) not in PUBLIC_SIGNATURES:
                wide.append(f"{path.name}: {name} ({_parameters(fn)})")
    assert wide == []

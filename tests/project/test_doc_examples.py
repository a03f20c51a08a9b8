"""Every Python example in README.md and under docs/ runs as a reader pastes it into a
fresh interpreter, so no example rots: nothing is given to it beforehand (an example
that needs a model makes the offline one, ``fastcompact.samples.OfflineChatModel``). An
example that builds an agent is then asked one question through it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _examples() -> list[Any]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 2
            name = f"{page.relative_to(ROOT)}:{line}"
            found.append(pytest.param(name, m.group(1), id=name))
    return found


EXAMPLES = _examples()


def test_the_docs_have_examples() -> None:
    # Each page that shows code in Python is found (the pattern cannot silently miss them).
    pages = {name.split(":")[0] for name, *_ in (p.values for p in EXAMPLES)}
    assert {"README.md", "docs/index.md", "docs/configuration.md", "docs/search.md"} <= pages
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize(("name", "code"), EXAMPLES)
def test_example_runs(name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), namespace)
    agent = namespace.get("agent")
    if agent is None:
        return
    config = {"configurable": {"thread_id": name}}
    out = agent.invoke({"messages": [HumanMessage("What is the staging database port?")]}, config)
    assert out["messages"][-1].content == "Done: What is the staging database port?"

"""Every Python example in README.md and under docs/ runs, as a reader would paste it,
so no example rots. The names an example takes from the reader's own code (`model`,
`backend`, `tools`, ...) are given real parts: a real DeepAgents backend on a temporary
folder, a real checkpointer, and the scripted offline model (the one stand-in). An
example that builds an agent is then asked one question through it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from deepagents.backends import FilesystemBackend
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel

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


def _answer(messages: list[Any]) -> AIMessage:
    return AIMessage(f"Done: {str(messages[-1].content)[:40]}")


def _readers_parts(folder: Path) -> dict[str, Any]:
    """What an example assumes the reader already has."""
    return {
        "model": ScriptedChatModel(script=_answer, profile={"max_input_tokens": 200_000}),
        "backend": FilesystemBackend(root_dir=folder, virtual_mode=True),
        "tools": [],
        "my_tools": [],
        "checkpointer": InMemorySaver(),
        "summary": HumanMessage("Earlier: the user asked for the staging database port."),
    }


def test_the_docs_have_examples() -> None:
    # Each page that shows code in Python is found (the pattern cannot silently miss them).
    pages = {name.split(":")[0] for name, *_ in (p.values for p in EXAMPLES)}
    assert {"README.md", "docs/index.md", "docs/configuration.md", "docs/search.md"} <= pages
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize(("name", "code"), EXAMPLES)
def test_example_runs(name: str, code: str, tmp_path: Path) -> None:
    namespace = _readers_parts(tmp_path)
    exec(compile(code, name, "exec"), namespace)
    agent = namespace.get("agent")
    if agent is None:
        return
    config = {"configurable": {"thread_id": name}}
    out = agent.invoke({"messages": [HumanMessage("What is the staging database port?")]}, config)
    assert out["messages"][-1].content == "Done: What is the staging database port?"

"""Generate the bundled sample sessions in python/fastcompact/data/.

    python tools/gen_sessions.py

- coding.json.gz: a coding agent working on a small Python project, recorded from a
  real `create_deep_agent` run (real file tools in a temporary directory), with the
  project files it started from. The demo replays it.
- research.json.gz: a research agent whose web searches and page fetches return large
  results.
- chat.json.gz: a long conversation with few tool calls.

Deterministic: the same script always writes the same files (message ids included).
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

OUT = Path(__file__).resolve().parent.parent / "python" / "fastcompact" / "data"

# --- the coding project ---------------------------------------------------------------

ENTITIES = ["item", "warehouse", "supplier", "order", "shipment", "invoice", "customer", "discount"]


def _module(name: str, rng: random.Random) -> str:
    """A plausible module: a dataclass per entity and a handful of functions."""
    lines = [f'"""{name.replace("_", " ").capitalize()}: part of the inventory service."""', ""]
    lines += [
        "from __future__ import annotations",
        "",
        "import logging",
        "from dataclasses import dataclass, field",
    ]
    lines += ["from decimal import Decimal", "", "logger = logging.getLogger(__name__)", ""]
    for entity in rng.sample(ENTITIES, 3):
        cls = entity.capitalize()
        lines += ["", "@dataclass", f"class {cls}:", f'    """A {entity} as stored in the database."""', ""]
        lines += [f"    {entity}_id: int", "    name: str", "    created_at: str"]
        lines += ["    price: Decimal = Decimal(0)", "    tags: list[str] = field(default_factory=list)", ""]
        lines += [
            "    def label(self) -> str:",
            f'        return f"{{self.name}} (#{{self.{entity}_id}})"',
            "",
        ]
    for i in range(rng.randint(8, 14)):
        entity = rng.choice(ENTITIES)
        fn = f"{rng.choice(['load', 'save', 'find', 'count', 'merge', 'price'])}_{entity}s_{i}"
        lines += ["", f"def {fn}(rows: list[dict], *, limit: int = 100) -> list[dict]:"]
        lines += [f'    """{fn.replace("_", " ").capitalize()} in batches of ``limit``."""']
        lines += ["    out = []", "    for row in rows[:limit]:", "        if not row.get('active', True):"]
        lines += [
            "            continue",
            f"        row['{entity}_total'] = Decimal(row.get('qty', 0)) * row.get('price', 1)",
        ]
        lines += [
            "        out.append(row)",
            f'    logger.debug("{fn}: %d of %d rows", len(out), len(rows))',
            "    return out",
        ]
    return "\n".join(lines) + "\n"


def _test_module(name: str, rng: random.Random) -> str:
    lines = [f'"""Tests for {name}."""', "", "from decimal import Decimal", "", "import pytest", ""]
    for i in range(rng.randint(5, 9)):
        lines += [
            "",
            f"def test_{name}_{i}():",
            "    rows = [{'qty': 2, 'price': Decimal('1.50'), 'active': True}]",
        ]
        lines += [f"    assert rows[0]['qty'] * rows[0]['price'] == Decimal('{3 + i}.00') - {i}"]
    return "\n".join(lines) + "\n"


def project(rng: random.Random) -> dict[str, str]:
    files = {
        f"/inventory/src/inventory/{m}.py": _module(m, rng)
        for m in ("models", "store", "api", "pricing", "cli")
    }
    files |= {f"/inventory/tests/test_{m}.py": _test_module(m, rng) for m in ("store", "pricing", "api")}
    files["/inventory/README.md"] = (
        "# Inventory service\n\nTracks items, warehouses and orders.\n\n"
        + "\n".join(f"- `{e}`: managed in `src/inventory/models.py`" for e in ENTITIES)
        + "\n"
    )
    files["/inventory/pyproject.toml"] = (
        '[project]\nname = "inventory"\nversion = "0.3.1"\nrequires-python = ">=3.11"\n'
    )
    return files


REQUESTS = [
    "Give me an overview of the inventory project: what modules are there and what do they do?",
    "Add a `discount_rate` field to Item and make the pricing functions respect it.",
    "The store tests look wrong to me. Check test_store.py and fix whatever is off.",
    "Add logging of slow queries (over 200 ms) to store.py.",
    "Write a CHANGELOG.md describing the changes so far.",
    "Rename `merge_*` helpers to `combine_*` everywhere, including tests.",
    "Add a `--dry-run` flag to the CLI that prints what would change.",
    "Check that every module parses and count the functions in each.",
    "Add type hints to the api module where they are missing.",
    "Document the pricing rules in README.md.",
    "Add input validation to the api module: reject negative quantities.",
    "Add a warehouse capacity check to store.py.",
    "Make the pricing module round to two decimals consistently.",
    "Split the cli module's argument parsing into its own function.",
    "Add tests for the discount logic.",
    "Search the project for TODO comments and list them.",
    "Add a `to_dict` method to every dataclass in models.py.",
    "Update pyproject.toml to version 0.4.0 and note it in the changelog.",
    "Review the api module for error handling gaps and fix them.",
    "Add a health-check endpoint to the api module.",
    "Make the store module's batch size configurable.",
    "Find functions longer than 40 lines and split the worst one.",
    "Add docstrings to the cli module's functions.",
    "Check the tests for duplicated setup and factor it into a fixture.",
    "Add an `archived` flag to Warehouse and filter archived ones out of listings.",
    "Make logging messages consistent across modules.",
    "Add a migration note for the Item field change to the notes folder.",
    "Double-check the pricing edge cases around zero quantities.",
    "Summarise everything we changed today.",
]


PARSES = "import ast,sys; ast.parse(open(sys.argv[1]).read()); print('ok')"


def _calls(
    turn: int, request: str, files: dict[str, str], rng: random.Random
) -> Iterator[list[dict[str, Any]]]:
    """The tool calls of one turn, step by step (a step may hold parallel calls)."""
    paths = sorted(p for p in files if p.endswith(".py"))
    picked = rng.sample(paths, 3)
    k = 0

    def call(name: str, **args: Any) -> dict[str, Any]:
        nonlocal k
        k += 1
        return {"name": name, "args": args, "id": f"call_{turn:02d}_{k:02d}", "type": "tool_call"}

    yield [call("ls", path="/inventory/src/inventory")]
    yield [call("read_file", file_path=p) for p in picked[:2]]
    yield [call("grep", pattern="def ", path="/inventory/src")]
    yield [call("read_file", file_path=picked[2])]
    target = picked[0]
    marker = f"# reviewed in turn {turn}: {request[:40]}"
    first_line = files[target].splitlines()[0]
    yield [call("edit_file", file_path=target, old_string=first_line, new_string=first_line + "\n" + marker)]
    files[target] = files[target].replace(first_line, first_line + "\n" + marker, 1)
    if turn % 3 == 0:
        note = f"/inventory/notes/turn_{turn:02d}.md"
        body = f"# Notes for turn {turn}\n\n{request}\n\n" + "\n".join(f"- checked `{p}`" for p in picked)
        files[note] = body
        yield [call("write_file", file_path=note, content=body)]
    yield [
        call(
            "execute",
            command=f'python3 -c "{PARSES}" .{target}',
        )
    ]
    yield [call("read_file", file_path=target)]


def coding_session() -> dict[str, Any]:
    from deepagents import create_deep_agent
    from deepagents.backends import LocalShellBackend
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    rng = random.Random(7)
    files = project(rng)
    start = dict(files)
    planned: list[AIMessage] = []
    for turn, request in enumerate(REQUESTS, 1):
        for step in _calls(turn, request, files, rng):
            planned.append(AIMessage("", tool_calls=step, id=f"ai_{turn:02d}_{len(planned):03d}"))
        planned.append(
            AIMessage(
                f"Done with request {turn}: I looked through the project, made the change in the files "
                "above and checked that they still parse.",
                id=f"ai_{turn:02d}_{len(planned):03d}",
            )
        )
    queue = iter(planned)

    class Author(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "author"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=next(queue))])

    with tempfile.TemporaryDirectory() as root:
        for path, text in start.items():
            target = Path(root) / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        backend = LocalShellBackend(root_dir=root, virtual_mode=True)
        agent = create_deep_agent(model=Author(), backend=backend)
        messages: list[Any] = []
        for turn, request in enumerate(REQUESTS, 1):
            state = agent.invoke({"messages": [*messages, HumanMessage(request, id=f"human_{turn:02d}")]})
            messages = state["messages"]
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            m.id = f"tool_{i:04d}"
    return {"files": start, "messages": messages_to_dict(messages)}


# --- the research session --------------------------------------------------------------

TOPICS = [
    "grid-scale battery storage",
    "sodium-ion cells",
    "heat pumps in cold climates",
    "offshore wind maintenance",
    "green hydrogen electrolysers",
    "district heating networks",
]
SENTENCES = [
    "Analysts expect installed capacity of {t} to triple by the end of the decade, driven by falling costs.",
    "A 2024 field study of {t} found that operating costs were 18% lower than modelled.",
    "Critics of {t} point to supply-chain risks and the lack of long-term performance data.",
    "Several utilities now tender {t} projects with availability guarantees above 97%.",
    "The main technical bottleneck for {t} remains degradation under frequent partial cycling.",
    "Policy support for {t} varies widely: some regions offer capacity payments, others none.",
    "Independent tests of {t} show efficiency between 82% and 91% depending on temperature.",
    "Manufacturers of {t} report lead times of 9 to 14 months for large orders.",
]


def _article(topic: str, rng: random.Random, paragraphs: int) -> str:
    out = [f"# {topic.title()}: what the evidence says", ""]
    for p in range(paragraphs):
        out.append(" ".join(rng.choice(SENTENCES).format(t=topic) for _ in range(rng.randint(4, 8))))
        if p % 4 == 3:
            out += ["", f"## Section {p // 4 + 1}", ""]
        out.append("")
    return "\n".join(out)


def research_session() -> list[dict[str, Any]]:
    rng = random.Random(11)
    msgs: list[Any] = []
    for turn, topic in enumerate(TOPICS * 2, 1):
        msgs.append(
            HumanMessage(
                f"Research {topic}: costs, performance and the main risks. Cite sources.", id=f"h{turn}"
            )
        )
        cid = f"search_{turn}"
        msgs.append(
            AIMessage(
                "",
                tool_calls=[
                    {"name": "web_search", "args": {"query": f"{topic} cost performance 2025"}, "id": cid}
                ],
                id=f"a{turn}s",
            )
        )
        results = [
            {
                "title": f"{topic.title()} report {i}",
                "url": f"https://example.org/{topic.replace(' ', '-')}/{i}",
                "snippet": rng.choice(SENTENCES).format(t=topic),
            }
            for i in range(8)
        ]
        msgs.append(
            ToolMessage(json.dumps(results, indent=2), tool_call_id=cid, name="web_search", id=f"t{turn}s")
        )
        fetches = [f"fetch_{turn}_{i}" for i in range(3)]
        msgs.append(
            AIMessage(
                "",
                tool_calls=[
                    {"name": "web_fetch", "args": {"url": results[i]["url"]}, "id": f}
                    for i, f in enumerate(fetches)
                ],
                id=f"a{turn}f",
            )
        )
        for i, f in enumerate(fetches):
            msgs.append(
                ToolMessage(
                    _article(topic, rng, rng.randint(25, 70)),
                    tool_call_id=f,
                    name="web_fetch",
                    id=f"t{turn}f{i}",
                )
            )
        msgs.append(
            AIMessage(
                f"Here is what I found on {topic}. "
                + " ".join(rng.choice(SENTENCES).format(t=topic) for _ in range(6))
                + " Sources: "
                + ", ".join(r["url"] for r in results[:3])
                + ".",
                id=f"a{turn}r",
            )
        )
    return messages_to_dict(msgs)


# --- the long chat -----------------------------------------------------------------------

QUESTIONS = [
    "What should I pack for four days of hiking in the Dolomites in late September?",
    "Can you suggest a vegetarian dinner that takes under 30 minutes?",
    "How do I explain compound interest to a twelve-year-old?",
    "Rewrite this sentence to sound less formal: 'Please be advised that the meeting is postponed.'",
    "What are good questions to ask at the end of a job interview?",
    "Give me a weekly plan to get from 5 km to 10 km running.",
    "How do I keep basil alive indoors?",
    "What is the difference between a Roth and a traditional IRA, briefly?",
]
ANSWERS = [
    "Layers matter more than weight: a base layer, a warm mid layer and a waterproof shell.",
    "Start simple and adjust as you go; the first attempt is about learning what works for you.",
    "Keep it short and concrete, and use an example the listener already cares about.",
    "Most people find it easier to build the habit first and the intensity later.",
    "Light and water are the two things to get right; everything else is secondary.",
]


def chat_session() -> list[dict[str, Any]]:
    rng = random.Random(5)
    msgs: list[Any] = []
    for turn in range(1, 201):
        msgs.append(HumanMessage(f"{rng.choice(QUESTIONS)} (question {turn})", id=f"h{turn}"))
        if turn % 25 == 0:
            cid = f"weather_{turn}"
            msgs.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "get_weather", "args": {"city": "Bolzano", "days": 4}, "id": cid}],
                    id=f"a{turn}c",
                )
            )
            msgs.append(
                ToolMessage(
                    json.dumps(
                        {
                            "city": "Bolzano",
                            "forecast": [{"day": d, "high_c": 14 + d, "rain_mm": d * 2} for d in range(4)],
                        }
                    ),
                    tool_call_id=cid,
                    name="get_weather",
                    id=f"t{turn}",
                )
            )
        msgs.append(AIMessage(" ".join(rng.choice(ANSWERS) for _ in range(rng.randint(3, 9))), id=f"a{turn}"))
    return messages_to_dict(msgs)


def _write(name: str, data: Any) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0: the same content gives the same bytes.
    with gzip.GzipFile(OUT / f"{name}.json.gz", "wb", mtime=0) as f:
        f.write(raw)
    print(f"{name}: {len(raw) / 1e6:.1f} MB of JSON", file=sys.stderr)


def main() -> None:
    _write("coding", coding_session())
    _write("research", {"messages": research_session()})
    _write("chat", {"messages": chat_session()})


if __name__ == "__main__":
    main()

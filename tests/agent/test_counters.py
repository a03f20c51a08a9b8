"""The counters in the graph state as one typed record: a thread saved by the release
before it loads unchanged and carries on, and any stored dict reads back as it was or,
where a value is of the wrong kind, as absent."""

from __future__ import annotations

import dataclasses
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

from fastcompact.agent.counters import Counters
from hypothesis import given
from hypothesis import strategies as st
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.agent.test_restart import _session

# Steps 1 to 10 of `python -m tests.restart_session DB ROOT 1 10 priced at=1796400000`,
# written by fastcompact 540f874, whose counters were a plain dict that six modules
# read and wrote; and what that release saw when it resumed the thread for steps 11
# to 16 (the same command, `11 16`).
SAVED = Path(__file__).parents[1] / "data" / "priced_thread_steps_1_to_10.sqlite.gz"
RESUMED = Path(__file__).parents[1] / "data" / "priced_thread_steps_11_to_16.json"
CLOCK = "at=1796400000"
# What the memory's text says differently since that release: its recall hint names
# requests by number too, and its opening names what the user said that still holds.
NEW_WORDING = [
    (
        'named here in full; recall(query="a few words")',
        'named here in full, recall("R<n>") request n as the user wrote it; recall(query="a few words")',
    ),
    (
        "kept in layers: the oldest requests in short",
        "kept in layers: what the user said that still holds, the oldest requests in short",
    ),
]

FIELDS = [f for f in Counters.__dataclass_fields__ if f != "others"]


def _saved_thread(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    db = tmp_path / "saved.sqlite"
    db.write_bytes(gzip.decompress(SAVED.read_bytes()))
    with sqlite3.connect(db, check_same_thread=False) as conn:
        found = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": "restart"}})
    assert found is not None
    return db, found.checkpoint["channel_values"]["_fastcompact"]


def test_counters_saved_by_the_previous_release_read_and_write_back_the_same(tmp_path: Path):
    _, stored = _saved_thread(tmp_path)
    counters = Counters.from_state(stored)
    assert counters.others == {}  # every key it stored is a field
    assert counters.to_state() == stored
    assert counters.archives == stored["archives"] and counters.kept_price == stored["kept_price"]


def test_a_thread_saved_by_the_previous_release_carries_on_as_it_did(tmp_path: Path):
    db, _ = _saved_thread(tmp_path)
    root = tmp_path / "work"
    root.mkdir()
    resumed = _session(db, root, 11, 16, "priced", CLOCK)
    assert resumed["first_call"][0]["content"] == resumed["event_before"]["summary"]
    # Every count the old release stored was read back and carried on: the thread
    # compacts again (later than before), its counters the same fields of the same
    # kinds, no summary call made (the memory is a digest).
    expected = json.loads(RESUMED.read_text())
    assert resumed["event_after"]["cutoff_index"] > resumed["event_before"]["cutoff_index"]
    assert resumed["counters"].keys() == expected["counters"].keys()
    assert all(isinstance(v, int | float) and v > 0 for v in resumed["counters"].values())
    assert resumed["summary_calls"] == expected["summary_calls"]
    # What the old release's memory held is in the new one, each request by its number,
    # and the old memory's wording reads as today's.
    summary = resumed["event_after"]["summary"]
    for n in range(1, 15):
        assert f"### R{n}\nPlease do step {n}." in summary or f"R{n}:" in summary, n
    last_call = expected["last_call"]
    for old, _ in NEW_WORDING:
        assert any(old in m for m in last_call)
    assert summary in resumed["last_call"]


_count = st.integers(min_value=0, max_value=10**9)
_number = st.integers(min_value=-(10**6), max_value=10**9) | st.floats(allow_nan=False, allow_infinity=False)
_valid = {
    "window": st.none() | st.integers(min_value=1, max_value=10**7),
    "last_plan": st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    "kept_price": st.tuples(st.text(max_size=8), _number).map(list),
    "session": st.text(min_size=1, max_size=12),
    "grown_reads": st.integers(min_value=0, max_value=10**9) | st.floats(min_value=0, allow_infinity=False),
}
_valid_state = st.fixed_dictionaries(
    {},
    optional={
        name: _valid.get(name, _count if "int" in str(Counters.__annotations__[name]) else _number)
        for name in FIELDS
    },
).flatmap(
    lambda known: st.dictionaries(st.sampled_from(["future", "x_y", "other"]), st.integers(), max_size=2).map(
        lambda others: {"window": None, **known, **others}
    )
)
_anything = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5) | st.lists(st.integers())
)


@given(_valid_state)
def test_a_stored_dict_of_valid_values_reads_back_exactly(stored: dict[str, Any]):
    assert Counters.from_state(stored).to_state() == stored


@given(st.dictionaries(st.sampled_from(FIELDS), _anything))
def test_values_of_the_wrong_kind_read_as_absent_and_never_fail(stored: dict[str, Any]):
    counters = Counters.from_state(stored)
    written = counters.to_state()
    # What it writes back reads back the same: a corrupted value is gone for good.
    assert Counters.from_state(written) == counters
    for name, value in written.items():
        if name in stored and value is not None:
            assert value == stored[name] and type(value) is not bool


def test_the_counters_change_in_one_module() -> None:
    # Every other module says what happened through the methods of Counters; a field
    # assigned anywhere else is a second place that decides how the counters change.
    import ast

    import fastcompact.agent as agent

    folder = Path(agent.__file__).parent
    fields = {f.name for f in dataclasses.fields(Counters)}
    writes = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "counters.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AugAssign)
                else []
            )
            for t in (
                e for target in targets for e in (target.elts if isinstance(target, ast.Tuple) else [target])
            ):
                if isinstance(t, ast.Attribute) and t.attr in fields and "counters" in ast.unparse(t.value):
                    writes.append(f"{path.name}:{node.lineno} {ast.unparse(t)}")
    assert writes == []

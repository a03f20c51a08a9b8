"""Invariants under random sessions, across chains of compactions (hypothesis).

A random agent conversation is fed to the middleware call by call, as an agent loop
would (a model call wherever no tool call is pending), with a real FilesystemBackend
and random triggers small enough to compact often. After every call:

- the model's input has no broken tool pair;
- every raw message is either in the model's input or in exactly one archive file;
- planning the model's input again edits nothing;
- the event's cutoff maps back to the raw list (`prior + cut - 1`), and the archive
  written by each new event holds exactly the messages between the two cutoffs.

Examples: FASTCOMPACT_INVARIANT_EXAMPLES (default 1,000).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import fastcompact
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.conftest import pair_violations
from tests.scripted import ScriptedChatModel

EXAMPLES = int(os.environ.get("FASTCOMPACT_INVARIANT_EXAMPLES", "1000"))


_words = st.text(st.sampled_from('abcdefgh ijklmnop\n{}[]"é漢'), max_size=60)


@st.composite
def sessions(draw: Any) -> list[Any]:
    """Agent sessions: requests, then steps of one to three (parallel) calls whose
    results come back in any order, sometimes two AI messages before their results
    (AI(x), AI(y), T(x), T(y)), and a closing answer."""
    out: list[Any] = []
    n = 0
    for _ in range(draw(st.integers(1, 12))):
        out.append(HumanMessage(draw(_words)))
        for _ in range(draw(st.integers(0, 4))):
            batches = draw(st.integers(1, 2))
            pending: list[tuple[str, str]] = []
            for _ in range(batches):
                calls = []
                for _ in range(draw(st.integers(1, 3))):
                    n += 1
                    name = draw(st.sampled_from(["read_file", "grep", "execute", "edit_file"]))
                    calls.append(
                        {
                            "name": name,
                            "args": {"file_path": f"/f{n % 5}"},
                            "id": f"c{n}",
                            "type": "tool_call",
                        }
                    )
                    pending.append((f"c{n}", name))
                out.append(AIMessage("", tool_calls=calls))
            for cid, name in draw(st.permutations(pending)):
                out.append(ToolMessage(draw(_words) * draw(st.integers(1, 20)), tool_call_id=cid, name=name))
        out.append(AIMessage(draw(_words)))
    return out


def _call_points(msgs: list[Any]) -> list[int]:
    """Prefix lengths at which an agent would call the model: nothing pending, and the
    last message is a request or a result."""
    pending: set[str] = set()
    points = []
    for i, m in enumerate(msgs):
        if m.type == "ai":
            pending |= {c["id"] for c in m.tool_calls}
        elif m.type == "tool":
            pending.discard(m.tool_call_id)
        if not pending and m.type in ("human", "tool"):
            points.append(i + 1)
    return points


def _archived(root: Path) -> dict[str, list[int]]:
    return {
        f.name: [int(i) for i in re.findall(r"^### \[(\d+)\]", f.read_text(), flags=re.M)]
        for f in sorted(root.glob("conversation_history/*/*.md"))
    }


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    msgs=sessions(),
    trigger=st.integers(6, 30),
    keep=st.integers(1, 3),
    clear=st.booleans(),
)
def test_chains_of_compactions_keep_every_invariant(msgs: list[Any], trigger: int, keep: int, clear: bool):
    for i, m in enumerate(msgs):
        m.id = f"m{i}"
    config = CompactionConfig(
        trigger=("messages", trigger),
        keep=("messages", keep),
        clearing={"trigger": ("messages", 2), "keep_recent": 1, "clear_at_least": 0, "enabled": clear},
        dedupe={"min_batch_tokens": 0},
    )
    root = Path(tempfile.mkdtemp(prefix="fc-inv-"))
    mw = CompactionMiddleware(backend=FilesystemBackend(root_dir=root, virtual_mode=True), config=config)
    model = ScriptedChatModel()
    state: dict[str, Any] = {}
    seen: list[list[Any]] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage("ok")])

    for end in _call_points(msgs):
        raw = msgs[:end]
        prior = state.get("_summarization_event")
        request = ModelRequest(
            model=model, messages=raw, system_message=None, tools=[], state={**state, "messages": raw}
        )
        result = mw.wrap_model_call(request, handler)
        state.update(result.command.update)
        view = seen[-1]
        event = state.get("_summarization_event")

        assert pair_violations(view) == [], (end, view)

        archives = _archived(root)
        indices = sorted(i for found in archives.values() for i in found)
        cutoff = event["cutoff_index"] if event else 0
        assert indices == list(range(cutoff)), "summarized messages archived exactly once"
        if event:
            assert view[0].content == event["summary_message"].content
            assert [m.id for m in view[1:]] == [m.id for m in raw[cutoff:]], "the rest is in view"
            assert fastcompact.effective_messages(raw, event)[1:] == raw[cutoff:]
        else:
            assert [m.id for m in view] == [m.id for m in raw]

        if event is not None and event is not prior:
            start = prior["cutoff_index"] if prior else 0
            newest = archives[Path(event["file_path"]).name]
            assert newest == list(range(start, cutoff)), "the new archive spans prior..cutoff"
            # The cut in the effective view maps back: cutoff = prior + cut - 1.
            cut = cutoff - start + (1 if prior else 0)
            assert fastcompact.state_cutoff(prior, cut) == cutoff

        again = fastcompact.plan(view, config)
        assert again.edits == [], "planning the model's input again edits nothing"

"""Memory priced against search: with a price model, the newest requests stay verbatim
only as far as they pay against a fold, so an agent's short requests among bulky tool
results keep few in view and a chat's long messages keep their whole share; what the
memory no longer shows, a search in the request's own words finds."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, MemoryConfig, _core, search
from fastcompact.agent.memory import budgets, priced_shares
from fastcompact.agent.state import EVENT_KEY
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ProviderChatModel, coding_script

WINDOW = 16_000
WORDS = "cache index parser record buffer window token stream batch queue worker thread".split()


def test_priced_shares_hold_the_layers_to_what_pays_and_never_above_the_config():
    shares = priced_shares(MemoryConfig(), 40_000, 2_000)
    assert shares == {
        # What binds is not priced against folding: it stays.
        "ledger_share": 0.05,
        "user_share": 0.05,
        "fold_share": 0.0125,
        "step_share": 0.01,
        # The notes get what a fold keeps verbatim: search finds the rest.
        "note_share": 0.0125,
        "head_share": 0.05,
    }
    # Without a price model: the config. When more would pay than the config allows:
    # the config's verbatim layers, and notes no larger than what a fold keeps verbatim.
    config = dataclasses.asdict(MemoryConfig())
    assert priced_shares(MemoryConfig(), 40_000, None) == config
    assert priced_shares(MemoryConfig(), 40_000, 1e9) == {**config, "note_share": config["fold_share"]}
    assert priced_shares(MemoryConfig(user_share=0.1), 40_000, 1e9)["user_share"] == 0.1


def _request(k: int, chars: int) -> str:
    rng = random.Random(k)
    return (f"Please do step {k}: " + " ".join(rng.choice(WORDS) for _ in range(chars // 5)))[:chars]


def _chat(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage("Understood. " + " ".join(WORDS[i % 12] for i in range(60)))


def _run(tmp_path: Path, script: Any, requests: list[str]) -> dict[str, Any]:
    model = ProviderChatModel(script=script, profile={"max_input_tokens": WINDOW})
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    mw = CompactionMiddleware(backend=backend, config=CompactionConfig(summarizer="digest"))
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "priced"}}
    for r in requests:
        agent.invoke({"messages": [HumanMessage(r)]}, cfg)
    return agent.get_state(cfg).values


def _verbatim(state: dict[str, Any]) -> list[dict[str, Any]]:
    memory = state[EVENT_KEY]["fastcompact"]["memory"]
    return [r for r in memory["requests"] if r.get("text")]


def test_an_agents_short_requests_keep_fewer_verbatim_than_a_chats_and_search_finds_the_rest(
    tmp_path: Path,
):
    configured = budgets(MemoryConfig(), WINDOW)["users"]
    coding = [_request(k, 300) for k in range(1, 41)]
    state = _run(tmp_path / "coding", coding_script, coding)
    kept = _verbatim(state)
    kept_widths = sum(_core.text_width(r["text"]) for r in kept)
    # Every one of the 40 requests would fit the configured share; the price keeps fewer.
    assert sum(_core.text_width(r) for r in coding) < configured
    assert 0 < kept_widths < 0.6 * configured
    older = [k for k in range(1, 41) if k < min(r["number"] for r in kept)]
    assert older, "every request stayed verbatim"
    for k in older:
        words = " ".join(coding[k - 1].split()[2:7])
        found = search(state, f"step {k} {words}", limit=3)
        assert any(m.role == "human" and m.request == k for m in found), (k, found)

    chat = [_request(k, 1_200) for k in range(1, 25)]
    chat_state = _run(tmp_path / "chat", _chat, chat)
    chat_widths = sum(_core.text_width(r["text"]) for r in _verbatim(chat_state))
    # A chat's requests grow the layer fast: a fold would come often, so they stay.
    assert chat_widths > 2 * kept_widths

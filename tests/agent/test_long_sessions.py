"""Sessions of any length stay inside the window: a real ``create_agent`` graph with the
middleware, a model that bills and refuses as a provider does, user messages of up to
2,000 characters over 50-1,000 turns. On every call the view is under the window, and
every user message is in view verbatim, or was handed to a summary call before it left
the view, or both; and ``recall`` gives every one back by its id."""

from __future__ import annotations

import random
from typing import Any

import fastcompact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from tests.scripted import ProviderChatModel, is_summary_call, message_text

WINDOW = 8_000
WORDS = "cache index parser record buffer window token stream batch queue worker thread".split()


def _answer(messages: list[BaseMessage]) -> AIMessage:
    last = str(messages[-1].content)
    return AIMessage(
        f"Noted ({len(last)} characters). " + " ".join(WORDS[i % 12] for i in range(len(last) % 90))
    )


class SummarizingProvider(ProviderChatModel):
    """A provider's model whose summary calls write bounded notes, and which records
    what each summary call was handed."""

    handed: list[tuple[int, str]] = Field(default_factory=list)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if not is_summary_call(run_manager):
            return super()._generate(messages, stop, run_manager, **kw)
        text = "\n".join(message_text(m) for m in messages)
        with self.lock:
            self.handed.append((len(self.calls), text))
        notes = "<summary>Requests so far, in short: " + " ".join(WORDS[:8]) * 20 + "</summary>"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(notes))])


def _users(turns: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for k in range(turns):
        length = rng.choice([20, 200, rng.randint(1, 2_000)])
        words = " ".join(rng.choice(WORDS) for _ in range(length // 5 + 1))
        out.append(f"[{k}] {words}"[:length].rstrip() or f"[{k}]")
    return out


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.integers(50, 1_000), seed=st.integers(0, 10_000))
def test_a_session_of_any_length_stays_inside_the_window_and_keeps_every_user_message(
    turns: int, seed: int
) -> None:
    model = SummarizingProvider(script=_answer, profile={"max_input_tokens": WINDOW}, refuse_above=WINDOW)
    agent = create_agent(
        model=model, tools=[], middleware=[fastcompact.CompactionMiddleware()], checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": f"long-{seed}"}}
    users = _users(turns, seed)
    for k, text in enumerate(users):
        agent.invoke({"messages": [HumanMessage(text, id=f"u{k}")]}, cfg)
    calls = model.calls
    assert len(calls) == turns, "a turn failed"
    assert max(c.input_tokens for c in calls) <= WINDOW
    # Each user message: from its first call on, in every view, or handed to a summary
    # call no later than the call whose view lost it.
    views = ["\n".join(message_text(m) for m in c.messages) for c in calls]
    for k, text in enumerate(users):
        later = range(k, len(views))
        assert text in views[k]
        lost = next((i for i in later if text not in views[i]), None)
        if lost is not None:
            assert any(text in handed for at, handed in model.handed if at <= lost), f"message {k} lost"
    state = agent.get_state(cfg).values
    for k in range(0, turns, max(turns // 20, 1)):
        assert fastcompact.recall(state, f"u{k}") == users[k]

"""``fastcompact compact`` compacts a saved transcript with the agent's own compaction:
the same transcript, in any shape, is cut at the same message and summarized in the
same words as when an agent's model call meets it."""

from __future__ import annotations

from typing import Any

import pytest
from fastcompact import CompactionConfig, CompactionMiddleware
from fastcompact.app.offline import compact
from fastcompact.samples import load_session
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage

from tests.app.test_cli import SHAPES
from tests.scripted import ScriptedChatModel, model_calls

CASES = [("research", 30_000), ("chat", 8_000), ("coding", 8_000)]


def _agent_view(messages: list[BaseMessage], window: int, config: CompactionConfig) -> list[BaseMessage]:
    """What an agent's model is sent when its state holds ``messages``."""
    model = ScriptedChatModel(profile={"max_input_tokens": window}, script=lambda _: AIMessage("done"))
    agent = create_agent(model, middleware=[CompactionMiddleware(config=config, recall=False)])
    agent.invoke({"messages": messages})
    [sent] = model_calls(model)
    return sent


@pytest.mark.parametrize(("name", "window"), CASES)
def test_the_command_line_compacts_as_the_agent_does(name: str, window: int):
    messages = load_session(name)
    config = CompactionConfig(summarizer="digest")
    sent = _agent_view(messages, window, config)
    out = compact(messages, max_input_tokens=window, config=CompactionConfig(summarizer="digest"))
    assert out.summarized > 0 and out.summarized == len(messages) - (len(sent) - 1)
    assert out.messages[0].content == sent[0].content
    assert [m.id for m in out.messages[1:]] == [m.id for m in sent[1:]]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_is_compacted_alike(shape: str):
    messages = load_session("research")
    given: list[Any] = SHAPES[shape](messages)
    out = compact(given, max_input_tokens=30_000)
    same = compact(messages, max_input_tokens=30_000)
    assert out.summarized == same.summarized > 0
    assert _text(out.messages[0]) == same.messages[0].content


def _text(message: Any) -> str:
    if isinstance(message, BaseMessage):
        return str(message.content)
    inner = message.get("data") or message.get("kwargs") or message
    return str(inner["content"])

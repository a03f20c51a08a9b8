"""The provider the session benchmark bills through, played offline.

One model, one prompt cache, for the agent's calls and the summary calls alike, as a
provider keeps it: the longest prefix a call shares with the last call that asked for
caching, in whole messages or text blocks, is read from the cache; the rest is written
at the write price when the call asks for caching, and billed at the plain input price
when it does not. Output is priced at the model's output price. A call over the window
is refused with the provider's error and billed nothing.

The agent's calls ask for caching (DeepAgents marks them for an Anthropic model); a
summary call asks when it says so (``cache_control``, as ChatAnthropic takes it). The
model names itself as an Anthropic model does: ``_llm_type`` "anthropic-chat",
``ls_provider`` "anthropic", usage in Anthropic's shape, a profile with the window.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
from collections.abc import Callable
from typing import Any

from fastcompact import count_text_tokens
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field
from sessions import WORDS

from tests.scripted import TokenMeter, is_summary_call, message_blocks, message_text

# The providers' list prices, relative to the plain input price:
# (cache read, cache write, output).
PRICES = {
    "anthropic": (0.1, 1.25, 5.0),
    "openai": (0.1, 1.0, 8.0),
    "none": (1.0, 1.0, 1.0),
}
# A realistic summary: about this share of what it reads, at most this many tokens,
# besides the user messages it was handed, verbatim, newest first within their own
# budget (a summary is a model's reply, and a reply has an output budget: a model asked
# to quote 400 messages quotes what fits).
SUMMARY_SHARE = 0.10
SUMMARY_MAX_TOKENS = 2_000
SUMMARY_QUOTE_TOKENS = 4_000


@dataclasses.dataclass
class Billed:
    """One call as the provider billed it."""

    kind: str  # "agent" or "summary"
    messages: list[BaseMessage]
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    caching: bool
    # Agent calls made before it.
    at_call: int
    # Of its input, the fixed prefix: tool schemas and system prompt.
    prefix_tokens: int
    # How many of the session's user messages had been sent when it was made.
    sent: int = 0

    def cost(self, preset: str, *, output: bool = True) -> float:
        read, write, out = PRICES[preset]
        fresh = self.input_tokens - self.cached_tokens
        billed = read * self.cached_tokens + (write if self.caching else 1.0) * fresh
        return billed + (out * self.output_tokens if output else 0.0)


@dataclasses.dataclass
class Provider:
    """The provider's side: the cache, the window, every call billed, the refusals."""

    window: int
    user_texts: list[str]
    meter: TokenMeter = dataclasses.field(default_factory=TokenMeter)
    cache: list[int] = dataclasses.field(default_factory=list)
    calls: list[Billed] = dataclasses.field(default_factory=list)
    refused: int = 0
    # How many of `user_texts` have been sent so far (the session sets it a turn at a time).
    sent: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def agent_calls(self) -> list[Billed]:
        return [c for c in self.calls if c.kind == "agent"]

    def summary_calls(self) -> list[Billed]:
        return [c for c in self.calls if c.kind == "summary"]

    def bill(self, kind: str, tools: list[str], messages: list[BaseMessage], caching: bool) -> Billed:
        fixed = "\n".join(tools)
        sized = [(fixed, self.meter(fixed) if fixed else 0)] + [
            (text, self.meter(text)) for m in messages for text in message_blocks(m)
        ]
        keys = [hash(text) for text, _ in sized]
        total = sum(n for _, n in sized)
        with self.lock:
            if total > self.window:
                self.refused += 1
                raise ContextOverflowError(f"prompt is too long: {total} tokens > {self.window} maximum")
            shared = 0
            for a, b in zip(keys, self.cache, strict=False):
                if a != b:
                    break
                shared += 1
            if caching:
                self.cache = keys
            call = Billed(
                kind=kind,
                messages=list(messages),
                input_tokens=total,
                cached_tokens=sum(n for _, n in sized[:shared]),
                output_tokens=0,
                caching=caching,
                at_call=len(self.agent_calls()),
                prefix_tokens=sized[0][1] + (sized[1][1] if messages and messages[0].type == "system" else 0),
                sent=self.sent,
            )
            self.calls.append(call)
        return call

    def summary(self, messages: list[BaseMessage], input_tokens: int) -> str:
        """A faithful summary: the user messages it was handed, verbatim (the newest
        within 4,000 tokens, in order), and notes of about a tenth of its input (at most
        2,000 tokens)."""
        handed = "\n".join(message_text(m) for m in messages)
        kept: list[str] = []
        quoted = 0
        for u in reversed([u for u in self.user_texts if u in handed]):
            quoted += self.meter(u)
            if quoted > SUMMARY_QUOTE_TOKENS:
                break
            kept.append(u)
        budget = min(int(SUMMARY_SHARE * input_tokens), SUMMARY_MAX_TOKENS)
        rng = random.Random(input_tokens)
        notes: list[str] = []
        written = 0
        while written < budget:
            notes.append(" ".join(rng.choice(WORDS) for _ in range(12)) + ".")
            written += count_text_tokens(notes[-1] + " ", "o200k_base")
        return (
            "The user's messages, verbatim:\n"
            + "\n".join(f"- {u}" for u in reversed(kept))
            + "\n\nNotes on the work: "
            + " ".join(notes)
        )


class BilledModel(BaseChatModel):
    """The agent's model (``script`` answers it) or, with ``summarizer``, a summary
    model, both billed by ``provider``. A summary is written for a call fastcompact tags
    as its summary request, and for every call to a summarizer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    provider: Any
    script: Callable[[list[BaseMessage]], AIMessage] | None = None
    summarizer: bool = False
    tool_texts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {"ls_provider": "anthropic", "ls_model_name": "claude-scripted", "ls_model_type": "chat"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> BilledModel:  # type: ignore[override]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self.tool_texts = [json.dumps(convert_to_openai_tool(t), sort_keys=True) for t in tools]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        p: Provider = self.provider
        summary = self.summarizer or is_summary_call(run_manager)
        caching = "cache_control" in kw or not summary
        tools = [] if self.summarizer else self.tool_texts
        call = p.bill("summary" if summary else "agent", tools, messages, caching)
        if summary:
            reply = AIMessage(p.summary(messages, call.input_tokens))
        else:
            assert self.script is not None
            reply = self.script(list(messages))
        call.output_tokens = p.meter(message_text(reply))
        total = call.input_tokens
        usage = {
            "input_tokens": total,
            "output_tokens": call.output_tokens,
            "total_tokens": total + call.output_tokens,
            "input_token_details": {
                "cache_read": call.cached_tokens,
                "cache_creation": (total - call.cached_tokens) if caching else 0,
            },
        }
        fresh = total - call.cached_tokens
        reply = reply.model_copy(
            update={
                "usage_metadata": usage,
                "response_metadata": {
                    "model_provider": "anthropic",
                    "model_name": "claude-scripted",
                    # Anthropic's own shape: input_tokens is what was neither read nor written.
                    "usage": {
                        "input_tokens": 0 if caching else fresh,
                        "cache_creation_input_tokens": fresh if caching else 0,
                        "cache_read_input_tokens": call.cached_tokens,
                        "output_tokens": call.output_tokens,
                    },
                },
            }
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

"""An offline chat model that plays a coding agent from a script, and helpers to drive
real agent graphs with it.

The script decides each reply from the last message alone (and the call it answers),
which always survives compaction, so a session of any length runs the same way with
or without summaries in between.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

FILE_LINES = 40


def file_body(step: int) -> str:
    """The text the agent writes at `step`: long enough that reads add up."""
    return "\n".join(
        f"# step {step} line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(FILE_LINES)
    )


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def _caller(messages: list[BaseMessage], call_id: str) -> dict[str, Any] | None:
    for m in reversed(messages):
        for c in getattr(m, "tool_calls", None) or []:
            if c.get("id") == call_id:
                return c
    return None


def tools_of_step(step: int) -> list[str]:
    """The tools the agent calls at `step`, in order."""
    tools = ["write_todos"] if step % 10 == 1 else []
    tools += ["write_file", "read_file"]
    tools += ["edit_file"] if step % 3 == 0 else []
    tools += ["grep"] if step % 4 == 0 else []
    tools += ["ls"] if step % 5 == 0 else []
    return [*tools, "execute"]


def messages_of_steps(steps: range) -> int:
    """Messages a run of `steps` adds to the state: the request, a call and a result per
    tool, and the answer."""
    return sum(2 + 2 * len(tools_of_step(s)) for s in steps)


def _step_call(tool: str, step: int) -> AIMessage:
    path = f"/work/s{step}.py"
    args: dict[str, Any] = {
        "write_todos": {
            "todos": [
                {"content": f"finish step {s}", "status": "in_progress" if s == step else "pending"}
                for s in range(step, step + 10)
            ]
        },
        "write_file": {"file_path": path, "content": file_body(step)},
        "read_file": {"file_path": path},
        "edit_file": {
            "file_path": path,
            "old_string": f"# step {step} line 0:",
            "new_string": f"# step {step} first:",
        },
        "grep": {"pattern": f"step {step} line 1:", "path": "/work"},
        "ls": {"path": "/work"},
        "execute": {"command": f"echo ran step {step}"},
    }[tool]
    return _call(tool, args, f"{tool}-{step}")


def coding_script(messages: list[BaseMessage]) -> AIMessage:
    """One user step: (todos every tenth step), write a file, read it back, (edit it,
    grep, list the folder on some steps), run a command, answer."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        found = re.search(r"step (\d+)", str(last.content))
        step = int(found.group(1)) if found else 0
        return _step_call(tools_of_step(step)[0], step)
    if isinstance(last, ToolMessage):
        call = _caller(messages, last.tool_call_id) or {}
        name, _, step_text = str(call.get("id", "x-0")).rpartition("-")
        step = int(step_text) if step_text.isdigit() else 0
        tools = tools_of_step(step)
        if name in tools and tools.index(name) + 1 < len(tools):
            return _step_call(tools[tools.index(name) + 1], step)
        return AIMessage(f"Step {step} is done: the file is written, read back and run.")
    return AIMessage("Ready.")


def is_summary_call(run_manager: Any) -> bool:
    """Whether a model call is fastcompact's summary request (its run is tagged so)."""
    return "fastcompact:summary" in (getattr(run_manager, "tags", None) or [])


def pair_problems(messages: list[BaseMessage]) -> list[str]:
    """Tool pairs broken in a model's input."""
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    problems = [f"result without call: {i}" for i in answered - calls]
    problems += [f"call without result: {i}" for i in calls - answered]
    if messages and isinstance(messages[0], ToolMessage):
        problems.append("view starts with a tool result")
    return problems


class ScriptedChatModel(BaseChatModel):
    """Replies from `script`; summarizer prompts (they carry a transcript) get a
    summary. Every input is recorded; `summary_failures` makes the next summaries
    raise (or `empty_summaries` answer nothing), to test failure handling."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Callable[[list[BaseMessage]], AIMessage] = coding_script
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    summary_calls: list[str] = Field(default_factory=list)
    # The messages of each summary asked in the agent's own request.
    summary_requests: list[list[BaseMessage]] = Field(default_factory=list)
    # How many agent calls had been made when each of those was asked.
    summary_at: list[int] = Field(default_factory=list)
    summary_failures: int = 0
    empty_summaries: int = 0
    too_long_first: int = 0
    lock: Any = Field(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        first = str(messages[0].content) if messages else ""
        if "<transcript>" in first:
            return ChatResult(generations=[ChatGeneration(message=self._summary(first))])
        if is_summary_call(run_manager):
            # Asked in the agent's own request: the whole input is what it summarizes.
            with self.lock:
                self.summary_requests.append(list(messages))
                self.summary_at.append(len(self.calls))
            prompt = "\n".join(str(m.content) for m in messages)
            return ChatResult(generations=[ChatGeneration(message=self._summary(prompt))])
        with self.lock:
            self.calls.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script(list(messages)))])

    def _summary(self, prompt: str) -> AIMessage:
        with self.lock:
            self.summary_calls.append(prompt)
            if self.too_long_first > 0:
                self.too_long_first -= 1
                raise ValueError("prompt is too long: 250000 tokens > 200000 maximum")
            if self.summary_failures > 0:
                self.summary_failures -= 1
                raise RuntimeError("summarizer unavailable")
            if self.empty_summaries > 0:
                self.empty_summaries -= 1
                return AIMessage("<analysis>thinking only</analysis>")
            n = len(self.summary_calls)
        steps = sorted({int(s) for s in re.findall(r"step (\d+)", prompt)})
        done = f"steps {steps[0]}-{steps[-1]}" if steps else "nothing yet"
        text = (
            f"<analysis>Going through the transcript.</analysis>\n<summary>\nSummary {n}: {done}.\n</summary>"
        )
        usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4}
        return AIMessage(text, usage_metadata={**usage, "total_tokens": sum(usage.values())})


def model_calls(model: ScriptedChatModel) -> list[list[BaseMessage]]:
    with model.lock:
        return [list(c) for c in model.calls]


# --- a model that reports usage the way a provider does ---------------------------


def message_text(m: BaseMessage) -> str:
    """What a provider would tokenize of a message: its role, its text, and its tool
    calls as JSON (the key of the prompt-cache prefix, too)."""
    content = m.content
    if isinstance(content, list):
        content = "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
    calls = getattr(m, "tool_calls", None) or []
    framing = [json.dumps({k: c[k] for k in ("name", "args", "id")}, sort_keys=True) for c in calls]
    call_id = getattr(m, "tool_call_id", None)
    return "\n".join([m.type, *([call_id] if call_id else []), str(content), *framing])


def message_blocks(m: BaseMessage) -> list[str]:
    """``message_text`` parted where a provider may cache a prefix within a message:
    between its text blocks (the role goes with the first, tool calls with the last)."""
    whole = message_text(m)
    content = m.content
    if not isinstance(content, list) or len(content) < 2:
        return [whole]
    texts = [b if isinstance(b, str) else str(b.get("text", "")) for b in content]
    at = whole.find("".join(texts))
    if at < 0:
        return [whole]
    head, tail = whole[:at], whole[at + len("".join(texts)) :]
    return [head + texts[0], *texts[1:-1], texts[-1] + tail]


class TokenMeter:
    """Exact o200k sizes of texts, remembered by text (sessions repeat the same
    messages call after call)."""

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._sizes.get(text)
        if found is None:
            from fastcompact import count_text_tokens

            found = self._sizes[text] = count_text_tokens(text, "o200k_base") + 3
        return found


@dataclasses.dataclass
class MeteredCall:
    """One call as the provider saw it."""

    messages: list[BaseMessage]
    input_tokens: int
    cached_tokens: int
    output_tokens: int


class ProviderChatModel(BaseChatModel):
    """Answers from ``script`` and reports usage on every answer as a provider does:
    ``input_tokens`` is the exact o200k size of what it was sent, the system prompt and
    the tool schemas included, and the prompt-cache read is the longest prefix shared
    with the previous call (system and tools first, then whole messages)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Callable[[list[BaseMessage]], AIMessage] = coding_script
    provider: str = "anthropic"
    model_name: str = "scripted-1"
    meter: Any = Field(default_factory=TokenMeter)
    calls: list[MeteredCall] = Field(default_factory=list)
    tool_texts: list[str] = Field(default_factory=list)
    previous: list[int] = Field(default_factory=list)
    lock: Any = Field(default_factory=threading.Lock)
    # Raised once the input exceeds this many tokens, as a provider refuses an overflow.
    refuse_above: int | None = None
    # Tokens the provider counts that the agent's request does not show (a gateway's
    # own system prompt, say): part of the fixed prefix.
    hidden_tokens: int = 0
    # Behind a proxy or router, the model object may not say who serves it
    # (`declares_provider`), and its answers may not either (`answers_name_provider`).
    declares_provider: bool = True
    answers_name_provider: bool = True

    @property
    def _llm_type(self) -> str:
        return "provider-scripted"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        params = {"ls_model_name": self.model_name, "ls_model_type": "chat"}
        return {**params, "ls_provider": self.provider} if self.declares_provider else params

    def bind_tools(self, tools: Any, **kwargs: Any) -> ProviderChatModel:  # type: ignore[override]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self.tool_texts = [json.dumps(convert_to_openai_tool(t), sort_keys=True) for t in tools]
        return self

    def _sizes(self, messages: list[BaseMessage]) -> list[tuple[str, int]]:
        fixed = "\n".join(self.tool_texts)
        return [(fixed, self.hidden_tokens + (self.meter(fixed) if fixed else 0))] + [
            (text, self.meter(text)) for text in map(message_text, messages)
        ]

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        sized = self._sizes(messages)
        keys = [hash(text) for text, _ in sized]
        total = sum(n for _, n in sized)
        with self.lock:
            shared = 0
            for a, b in zip(keys, self.previous, strict=False):
                if a != b:
                    break
                shared += 1
            cached = sum(n for _, n in sized[:shared])
            self.previous = keys
        if self.refuse_above is not None and total > self.refuse_above:
            raise ValueError(f"prompt is too long: {total} tokens > {self.refuse_above} maximum")
        reply = self.script(list(messages))
        output = self.meter(message_text(reply))
        usage = {
            "input_tokens": total,
            "output_tokens": output,
            "total_tokens": total + output,
            "input_token_details": {"cache_read": cached, "cache_creation": total - cached},
        }
        reply = reply.model_copy(
            update={
                "usage_metadata": usage,
                "response_metadata": {
                    **({"model_provider": self.provider} if self.answers_name_provider else {}),
                    "model_name": self.model_name,
                    "usage": {
                        "input_tokens": total,
                        "output_tokens": output,
                        "cache_read_input_tokens": cached,
                    },
                },
            }
        )
        with self.lock:
            self.calls.append(MeteredCall(list(messages), total, cached, output))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def compacting_agent(model: BaseChatModel, backend: Any, **kw: Any) -> Any:
    """A real ``create_deep_agent`` graph with ``CompactionMiddleware`` on ``backend``
    and an in-memory checkpointer (``kw`` go to ``create_deep_agent``)."""
    from deepagents import create_deep_agent
    from fastcompact import CompactionMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    middleware = [CompactionMiddleware(backend=backend)]
    return create_deep_agent(
        model=model, backend=backend, middleware=middleware, checkpointer=InMemorySaver(), **kw
    )

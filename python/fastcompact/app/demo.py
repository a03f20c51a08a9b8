"""``fastcompact demo``: a real DeepAgents agent works through the bundled coding
session with ``CompactionMiddleware``, offline.

The agent's model is a replay of the recorded session (it answers each message with
the reply recorded for it, and writes summaries from the transcript it is given); the
tools are DeepAgents' real file and shell tools, working on a copy of the project in a
temporary directory. Each turn prints how full the context is, which pass fired and
when a summary was made.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from fastcompact.api.counting import plural
from fastcompact.samples import load_session, session_files

WINDOW = 24_000
FAST_TURNS = 14
FAST_WINDOW = 16_000


class ReplayModel(BaseChatModel):
    """Answers from a recorded session: a request gets the reply recorded for it, a tool
    result the reply that followed it. Decided by the last message alone, which every
    compaction keeps, so replay survives summaries. Summary requests get a summary made
    from the transcript they carry."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    after_request: dict[str, AIMessage] = Field(default_factory=dict)
    after_call: dict[str, AIMessage] = Field(default_factory=dict)
    summaries: int = 0
    tools: list[Any] = Field(default_factory=list)
    # The input size of each agent call, as the model counts what it was sent (the
    # system prompt and the tool schemas included).
    inputs: list[int] = Field(default_factory=list)

    @classmethod
    def of(cls, recorded: list[BaseMessage], **kw: Any) -> ReplayModel:
        after_request: dict[str, AIMessage] = {}
        after_call: dict[str, AIMessage] = {}
        for i, m in enumerate(recorded[:-1]):
            nxt = next((r for r in recorded[i + 1 :] if isinstance(r, AIMessage)), None)
            if nxt is None:
                continue
            if isinstance(m, HumanMessage):
                after_request[str(m.content)] = nxt
            elif isinstance(m, ToolMessage):
                after_call[m.tool_call_id] = nxt
        return cls(after_request=after_request, after_call=after_call, **kw)

    @property
    def _llm_type(self) -> str:
        return "replay"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReplayModel:
        self.tools = list(tools)
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        from fastcompact import count_tokens

        last = messages[-1]
        text = str(last.content)
        prompt = str(messages[0].content)
        tags = getattr(run_manager, "tags", None) or []
        if "fastcompact:summary" in tags and "<transcript>" not in prompt:
            # Asked in the agent's own request: the messages before the instruction.
            from fastcompact import _core

            prompt = "<transcript>" + _core.render_transcript(messages[:-1])
        if "<transcript>" in prompt:
            self.summaries += 1
            return ChatResult(generations=[ChatGeneration(message=AIMessage(_summary_of(prompt)))])
        if isinstance(last, ToolMessage) and last.tool_call_id in self.after_call:
            reply = self.after_call[last.tool_call_id]
        elif isinstance(last, HumanMessage) and text in self.after_request:
            reply = self.after_request[text]
        else:
            reply = AIMessage("I have nothing recorded for that.")
        # Usage as a provider reports it: what it was sent, and what it answered.
        sent = count_tokens(messages, tools=self.tools)
        self.inputs.append(sent)
        answer = count_tokens([reply])
        usage = {"input_tokens": sent, "output_tokens": answer, "total_tokens": sent + answer}
        return ChatResult(
            generations=[ChatGeneration(message=reply.model_copy(update={"usage_metadata": usage}))]
        )


def _summary_of(prompt: str) -> str:
    """A summary in the prompt's nine sections, from the transcript's own lines."""
    transcript = prompt.split("<transcript>", 1)[-1]
    requests = re.findall(r"### \[\d+\] Human\n(.+)", transcript)
    files = sorted(set(re.findall(r'"file_path":"([^"]+)"', transcript)))
    last_ai = re.findall(r"### \[\d+\] AI\n([^\n-][^\n]+)", transcript)
    earlier = [r for r in requests if not r.startswith("This conversation was compacted")]
    bullets = "\n".join(f"   - {r}" for r in earlier) or "   - (none)"
    return (
        "<analysis>Read the transcript in order.</analysis>\n<summary>\n"
        f"1. Primary request and intent: the user is improving the inventory project.\n"
        f"2. Key technical concepts: Python dataclasses, Decimal prices, logging.\n"
        f"3. Files and code: {', '.join(files) or 'none'}.\n"
        "4. Errors and fixes: none recorded.\n"
        "5. Problem solving: each change was checked by parsing the edited module.\n"
        f"6. All user messages:\n{bullets}\n"
        "7. Pending tasks: none beyond the next request.\n"
        f"8. Current work: {last_ai[-1] if last_ai else 'between requests'}\n"
        "9. Next step: wait for the user's next request.\n</summary>"
    )


@dataclass
class DemoResult:
    turns: int
    model_calls: int
    summaries: list[dict[str, Any]] = field(default_factory=list)
    passes_fired: dict[str, int] = field(default_factory=dict)
    raw_messages: int = 0
    raw_tokens: int = 0
    last_view_tokens: int = 0
    peak_fill: float = 0.0
    calls_over_window: int = 0
    archive_files: list[str] = field(default_factory=list)
    root: str = ""
    kept: bool = True
    seconds: float = 0.0


# Marks a folder as the demo's own, so that a later run may reuse it.
MARKER = ".fastcompact-demo"


class DemoError(Exception):
    """The demo cannot run as asked (its folder, its window)."""


# The gauge's full and empty cells, and their ASCII stand-ins.
BARS = "█░"
ASCII_BARS = "#-"


def _gauge(fill: float, width: int = 24, bars: str = BARS) -> str:
    full = min(width, round(fill * width))
    return bars[0] * full + bars[1] * (width - full)


def _workdir(root: str | None) -> Path:
    """The folder the project is copied to: a new temporary one, or ``root`` when it is
    empty or a previous demo's (whose files are removed first, so that nothing of the
    earlier run is counted)."""
    if root is None:
        workdir = Path(tempfile.mkdtemp(prefix="fastcompact-demo-"))
    else:
        workdir = Path(root)
        if workdir.exists() and not workdir.is_dir():
            raise DemoError(f"--root {root}: not a directory")
        if workdir.is_dir() and any(workdir.iterdir()):
            if not (workdir / MARKER).is_file():
                raise DemoError(
                    f"--root {root}: the folder is not empty and not an earlier demo's; give an empty "
                    "or new folder"
                )
            for child in workdir.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DemoError(f"--root {root}: {e.strerror or e}") from e
    (workdir / MARKER).write_text("A fastcompact demo's project; a later demo run may replace it.\n")
    return workdir


def run(
    *,
    fast: bool = False,
    window: int | None = None,
    root: str | None = None,
    keep: bool = False,
    ascii_bars: bool = False,
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Run the demo and return its figures; ``echo`` receives one line per turn. A
    temporary project is removed at the end unless ``keep``; a ``root`` given is kept."""
    from langchain_core.runnables import RunnableConfig

    import fastcompact
    from fastcompact import WindowTooSmallError

    started = time.perf_counter()
    recorded = load_session("coding")
    requests = [str(m.content) for m in recorded if isinstance(m, HumanMessage)]
    if fast:
        requests = requests[:FAST_TURNS]
    window = window or (FAST_WINDOW if fast else WINDOW)
    workdir = _workdir(root)
    result = DemoResult(turns=len(requests), model_calls=0, root=str(workdir), kept=keep or root is not None)
    try:
        model = ReplayModel.of(recorded, profile={"max_input_tokens": window})
        agent = _agent(model, workdir)
        cfg: RunnableConfig = {"configurable": {"thread_id": "demo"}}
        history = workdir / "conversation_history" / "demo"
        what = f"{len(requests)} requests, a {window:,}-token window"
        echo(f"A DeepAgents coding agent, replayed offline: {what}.")
        echo(f"Project copied to {workdir}\n")
        previous: dict[str, int] = {}
        archived = 0
        for turn, request in enumerate(requests, 1):
            calls_before, inputs_before = model.summaries, len(model.inputs)
            try:
                agent.invoke({"messages": [HumanMessage(request)]}, cfg)
            except WindowTooSmallError as e:
                raise DemoError(f"turn {turn}: {e}") from None
            state = agent.get_state(cfg).values
            counters = state.get("_fastcompact") or {}
            plan = counters.get("last_plan") or {}
            inputs = model.inputs[inputs_before:]
            result.calls_over_window += sum(1 for n in inputs if n > window)
            sent = inputs[-1] if inputs else 0
            fill = sent / window
            result.peak_fill = max([result.peak_fill, *(n / window for n in inputs)])
            notes = [f"{name} fired" for name in _fired(plan, previous, result)]
            event = state.get("_summarization_event")
            files = _archive_files(history)
            if _new_summaries(files[archived:], event, turn, result, notes):
                previous = {}
            archived = len(files)
            summarizer = " (summarizer called)" if model.summaries > calls_before else ""
            echo(
                f"turn {turn:>2} {_gauge(fill, bars=ASCII_BARS if ascii_bars else BARS)} "
                f"{100 * fill:5.1f}%  {sent:>6,} tokens  " + ("; ".join(notes) + summarizer if notes else "")
            )
        state = agent.get_state(cfg).values
        raw = state["messages"]
        result.model_calls = len(model.inputs)
        result.raw_messages = len(raw)
        result.raw_tokens = fastcompact.count_tokens(raw)
        result.last_view_tokens = model.inputs[-1] if model.inputs else 0
        result.archive_files = sorted(str(p) for p in history.glob("*.md")) if history.exists() else []
        result.seconds = time.perf_counter() - started
        _report(result, window, history, echo)
    finally:
        if not result.kept:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def _agent(model: ReplayModel, workdir: Path) -> Any:
    """A DeepAgents coding agent over a copy of the recorded project in ``workdir``."""
    from deepagents import create_deep_agent
    from deepagents.backends import LocalShellBackend
    from langchain.agents.middleware import TodoListMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    from fastcompact import CompactionMiddleware

    for path, text in session_files("coding").items():
        target = workdir / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    backend = LocalShellBackend(root_dir=workdir, virtual_mode=True)
    middleware: list[Any] = [CompactionMiddleware(backend=backend), TodoListMiddleware()]
    return create_deep_agent(
        model=model, backend=backend, middleware=middleware, checkpointer=InMemorySaver()
    )


def _fired(plan: dict[str, Any], previous: dict[str, int], result: DemoResult) -> list[str]:
    """The passes that made new edits on this turn (``previous``: each one's edits so
    far, brought up to date), counted in ``result``."""
    fired = []
    for p in plan.get("passes", []):
        if p["edits"] > previous.get(p["name"], 0):
            fired.append(p["name"])
            result.passes_fired[p["name"]] = result.passes_fired.get(p["name"], 0) + 1
        previous[p["name"]] = p["edits"]
    return fired


def _archive_files(history: Path) -> list[Path]:
    """The archive files, in the order written. Every summary writes one (beside any
    notes file it saved), so the new ones are a turn's summaries."""
    if not history.exists():
        return []
    numbered = (f for f in history.glob("*.md") if f.stem.split("-")[0].isdigit())
    return sorted(numbered, key=lambda f: int(f.stem.split("-")[0]))


def _new_summaries(
    new: list[Path], event: dict[str, Any] | None, turn: int, result: DemoResult, notes: list[str]
) -> bool:
    """Record this turn's summaries (one a new archive file) in ``result`` and
    ``notes``; whether there were any."""
    for f in new:
        result.summaries.append({"turn": turn, "file": f"/conversation_history/demo/{f.name}"})
    if not new or not event:
        return False
    count = (event.get("fastcompact") or {}).get("summarized_messages", "?")
    label = (
        f"SUMMARY #{len(result.summaries)}"
        if len(new) == 1
        else f"{len(new)} SUMMARIES, last #{len(result.summaries)}"
    )
    notes.append(f"{label} ({count} msgs) -> {event['file_path']}")
    return True


def _report(result: DemoResult, window: int, history: Path, echo: Callable[[str], None]) -> None:
    """The demo's closing lines: before, after, the passes, the archive."""
    echo("")
    echo(
        f"Before: {result.raw_messages:,} messages, {result.raw_tokens:,} tokens in the agent's state "
        f"({result.raw_tokens / window:.1f}x the window)."
    )
    over = f"{result.calls_over_window} of {result.model_calls} calls over it"
    summaries = plural(len(result.summaries), "summary", "summaries")
    echo(
        f"After:  the model's last input was {result.last_view_tokens:,} tokens; peak fill "
        f"{100 * result.peak_fill:.0f}% of the window ({over}); {summaries}."
    )
    fired_text = ", ".join(f"{k} x{v}" for k, v in sorted(result.passes_fired.items())) or "none"
    echo(f"Cheap passes fired: {fired_text}.")
    kept = "" if result.kept else "; removed with the temporary project, --keep keeps it"
    archive_files = plural(len(result.archive_files), "file")
    echo(f"Archive: {archive_files} under {history} (nothing was lost{kept}).")
    echo(f"Done in {result.seconds:.1f} s.")

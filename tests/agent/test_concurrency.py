"""One middleware instance shared by 200 concurrent conversations (async and threads):
no cross-talk, no deadlock, and the same results as running them one by one."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fastcompact
from deepagents import create_deep_agent
from deepagents.backends import StateBackend
from fastcompact import CompactionMiddleware
from fastcompact.samples import coding_session
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel, pair_problems

ASYNC_THREADS = 150
SYNC_THREADS = 50
STEPS = range(1, 5)
WINDOW = 5_000


class PerThreadSummaries(ScriptedChatModel):
    """Summaries that depend only on the prompt (the shared counter of the base class
    would depend on the interleaving)."""

    def _summary(self, prompt: str) -> AIMessage:
        with self.lock:
            self.summary_calls.append(prompt)
        project = re.search(r"project (\w+)", prompt)
        steps = sorted({int(s) for s in re.findall(r"step (\d+)", prompt)})
        label = project.group(1) if project else "?"
        return AIMessage(f"<summary>Project {label}: steps {steps[0]}-{steps[-1]} done.</summary>")


def _agent(model: ScriptedChatModel, mw: CompactionMiddleware) -> Any:
    backend = StateBackend()
    mw.backend = backend
    return create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver())


def _request(thread: str, step: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"Please do step {step} for project {thread}.")]}


def _outcome(agent: Any, thread: str) -> dict[str, Any]:
    state = agent.get_state({"configurable": {"thread_id": thread}}).values
    event = state.get("_summarization_event")
    archives = {
        path: re.sub(r"archived at \S+", "", data["content"] if isinstance(data["content"], str) else "")
        for path, data in (state.get("files") or {}).items()
        if path.startswith("/conversation_history/")
    }
    return {
        "messages": [
            (m.type, str(m.content), [c["name"] for c in getattr(m, "tool_calls", [])])
            for m in state["messages"]
        ],
        "cutoff": event and event["cutoff_index"],
        "summary": event and event["summary_message"].content,
        "archives": archives,
    }


def test_200_conversations_on_one_instance():
    threads = [f"t{i:03d}" for i in range(ASYNC_THREADS + SYNC_THREADS)]
    model = PerThreadSummaries(profile={"max_input_tokens": WINDOW})
    agent = _agent(model, CompactionMiddleware())

    async def conversation(thread: str) -> None:
        for step in STEPS:
            await agent.ainvoke(_request(thread, step), {"configurable": {"thread_id": thread}})

    def sync_conversation(thread: str) -> None:
        for step in STEPS:
            agent.invoke(_request(thread, step), {"configurable": {"thread_id": thread}})

    async def everything() -> None:
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=16) as pool:
            sync = [loop.run_in_executor(pool, sync_conversation, t) for t in threads[ASYNC_THREADS:]]
            await asyncio.wait_for(
                asyncio.gather(*(conversation(t) for t in threads[:ASYNC_THREADS]), *sync), timeout=900
            )

    asyncio.run(everything())
    together = {t: _outcome(agent, t) for t in threads}

    # No cross-talk: every input the model saw belongs to one project.
    for call in model.calls:
        projects = set(re.findall(r"project (t\d{3})", " ".join(str(m.content) for m in call)))
        assert len(projects) <= 1, projects
        assert pair_problems([m for m in call if m.type != "system"]) == []
    assert all(o["summary"] for o in together.values()), "every conversation was compacted"

    # The same as one by one, with a fresh instance.
    alone_model = PerThreadSummaries(profile={"max_input_tokens": WINDOW})
    alone = _agent(alone_model, CompactionMiddleware())
    for t in threads:
        for step in STEPS:
            alone.invoke(_request(t, step), {"configurable": {"thread_id": t}})
        assert _outcome(alone, t) == together[t], t


def _plan_of(messages: list[Any]) -> tuple[Any, ...]:
    p = fastcompact.plan(messages, max_input_tokens=200_000)
    edits = [(e.index, e.pass_name, e.field, e.call, str(e.value)) for e in p.edits]
    return (p.tokens_before, p.tokens_after, p.summary_needed, p.summary_cutoff, edits)


def test_eight_threads_plan_100_conversations_as_one_thread_does():
    """Long plans (a first read of 1,500 messages) run with the interpreter released:
    eight threads planning their own conversations, each twice, get the plans one
    thread gets."""
    sessions = [
        [m.model_copy(update={"id": f"c{k}-{m.id}"}) for m in coding_session(1_500, seed=k % 5)]
        for k in range(100)
    ]
    fastcompact.clear_cache()
    alone = [[_plan_of(s), _plan_of(s)] for s in sessions]
    fastcompact.clear_cache()
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda s: [_plan_of(s), _plan_of(s)], sessions))
    assert together == alone
    assert all(a[0][4] for a in alone), "every conversation has edits to compare"

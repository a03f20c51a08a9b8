"""The tools compaction gives the agent: ``compact_conversation``
(:class:`CompactionToolMiddleware`) and ``recall`` on its own (:class:`RecallMiddleware`;
a ``CompactionMiddleware`` gives ``recall`` itself).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain.tools import ToolRuntime
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.types import Command

from fastcompact.agent import compaction, drafting, reading, steps, summarize
from fastcompact.agent.counters import Counters
from fastcompact.agent.middleware import CompactionMiddleware
from fastcompact.agent.recall_tool import recall_tool
from fastcompact.agent.state import STATE_KEY, CompactionState, Draft, Turn
from fastcompact.api.cutoffs import cutoff_once

if TYPE_CHECKING:
    from fastcompact.agent.commit import Outcome
    from fastcompact.agent.steps import Steps


class CompactionToolMiddleware(AgentMiddleware):
    """Adds a ``compact_conversation`` tool that compacts on request, once the
    conversation has reached half of ``mw``'s trigger. It shares ``mw``'s settings and
    state, and answers "nothing to compact", a line with the counts, or the error.

    Examples:
        >>> from fastcompact import CompactionMiddleware, CompactionToolMiddleware
        >>> tool_mw = CompactionToolMiddleware(CompactionMiddleware())
        >>> [t.name for t in tool_mw.tools]  # recall comes with the CompactionMiddleware
        ['compact_conversation']
        >>> [t.name for t in CompactionToolMiddleware(CompactionMiddleware(recall=False)).tools]
        ['compact_conversation', 'recall']
    """

    state_schema = CompactionState

    def __init__(self, compaction: CompactionMiddleware, *, system_prompt: str | None = None) -> None:
        super().__init__()
        if not isinstance(compaction, CompactionMiddleware):
            raise ValueError(f"expected a CompactionMiddleware, got {type(compaction).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValueError(f"system_prompt: expected a str, got {type(system_prompt).__name__}")
        self.compaction = compaction
        # compact-middleware's name for it.
        self._compaction = compaction
        self.system_prompt = system_prompt
        # The recall tool, unless the compaction middleware gives it already.
        has_recall = any(getattr(t, "name", None) == "recall" for t in compaction.tools)
        self.tools = [self._tool()] if has_recall else [self._tool(), recall_tool()]

    def _prompted(self, request: ModelRequest) -> ModelRequest:
        """The request with ``system_prompt`` (a nudge to compact or recall when it
        helps) after the agent's own system prompt."""
        if not self.system_prompt:
            return request
        system = request.system_message
        text = summarize.text_of(system) if system is not None else ""
        joined = f"{text}\n\n{self.system_prompt}" if text else self.system_prompt
        return request.override(system_message=SystemMessage(joined))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Adds ``system_prompt`` to the model's system prompt, when given."""
        return handler(self._prompted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """The async twin of :meth:`wrap_model_call`."""
        return await handler(self._prompted(request))

    def _tool(self) -> Any:
        from langchain_core.tools import StructuredTool

        def compact_conversation(runtime: ToolRuntime) -> Command[Any]:
            return steps.run(self._run(runtime))

        async def acompact_conversation(runtime: ToolRuntime) -> Command[Any]:
            return await steps.arun(self._run(runtime))

        return StructuredTool.from_function(
            func=compact_conversation,
            coroutine=acompact_conversation,
            name="compact_conversation",
            description=(
                "Summarize the older part of this conversation to free context space. "
                "The full text stays archived. Takes no arguments."
            ),
        )

    def _request(self, runtime: Any) -> tuple[ModelRequest, Turn, Draft | None] | None:
        """A model request standing in for the conversation at the tool call, its turn,
        and the compaction draft (``None`` when there is nothing to compact)."""
        setup = self.compaction.setup
        state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
        messages = list(state.get("messages") or [])
        # The AI message that called this tool stays: its answer is not in the state yet.
        raw = messages[:-1] if messages and getattr(messages[-1], "tool_calls", None) else messages
        request = ModelRequest(
            model=setup.summary_model_or(None),
            messages=raw,
            system_message=None,
            tools=[],
            state=state,
            runtime=runtime,
        )
        known = Counters.from_state(state.get(STATE_KEY))
        turn = reading.read_turn(setup, request, known.window)
        # Half the trigger: it would fire on a conversation twice this size.
        tokens = turn.plan.tokens_after
        settings = setup.plan_settings(turn.window, None)
        eligible = settings.trigger_fires(len(turn.view) * 2, tokens * 2.0, turn.window)
        if not eligible:
            return request, turn, None
        cut = cutoff_once(turn.view, settings.resolved["keep"], turn.window)
        return request, turn, drafting.make_draft(setup, request, turn, forced=False, cut=cut, recall=True)

    def _reply(
        self, runtime: Any, turn: Turn | None, outcome: Outcome | None, error: BaseException | None
    ) -> Command[Any]:
        call_id = getattr(runtime, "tool_call_id", None) or ""
        if error is not None:
            text = f"Compaction failed: {type(error).__name__}: {error}"
            return Command(update={"messages": [ToolMessage(text, tool_call_id=call_id, status="error")]})
        if outcome is None or not outcome.committed:
            return Command(
                update={"messages": [ToolMessage("Nothing to compact yet.", tool_call_id=call_id)]}
            )
        i = outcome.info
        where = f" The full text is saved at {i['file_path']}." if i["file_path"] else ""
        text = (
            f"Compacted {i['summarized_messages']} messages into a summary, keeping {i['kept_messages']}: "
            f"{i['tokens_before']:,} -> {i['tokens_after']:,} tokens.{where}"
        )
        return Command(update={**outcome.update, "messages": [ToolMessage(text, tool_call_id=call_id)]})

    def _run(self, runtime: Any) -> Steps[Command[Any]]:
        try:
            prepared = self._request(runtime)
            if prepared is None:
                return self._reply(runtime, None, None, None)
            request, turn, draft = prepared
            if draft is None:
                return self._reply(runtime, turn, None, None)
            outcome = yield from compaction.compact(self.compaction.setup, request, turn, draft)
        except Exception as e:
            return self._reply(runtime, None, None, e)
        return self._reply(runtime, turn, outcome, None)


class RecallMiddleware(AgentMiddleware):
    """Adds the ``recall`` tool on its own: the full original of a cleared result, a
    shortened argument or a summarized message, from the raw state. A
    ``CompactionMiddleware`` gives the agent the tool itself (unless made with
    ``recall=False``); given both, the agent is sent one.

    Examples:
        >>> [t.name for t in RecallMiddleware().tools]
        ['recall']
    """

    def __init__(self) -> None:
        super().__init__()
        self.tools = [recall_tool()]

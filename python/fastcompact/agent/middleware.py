"""``CompactionMiddleware``: the cheap passes every model call and, when the price model
says it pays or the trigger says it must, a compaction (a digest or a summary);
``CompactionToolMiddleware``: the same compaction as a tool.

Everything a conversation needs lives in the graph state (``_summarization_event`` in
DeepAgents' shape, ``_fastcompact`` for counters and the last plan), so one instance
serves many threads, subagents and processes, with any checkpointer.

Examples:
    >>> from fastcompact import CompactionMiddleware
    >>> mw = CompactionMiddleware(model="anthropic:claude-sonnet-4-6")
    >>> mw.name
    'SummarizationMiddleware'
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.tools import ToolRuntime
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.types import Command
from typing_extensions import Unpack

from fastcompact.agent import compaction, drafting, fitting, reading, steps, summarize
from fastcompact.agent.fitting import WindowTooSmallError
from fastcompact.agent.pin_tool import pin_tool
from fastcompact.agent.recall_tool import recall_tool
from fastcompact.agent.setup import (
    Setup,
    SummarizationOptions,
    config_from_summarization,
    setup_of,
)
from fastcompact.agent.state import (
    EVENT_KEY,
    STATE_KEY,
    CompactionState,
    Turn,
    emit,
    grow,
    plan_info,
    true_size,
)
from fastcompact.agent.steps import Io, Steps

if TYPE_CHECKING:
    from fastcompact.agent.compaction import Outcome
    from fastcompact.config import CompactionConfig

logger = logging.getLogger("fastcompact")

__all__ = [
    "EVENT_KEY",
    "STATE_KEY",
    "CompactionMiddleware",
    "CompactionState",
    "SummarizationOptions",
    "WindowTooSmallError",
    "config_from_summarization",
]


def _transformers() -> tuple[Any, ...]:
    try:
        from langchain.agents.middleware.internal_call_transformer import InternalCallTransformer
    except ImportError:  # langchain without stream transformers
        return ()
    return (InternalCallTransformer,)


class _InSetup:
    """A setting of the middleware, kept in its :class:`Setup` (the one copy the
    steps read), so that a change after construction reaches them."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, mw: Any, owner: type | None = None) -> Any:
        return self if mw is None else getattr(mw._setup, self.name)

    def __set__(self, mw: Any, value: Any) -> None:
        setattr(mw._setup, self.name, value)


class CompactionMiddleware(AgentMiddleware):
    """Keeps an agent inside its context window.

    Every model call: the effective view is rebuilt from the state's last compaction
    event, the core plans the cheap passes, and the model gets the edited view. When the
    price model says a compaction pays (the span before the turn in progress), or the
    view is still over the trigger, the older span is archived through ``backend`` and
    replaced by a digest or a summary (``CompactionConfig.summarizer``); the event goes
    to the graph state.

    Args:
        model: The model that writes summaries (a chat model or ``"provider:name"``);
            ``None`` uses the agent's own model.
        summary_model: Overrides ``model`` for summaries.
        backend: A DeepAgents backend (or a factory taking the runtime) for the
            history archive and file restoration; ``None`` archives nothing.
        config: A :class:`~fastcompact.CompactionConfig`; fields left out follow the
            DeepAgents defaults for the agent's model.
        recall: Give the agent the ``recall`` tool that every placeholder and every
            line of the memory names (default). ``False`` when another middleware
            gives it (:class:`RecallMiddleware`).
        pin: Give the agent the ``pin`` tool (default): a note it pins (a decision, a
            correction, the plan) stays in view through every compaction, beside what
            the user said still holds, until it unpins it.

    It also takes the keywords of DeepAgents' and LangChain's ``SummarizationMiddleware``
    (``trigger``, including dict clauses, ``keep``, ``token_counter``,
    ``summary_prompt``, ``trim_tokens_to_summarize``, ``truncate_args_settings``,
    ``history_path_prefix``, and the older ``max_tokens_before_summary`` and
    ``messages_to_keep``), mapped onto a ``CompactionConfig``; not together with
    ``config=``. A ``token_counter`` replaces the core's count for the summary trigger:
    it runs in Python over the whole view on every call (``count_tokens_approximately``
    takes about 3 ms at 1,000 messages and 34 ms at 10,000), where the core's count
    reads only the messages it has not seen.

    Its ``name`` is ``"SummarizationMiddleware"``, so ``create_deep_agent(middleware=[mw])``
    puts it in place of the built-in summarizer (main agent and general-purpose
    subagent) instead of adding a second one.

    Examples:
        >>> from fastcompact import CompactionConfig, CompactionMiddleware
        >>> mw = CompactionMiddleware(config=CompactionConfig(trigger=("tokens", 100_000)))
        >>> mw.config.trigger
        ('tokens', 100000)
    """

    state_schema = CompactionState
    transformers = _transformers()
    model = _InSetup()
    summary_model = _InSetup()
    backend = _InSetup()
    token_counter = _InSetup()
    summary_prompt = _InSetup()
    trim_tokens_to_summarize = _InSetup()

    def __init__(
        self,
        model: Any = None,
        *,
        summary_model: Any = None,
        backend: Any = None,
        config: CompactionConfig | None = None,
        recall: bool = True,
        pin: bool = True,
        **summarization: Unpack[SummarizationOptions],
    ) -> None:
        super().__init__()
        for label, flag in (("recall", recall), ("pin", pin)):
            if not isinstance(flag, bool):
                raise ValueError(f"{label}: expected a bool, got {type(flag).__name__}")
        self._setup = setup_of(model, summary_model, backend, config, summarization)
        # Every placeholder and memory line names recall("<id>"): the agent gets the tool
        # with the middleware, in each agent and subagent it is given to; and the pin
        # tool, whose notes the memory keeps beside what the user said still holds.
        self.tools = [*([recall_tool()] if recall else []), *([pin_tool()] if pin else [])]
        # Plan an async call in a worker thread instead of on the event loop. Off:
        # planning holds the interpreter for most of its time (it reads the messages
        # and builds the view), so a thread blocks the loop all the same and adds its
        # hop. `benches/bench_scale.py` measures both: 64 tasks waited 17-29 ms inline
        # and 21-58 ms with the thread (2026-12-02).
        self._plan_in_thread = False

    @property
    def config(self) -> CompactionConfig:
        """The settings (a copy taken at construction; change them by making a new
        middleware)."""
        return self._setup.config

    @property
    def setup(self) -> Setup:
        """What the compaction steps work with: the config, the models, the backend and
        the summarization settings (the compaction tool shares them)."""
        return self._setup

    @property
    def name(self) -> str:
        """``"SummarizationMiddleware"``: DeepAgents replaces its built-in by this name."""
        return "SummarizationMiddleware"

    # --- the hooks -----------------------------------------------------------------

    def _respond(
        self, response: Any, turn: Turn, outcome: Outcome | None, sent: int, *, clipped: bool = False
    ) -> ExtendedModelResponse:
        info = plan_info(turn.plan)
        # What the model was sent, after any summary and clipping, and the prices that
        # decided the batches.
        info["tokens_sent"] = sent
        info["pricing"] = turn.pricing
        update: dict[str, Any] = {}
        counters = turn.counters.copy()
        if outcome is not None:
            if outcome.event is not None:
                update[EVENT_KEY] = outcome.event
            counters = outcome.counters.copy()
            info["summary"] = outcome.info if outcome.committed else None
        if outcome is None or not outcome.committed:
            grow(counters, float(sent))
        previous = turn.counters.last_plan or {}
        fired_passes = [
            p
            for p, q in zip(info["passes"], previous.get("passes") or [], strict=False)
            if p["edits"] > q["edits"]
        ]
        fired = [p["name"] for p in fired_passes]
        counters.call_planned(info)
        if any(p["batched"] for p in fired_passes):
            counters.batch_ran(len(turn.raw))
        if clipped:
            # The usage this answer reports counted results clipped for this call
            # alone, not those the state keeps: it anchors no later count.
            counters.batch_ran(len(turn.raw) + 1)
        update[STATE_KEY] = counters.to_state()
        logger.debug("fastcompact plan: %s", info)
        if fired or (outcome is not None and outcome.committed):
            emit({"plan": info, "passes_fired": fired})
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def _model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Steps[Any]:
        """One model call with the compacted view, summarizing first when the passes
        are not enough; ``handler`` is the sync or the async one (its result is awaited
        by the async driver)."""
        request = _one_recall(request)
        setup = self._setup
        if self._plan_in_thread:
            turn = yield Io.in_thread(reading.read_turn, setup, request)
        else:
            turn = reading.read_turn(setup, request)
        view, size, outcome = yield from compaction.view_to_send(setup, request, turn)
        view, size = yield from fitting.fitted(request, turn, view, size, setup.backend)
        try:
            sent = fitting.answered(view) if turn.plan.orphans else view
            sent = summarize.cache_marked(request.model, sent)
            response = yield Io.either(handler, request.override(messages=sent))
        except Exception as e:
            # The provider says it did not fit: compact once, then let any error through.
            view, outcome = yield from compaction.after_overflow(setup, request, turn, outcome, view, e)
            response = yield Io.either(handler, request.override(messages=view))
            size = true_size(request, turn, view)
        # Sent otherwise than the plan or a committed compaction made it: results clipped.
        made = outcome.view if outcome is not None and outcome.committed else turn.view
        clipped = view is not made
        return self._respond(response, turn, outcome, size, clipped=clipped)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        """Send the model the compacted view; summarize first when the passes are not enough."""
        response: ModelResponse | ExtendedModelResponse = steps.run(self._model_call(request, handler))
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        """The async form of :meth:`wrap_model_call`."""
        return await steps.arun(self._model_call(request, handler))


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
        text = system.text if system is not None else ""
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
            request, turn = reading.tool_turn(self.compaction.setup, runtime)
            draft = drafting.requested(self.compaction.setup, request, turn)
            if draft is None:
                return self._reply(runtime, turn, None, None)
            outcome = yield from compaction.compact(self.compaction.setup, request, turn, draft)
        except Exception as e:
            return self._reply(runtime, None, None, e)
        return self._reply(runtime, turn, outcome, None)


def _one_recall(request: ModelRequest) -> ModelRequest:
    """The request with one ``recall`` tool, when two middlewares each gave one (a
    provider refuses a name twice; the tools are the same)."""
    tools = request.tools or []
    named = [t for t in tools if getattr(t, "name", None) == "recall"]
    if len(named) < 2:
        return request
    first = named[0]
    return request.override(tools=[t for t in tools if getattr(t, "name", None) != "recall" or t is first])

"""One model call's reading of the graph state (:class:`~fastcompact.agent.state.Turn`): the
effective view from the last compaction event, the cheap passes' plan over it, the
time-gap clock, and the price model the call is decided by.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain.agents.middleware.types import ModelRequest

from fastcompact.agent.counters import Counters
from fastcompact.agent.setup import Setup, kept_by_model
from fastcompact.agent.state import (
    EVENT_KEY,
    STATE_KEY,
    CallInput,
    Turn,
    advance,
    progress_of,
    run_metadata,
    unplanned,
    valid_event,
    window_of,
)
from fastcompact.api.cutoffs import cutoff_once
from fastcompact.api.parallel import one_result_a_message
from fastcompact.api.passes import Plan, edited_message, plan_of, run_plan, view_of
from fastcompact.config import CompactionConfig, pricing_of, pricing_of_responses

logger = logging.getLogger("fastcompact")


def _now() -> float:
    return time.time()


def _cache_key(raw: list[Any]) -> str | None:
    """The conversation's key in the cache: its first message's id, which a summary
    leaves in state, so that each compaction (a view starting with a new summary)
    updates the conversation's entry instead of leaving it behind for another."""
    first_id = getattr(raw[0], "id", None) if raw else None
    return f"conversation {first_id}" if isinstance(first_id, str) and first_id else None


def pricing_for(setup: Setup, model: Any, messages: Sequence[Any] = ()) -> str | None:
    """The price model batches are decided by: the config's, else the model's
    provider's, else the provider its newest answer (or the run) names."""
    if setup.config.pricing is not None:
        return setup.config.pricing
    found = kept_by_model(setup.pricing_by_model, model, pricing_of)
    if found is not None or not messages:
        return found
    return pricing_of_responses(messages, run_metadata())


def read_turn(setup: Setup, request: CallInput, window: int | None = None) -> Turn:
    """One model call's reading of the state: the effective view, the cheap passes'
    plan over it, the clock and the price model; a call that cannot be planned sends
    the effective view as it is. A conversation holding a user message of parallel
    tool results is read with one message a result, from the first call that sees one
    on (the counters remember it, so every later index agrees)."""
    state = request.state if isinstance(request.state, Mapping) else {}
    counters = Counters.from_state(state.get(STATE_KEY))
    raw = list(request.messages)
    if counters.split_from is not None:
        return _read(setup, request, one_result_a_message(raw), counters, window)
    turn = _read(setup, request, raw, counters, window)
    if not turn.plan.parallel:
        return turn
    # Read again from the stored counters: the first reading changed its own.
    counters = Counters.from_state(state.get(STATE_KEY))
    summarized = 1 if turn.event else 0
    counters.parallel_results_at(turn.plan.parallel[0] - summarized + turn.prior_cutoff)
    return _read(setup, request, one_result_a_message(raw), counters, window)


def _read(setup: Setup, request: CallInput, raw: list[Any], counters: Counters, window: int | None) -> Turn:
    state = request.state if isinstance(request.state, Mapping) else {}
    event = valid_event(state.get(EVENT_KEY), len(raw))
    prior = event["cutoff_index"] if event else 0
    effective = [event["summary_message"], *raw[prior:]] if event else raw
    # The agent's window, remembered for the compaction tool (which has no model).
    window = window_of(request.model) or window
    counters.window_known(window)
    now, timestamps, new_gap = _clock(setup.config, counters, raw, prior, event is not None, len(effective))
    if new_gap:
        # The gap's clearing rewrites older messages.
        counters.batch_ran(len(raw))
    progress = progress_of(counters, event, prior)
    pricing = pricing_for(setup, request.model, raw)
    try:
        raw_plan = run_plan(
            effective,
            setup.plan_settings(window, pricing),
            max_input_tokens=window,
            now=now,
            system=request.system_message,
            tools=request.tools,
            timestamps=timestamps,
            model=request.model,
            cache_key=_cache_key(raw),
            make_edited=edited_message,
            progress=progress,
        )
        view, plan = view_of(raw_plan), plan_of(raw_plan)
        advance(counters, plan, event, prior, len(raw))
    except Exception as e:
        # Never take the agent down: the model gets the effective view as it is.
        logger.warning(
            "fastcompact: cannot plan this call (%s: %s); sending the messages unchanged",
            type(e).__name__,
            e,
        )
        view, plan = list(effective), unplanned()
    turn = Turn(
        raw=raw,
        event=event,
        prior_cutoff=prior,
        effective=effective,
        view=view,
        plan=plan,
        window=window,
        counters=counters,
        pricing=pricing,
    )
    try:
        _counted(setup, request, turn)
    except Exception as e:  # a caller's counter must not take the agent down
        logger.warning(
            "fastcompact: the token_counter failed (%s: %s); using the core's count", type(e).__name__, e
        )
    return turn


def tool_turn(setup: Setup, runtime: Any) -> tuple[ModelRequest, Turn]:
    """The compaction tool's reading: a model request standing in for the conversation
    at the tool call, and its turn."""
    state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
    messages = list(state.get("messages") or [])
    # The AI message that called the tool stays: its answer is not in the state yet.
    raw = messages[:-1] if messages and getattr(messages[-1], "tool_calls", None) else messages
    request = ModelRequest(
        model=setup.summary_model_or(None),
        messages=raw,
        system_message=None,
        tools=[],
        state=state,
        runtime=runtime,
    )
    # The tool has no agent model: the agent's window is the one its calls remembered.
    known = Counters.from_state(state.get(STATE_KEY))
    return request, read_turn(setup, request, known.window)


def transcript_turn(
    raw: list[Any], edited: list[Any], plan: Plan, window: int | None, session: str, first_index: int
) -> Turn:
    """A saved transcript's turn, as a call would read it: ``raw`` (LangChain messages
    after the leading system ones, which number from ``first_index``) with no earlier
    compaction, the ``edited`` view its ``plan`` made, and counters of a new
    conversation named ``session``."""
    counters = Counters(session=session)
    return Turn(raw, None, 0, raw, edited, plan, window, counters, first_index=first_index)


def _clock(
    config: CompactionConfig, counters: Counters, raw: list[Any], prior: int, summarized: bool, n: int
) -> tuple[float, list[float] | None, bool]:
    """The time-gap pass's clock. Messages rarely say when they were sent, so the
    state remembers when the model was last called: a pause longer than the gap
    threshold since then marks the messages before it as idle-old, for good (the
    mark stays, so the cleared view stays the same on later calls); and whether this
    call marked a new gap."""
    now = _now()
    threshold = config.microcompact.gap_threshold_minutes * 60.0
    new_gap = counters.called(now, len(raw), threshold if config.microcompact.enabled else None)
    gap_at = counters.gap_at
    if gap_at is None:
        return now, None, new_gap
    # The mark in the effective view (the summary holds slot 0 after a compaction).
    at = gap_at - prior + (1 if summarized else 0)
    if at <= (1 if summarized else 0) or at > n:
        return now, None, new_gap
    after = threshold + 1.0
    return after, [0.0] * at + [after] * (n - at), new_gap


def _counted(setup: Setup, request: CallInput, turn: Turn) -> None:
    """With a ``token_counter``, the summary decision follows its count of the view."""
    counter = setup.token_counter
    if counter is None:
        return
    system = request.system_message
    messages = [system, *turn.view] if system is not None else list(turn.view)
    tokens = counter(messages, tools=request.tools) if setup.counter_takes_tools else counter(messages)
    settings = setup.plan_settings(turn.window, turn.pricing)
    due = settings.trigger_fires(len(turn.view), float(tokens), turn.window)
    cut = turn.plan.summary_cutoff
    if due and cut is None:
        cut = cutoff_once(turn.view, settings.resolved["keep"], turn.window, model=request.model)
    turn.plan = dataclasses.replace(
        turn.plan, summary_needed=due, summary_cutoff=cut if due else None, true_tokens=int(tokens)
    )

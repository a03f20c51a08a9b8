"""One model call's reading of the graph state (:class:`~fastcompact.state.Turn`): the
effective view from the last compaction event, the cheap passes' plan over it, the
time-gap clock, and the price model the call is decided by.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import ModelRequest

from fastcompact.config import pricing_of, pricing_of_responses
from fastcompact.helpers import cutoff_once
from fastcompact.passes import _edit_message, _plan_of, _run, _view_of
from fastcompact.state import (
    EVENT_KEY,
    STATE_KEY,
    Turn,
    advance,
    progress_of,
    run_metadata,
    unplanned,
    valid_event,
    window_of,
)

if TYPE_CHECKING:
    from fastcompact import _core
    from fastcompact.config import CompactionConfig

logger = logging.getLogger("fastcompact")


def _now() -> float:
    return time.time()


def _cache_key(raw: list[Any]) -> str | None:
    """The conversation's key in the cache: its first message's id, which a summary
    leaves in state, so that each compaction (a view starting with a new summary)
    updates the conversation's entry instead of leaving it behind for another."""
    first_id = getattr(raw[0], "id", None) if raw else None
    return f"conversation {first_id}" if isinstance(first_id, str) and first_id else None


class Reading:
    """Reading the state for one call, over the middleware's settings."""

    _config: CompactionConfig
    token_counter: Any
    _counter_takes_tools: bool
    _pricing_by_model: dict[int, tuple[Any, str | None]]

    if TYPE_CHECKING:

        def _plan_settings(self, window: int | None, pricing: str | None) -> _core.PlanSettings: ...

    def _pricing(self, model: Any, messages: Sequence[Any] = ()) -> str | None:
        """The price model batches are decided by: the config's, else the model's
        provider's, else the provider its newest answer (or the run) names."""
        if self._config.pricing is not None:
            return self._config.pricing
        key = id(model)
        found = self._pricing_by_model.get(key)
        if found is None or found[0] is not model:
            if len(self._pricing_by_model) >= 64:  # models made per call: keep a few
                self._pricing_by_model.clear()
            found = self._pricing_by_model[key] = (model, pricing_of(model))
        if found[1] is not None or not messages:
            return found[1]
        return pricing_of_responses(messages, run_metadata())

    def _turn(self, request: ModelRequest, window: int | None = None) -> Turn:
        raw = list(request.messages)
        state = request.state if isinstance(request.state, Mapping) else {}
        event = valid_event(state.get(EVENT_KEY), len(raw))
        prior = event["cutoff_index"] if event else 0
        effective = [event["summary_message"], *raw[prior:]] if event else raw
        found = state.get(STATE_KEY)
        counters = dict(found) if isinstance(found, Mapping) else {}
        # The agent's window, remembered for the compaction tool (which has no model).
        window = window_of(request.model) or window
        counters["window"] = window
        gap_before = counters.get("gap_at")
        now, timestamps = self._clock(counters, raw, prior, event is not None, len(effective))
        if counters.get("gap_at") != gap_before:
            # The gap's clearing rewrites older messages: earlier usage counted another view.
            counters["batch_at"] = len(raw)
        progress = progress_of(counters, event, prior)
        pricing = self._pricing(request.model, raw)
        try:
            raw_plan = _run(
                effective,
                self._plan_settings(window, pricing),
                max_input_tokens=window,
                now=now,
                system=request.system_message,
                tools=request.tools,
                timestamps=timestamps,
                model=request.model,
                cache_key=_cache_key(raw),
                make_edited=_edit_message,
                progress=progress,
            )
            view, plan = _view_of(raw_plan), _plan_of(raw_plan)
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
            self._counted(request, turn)
        except Exception as e:  # a caller's counter must not take the agent down
            logger.warning(
                "fastcompact: the token_counter failed (%s: %s); using the core's count", type(e).__name__, e
            )
        return turn

    def _clock(
        self, counters: dict[str, Any], raw: list[Any], prior: int, summarized: bool, n: int
    ) -> tuple[float, list[float] | None]:
        """The time-gap pass's clock. Messages rarely say when they were sent, so the
        state remembers when the model was last called: a pause longer than the gap
        threshold since then marks the messages before it as idle-old, for good (the
        mark stays, so the cleared view stays the same on later calls)."""
        now = _now()
        threshold = self._config.microcompact.gap_threshold_minutes * 60.0
        last = counters.get("last_call_at")
        if isinstance(last, int | float) and now - last > threshold and self._config.microcompact.enabled:
            counters["gap_at"] = int(counters.get("seen", len(raw)))
        counters["last_call_at"] = now
        counters["seen"] = len(raw)
        gap_at = counters.get("gap_at")
        if not isinstance(gap_at, int):
            return now, None
        # The mark in the effective view (the summary holds slot 0 after a compaction).
        at = gap_at - prior + (1 if summarized else 0)
        if at <= (1 if summarized else 0) or at > n:
            return now, None
        after = threshold + 1.0
        return after, [0.0] * at + [after] * (n - at)

    def _counted(self, request: ModelRequest, turn: Turn) -> None:
        """With a ``token_counter``, the summary decision follows its count of the view."""
        counter = self.token_counter
        if counter is None:
            return
        system = request.system_message
        messages = [system, *turn.view] if system is not None else list(turn.view)
        tokens = counter(messages, tools=request.tools) if self._counter_takes_tools else counter(messages)
        settings = self._plan_settings(turn.window, turn.pricing)
        due = settings.trigger_fires(len(turn.view), float(tokens), turn.window)
        cut = turn.plan.summary_cutoff
        if due and cut is None:
            cut = cutoff_once(turn.view, settings.resolved["keep"], turn.window, model=request.model)
        turn.plan = dataclasses.replace(
            turn.plan, summary_needed=due, summary_cutoff=cut if due else None, true_tokens=int(tokens)
        )

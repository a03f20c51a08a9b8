"""When the price model says a compaction pays, and which summarizer costs less: the
schedule a compaction (``compaction.py``) follows with a price model.

A compaction is priced in the core (``PlanSettings.compaction``): what stays is written
to the cache anew, a model summary's call costs its input and output, a digest no call.
It is due once the reads paid since the last compaction for what the view has grown by
reach that price; the span before the turn in progress is compacted then.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage

import fastcompact._core as _core
from fastcompact.agent import summarize
from fastcompact.agent.setup import Setup, kept_by_model
from fastcompact.agent.state import (
    CallInput,
    Draft,
    Summary,
    Turn,
    calls_so_far,
    growth,
    newest_request,
    sent_size,
    true_size,
)
from fastcompact.api.counting import counting_options

if TYPE_CHECKING:
    from fastcompact.agent.counters import Counters


@dataclasses.dataclass(frozen=True)
class Quote:
    """What a compaction is priced against on this call: the core's settings for the
    window and the price preset, the view's size as sent, the fixed prefix (system
    prompt and tools), and the schedule's cycle (the reads paid for what the view
    has grown by, and the cycle's length in calls)."""

    settings: _core.PlanSettings
    size: float
    prefix: float
    grown: float
    cycle: float


def quote(setup: Setup, request: CallInput, turn: Turn) -> Quote | None:
    """This call's :class:`Quote`, or ``None`` without a price model."""
    if turn.pricing is None:
        return None
    size = float(sent_size(turn.plan))
    grown, cycle = growth(turn.counters, size)
    prefix = float(true_size(request, turn, []))
    return Quote(setup.plan_settings(turn.window, turn.pricing), size, prefix, grown, cycle)


def due(setup: Setup, request: CallInput, turn: Turn) -> tuple[int, Quote] | None:
    """Where the turn in progress starts (its newest user message) and this call's
    quote, when the price model says compacting the span before it may pay now:
    once the reads paid since the last compaction for what has grown reach the
    price's lower bounds. Which summarizer and whether it pays in full is
    :func:`cheaper`'s question. No price model, nothing before the turn, or no
    saving: ``None``."""
    if turn.pricing is None:
        return None
    settings = setup.plan_settings(turn.window, turn.pricing)
    size = float(sent_size(turn.plan))
    grown, cycle = growth(turn.counters, size)
    # Lower bounds of the price, so that most calls cost next to nothing: the span's
    # own part of the price, last worked out in this cycle, has only grown since;
    # and what stays is rewritten whatever replaces the span.
    found = turn.counters.span_price
    span_price = float(found) if found is not None else 0.0

    def leaving(size_with: float) -> _core.CompactionPrice | None:
        """A compaction that leaves ``size_with`` beside the fixed prefix."""
        return settings.compaction(
            size_without=size, size_with=size_with, prefix=0.0, grown_reads=grown, cycle=cycle
        )

    reads = leaving(size)
    if reads is None or reads.paid < span_price:
        return None
    start = newest_request(turn.view)
    if start is None:
        return None
    # The rewrite of the turn in progress, which only grows until the next request:
    # while the reads paid are short of it as last worked out, it is not counted again.
    request_id = getattr(turn.view[start], "id", None)
    last = turn.counters.kept_price
    if last is not None and request_id:
        last_id, last_price = last
        if last_id == request_id and reads.paid < last_price + span_price:
            return None
    # The turn in progress alone, as the provider counts it (the prefix cancels out
    # of what its rewrite costs).
    kept = turn.plan.ratio * message_tokens(setup, request.model, turn.view[start:])
    bound = leaving(kept)
    if bound is None:
        return None
    turn.counters.kept_priced(request_id, bound.price)
    if bound.paid < bound.price + span_price:
        return None
    if found is None:
        quoted = turn.plan.ratio * quoted_tokens(setup, request.model, turn.view[:start])
        # Until the cycle's first full check drafts and digests the span, its price is
        # at least its user messages rewritten beside what stays (less the memory's
        # base, which the cache may keep), or a model summary's shortest reply: that
        # spares most calls the check.
        quoted = max(quoted - shared_base(setup, request, turn), 0.0)
        span_price = _core.span_floor(
            settings,
            size=size,
            kept=kept,
            quoted=quoted,
            kept_price=bound.price,
            grown_reads=grown,
            model_may_summarize=setup.config.summarizer != "digest",
        )
        turn.counters.span_priced(span_price)
        if bound.paid < bound.price + span_price:
            return None
    prefix = float(true_size(request, turn, []))
    if size <= prefix + kept:
        return None
    return start, Quote(settings, size, prefix, grown, cycle)


def uncached(setup: Setup, request: CallInput, turn: Turn) -> float:
    """What of this call's view the provider has not cached yet, as it counts it:
    from the first message a batch edited on this call, else the messages since the
    agent's last call."""
    view = turn.view
    start = turn.plan.batch_at
    if start is None:
        start = next(
            (i + 1 for i in range(len(view) - 1, -1, -1) if getattr(view[i], "type", None) == "ai"), 0
        )
    return turn.plan.ratio * message_tokens(setup, request.model, view[start:]) if start < len(view) else 0.0


def quoted_tokens(setup: Setup, model: Any, span: list[Any]) -> int:
    """The estimate of the user messages of ``span`` (summaries aside) as one
    message, as a summary quotes them: a digest verbatim, a model summary asked to."""
    quoted = [m.text for m in span if isinstance(m, HumanMessage) and not summarize.is_summary(m)]
    return message_tokens(setup, model, [HumanMessage("\n\n".join(quoted))]) if quoted else 0


def message_tokens(setup: Setup, model: Any, messages: list[Any]) -> int:
    """The estimate of ``messages`` alone (a slice of the view, kept out of the
    cache), with the counting options of ``model`` made once (the check runs on
    every call)."""
    options = kept_by_model(
        setup.count_options,
        model,
        lambda m: counting_options({"model": m}, "count_tokens", remember=False),
    )
    return _core.count_tokens(messages, options)


def cheaper(
    setup: Setup,
    request: CallInput,
    turn: Turn,
    quoted: Quote,
    draft: Draft,
    *,
    due: bool,
) -> Draft | None:
    """``draft`` with what the session is better off with in place of the span (as
    ``summarizer`` allows): the digest, or a model summary that folds the memory's
    requests into short beside its notes, when that pays over the session (the
    core's ``choose_summarizer``). A digest that
    would put requests into short when a model could summarize them is not an
    option: the model sees them first. With ``due``, ``None`` unless the one chosen
    is due now. ``draft`` comes with its digest, and with the memory a model's notes
    would leave (its fold) when a model may summarize."""
    assert draft.digest is not None
    path, folded = setup.longest_archive_path(draft), draft.fold
    settings, size = quoted.settings, quoted.size

    def priced(view: list[Any], **call: float) -> tuple[float, _core.CompactionPrice | None]:
        with_it = float(true_size(request, turn, view)) + call.pop("output", 0.0)
        # The memory's base, when this compaction leaves it as it is, is read from the
        # cache with the fixed prefix.
        base = shared_base(setup, request, turn, view[0]) if view else 0.0
        return with_it, settings.compaction(
            size_without=size,
            size_with=with_it,
            prefix=quoted.prefix + base,
            grown_reads=quoted.grown,
            cycle=quoted.cycle,
            **call,
        )

    def framed(summary: Summary) -> list[Any]:
        message = summarize.summary_message(
            summary.text, file_path=path, todos=draft.todos, parts=summary.parts
        )
        return [message, *draft.kept]

    digest = fold = None
    if (setup.config.summarizer != "model" or not draft.use_llm) and not (
        draft.use_llm and draft.digest.folded
    ):
        digest = priced(framed(draft.digest))
    if draft.use_llm and folded is not None:
        ratio = turn.plan.ratio
        span = ratio * message_tokens(setup, request.model, draft.span)
        listed = len((draft.memory or {}).get("requests") or []) + sum(
            1 for m in draft.span if summarize.is_request(m)
        )
        shares = shares_cache(setup, request)
        unread = uncached(setup, request, turn) if shares else 0.0
        asked = _core.summary_call(span=span, listed=listed, size=size, uncached=unread, shares=shares)
        call = {"summary_input": asked.input, "summary_cached": asked.cached, "summary_output": asked.output}
        fold = priced(framed(folded), output=asked.output, **call)
    kept_size, kept_price = priced(list(draft.kept))
    choice = _core.choose_summarizer(
        settings,
        digest=_offer(digest),
        fold=_offer(fold),
        kept=(kept_size, kept_price.price if kept_price is not None else 0.0),
        memory=_memory_costs(turn.counters),
        horizon=float(calls_so_far(turn)),
    )
    if choice is None:
        return draft if not due else None
    # The span's part of the cheaper price: the next calls' lower bound.
    turn.counters.span_priced(choice.span_price)
    if due and not choice.due:
        return None
    return dataclasses.replace(draft, use_llm=choice.model)


def shared_base(setup: Setup, request: CallInput, turn: Turn, message: Any | None = None) -> float:
    """The tokens of ``message``'s first part when the memory in view opens with the
    same part: a summary that leaves the memory's base as it was (see
    ``memory.parts``) shares them with the calls before it. Without ``message``, the
    most a summary may share: the tokens of the base in view."""
    before = summarize.blocks_of((turn.event or {}).get("summary_message"))
    after = summarize.blocks_of(message) if message is not None else before
    if before is None or after is None or before[0] != after[0]:
        return 0.0
    return turn.plan.ratio * message_tokens(setup, request.model, [HumanMessage(after[0])])


def _offer(
    priced: tuple[float, _core.CompactionPrice | None] | None,
) -> tuple[float, float, bool] | None:
    """A summarizer as the core weighs it: its next input, price and whether it is due."""
    if priced is None:
        return None
    next_input, price = priced
    return None if price is None else (next_input, price.price, price.due)


def _memory_costs(c: Counters) -> tuple[float, float, int, float, int]:
    """What the memory cost since its last fold: its tokens, its reads over how many
    calls, and its rewrites by how many digests."""
    return (
        float(c.memory_tokens or 0.0),
        float(c.memory_reads or 0.0),
        c.memory_calls or 0,
        float(c.memory_rewrites or 0.0),
        c.memory_digests or 0,
    )


def shares_cache(setup: Setup, request: CallInput) -> bool:
    """Whether the summary can be asked in the agent's own request (then the
    provider reads it from its prompt cache): the summary model is the agent's,
    and no summary prompt or trimming of its own is set."""
    return (
        setup.summary_model_or(request.model) is request.model
        and hasattr(request.model, "invoke")
        and setup.summary_prompt is None
        and setup.trim_tokens_to_summarize is None
    )

"""The summary asked of the model for a draft: in the agent's own request, which the
provider reads from its prompt cache but for one instruction, or in a prompt of its own
that hands the summarizer the span (``summarize.py`` writes both prompts and reads the
answers). What the summary is asked to cover, and whether a prompt fits the summary
model's window, are worked out here too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.exceptions import ContextOverflowError

from fastcompact.agent import drafting, memory, schedule, summarize
from fastcompact.agent.setup import POLICY, Setup
from fastcompact.agent.state import CallInput, Draft, Turn, own_size, true_size, window_of
from fastcompact.api.counting import count_once

if TYPE_CHECKING:
    from fastcompact.agent.steps import Steps

logger = logging.getLogger("fastcompact")

# The share of the window a summary request in the agent's own input leaves free: its
# instruction and the memory are counted, not measured, and a request over the window
# is refused (the session bench's chat at 8,000 tokens came within 1.5% of it).
IN_PLACE_SLACK = 0.02


def summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the digest", type(error).__name__, error
    )
    return error


def notes(
    setup: Setup, request: CallInput, turn: Turn, draft: Draft, span: list[Any]
) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
    """The model's notes and usage, or the error it failed with; ``span`` is the
    draft's span with its media saved, for a prompt of its own."""
    if not draft.use_llm:
        return None, None, None
    brief = brief_of(setup, turn, draft)
    if schedule.shares_cache(setup, request):
        try:
            text, usage = yield from in_place(setup, request, turn, draft, brief)
            return text, None, usage
        except Exception as e:
            # Too long with the agent's whole input: the separate prompt below sends
            # the span alone (and drops its oldest part while still too long).
            if not summarize.is_prompt_too_long(e):
                return None, summarizer_failed(e), None
    try:
        summarizer = drafting.summarizer_of(setup, request)
        text, usage = yield from summarize.summarize(
            summarizer,
            drafting.trimmed(setup, span),
            summarize.Asking(setup.config.custom_instructions, setup.summary_prompt, brief),
            retries=setup.config.ptl_max_retries,
            fits=fits(request, turn, summarizer),
        )
        return text, None, usage
    except Exception as e:
        return None, summarizer_failed(e), None


def brief_of(setup: Setup, turn: Turn, draft: Draft) -> summarize.Brief:
    """What the summary of ``draft`` is asked to cover: the requests its span opens,
    those that stay verbatim beside the notes (as a fold leaves them), and the
    length the memory keeps whole."""
    opened = sum(1 for m in draft.span if summarize.is_request(m))
    first, last = (draft.first_number, draft.first_number + opened - 1) if opened else (None, None)
    folded = drafting.fold_of(setup, turn, draft)
    verbatim = memory.verbatim_numbers(folded.memory)
    budget = memory.budgets(
        drafting.memory_shares(setup, turn, draft), turn.window, draft.widths_per_token, draft.room
    )
    words = int(budget["notes"] / draft.widths_per_token * POLICY.words_per_token)
    return summarize.Brief(first, last, kept_from=min(verbatim) if verbatim else None, words=words)


def fits(request: CallInput, turn: Turn, summarizer: Any) -> Callable[[Any], bool] | None:
    """Whether a summary prompt fits the summary model's window (its profile's, or
    the agent's when it is the agent's model); ``None`` when no window is known."""
    own = summarizer is request.model
    window = window_of(summarizer) or (turn.window if own else None)
    if window is None:
        return None
    ratio = turn.plan.ratio if own else 1.0

    def fits(prompt: Any) -> bool:
        # No usage has measured the prompt: counted where its tokens run denser than
        # the conversation's ratio says, with the estimate's slack on all of it.
        estimate = ratio * count_once([prompt], model=summarizer)
        size = max(estimate, float(count_once([prompt], encoding="o200k_base")))
        return math.ceil(size * (1.0 + POLICY.estimate_slack)) <= window

    return fits


def in_place(
    setup: Setup, request: CallInput, turn: Turn, draft: Draft, brief: summarize.Brief
) -> Steps[tuple[str, dict[str, int] | None]]:
    """The summary asked in the agent's own request: its system prompt, tools,
    settings and messages as planned for this call (which start with what it was
    sent last), then one instruction. The provider reads all but the instruction
    from its prompt cache; an Anthropic model is asked to cache it, as the agent's
    calls are. A request over the window is not sent: the separate prompt is used,
    which hands the summarizer the whole span."""
    model = request.model
    settings = dict(request.model_settings or {})
    kwargs: dict[str, Any] = {}
    if summarize.caches_at_marks(model) and "cache_control" not in settings:
        ttl = {"ttl": "1h"} if setup.config.pricing == "anthropic-1h" else {}
        kwargs["cache_control"] = {"type": "ephemeral", **ttl}
    if request.tools:
        bound = model.bind_tools(request.tools, **settings)
    else:
        bound = model.bind(**settings) if settings else model
    system = [request.system_message] if request.system_message is not None else []
    sent, instruction = in_place_input(setup, request, turn, draft, brief)
    # As the agent's calls send it, so that the provider finds it in its cache.
    sent = summarize.cache_marked(model, sent)
    return (yield from summarize.summarize_in_place(bound, [*system, *sent], instruction, **kwargs))


def in_place_input(
    setup: Setup, request: CallInput, turn: Turn, draft: Draft, brief: summarize.Brief
) -> tuple[list[Any], Any]:
    """The messages of a summary request that shares the agent's cache, and its
    instruction, within the window (see :func:`in_place`); a request that would be over
    it raises ``ContextOverflowError`` (the span then goes alone, every request of it
    seen by the summarizer)."""
    sent = [*draft.span, *draft.kept]
    instruction = summarize.in_place_prompt(
        sent, len(draft.span), setup.config.custom_instructions, brief=brief
    )
    size = true_size(request, turn, sent) + own_size(request, turn, instruction)
    limit = None if turn.window is None else math.floor(turn.window * (1 - IN_PLACE_SLACK))
    over = 0 if limit is None else math.ceil(size) - limit
    if over > 0:
        raise ContextOverflowError(
            f"the summary request is {over:,} tokens over the window with the agent's whole input"
        )
    return sent, instruction

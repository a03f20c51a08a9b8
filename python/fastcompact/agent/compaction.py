"""A compaction carried out: the summary call, the restored files and the archive, made
together, then the commit. Its other steps are plain functions too: working it out
(``drafting.py``), when it pays and what replaces the span (``schedule.py``), whether
it commits (``commit.py``) and fitting what is sent into the window (``fitting.py``).
``CompactionMiddleware`` runs them from its hooks, and the compaction tool too, each
with its :class:`~fastcompact.agent.setup.Setup`.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.exceptions import ContextOverflowError

from fastcompact.agent import commit, drafting, memory, schedule, storage, summarize
from fastcompact.agent.commit import Outcome
from fastcompact.agent.fitting import WindowTooSmallError
from fastcompact.agent.setup import POLICY, Setup
from fastcompact.agent.state import Draft, Summary, Turn, true_size, window_of
from fastcompact.agent.steps import Io, Steps
from fastcompact.api.counting import count_once

__all__ = ["Outcome", "WindowTooSmallError", "compact", "compacted"]

logger = logging.getLogger("fastcompact")


def summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the digest", type(error).__name__, error
    )
    return error


def compact(setup: Setup, request: ModelRequest, turn: Turn, draft: Draft) -> Steps[Outcome]:
    """Summarize ``draft``'s span and commit it. The summary call, the restoration
    reads and the archive write are made together (at the same time when async); a
    compaction that gets this far commits (see :func:`commit.hopeless`), so the archive is
    never written for nothing. Notes the memory cuts for space are then saved whole
    beside the archive, in the file the memory names."""
    draft = drafting.with_digest(setup, request, turn, draft)
    rules = commit.Rules(setup.config, setup.plan_settings(turn.window, None))
    hopeless = commit.hopeless(request, turn, draft, drafting.longest_archive_path(setup, draft), rules)
    if hopeless is not None:
        return hopeless
    backend = storage.resolve_backend(setup.backend, request.runtime)
    (notes, error, usage), restored, path = yield (
        Io.of(lambda: _summary(setup, request, turn, backend, draft)),
        Io.of(lambda: _restored(setup, backend, draft)),
        Io.of(lambda: _archived(setup, backend, turn, draft)),
    )
    planned = storage.notes_path(path) if path is not None else None
    summaries = _memories(setup, turn, draft, path, notes, planned)
    cut = list(dict.fromkeys(s.notes_to_save for s in summaries if s.notes_to_save))
    if cut and path is not None:
        written = yield from storage.write_notes(backend, path, cut)
        if written != planned:
            summaries = _memories(setup, turn, draft, path, notes, written)
    return commit.settle(request, turn, draft, summaries, error, usage, restored, path, rules)


def _memories(
    setup: Setup, turn: Turn, draft: Draft, path: str | None, notes: str | None, notes_file: str | None
) -> list[Summary]:
    """What may stand in for the span, archived at ``path``: the model's ``notes``
    beside the memory, when it gave some, then the digest."""
    summaries = [drafting.summary_of(setup, turn, draft, path, notes_file=notes_file)]
    if notes is not None:
        summaries.insert(0, drafting.summary_of(setup, turn, draft, path, notes, notes_file=notes_file))
    return summaries


def _summary(
    setup: Setup, request: ModelRequest, turn: Turn, backend: Any, draft: Draft
) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
    """The model's notes and usage, or the error it failed with."""
    if not draft.use_llm:
        return None, None, None
    brief = _brief(setup, turn, draft)
    if schedule.shares_cache(setup, request):
        try:
            text, usage = yield from _in_place(setup, request, turn, draft, brief)
            return text, None, usage
        except Exception as e:
            # Too long with the agent's whole input: the separate prompt below sends
            # the span alone (and drops its oldest part while still too long).
            if not summarize.is_prompt_too_long(e):
                return None, summarizer_failed(e), None
    try:
        span = yield Io.in_thread(_with_media_saved, setup, backend, draft, draft.span)
        summarizer = drafting.summarizer_of(setup, request)
        text, usage = yield from summarize.summarize(
            summarizer,
            drafting.trimmed(setup, span),
            custom_instructions=setup.config.custom_instructions,
            retries=setup.config.ptl_max_retries,
            template=setup.summary_prompt,
            brief=brief,
            fits=_fits(request, turn, summarizer),
        )
        return text, None, usage
    except Exception as e:
        return None, summarizer_failed(e), None


def _brief(setup: Setup, turn: Turn, draft: Draft) -> summarize.Brief:
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


def _fits(request: ModelRequest, turn: Turn, summarizer: Any) -> Callable[[Any], bool] | None:
    """Whether a summary prompt fits the summary model's window (its profile's, or
    the agent's when it is the agent's model); ``None`` when no window is known."""
    own = summarizer is request.model
    window = window_of(summarizer) or (turn.window if own else None)
    if window is None:
        return None
    ratio = turn.plan.ratio if own else 1.0
    return lambda prompt: math.ceil(ratio * count_once([prompt], model=summarizer)) <= window


def _in_place(
    setup: Setup, request: ModelRequest, turn: Turn, draft: Draft, brief: summarize.Brief
) -> Steps[tuple[str, dict[str, int] | None]]:
    """The summary asked in the agent's own request: its system prompt, tools,
    settings and messages as planned for this call (which start with what it was
    sent last), then one instruction. The provider reads all but the instruction
    from its prompt cache; an Anthropic model is asked to cache it, as the agent's
    calls are. A request over the window is not sent: the span's oldest requests
    give way (an earlier summary at its head stays), and with none left to give,
    the separate prompt is used."""
    model = request.model
    settings = dict(request.model_settings or {})
    kwargs: dict[str, Any] = {}
    if getattr(model, "_llm_type", None) == "anthropic-chat" and "cache_control" not in settings:
        ttl = {"ttl": "1h"} if setup.config.pricing == "anthropic-1h" else {}
        kwargs["cache_control"] = {"type": "ephemeral", **ttl}
    if request.tools:
        bound = model.bind_tools(request.tools, **settings)
    else:
        bound = model.bind(**settings) if settings else model
    system = [request.system_message] if request.system_message is not None else []
    sent, instruction = _in_place_input(setup, request, turn, draft, brief)
    return (yield from summarize.summarize_in_place(bound, [*system, *sent], instruction, **kwargs))


def _in_place_input(
    setup: Setup, request: ModelRequest, turn: Turn, draft: Draft, brief: summarize.Brief
) -> tuple[list[Any], Any]:
    """The messages of a summary request that shares the agent's cache, and its
    instruction, within the window (see :func:`_in_place`)."""
    span = list(draft.span)
    while True:
        sent = [*span, *draft.kept]
        instruction = summarize.in_place_prompt(
            sent, len(span), setup.config.custom_instructions, brief=brief
        )
        over = 0 if turn.window is None else true_size(request, turn, [*sent, instruction]) - turn.window
        if over <= 0:
            return sent, instruction
        shorter = _without_oldest(request, turn, span, over)
        if shorter is None:
            raise ContextOverflowError(
                f"the summary request is {over:,} tokens over the window with the agent's whole input"
            )
        span = shorter


def _without_oldest(request: ModelRequest, turn: Turn, span: list[Any], over: int) -> list[Any] | None:
    """``span`` without its oldest requests, at least ``over`` tokens of them, cut
    before a user message (where no tool call is parted from its result); a summary
    at its head stays. ``None`` when no request is left to drop."""
    start = 1 if span and summarize.is_summary(span[0]) else 0
    dropped = 0.0
    for i in range(start, len(span)):
        if i > start and summarize.is_request(span[i]) and dropped >= over:
            return [*span[:start], *span[i:]]
        dropped += turn.plan.ratio * count_once([span[i]], model=request.model)
    return None


def _restored(setup: Setup, backend: Any, draft: Draft) -> Steps[list[storage.Restored]]:
    if backend is None or not draft.reads:
        return []
    r = setup.config.restoration
    return (yield from storage.restore_files(backend, draft.reads, r.per_file_chars, r.file_budget_chars))


def _archived(setup: Setup, backend: Any, turn: Turn, draft: Draft) -> Steps[str | None]:
    if backend is None or not draft.leaving:
        return None
    leaving = yield Io.in_thread(_with_media_saved, setup, backend, draft, draft.leaving)
    text = storage.archive_text(leaving, turn.first_index + turn.prior_cutoff, draft.thread, draft.number)
    name = functools.partial(setup.archive_path, draft.thread, draft.number)
    return (yield from storage.write_archive(backend, name, text))


def _with_media_saved(setup: Setup, backend: Any, draft: Draft, messages: list[Any]) -> list[Any]:
    """``messages`` with inline media saved beside the archive and referenced by path,
    so that the summary and the archive both name the files (the same media is saved
    once)."""
    if backend is None:
        return messages
    return storage.offload(backend, setup.media_folder(draft.thread), messages)


def compacted(setup: Setup, request: ModelRequest, turn: Turn, *, forced: bool) -> Steps[Outcome | None]:
    """The first of the candidate compactions that commits, else the last tried
    (``None`` when there is nothing to cut)."""
    outcome = None
    for draft in drafting.candidates(setup, request, turn, forced=forced):
        draft = schedule.by_price(setup, request, turn, draft)
        outcome = yield from compact(setup, request, turn, draft)
        if outcome.committed:
            break
    return outcome

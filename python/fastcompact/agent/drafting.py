"""Working a compaction out: where the cut falls (the keep policy's cut, and deeper ones
when the window needs them; the turn in progress stays whole), what leaves the view and
what stays, and the memory that stands in for what leaves (``memory.py``), made to fit
the room the window leaves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import fastcompact._core as _core
from fastcompact.agent import memory, storage, summarize
from fastcompact.agent.setup import POLICY, Setup
from fastcompact.agent.state import (
    CallInput,
    Draft,
    Summary,
    Turn,
    calls_so_far,
    newest_request,
    over_window,
    rewrites_per_call,
    thread_name,
    true_size,
)
from fastcompact.api.counting import count_once
from fastcompact.api.cutoffs import cutoff_once

if TYPE_CHECKING:
    from fastcompact.config import ContextSize


def has_recall(request: CallInput) -> bool:
    """Whether the agent's tools include ``recall`` (so the memory may name it)."""
    for t in request.tools or []:
        name = t.get("name") if isinstance(t, Mapping) else getattr(t, "name", None)
        if name == "recall":
            return True
    return False


def trimmed(setup: Setup, span: list[Any]) -> list[Any]:
    """The span handed to the summarizer: its newest messages within
    ``trim_tokens_to_summarize`` tokens, when that is set."""
    limit = setup.trim_tokens_to_summarize
    if limit is None or not span:
        return span
    start = len(span)
    total = 0
    for i in range(len(span) - 1, -1, -1):
        total += count_once([span[i]])
        if total > limit and start < len(span):
            break
        start = i
    return span[start:]


def summarizer_of(setup: Setup, request: CallInput) -> Any:
    chosen = setup.summary_model_or(request.model)
    if isinstance(chosen, str):
        if chosen not in setup.models:
            from langchain.chat_models import init_chat_model

            setup.models[chosen] = init_chat_model(chosen)
        return setup.models[chosen]
    return chosen


def make_draft(
    setup: Setup,
    request: CallInput,
    turn: Turn,
    *,
    forced: bool,
    cut: int | None = None,
    recall: bool | None = None,
) -> Draft | None:
    """Where to cut and what goes where, or ``None`` when nothing can be cut."""
    if cut is None:
        cut = turn.plan.summary_cutoff
    if cut is None and forced:
        cut = cutoff_once(
            turn.view,
            setup.plan_settings(turn.window, None).resolved["keep"],
            turn.window,
            model=request.model,
        )
    # Something must stay after the summary: at least the newest message.
    if not cut or cut <= 0 or cut >= len(turn.view):
        return None
    state_cutoff = turn.prior_cutoff + cut - 1 if turn.event else cut
    if state_cutoff <= turn.prior_cutoff:
        return None
    state = request.state if isinstance(request.state, Mapping) else {}
    todos = state.get("todos") or []
    restoration = setup.config.restoration
    leaving = turn.raw[turn.prior_cutoff : state_cutoff]
    paused_until = turn.counters.llm_paused_until or 0
    # Without an event of its own, a conversation that opens with a summary (saved and
    # compacted again, or a thread whose state was lost) carries that summary's memory.
    opening = turn.raw[0] if turn.event is None and turn.raw else None
    earlier = memory.earlier(turn.event) if opening is None else memory.earlier_message(opening)
    return Draft(
        state_cutoff=state_cutoff,
        leaving=leaving,
        span=turn.view[:cut],
        kept=turn.view[cut:],
        thread=thread_name(turn.counters),
        number=(turn.counters.archives or 0) + 1,
        memory=earlier.memory,
        earlier_text=earlier.text,
        earlier_file=earlier.file,
        first_number=memory.next_number(earlier.memory, turn.raw[: turn.prior_cutoff]),
        recall=has_recall(request) if recall is None else recall,
        todos=list(todos) if isinstance(todos, list) and restoration.restore_plans else [],
        reads=reads_to_restore(setup, turn, leaving, turn.raw[state_cutoff:]),
        paused=len(turn.raw) < paused_until,
        use_llm=len(turn.raw) >= paused_until
        and setup.config.summarizer != "digest"
        and setup.summary_model_or(request.model) is not None,
        forced=forced,
        # A saved transcript's compaction commits as a priced one does (see `Setup`).
        priced=setup.saved_transcript,
    )


def span_before(setup: Setup, request: CallInput, turn: Turn, start: int) -> Draft | None:
    """The priced compaction of the span before the turn in progress (which starts at
    ``start``), or ``None`` when nothing can be cut."""
    cut = start
    if setup.config.keep is not None:
        # A keep the caller set is honoured: the cut falls no later than it says.
        keep_cut = cutoff_once(turn.view, setup.config.keep, turn.window, model=request.model)
        cut = min(cut, keep_cut) if keep_cut else cut
    draft = make_draft(setup, request, turn, forced=False, cut=cut)
    if draft is None:
        return None
    # Files only when asked to: the turn in progress stays whole, so the files are
    # those of a finished request.
    restored = (
        reads_to_restore(setup, turn, draft.leaving, turn.raw[draft.state_cutoff :], asked=True)
        if setup.config.restoration.on_schedule
        else []
    )
    return dataclasses.replace(draft, priced=True, reads=restored)


def requested(setup: Setup, request: CallInput, turn: Turn) -> Draft | None:
    """The compaction the agent asks for with its tool, once the conversation has
    reached half the trigger (it would fire on one twice this size), cut where the
    keep policy says; ``None`` before then or when nothing can be cut."""
    settings = setup.plan_settings(turn.window, None)
    if not settings.trigger_fires(len(turn.view) * 2, turn.plan.tokens_after * 2.0, turn.window):
        return None
    cut = cutoff_once(turn.view, settings.resolved["keep"], turn.window)
    return make_draft(setup, request, turn, forced=False, cut=cut, recall=True)


def reads_to_restore(
    setup: Setup, turn: Turn, leaving: list[Any], after: list[Any], *, asked: bool = False
) -> list[storage.Read]:
    """The files a compaction restores: those read for the last request it compacts
    (from its user message on) and not read again since, each the part that was
    read; and only while restoring pays: with a price model, for the request still
    under way (no request opens after the cut; or whatever request, when ``asked``)
    and while reading them on every call until the next compaction (as many calls
    as this cycle took) costs less than the one read the agent makes when it needs
    a file again."""
    restoration = setup.config.restoration
    if not restoration.enabled:
        return []
    cycle = (turn.counters.calls_since_compaction or 0) + 1
    in_progress = asked or not any(summarize.is_request(m) for m in after)
    if not setup.plan_settings(turn.window, turn.pricing).restoring_pays(float(cycle), in_progress):
        return []
    last = newest_request(leaving)
    return storage.recent_reads(leaving[last or 0 :], after, restoration.max_files)


def candidates(setup: Setup, request: CallInput, turn: Turn, *, forced: bool) -> list[Draft]:
    """The compactions to try, keeping less each time: the keep policy's cut; then,
    when the view is over the window, the cut before the turn in progress (its
    newest user message), then the deepest pair-safe cut, which commits whenever it
    makes the view smaller (what is still over is the newest results, clipped
    before sending)."""
    view = turn.view
    start = newest_request(view)
    # A saved transcript keeps to the keep policy's cut unless the window needs more.
    over = (forced and not setup.saved_transcript) or over_window(turn)
    keep_cut = turn.plan.summary_cutoff
    if keep_cut is not None and not over and not setup.saved_transcript:
        # Under the window the turn in progress stays whole: the cut falls no later
        # than its request (on the first turn there is nothing before it to cut).
        keep_cut = min(keep_cut, start or 0) or None
        if keep_cut is None:
            return []
    cuts: list[int | None] = [keep_cut]
    if over:
        deeper: list[ContextSize] = [("messages", len(view) - start)] if start is not None else []
        for keep in [*deeper, ("messages", 1)]:
            cuts.append(cutoff_once(view, keep, turn.window, model=request.model) or None)
    drafts: list[Draft] = []
    for cut in cuts:
        draft = make_draft(setup, request, turn, forced=forced, cut=cut)
        if draft is not None and all(d.state_cutoff < draft.state_cutoff for d in drafts):
            drafts.append(draft)
    if len(cuts) > 1 and drafts:
        drafts[-1] = dataclasses.replace(drafts[-1], forced=True)
    return drafts


def with_digest(setup: Setup, request: CallInput, turn: Turn, draft: Draft) -> Draft:
    """``draft`` with its digest (made once a draft): the span taken into the
    memory, its layers held to their shares and to the room the window leaves once
    the system prompt, the tools and the kept messages are in."""
    if draft.digest is not None:
        return draft
    per_token = memory.widths_per_token(draft.span)
    room = None
    if turn.window is not None:
        frame = summarize.summary_message("", file_path=setup.longest_archive_path(draft), todos=draft.todos)
        fixed = true_size(request, turn, [frame, *draft.kept])
        # What a trigger's compaction commits at: under the trigger with its margin,
        # when that leaves room beside what stays; else (a small window) under the
        # window. A priced or forced one commits whenever it makes the view smaller.
        target = None
        if not (draft.priced or draft.forced):
            settings = setup.plan_settings(turn.window, None)
            target = _core.commit_size(settings, 1 + len(draft.kept), turn.window)
        limit = target if target is not None and fixed < target < turn.window else turn.window
        room = _core.memory_room(limit, fixed, per_token)
    draft = dataclasses.replace(draft, room=room, widths_per_token=per_token)
    draft = dataclasses.replace(draft, shares=memory_shares(setup, turn, draft))
    path = setup.longest_archive_path(draft)
    if not draft.use_llm:
        return dataclasses.replace(draft, digest=summary_of(setup, turn, draft, path))
    # A model may summarize: its fold is priced and briefed too, from the same reading.
    digest, fold = memory.digest_and_fold(
        draft.memory, draft.earlier_text, draft.span, _memory_options(setup, turn, draft, path)
    )
    return dataclasses.replace(
        draft, digest=_summary(digest, draft, by_model=False), fold=_summary(fold, draft, by_model=True)
    )


def fold_of(setup: Setup, turn: Turn, draft: Draft) -> Summary:
    """The memory a model's notes would leave beside ``draft``'s span before they are
    written (empty notes), archived at the longest name the archive may get."""
    if draft.fold is not None:
        return draft.fold
    return summary_of(setup, turn, draft, setup.longest_archive_path(draft), notes="")


def summary_of(
    setup: Setup,
    turn: Turn,
    draft: Draft,
    path: str | None,
    notes: str | None = None,
    *,
    notes_file: str | None = None,
) -> Summary:
    """The memory ``draft`` leaves, archived at ``path``: a digest, or with a
    model's ``notes`` the older requests folded beside them; notes cut for space
    name ``notes_file`` as where they are whole."""
    made = memory.remember(
        draft.memory,
        draft.earlier_text,
        draft.span,
        _memory_options(setup, turn, draft, path),
        notes=notes,
        notes_file=notes_file,
    )
    return _summary(made, draft, by_model=notes is not None)


def _memory_options(setup: Setup, turn: Turn, draft: Draft, path: str | None) -> memory.MemoryOptions:
    """What the memory ``draft`` leaves is held to, and where its span is archived."""
    return memory.MemoryOptions(
        config=memory_shares(setup, turn, draft),
        window=turn.window,
        first_number=draft.first_number,
        file=path,
        widths_per_token=draft.widths_per_token,
        room=draft.room,
        earlier_file=draft.earlier_file,
        kept=draft.kept,
    )


def _summary(made: memory.Remembered, draft: Draft, *, by_model: bool) -> Summary:
    return Summary(
        parts=memory.parts(made.memory, recall=draft.recall),
        memory=made.memory,
        by_model=by_model,
        folded=made.folded,
        notes_to_save=made.notes_to_save,
    )


def memory_shares(setup: Setup, turn: Turn, draft: Draft) -> dict[str, float]:
    """The memory's shares for this session: with a price model, the verbatim
    requests no more than pay against folding them (see
    :func:`memory.priced_shares`), as the session's requests have grown so far and
    as often as its digests have written the memory anew since the last fold. Worked
    out once a draft (see :func:`with_digest`)."""
    if draft.shares is not None:
        return draft.shares
    if turn.pricing is None or not turn.window:
        return memory.priced_shares(setup.config.memory, turn.window, None)
    widths = sum(_core.text_width(summarize.text_of(m)) for m in turn.raw if summarize.is_request(m))
    growth = widths / draft.widths_per_token / max(calls_so_far(turn), 1)
    settings = setup.plan_settings(turn.window, turn.pricing)
    _, longest_summary = POLICY.summary_tokens
    kept = settings.verbatim_tokens(growth, longest_summary, rewrites_per_call(turn.counters))
    return memory.priced_shares(setup.config.memory, turn.window, kept)

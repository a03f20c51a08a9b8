"""A compaction from start to end: whether one is due on this call (the trigger, or the
price model through ``schedule.py``), working it out (``drafting.py``), the summary call
(``summary_call.py``), the restored files and the archive (``storage.py``) made
together, and whether it commits, with the state it leaves. ``CompactionMiddleware``
asks it once a call (:func:`view_to_send`, and :func:`after_overflow` when the provider
refuses the request); the compaction tool asks it to :func:`compact` the draft the
agent requested.

A summary commits when it brings the view under the trigger by a margin, or under the
window (a trigger in messages is judged in messages). The state it leaves: the summary
message, the event in DeepAgents' shape (with the memory under ``fastcompact``), and
the counters (the summarizer's failures and rest, the schedule's cycle, the memory's
reads since its last fold).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import TYPE_CHECKING, Any

import fastcompact._core as _core
from fastcompact.agent import drafting, fitting, schedule, storage, summarize, summary_call
from fastcompact.agent.memory import MEMORY_KEY
from fastcompact.agent.state import (
    EVENT_KEY,
    STATE_KEY,
    CallInput,
    Draft,
    Summary,
    Turn,
    newest_request,
    over_window,
    sent_size,
    true_size,
)
from fastcompact.agent.steps import Io, Steps
from fastcompact.api.counting import count_once

if TYPE_CHECKING:
    from fastcompact.agent.counters import Counters
    from fastcompact.agent.setup import Setup
    from fastcompact.agent.storage import Restored
    from fastcompact.config import CompactionConfig

logger = logging.getLogger("fastcompact")


# --- what a call asks: is one due, and the provider's refusal ------------------------------


def view_to_send(
    setup: Setup, request: CallInput, turn: Turn
) -> Steps[tuple[list[Any], int, Outcome | None]]:
    """The view a model call sends, its size, and the compaction tried for it (``None``
    when none was): with nothing before the turn in progress and the view over the
    window, the turn's newest results clipped first; else a compaction when the
    trigger says it must (:func:`compacted`) or the price model that it pays
    (:func:`priced`)."""
    if over_window(turn) and turn.event is None and newest_request(turn.view) is None:
        # Nothing before the turn in progress: clipping its newest results keeps it
        # whole; a cut inside it only when that is not enough.
        try:
            view, size = yield from fitting.fitted(
                request, turn, turn.view, sent_size(turn.plan), setup.backend
            )
            return view, size, None
        except fitting.WindowTooSmallError:
            pass
    if _summary_due(turn):
        outcome = yield from compacted(setup, request, turn, forced=False)
    else:
        draft = priced(setup, request, turn)
        outcome = None if draft is None else (yield from compact(setup, request, turn, draft))
    if outcome is not None and outcome.committed:
        return outcome.view, int(outcome.info["tokens_after"]), outcome
    return turn.view, sent_size(turn.plan), outcome


def _summary_due(turn: Turn) -> bool:
    """Whether the trigger says a summary must be made: the view is over the window,
    or over the trigger with a cut found and no back-off after the last attempt."""
    if over_window(turn):
        return True
    backing_off = _core.backing_off(len(turn.raw), turn.counters.backoff_until)
    return turn.plan.summary_needed and turn.plan.summary_cutoff is not None and not backing_off


def after_overflow(
    setup: Setup,
    request: CallInput,
    turn: Turn,
    outcome: Outcome | None,
    view: list[Any],
    error: Exception,
) -> Steps[tuple[list[Any], Outcome | None]]:
    """The view to send again after the provider refused ``view`` as too long, and
    the compaction made for it: compacted once (forced), then the newest results
    clipped. Any other error, or a refusal after a compaction already committed, is
    raised as it is; nothing older to summarize and nothing to clip raises a
    :class:`~fastcompact.WindowTooSmallError` naming the sizes."""
    if not summarize.is_prompt_too_long(error) or (outcome is not None and outcome.committed):
        raise error
    outcome = yield from compacted(setup, request, turn, forced=True)
    committed = outcome is not None and outcome.committed
    # What is left after a summary may still be the newest turn's results alone.
    if outcome is not None and committed:
        view = outcome.view
    backend = storage.resolve_backend(setup.backend, request.runtime)
    clipped = yield Io.in_thread(fitting.clipped, view, backend)
    if clipped is None and not committed:
        size = fitting.reported_size(error, turn.window, true_size(request, turn, view))
        raise fitting.too_small(request, turn, size, view) from error
    return clipped or view, outcome


def priced(setup: Setup, request: CallInput, turn: Turn) -> Draft | None:
    """The compaction the price model says pays now, or ``None``: the span before the
    turn in progress becomes a digest or a summary, whichever ``summarizer`` says
    (``auto``: the one that costs less over the cycle)."""
    found = schedule.due(setup, request, turn)
    if found is None:
        return None
    start, quote = found
    draft = drafting.span_before(setup, request, turn, start)
    return None if draft is None else _cheaper(setup, request, turn, quote, draft, due=True)


def _by_price(setup: Setup, request: CallInput, turn: Turn, draft: Draft) -> Draft:
    """A trigger's ``draft`` with the summarizer the price model finds cheaper, for
    ``auto`` (as it is otherwise)."""
    if setup.config.summarizer != "auto" or not draft.use_llm:
        return draft
    quote = schedule.quote(setup, request, turn)
    if quote is None:
        return draft
    return _cheaper(setup, request, turn, quote, draft, due=False) or draft


def _cheaper(
    setup: Setup, request: CallInput, turn: Turn, quote: schedule.Quote, draft: Draft, *, due: bool
) -> Draft | None:
    """``draft`` with its digest and the cheaper summarizer (see :func:`schedule.cheaper`)."""
    draft = drafting.with_digest(setup, request, turn, draft)
    return schedule.cheaper(setup, request, turn, quote, draft, due=due)


# --- a compaction carried out -----------------------------------------------------------


def compact(setup: Setup, request: CallInput, turn: Turn, draft: Draft) -> Steps[Outcome]:
    """Summarize ``draft``'s span and commit it. The summary call, the restoration
    reads and the archive write are made together (at the same time when async); a
    compaction that gets this far commits (see :func:`hopeless`), so the archive is
    never written for nothing. Notes the memory cuts for space are then saved whole
    beside the archive, in the file the memory names."""
    draft = drafting.with_digest(setup, request, turn, draft)
    rules = Rules(setup.config, setup.plan_settings(turn.window, None))
    longest = setup.longest_archive_path(draft)
    no_use = hopeless(Attempt(request, turn, draft, rules, longest))
    if no_use is not None:
        return no_use
    backend = storage.resolve_backend(setup.backend, request.runtime)
    # Inline media are saved once, before the summary and the archive both name them.
    span, leaving = yield from storage.with_media_saved(setup, backend, draft)
    (notes, error, usage), restored, path = yield (
        Io.of(lambda: summary_call.notes(setup, request, turn, draft, span)),
        Io.of(lambda: storage.restored_for(setup, backend, draft)),
        Io.of(lambda: storage.archived(setup, backend, turn, draft, leaving)),
    )
    planned = storage.notes_path(path) if path is not None else None
    summaries = _memories(setup, turn, draft, path, notes, planned)
    cut = list(dict.fromkeys(s.notes_to_save for s in summaries if s.notes_to_save))
    if cut and path is not None:
        written = yield from storage.write_notes(backend, path, cut)
        if written != planned:
            summaries = _memories(setup, turn, draft, path, notes, written)
    return settle(Attempt(request, turn, draft, rules, path), summaries, Asked(error, usage), restored)


def _memories(
    setup: Setup, turn: Turn, draft: Draft, path: str | None, notes: str | None, notes_file: str | None
) -> list[Summary]:
    """What may stand in for the span, archived at ``path``: the model's ``notes``
    beside the memory, when it gave some, then the digest."""
    summaries = [drafting.summary_of(setup, turn, draft, path, notes_file=notes_file)]
    if notes is not None:
        summaries.insert(0, drafting.summary_of(setup, turn, draft, path, notes, notes_file=notes_file))
    return summaries


def compacted(setup: Setup, request: CallInput, turn: Turn, *, forced: bool) -> Steps[Outcome | None]:
    """The first of the candidate compactions that commits, else the last tried
    (``None`` when there is nothing to cut)."""
    outcome = None
    for draft in drafting.candidates(setup, request, turn, forced=forced):
        draft = _by_price(setup, request, turn, draft)
        outcome = yield from compact(setup, request, turn, draft)
        if outcome.committed:
            break
    return outcome


# --- whether it commits, and the state it leaves ----------------------------------------


@dataclasses.dataclass
class Outcome:
    """A compaction tried: the view it leaves, the event (when it committed) and the
    counters it leaves, and what the event and the log say of it."""

    view: list[Any]
    event: dict[str, Any] | None
    info: dict[str, Any]
    counters: Counters

    @property
    def committed(self) -> bool:
        return self.event is not None

    @property
    def update(self) -> dict[str, Any]:
        """The graph-state update: the event when it committed, and the counters."""
        update: dict[str, Any] = {STATE_KEY: self.counters.to_state()}
        if self.event is not None:
            update[EVENT_KEY] = self.event
        return update


@dataclasses.dataclass(frozen=True)
class Rules:
    """What a commit is judged by: the middleware's config, and its settings read by
    the core for the turn's window."""

    config: CompactionConfig
    settings: _core.PlanSettings


@dataclasses.dataclass(frozen=True)
class Attempt:
    """A compaction being judged: the call it is for, its draft, the rules a commit is
    judged by, and the archive the summary names."""

    request: CallInput
    turn: Turn
    draft: Draft
    rules: Rules
    path: str | None


@dataclasses.dataclass(frozen=True)
class Asked:
    """How the summarizer answered: the error it failed with, and the usage it reported."""

    error: BaseException | None = None
    usage: dict[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class Judged:
    """A summary's view judged against the trigger and the window."""

    tokens: int
    under_trigger: bool
    commits: bool


def finish(
    attempt: Attempt, summary: Summary, asked: Asked, restored: list[Restored], *, strict: bool = True
) -> Outcome:
    """Build the summary message, check that it helps, and make the state update.
    It commits when it brings the view under the trigger (with a margin) or under
    the window; a forced draft, not ``strict``, whenever it makes the view smaller."""
    request, turn, draft, cfg = attempt.request, attempt.turn, attempt.draft, attempt.rules.config
    counters = _after_failure(turn.counters.copy(), turn, draft, asked.error, cfg)
    message = summarize.summary_message(
        summary.text,
        file_path=attempt.path,
        restored_files=restored,
        todos=draft.todos,
        suppress_follow_up_questions=cfg.suppress_follow_up_questions,
        parts=summary.parts,
    )
    view = [message, *draft.kept]
    judged = _judged(attempt, view, strict)
    info = _info(attempt, summary, asked, restored, judged.tokens)
    # Still over the trigger, or not committed: summarize again only when the window
    # needs it, not on every call.
    counters.backed_off(
        _core.backoff_after(
            under_trigger=judged.under_trigger,
            commits=judged.commits,
            priced=draft.priced,
            messages=len(turn.raw),
        ),
    )
    if not judged.commits:
        # A step of fitting, not a fault: logged for the curious, not warned.
        logger.info(
            "fastcompact: a summary would leave %d tokens in %d messages, neither enough below the "
            "trigger nor under the window; not committed",
            judged.tokens,
            len(view),
        )
        return Outcome(view=turn.view, event=None, info=info, counters=counters)
    memory_tokens = math.ceil(turn.plan.ratio * count_once([message], model=request.model))
    _after_commit(counters, attempt, summary, judged, memory_tokens)
    event = {
        "cutoff_index": draft.state_cutoff,
        "summary_message": message,
        "file_path": attempt.path,
        "created_at_index": len(turn.raw),
        "fastcompact": {
            **info,
            "failures": counters.failures or 0,
            "llm_paused_until": counters.llm_paused_until,
            MEMORY_KEY: summary.memory,
        },
    }
    return Outcome(view=view, event=event, info=info, counters=counters)


def _after_failure(
    counters: Counters, turn: Turn, draft: Draft, error: BaseException | None, cfg: CompactionConfig
) -> Counters:
    """The counters with the summarizer's failures counted (a model summary only):
    after ``max_consecutive_failures`` in a row, it rests for a while."""
    if draft.use_llm:
        rest = _core.after_summary(
            failures=counters.failures or 0,
            failed=error is not None,
            max_failures=cfg.max_consecutive_failures,
            cooldown=cfg.failure_cooldown_messages,
            messages=len(turn.raw),
        )
        counters.summarizer_counted(rest.failures, rest.rests_until)
    return counters


def _judged(attempt: Attempt, view: list[Any], strict: bool) -> Judged:
    """Whether ``view`` commits, and its size."""
    turn, draft = attempt.turn, attempt.draft
    tokens = true_size(attempt.request, turn, view)
    # Under the trigger with the margin to spare, or a view over the window brought
    # under it, or a smaller view when priced or forced (`src/compaction/commit.rs`).
    verdict = _core.commit_verdict(
        attempt.rules.settings,
        tokens=max(tokens, 0),
        messages=len(view),
        before=sent_size(turn.plan),
        messages_before=len(turn.view),
        window=turn.window,
        priced=draft.priced,
        forced_loose=draft.forced and not strict,
    )
    return Judged(tokens=tokens, under_trigger=verdict.under_trigger, commits=verdict.commits)


def _info(
    attempt: Attempt, summary: Summary, asked: Asked, restored: list[Restored], tokens: int
) -> dict[str, Any]:
    """What the event and the log say of a compaction."""
    turn, draft, error = attempt.turn, attempt.draft, asked.error
    return {
        "summarized_messages": len(draft.leaving),
        "kept_messages": len(draft.kept),
        "tokens_before": turn.plan.tokens_after,
        "tokens_after": tokens,
        # The digest when it was chosen; "fallback" when it stood in for the model.
        "summarizer": "model"
        if summary.by_model
        else ("fallback" if draft.use_llm or draft.paused else "digest"),
        "priced": draft.priced,
        "error": None if error is None else f"{type(error).__name__}: {error}",
        "summarizer_tokens": asked.usage,
        "file_path": attempt.path,
        "restored_files": [f.path for f in restored],
        "forced": draft.forced,
    }


def _after_commit(
    counters: Counters, attempt: Attempt, summary: Summary, judged: Judged, memory_tokens: int
) -> None:
    """The counters a committed compaction leaves: the schedule's cycle and the
    memory's costs start again."""
    draft = attempt.draft
    counters.compaction_committed(
        archive_number=draft.number if attempt.path is not None else None,
        size=judged.tokens,
        memory_tokens=memory_tokens,
        by_model=summary.by_model,
        # The calls summarized away still count toward the session's length.
        calls_summarized=sum(1 for m in draft.leaving if getattr(m, "type", None) == "ai"),
    )


def settle(attempt: Attempt, summaries: list[Summary], asked: Asked, restored: list[Restored]) -> Outcome:
    """The outcome of the first of ``summaries`` (the model's, then the digest)
    that commits. Restored files are dropped before a summary is: they are a
    convenience, and in a small window they alone can fill it. A forced draft
    takes the first choice that fits the window, else the first that makes the
    view smaller."""
    file_sets: list[list[Restored]] = [restored, []] if restored else [[]]
    outcome: Outcome | None = None
    for strict in (True, False) if attempt.draft.forced else (True,):
        for summary in summaries:
            failed = asked.error
            if not summary.by_model and summaries[0].by_model:
                reason = "the summary would have left the conversation over the trigger or the window"
                failed = summarize.SummaryError(reason)
            answer = Asked(failed, asked.usage if summary.by_model else None)
            for files in file_sets:
                outcome = finish(attempt, summary, answer, files, strict=strict)
                if outcome.committed:
                    if failed is not asked.error:
                        logger.info("fastcompact: %s; used the digest", failed)
                    return outcome
    assert outcome is not None
    return outcome


def hopeless(attempt: Attempt) -> Outcome | None:
    """The uncommitted outcome, when even the digest with nothing restored would
    not commit (then no summary can help, and neither the summarizer nor the
    backend is called); ``None`` otherwise. The attempt's path is the longest name
    the archive may get, which the summary will name."""
    draft = attempt.draft
    assert draft.digest is not None
    plain = dataclasses.replace(attempt, draft=dataclasses.replace(draft, use_llm=False))
    outcome = finish(plain, draft.digest, Asked(), [], strict=not draft.forced)
    return None if outcome.committed else outcome

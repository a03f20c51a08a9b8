"""A compaction from start to end: whether one is due on this call (the trigger, or the
price model through ``schedule.py``), working it out (``drafting.py``), the summary call,
the restored files and the archive made together, and whether it commits, with the
state it leaves. ``CompactionMiddleware`` asks it once a call (:func:`view_to_send`,
and :func:`after_overflow` when the provider refuses the request); the compaction tool
asks it for the compaction the agent requested (:func:`requested`).

A summary commits when it brings the view under the trigger by a margin, or under the
window (a trigger in messages is judged in messages). The state it leaves: the summary
message, the event in DeepAgents' shape (with the memory under ``fastcompact``), and
the counters (the summarizer's failures and rest, the schedule's cycle, the memory's
reads since its last fold).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage

import fastcompact._core as _core
from fastcompact.agent import drafting, fitting, memory, reading, schedule, storage, summarize
from fastcompact.agent.counters import Counters
from fastcompact.agent.memory import MEMORY_KEY
from fastcompact.agent.setup import POLICY, Setup
from fastcompact.agent.state import (
    EVENT_KEY,
    STATE_KEY,
    Draft,
    Summary,
    Turn,
    newest_request,
    over_window,
    own_size,
    sent_size,
    true_size,
    window_of,
)
from fastcompact.agent.steps import Io, Steps
from fastcompact.api.counting import count_once

if TYPE_CHECKING:
    from fastcompact.agent.storage import Restored
    from fastcompact.config import CompactionConfig

logger = logging.getLogger("fastcompact")

# The share of the window a summary request in the agent's own input leaves free: its
# instruction and the memory are counted, not measured, and a request over the window
# is refused (the session bench's chat at 8,000 tokens came within 1.5% of it).
IN_PLACE_SLACK = 0.02


# --- what a call asks: is one due, and the provider's refusal ------------------------------


def view_to_send(
    setup: Setup, request: ModelRequest, turn: Turn
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
    request: ModelRequest,
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


def priced(setup: Setup, request: ModelRequest, turn: Turn) -> Draft | None:
    """The compaction the price model says pays now, or ``None``: the span before the
    turn in progress becomes a digest or a summary, whichever ``summarizer`` says
    (``auto``: the one that costs less over the cycle)."""
    found = schedule.due(setup, request, turn)
    if found is None:
        return None
    start, quote = found
    draft = drafting.span_before(setup, request, turn, start)
    return None if draft is None else _cheaper(setup, request, turn, quote, draft, due=True)


def _by_price(setup: Setup, request: ModelRequest, turn: Turn, draft: Draft) -> Draft:
    """A trigger's ``draft`` with the summarizer the price model finds cheaper, for
    ``auto`` (as it is otherwise)."""
    if setup.config.summarizer != "auto" or not draft.use_llm:
        return draft
    quote = schedule.quote(setup, request, turn)
    if quote is None:
        return draft
    return _cheaper(setup, request, turn, quote, draft, due=False) or draft


def _cheaper(
    setup: Setup, request: ModelRequest, turn: Turn, quote: schedule.Quote, draft: Draft, *, due: bool
) -> Draft | None:
    """``draft`` with its digest and the cheaper summarizer (see :func:`schedule.cheaper`)."""
    path = drafting.longest_archive_path(setup, draft)
    draft = drafting.with_digest(setup, request, turn, draft)
    folded = drafting.fold_of(setup, turn, draft) if draft.use_llm else None
    return schedule.cheaper(setup, request, turn, quote, draft, path=path, folded=folded, due=due)


def requested(setup: Setup, runtime: Any) -> tuple[ModelRequest, Turn, Draft | None]:
    """What the compaction tool compacts: a model request standing in for the
    conversation at the tool call, its turn, and the draft (``None`` when there is
    nothing to compact yet)."""
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
    turn = reading.read_turn(setup, request, known.window)
    return request, turn, drafting.requested(setup, request, turn)


# --- a compaction carried out -----------------------------------------------------------


def summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the digest", type(error).__name__, error
    )
    return error


def compact(setup: Setup, request: ModelRequest, turn: Turn, draft: Draft) -> Steps[Outcome]:
    """Summarize ``draft``'s span and commit it. The summary call, the restoration
    reads and the archive write are made together (at the same time when async); a
    compaction that gets this far commits (see :func:`hopeless`), so the archive is
    never written for nothing. Notes the memory cuts for space are then saved whole
    beside the archive, in the file the memory names."""
    draft = drafting.with_digest(setup, request, turn, draft)
    rules = Rules(setup.config, setup.plan_settings(turn.window, None))
    no_use = hopeless(request, turn, draft, drafting.longest_archive_path(setup, draft), rules)
    if no_use is not None:
        return no_use
    backend = storage.resolve_backend(setup.backend, request.runtime)
    # Inline media are saved once, before the summary and the archive both name them.
    span, leaving = yield from _with_media_saved(setup, backend, draft)
    (notes, error, usage), restored, path = yield (
        Io.of(lambda: _summary(setup, request, turn, draft, span)),
        Io.of(lambda: _restored(setup, backend, draft)),
        Io.of(lambda: _archived(setup, backend, turn, draft, leaving)),
    )
    planned = storage.notes_path(path) if path is not None else None
    summaries = _memories(setup, turn, draft, path, notes, planned)
    cut = list(dict.fromkeys(s.notes_to_save for s in summaries if s.notes_to_save))
    if cut and path is not None:
        written = yield from storage.write_notes(backend, path, cut)
        if written != planned:
            summaries = _memories(setup, turn, draft, path, notes, written)
    return settle(request, turn, draft, summaries, error, usage, restored, path, rules)


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
    setup: Setup, request: ModelRequest, turn: Turn, draft: Draft, span: list[Any]
) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
    """The model's notes and usage, or the error it failed with; ``span`` is the
    draft's span with its media saved, for a prompt of its own."""
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

    def fits(prompt: Any) -> bool:
        # No usage has measured the prompt: counted where its tokens run denser than
        # the conversation's ratio says, with the estimate's slack on all of it.
        estimate = ratio * count_once([prompt], model=summarizer)
        size = max(estimate, float(count_once([prompt], encoding="o200k_base")))
        return math.ceil(size * (1.0 + POLICY.estimate_slack)) <= window

    return fits


def _in_place(
    setup: Setup, request: ModelRequest, turn: Turn, draft: Draft, brief: summarize.Brief
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
    sent, instruction = _in_place_input(setup, request, turn, draft, brief)
    # As the agent's calls send it, so that the provider finds it in its cache.
    sent = summarize.cache_marked(model, sent)
    return (yield from summarize.summarize_in_place(bound, [*system, *sent], instruction, **kwargs))


def _in_place_input(
    setup: Setup, request: ModelRequest, turn: Turn, draft: Draft, brief: summarize.Brief
) -> tuple[list[Any], Any]:
    """The messages of a summary request that shares the agent's cache, and its
    instruction, within the window (see :func:`_in_place`); a request that would be over
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


def _restored(setup: Setup, backend: Any, draft: Draft) -> Steps[list[storage.Restored]]:
    if backend is None or not draft.reads:
        return []
    r = setup.config.restoration
    return (yield from storage.restore_files(backend, draft.reads, r.per_file_chars, r.file_budget_chars))


def _archived(setup: Setup, backend: Any, turn: Turn, draft: Draft, leaving: list[Any]) -> Steps[str | None]:
    """The archive of ``leaving`` (the messages the draft summarizes, their media
    saved) written, and its path; ``None`` without a backend or when it failed."""
    if backend is None or not leaving:
        return None
    # An earlier summary in the state (another summarizer's) is not archived again: what
    # it stood for was archived before it, and its text goes on in the memory.
    kept = [_EARLIER_SUMMARY if summarize.is_summary(m) else m for m in leaving]
    text = storage.archive_text(kept, turn.first_index + turn.prior_cutoff, draft.thread, draft.number)
    name = functools.partial(setup.archive_path, draft.thread, draft.number)
    return (yield from storage.write_archive(backend, name, text))


_EARLIER_SUMMARY = HumanMessage("(an earlier summary of the conversation, not archived again)")


def _with_media_saved(setup: Setup, backend: Any, draft: Draft) -> Steps[tuple[list[Any], list[Any]]]:
    """The draft's span and the messages leaving the state, with inline media saved
    beside the archive and referenced by path, so that the summary and the archive
    both name the files; each file is written once."""
    if backend is None:
        return draft.span, draft.leaving
    span, leaving = yield from storage.save_media(backend, setup.media_folder(), [draft.span, draft.leaving])
    return span, leaving


def compacted(setup: Setup, request: ModelRequest, turn: Turn, *, forced: bool) -> Steps[Outcome | None]:
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
class Judged:
    """A summary's view judged against the trigger and the window."""

    tokens: int
    under_trigger: bool
    fits: bool


def finish(
    request: ModelRequest,
    turn: Turn,
    draft: Draft,
    summary: Summary,
    error: BaseException | None,
    restored: list[Restored],
    path: str | None,
    usage: dict[str, int] | None,
    rules: Rules,
    *,
    strict: bool = True,
) -> Outcome:
    """Build the summary message, check that it helps, and make the state update.
    It commits when it brings the view under the trigger (with a margin) or under
    the window; a forced draft, not ``strict``, whenever it makes the view smaller."""
    cfg = rules.config
    counters = _after_failure(turn.counters.copy(), turn, draft, error, cfg)
    message = summarize.summary_message(
        summary.text,
        file_path=path,
        restored_files=restored,
        todos=draft.todos,
        suppress_follow_up_questions=cfg.suppress_follow_up_questions,
        parts=summary.parts,
    )
    view = [message, *draft.kept]
    judged = _judged(request, turn, draft, view, rules.settings, strict)
    info = _info(turn, draft, summary, error, usage, path, restored, judged.tokens)
    # Still over the trigger, or not committed: summarize again only when the window
    # needs it, not on every call.
    counters.backed_off(
        _core.backoff_after(
            under_trigger=judged.under_trigger,
            commits=judged.fits,
            priced=draft.priced,
            messages=len(turn.raw),
        ),
    )
    if not judged.fits:
        # A step of fitting, not a fault: logged for the curious, not warned.
        logger.info(
            "fastcompact: a summary would leave %d tokens in %d messages, neither enough below the "
            "trigger nor under the window; not committed",
            judged.tokens,
            len(view),
        )
        return Outcome(view=turn.view, event=None, info=info, counters=counters)
    memory_tokens = math.ceil(turn.plan.ratio * count_once([message], model=request.model))
    _after_commit(counters, turn, draft, summary, path, judged, memory_tokens)
    event = {
        "cutoff_index": draft.state_cutoff,
        "summary_message": message,
        "file_path": path,
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


def _judged(
    request: ModelRequest,
    turn: Turn,
    draft: Draft,
    view: list[Any],
    settings: _core.PlanSettings,
    strict: bool,
) -> Judged:
    """Whether ``view`` commits, and its size."""
    tokens = true_size(request, turn, view)
    # Under the trigger with the margin to spare, or a view over the window brought
    # under it, or a smaller view when priced or forced (`src/compaction/commit.rs`).
    verdict = _core.commit_verdict(
        settings,
        tokens=max(tokens, 0),
        messages=len(view),
        before=sent_size(turn.plan),
        messages_before=len(turn.view),
        window=turn.window,
        priced=draft.priced,
        forced_loose=draft.forced and not strict,
    )
    return Judged(tokens=tokens, under_trigger=verdict.under_trigger, fits=verdict.commits)


def _info(
    turn: Turn,
    draft: Draft,
    summary: Summary,
    error: BaseException | None,
    usage: dict[str, int] | None,
    path: str | None,
    restored: list[Restored],
    tokens: int,
) -> dict[str, Any]:
    """What the event and the log say of a compaction."""
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
        "summarizer_tokens": usage,
        "file_path": path,
        "restored_files": [f.path for f in restored],
        "forced": draft.forced,
    }


def _after_commit(
    counters: Counters,
    turn: Turn,
    draft: Draft,
    summary: Summary,
    path: str | None,
    judged: Judged,
    memory_tokens: int,
) -> None:
    """The counters a committed compaction leaves: the schedule's cycle and the
    memory's costs start again."""
    counters.compaction_committed(
        archive_number=draft.number if path is not None else None,
        size=judged.tokens,
        memory_tokens=memory_tokens,
        by_model=summary.by_model,
        # The calls summarized away still count toward the session's length.
        calls_summarized=sum(1 for m in draft.leaving if getattr(m, "type", None) == "ai"),
    )


def settle(
    request: ModelRequest,
    turn: Turn,
    draft: Draft,
    summaries: list[Summary],
    error: BaseException | None,
    usage: dict[str, int] | None,
    restored: list[Restored],
    path: str | None,
    rules: Rules,
) -> Outcome:
    """The outcome of the first of ``summaries`` (the model's, then the digest)
    that commits. Restored files are dropped before a summary is: they are a
    convenience, and in a small window they alone can fill it. A forced draft
    takes the first choice that fits the window, else the first that makes the
    view smaller."""
    file_sets: list[list[Restored]] = [restored, []] if restored else [[]]
    outcome: Outcome | None = None
    for strict in (True, False) if draft.forced else (True,):
        for summary in summaries:
            failed = error
            if not summary.by_model and summaries[0].by_model:
                reason = "the summary would have left the conversation over the trigger or the window"
                failed = summarize.SummaryError(reason)
            spent = usage if summary.by_model else None
            for files in file_sets:
                outcome = finish(
                    request, turn, draft, summary, failed, files, path, spent, rules, strict=strict
                )
                if outcome.committed:
                    if failed is not error:
                        logger.info("fastcompact: %s; used the digest", failed)
                    return outcome
    assert outcome is not None
    return outcome


def hopeless(
    request: ModelRequest, turn: Turn, draft: Draft, path: str | None, rules: Rules
) -> Outcome | None:
    """The uncommitted outcome, when even the digest with nothing restored would
    not commit (then no summary can help, and neither the summarizer nor the
    backend is called); ``None`` otherwise. ``path`` is the longest name the
    archive may get, which the summary will name."""
    assert draft.digest is not None
    plain = dataclasses.replace(draft, use_llm=False)
    outcome = finish(request, turn, plain, draft.digest, None, [], path, None, rules, strict=not draft.forced)
    return None if outcome.committed else outcome

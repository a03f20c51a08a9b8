"""Whether a compaction commits, and the state it leaves: the summary message, the
event in DeepAgents' shape (with the memory under ``fastcompact``), the counters (the
summarizer's failures and rest, the schedule's cycle, the memory's reads since its
last fold). A summary commits when it brings the view under the trigger by a margin,
or under the window; a trigger in messages is judged in messages.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import ModelRequest

import fastcompact._core as _core
from fastcompact.agent import summarize
from fastcompact.agent.memory import MEMORY_KEY
from fastcompact.agent.state import EVENT_KEY, STATE_KEY, Draft, Summary, Turn, sent_size, true_size
from fastcompact.api.counting import count_once

if TYPE_CHECKING:
    from fastcompact.agent.counters import Counters
    from fastcompact.agent.storage import Restored
    from fastcompact.config import CompactionConfig

logger = logging.getLogger("fastcompact")


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

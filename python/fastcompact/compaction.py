"""A compaction, worked out and carried out: when it pays (the price model's schedule),
the cuts to try, the summary (the model's, or the digest made without one), the
restored files, the archive, whether it commits, and fitting what is sent into the
window. :class:`CompactionSteps` holds these steps; ``CompactionMiddleware`` runs them
from its hooks, and the compaction tool too.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import ToolMessage

from fastcompact import _core, media, storage, summarize
from fastcompact.config import CompactionConfig, ContextSize
from fastcompact.draft import Draft
from fastcompact.helpers import count_once, count_tokens, cutoff_once
from fastcompact.passes import _settings
from fastcompact.schedule import KEPT_PRICE_KEY, SPAN_PRICE_KEY, PricedSchedule
from fastcompact.state import (
    EVENT_KEY,
    STATE_KEY,
    Turn,
    count_of,
    newest_request,
    sent_size,
    thread_name,
)
from fastcompact.steps import Io, Steps

logger = logging.getLogger("fastcompact")

# A compaction is committed only if the new view is this far below the trigger.
COMMIT_MARGIN = 0.10
# After a compaction that could not be committed, wait this many new messages.
BACKOFF_MESSAGES = 10
# Widths a token when the digest must fit what the window leaves: fewer than the 4 a
# width is made for, so that it fits under a denser tokenizer too.
DIGEST_WIDTH_PER_TOKEN = 3


class WindowTooSmallError(ContextOverflowError):
    """The request cannot fit the model's window, even with everything older than the
    turn in progress summarized and its newest tool results clipped: the system
    prompt, the tool schemas and that turn alone are over it. Raised instead of sending
    a request known to be too large; its message names the sizes and what to change.

    Example:
        >>> e = WindowTooSmallError(window=6_000, system=3_900, tools=2_400, turn=700)
        >>> e.window, e.system + e.tools + e.turn
        (6000, 7000)
    """

    def __init__(self, *, window: int, system: int, tools: int, turn: int) -> None:
        self.window, self.system, self.tools, self.turn = window, system, tools, turn
        super().__init__(
            f"this request needs {system + tools + turn:,} tokens, over the model's {window:,}-token "
            f"window: the system prompt is {system:,} tokens, the tool schemas {tools:,} and the turn "
            f"in progress {turn:,}, with everything older summarized. Use a model with a larger "
            "window (its profile's max_input_tokens), a shorter system prompt or fewer tools."
        )


@dataclasses.dataclass
class Outcome:
    view: list[Any]
    update: dict[str, Any]
    committed: bool
    info: dict[str, Any]


def summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the digest", type(error).__name__, error
    )
    return error


class CompactionSteps(PricedSchedule):
    """The steps of a compaction, over the settings of the middleware that runs them
    (its config, backend, models and summary prompt)."""

    _config: CompactionConfig
    backend: Any
    model: Any
    summary_model: Any
    summary_prompt: str | None
    trim_tokens_to_summarize: int | None
    _models: dict[str, Any]

    def _resolved(self, window: int | None, pricing: str | None = None) -> dict[str, Any]:
        return self._plan_settings(window, pricing).resolved

    def _plan_settings(self, window: int | None, pricing: str | None) -> _core.PlanSettings:
        # The one cache of settings, shared with the helpers.
        return _settings(self._config, window, pricing)

    def _trimmed(self, span: list[Any]) -> list[Any]:
        """The span handed to the summarizer: its newest messages within
        ``trim_tokens_to_summarize`` tokens, when that is set."""
        limit = self.trim_tokens_to_summarize
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

    def _summarizer(self, request: ModelRequest) -> Any:
        chosen = self.summary_model or self.model or request.model
        if isinstance(chosen, str):
            if chosen not in self._models:
                from langchain.chat_models import init_chat_model

                self._models[chosen] = init_chat_model(chosen)
            return self._models[chosen]
        return chosen

    def _draft(
        self, request: ModelRequest, turn: Turn, *, forced: bool, cut: int | None = None
    ) -> Draft | None:
        """Where to cut and what goes where, or ``None`` when nothing can be cut."""
        if cut is None:
            cut = turn.plan.summary_cutoff
        if cut is None and forced:
            cut = cutoff_once(
                turn.view,
                self._resolved(turn.window)["keep"],
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
        restoration = self._config.restoration
        leaving = turn.raw[turn.prior_cutoff : state_cutoff]
        reads = (
            storage.recent_reads(leaving, turn.raw[state_cutoff:], restoration.max_files)
            if restoration.enabled
            else []
        )
        paused_until = turn.counters.get("llm_paused_until") or 0
        return Draft(
            state_cutoff=state_cutoff,
            leaving=leaving,
            span=turn.view[:cut],
            kept=turn.view[cut:],
            thread=thread_name(turn.counters),
            number=int(turn.counters.get("archives", 0)) + 1,
            previous_summary=summarize.summary_text(turn.event["summary_message"]) if turn.event else None,
            todos=list(todos) if isinstance(todos, list) and restoration.restore_plans else [],
            reads=reads,
            paused=len(turn.raw) < paused_until,
            use_llm=len(turn.raw) >= paused_until
            and self._config.summarizer != "digest"
            and (self.summary_model or self.model or request.model) is not None,
            forced=forced,
        )

    def _true_size(self, request: ModelRequest, turn: Turn, view: list[Any]) -> int:
        """The size the provider will see of ``view`` with the request's system prompt
        and tools: the estimate calibrated as the conversation's usage says."""
        estimate = count_once(view, system=request.system_message, tools=request.tools, model=request.model)
        return math.ceil(turn.plan.offset + estimate * turn.plan.ratio)

    def _over_window(self, turn: Turn) -> bool:
        return turn.window is not None and sent_size(turn.plan) > turn.window

    def _candidates(self, request: ModelRequest, turn: Turn, *, forced: bool) -> list[Draft]:
        """The compactions to try, keeping less each time: the keep policy's cut; then,
        when the view is over the window, the cut before the turn in progress (its
        newest user message), then the deepest pair-safe cut, which commits whenever it
        makes the view smaller (what is still over is the newest results, clipped
        before sending)."""
        cuts: list[int | None] = [None]
        if forced or self._over_window(turn):
            view = turn.view
            start = newest_request(view)
            deeper: list[ContextSize] = [("messages", len(view) - start)] if start is not None else []
            for keep in [*deeper, ("messages", 1)]:
                cuts.append(cutoff_once(view, keep, turn.window, model=request.model) or None)
        drafts: list[Draft] = []
        for cut in cuts:
            draft = self._draft(request, turn, forced=forced, cut=cut)
            if draft is not None and all(d.state_cutoff < draft.state_cutoff for d in drafts):
                drafts.append(draft)
        if len(cuts) > 1 and drafts:
            drafts[-1] = dataclasses.replace(drafts[-1], forced=True)
        return drafts

    def _digest(self, request: ModelRequest, turn: Turn, draft: Draft) -> str:
        """The digest of the span, merged with the earlier summary: its step lines
        within a share of the window, and never more than the window leaves once the
        system prompt, the tools and the kept messages are in. Made once a draft."""
        if draft.digest is not None:
            return draft.digest
        budget = summarize.digest_budget(turn.window)
        if turn.window is not None:
            frame = summarize.summary_message(
                "", file_path=self._longest_archive_path(draft), todos=draft.todos
            )
            room = turn.window - self._true_size(request, turn, [frame, *draft.kept])
            budget = min(budget, max(room, 0) * DIGEST_WIDTH_PER_TOKEN)
        span = [m for m in draft.span if not summarize.is_summary(m)]
        return summarize.digest(span, draft.previous_summary, budget)

    def _longest_archive_path(self, draft: Draft) -> str | None:
        """The longest name the archive of ``draft`` may get (a summary names it)."""
        if self.backend is None or not draft.leaving:
            return None
        return storage.archive_path(self._config.history_path_prefix, draft.thread, draft.number, 7)

    def _finish(
        self,
        request: ModelRequest,
        turn: Turn,
        draft: Draft,
        summary: str,
        error: BaseException | None,
        restored: list[tuple[str, str]],
        path: str | None,
        usage: dict[str, int] | None = None,
        *,
        strict: bool = True,
    ) -> Outcome:
        """Build the summary message, check that it helps, and make the state update.
        It commits when it brings the view under the trigger (with a margin) or under
        the window; a forced draft, not ``strict``, whenever it makes the view smaller."""
        cfg = self._config
        counters = dict(turn.counters)
        if draft.use_llm:
            failures = 0 if error is None else int(counters.get("failures", 0)) + 1
            counters["failures"] = failures
            if failures >= cfg.max_consecutive_failures:
                counters["llm_paused_until"] = len(turn.raw) + cfg.failure_cooldown_messages
                counters["failures"] = 0
        message = summarize.summary_message(
            summary,
            file_path=path,
            restored_files=restored,
            todos=draft.todos,
            suppress_follow_up_questions=cfg.suppress_follow_up_questions,
        )
        view = [message, *draft.kept]
        tokens = self._true_size(request, turn, view)
        # Every trigger clause stays unfired with the margin to spare.
        scale = 1 / (1 - COMMIT_MARGIN)
        settings = self._plan_settings(turn.window, None)
        under_trigger = not settings.trigger_fires(math.ceil(len(view) * scale), tokens * scale, turn.window)
        # A view over the window that a summary brings under it commits even above the
        # trigger: a small window may leave no room below the trigger once the system
        # prompt and tools are in.
        before = sent_size(turn.plan)
        rescued = turn.window is not None and tokens <= turn.window < before
        fits = tokens < before and (under_trigger or rescued or draft.priced or (draft.forced and not strict))
        info = {
            "summarized_messages": len(draft.leaving),
            "kept_messages": len(draft.kept),
            "tokens_before": turn.plan.tokens_after,
            "tokens_after": tokens,
            # The digest when it was chosen; "fallback" when it stood in for the model.
            "summarizer": "model"
            if error is None and draft.use_llm
            else ("fallback" if draft.use_llm or draft.paused else "digest"),
            "priced": draft.priced,
            "error": None if error is None else f"{type(error).__name__}: {error}",
            "summarizer_tokens": usage,
            "file_path": path,
            "restored_files": [p for p, _ in restored],
            "forced": draft.forced,
        }
        if not fits:
            counters["backoff_until"] = len(turn.raw) + BACKOFF_MESSAGES
            logger.warning(
                "fastcompact: a summary would leave %d tokens, neither enough below the trigger nor under "
                "the window; not committed",
                tokens,
            )
            return Outcome(view=turn.view, update={STATE_KEY: counters}, committed=False, info=info)
        if path is not None:
            counters["archives"] = draft.number
        # The reads the next compaction must pay for start again from this view.
        counters["base_size"], counters["grown_reads"], counters["calls_since_compaction"] = tokens, 0.0, 0
        counters.pop(SPAN_PRICE_KEY, None)
        counters.pop(KEPT_PRICE_KEY, None)
        if under_trigger or draft.priced:
            counters.pop("backoff_until", None)
        else:
            # Still over the trigger: summarize again only when the window needs it, not
            # on every call.
            counters["backoff_until"] = len(turn.raw) + BACKOFF_MESSAGES
        # The calls summarized away still count toward the session's length.
        calls = sum(1 for m in draft.leaving if getattr(m, "type", None) == "ai")
        counters["calls_before"] = count_of(turn.counters.get("calls_before")) + calls
        event = {
            "cutoff_index": draft.state_cutoff,
            "summary_message": message,
            "file_path": path,
            "created_at_index": len(turn.raw),
            "fastcompact": {
                **info,
                "failures": counters.get("failures", 0),
                "llm_paused_until": counters.get("llm_paused_until"),
            },
        }
        return Outcome(view=view, update={EVENT_KEY: event, STATE_KEY: counters}, committed=True, info=info)

    def _settle(
        self,
        request: ModelRequest,
        turn: Turn,
        draft: Draft,
        summary: str | None,
        error: BaseException | None,
        usage: dict[str, int] | None,
        restored: list[tuple[str, str]],
    ) -> tuple[Outcome, str, BaseException | None, list[tuple[str, str]], bool]:
        """The outcome with the model's summary, or with the digest when the
        model gave none or one too long to help; and the summary, error and restored
        files used, and whether it met the strict rule. Restored files are dropped
        before a summary is: they are a convenience, and in a small window they alone
        can fill it. A forced draft takes the first choice that fits the window, else
        the first that makes the view smaller."""
        file_sets: list[list[tuple[str, str]]] = [restored, []] if restored else [[]]
        fallback = self._digest(request, turn, draft)
        given = [(summary, f) for f in file_sets] if summary is not None else []
        choices = given + [(fallback, f) for f in file_sets]
        outcome: Outcome | None = None
        for strict in (True, False) if draft.forced else (True,):
            for text, files in choices:
                failed = error
                if text is fallback and summary is not None:
                    reason = "the summary would have left the conversation over the trigger or the window"
                    failed = summarize.SummaryError(reason)
                outcome = self._finish(
                    request,
                    turn,
                    draft,
                    text,
                    failed,
                    files,
                    None,
                    usage if text is summary else None,
                    strict=strict,
                )
                if outcome.committed:
                    if failed is not error:
                        logger.warning("fastcompact: %s; used the digest", failed)
                    return outcome, text, failed, files, strict
        assert outcome is not None
        return outcome, fallback, error, [], True

    # --- I/O, sync and async -------------------------------------------------------

    def _compact(self, request: ModelRequest, turn: Turn, draft: Draft) -> Steps[Outcome]:
        """Summarize ``draft``'s span and commit it. The summary call, the restoration
        reads and the archive write are made together (at the same time when async): a
        compaction that gets this far commits (see :meth:`_hopeless`), so the archive is
        never written for nothing."""
        draft = dataclasses.replace(draft, digest=self._digest(request, turn, draft))
        hopeless = self._hopeless(request, turn, draft)
        if hopeless is not None:
            return hopeless
        backend = storage.resolve_backend(self.backend, request.runtime)
        (text, error, usage), restored, path = yield (
            Io.of(lambda: self._summary(request, backend, draft)),
            Io.of(lambda: self._restored(backend, draft)),
            Io.of(lambda: self._archived(backend, turn, draft)),
        )
        outcome, text, error, restored, strict = self._settle(
            request, turn, draft, text, error, usage, restored
        )
        if path is not None and outcome.committed:
            outcome = self._finish(request, turn, draft, text, error, restored, path, usage, strict=strict)
        return outcome

    def _summary(
        self, request: ModelRequest, backend: Any, draft: Draft
    ) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
        """The model's summary and usage, or the error it failed with."""
        if not draft.use_llm:
            return None, None, None
        if self._shares_cache(request):
            try:
                text, usage = yield from self._in_place(request, draft)
                return text, None, usage
            except Exception as e:
                # Too long with the agent's whole input: the separate prompt below sends
                # the span alone (and drops its oldest part while still too long).
                if not summarize.is_prompt_too_long(e):
                    return None, summarizer_failed(e), None
        try:
            span = yield Io.in_thread(self._with_media_saved, backend, draft, draft.span)
            text, usage = yield from summarize.summarize(
                self._summarizer(request),
                self._trimmed(span),
                custom_instructions=self._config.custom_instructions,
                retries=self._config.ptl_max_retries,
                template=self.summary_prompt,
            )
            return text, None, usage
        except Exception as e:
            return None, summarizer_failed(e), None

    def _in_place(self, request: ModelRequest, draft: Draft) -> Steps[tuple[str, dict[str, int] | None]]:
        """The summary asked in the agent's own request: its system prompt, tools,
        settings and messages as planned for this call (which start with what it was
        sent last), then one instruction. The provider reads all but the instruction
        from its prompt cache; an Anthropic model is asked to cache it, as the agent's
        calls are."""
        model = request.model
        settings = dict(request.model_settings or {})
        kwargs: dict[str, Any] = {}
        if getattr(model, "_llm_type", None) == "anthropic-chat" and "cache_control" not in settings:
            ttl = {"ttl": "1h"} if self._config.pricing == "anthropic-1h" else {}
            kwargs["cache_control"] = {"type": "ephemeral", **ttl}
        if request.tools:
            bound = model.bind_tools(request.tools, **settings)
        else:
            bound = model.bind(**settings) if settings else model
        system = [request.system_message] if request.system_message is not None else []
        instruction = summarize.in_place_prompt(draft.kept[0], self._config.custom_instructions)
        return (
            yield from summarize.summarize_in_place(
                bound, [*system, *draft.span, *draft.kept], instruction, **kwargs
            )
        )

    def _restored(self, backend: Any, draft: Draft) -> Steps[list[tuple[str, str]]]:
        if backend is None or not draft.reads:
            return []
        r = self._config.restoration
        return (yield from storage.restore_files(backend, draft.reads, r.per_file_chars, r.file_budget_chars))

    def _archived(self, backend: Any, turn: Turn, draft: Draft) -> Steps[str | None]:
        if backend is None or not draft.leaving:
            return None
        leaving = yield Io.in_thread(self._with_media_saved, backend, draft, draft.leaving)
        text = storage.archive_text(leaving, turn.prior_cutoff, draft.thread, draft.number)
        prefix = self._config.history_path_prefix
        return (yield from storage.write_archive(backend, prefix, draft.thread, draft.number, text))

    def _with_media_saved(self, backend: Any, draft: Draft, messages: list[Any]) -> list[Any]:
        """``messages`` with inline media saved beside the archive and referenced by path,
        so that the summary and the archive both name the files (the same media is saved
        once)."""
        if backend is None:
            return messages
        return media.offload(
            backend, storage.media_folder(self._config.history_path_prefix, draft.thread), messages
        )

    def _hopeless(self, request: ModelRequest, turn: Turn, draft: Draft) -> Outcome | None:
        """The uncommitted outcome, when even the digest with nothing
        restored would leave the view over the trigger (then no summary can help, and
        neither the summarizer nor the backend is called); ``None`` otherwise."""
        plain = dataclasses.replace(draft, use_llm=False)
        # The summary will name its archive: measured with the longest name it may get.
        path = self._longest_archive_path(draft)
        outcome = self._finish(
            request,
            turn,
            plain,
            self._digest(request, turn, draft),
            None,
            [],
            path,
            None,
            strict=not draft.forced,
        )
        return None if outcome.committed else outcome

    def _clipped(
        self, request: ModelRequest, view: list[Any], backend: Any, head_chars: int = storage.CLIP_HEAD_CHARS
    ) -> list[Any] | None:
        """The view with the newest tool results (the run of them it ends with) cut to
        ``head_chars``: a ``read_file`` result points at its file, any other is saved in
        full to ``/large_tool_results/<id>`` (or left to ``recall`` when there is no
        backend). ``None`` when there is nothing to clip."""
        start = len(view)
        while start > 0 and isinstance(view[start - 1], ToolMessage):
            start -= 1
        calls = {
            c.get("id"): c
            for m in view[:start]
            for c in getattr(m, "tool_calls", None) or []
            if isinstance(c, Mapping)
        }
        out = list(view)
        clipped = 0
        for i in range(start, len(view)):
            m = view[i]
            text = m.content if isinstance(m.content, str) else summarize.text_of(m)
            if len(text) <= head_chars:
                continue
            call = calls.get(m.tool_call_id) or {}
            given = call.get("args")
            args: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            read = args.get("file_path") if call.get("name") == "read_file" else None
            saved = None
            if read is None and backend is not None:
                saved = storage.offload_result(backend, m.tool_call_id, text)
            new = storage.clip_text(
                text, m.tool_call_id, read if isinstance(read, str) else None, saved, head_chars
            )
            out[i] = m.model_copy(update={"content": new})
            clipped += 1
        if not clipped:
            return None
        logger.warning(
            "fastcompact: the newest turn did not fit the window; clipped %d tool results", clipped
        )
        return out

    def _compacted(self, request: ModelRequest, turn: Turn, *, forced: bool) -> Steps[Outcome | None]:
        """The first of the candidate compactions that commits, else the last tried
        (``None`` when there is nothing to cut)."""
        outcome = None
        for draft in self._candidates(request, turn, forced=forced):
            draft = self._by_price(request, turn, draft)
            outcome = yield from self._compact(request, turn, draft)
            if outcome.committed:
                break
        return outcome

    def _fitted(
        self, request: ModelRequest, turn: Turn, view: list[Any], size: int
    ) -> Steps[tuple[list[Any], int]]:
        """``view`` as it may be sent, and its size: over the window, its newest tool
        results clipped; still over, a :class:`WindowTooSmallError` (a request known to
        be too large is never sent)."""
        window = turn.window
        if window is None or size <= window:
            return view, size
        backend = storage.resolve_backend(self.backend, request.runtime)
        for head in storage.CLIP_HEADS:
            clipped = yield Io.in_thread(self._clipped, request, view, backend, head)
            if clipped is not None:
                view, size = clipped, self._true_size(request, turn, clipped)
                if size <= window:
                    return view, size
        ratio = turn.plan.ratio
        system = request.system_message
        # What the caller did not pass (the offset) is system text too: later middleware's
        # additions to the prompt, the provider's own framing.
        system_tokens = math.ceil(turn.plan.offset)
        if system is not None:
            system_tokens += math.ceil(ratio * count_tokens([], system=system, model=request.model))
        tools = request.tools
        tools_tokens = math.ceil(ratio * count_tokens([], tools=tools, model=request.model)) if tools else 0
        raise WindowTooSmallError(
            window=window,
            system=system_tokens,
            tools=tools_tokens,
            turn=max(size - system_tokens - tools_tokens, 0),
        )

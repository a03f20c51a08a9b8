"""A compaction carried out: the summary call, the restored files and the archive, made
together, then the commit. :class:`CompactionSteps` gathers the steps of one: working
it out (``drafting.py``), when it pays and what replaces the span (``schedule.py``),
whether it commits (``commit.py``) and fitting what is sent into the window
(``fitting.py``). ``CompactionMiddleware`` runs them from its hooks, and the
compaction tool too.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware.types import ModelRequest

from fastcompact import media, storage, summarize
from fastcompact.commit import Committing, Outcome
from fastcompact.draft import Draft, Summary
from fastcompact.drafting import Drafting
from fastcompact.fitting import Fitting, WindowTooSmallError
from fastcompact.memory import is_request
from fastcompact.schedule import PricedSchedule
from fastcompact.state import Turn
from fastcompact.steps import Io, Steps

__all__ = ["CompactionSteps", "Outcome", "WindowTooSmallError"]

logger = logging.getLogger("fastcompact")


def summarizer_failed(error: Exception) -> Exception:
    logger.warning(
        "fastcompact: the summarizer failed (%s: %s); using the digest", type(error).__name__, error
    )
    return error


class CompactionSteps(PricedSchedule, Committing, Fitting, Drafting):
    """The steps of a compaction, over the settings of the middleware that runs them
    (its config, backend, models and summary prompt)."""

    summary_prompt: str | None

    def _compact(self, request: ModelRequest, turn: Turn, draft: Draft) -> Steps[Outcome]:
        """Summarize ``draft``'s span and commit it. The summary call, the restoration
        reads and the archive write are made together (at the same time when async): a
        compaction that gets this far commits (see :meth:`_hopeless`), so the archive is
        never written for nothing."""
        draft = self._with_digest(request, turn, draft)
        hopeless = self._hopeless(request, turn, draft, self._longest_archive_path(draft))
        if hopeless is not None:
            return hopeless
        backend = storage.resolve_backend(self.backend, request.runtime)
        (notes, error, usage), restored, path = yield (
            Io.of(lambda: self._summary(request, backend, draft)),
            Io.of(lambda: self._restored(backend, draft)),
            Io.of(lambda: self._archived(backend, turn, draft)),
        )
        # The memories name the archive file as it was written.
        summaries: list[Summary] = []
        if notes is not None:
            summaries.append(self._summary_of(turn, draft, path, notes))
        summaries.append(self._summary_of(turn, draft, path))
        return self._settle(request, turn, draft, summaries, error, usage, restored, path)

    def _summary(
        self, request: ModelRequest, backend: Any, draft: Draft
    ) -> Steps[tuple[str | None, BaseException | None, dict[str, int] | None]]:
        """The model's notes and usage, or the error it failed with."""
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
                numbers=self._numbers(draft),
            )
            return text, None, usage
        except Exception as e:
            return None, summarizer_failed(e), None

    def _numbers(self, draft: Draft) -> tuple[int, int] | None:
        """The numbers of the requests the span opens, first and last."""
        opened = sum(1 for m in draft.span if is_request(m))
        return (draft.first_number, draft.first_number + opened - 1) if opened else None

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
        sent = [*draft.span, *draft.kept]
        instruction = summarize.in_place_prompt(
            sent, len(draft.span), self._config.custom_instructions, numbers=self._numbers(draft)
        )
        return (yield from summarize.summarize_in_place(bound, [*system, *sent], instruction, **kwargs))

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

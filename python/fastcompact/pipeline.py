"""The whole compaction of a saved transcript, outside an agent: the cheap passes, then
(when still over the trigger, or when forced) a summary of the older span and the
archive of what it replaced. Used by ``fastcompact compact``.

Example:
    >>> from fastcompact.pipeline import compact
    >>> from fastcompact.samples import load_session
    >>> out = compact(load_session("research"), max_input_tokens=30_000)
    >>> out.summarized > 0, out.tokens_after < out.tokens_before, out.archive.startswith("# Conversation")
    (True, True, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastcompact import storage, summarize
from fastcompact.config import CompactionConfig
from fastcompact.helpers import count_tokens, find_cutoff
from fastcompact.passes import Plan, model_view


@dataclass
class Compacted:
    """A compacted conversation: ``messages`` in the input's own shape, the
    ``archive`` text of the summarized span (``None`` without a summary), and the
    figures."""

    messages: list[Any]
    archive: str | None
    plan: Plan
    summarized: int
    summarizer: str | None
    tokens_before: int
    tokens_after: int


def _summary_in_shape(message: Any, like: Any) -> Any:
    """The summary message in the same shape as the conversation's messages."""
    if not isinstance(like, Mapping):
        return message
    if "data" in like and "type" in like:
        from langchain_core.messages import message_to_dict

        return message_to_dict(message)
    if "lc" in like and "kwargs" in like:
        from langchain_core.load import dumpd

        return dumpd(message)
    return {"role": "user", "content": message.content}


def compact(
    messages: Sequence[Any],
    *,
    max_input_tokens: int | None = None,
    config: CompactionConfig | None = None,
    model: Any = None,
    force: bool = False,
    archive_path: str | None = None,
    source: str = "transcript",
) -> Compacted:
    """Compact ``messages``. The summary comes from ``model`` when given (a chat model),
    else from the core's extractive summarizer; ``force`` summarizes even below the
    trigger. ``archive_path`` is where the caller will save the archive (named in the
    summary)."""
    msgs = list(messages)
    cfg = config or CompactionConfig()
    view, plan = model_view(msgs, cfg, max_input_tokens=max_input_tokens)
    before = plan.tokens_before
    cut = plan.summary_cutoff
    if cut is None and force:
        cut = find_cutoff(view, tuple(cfg.resolved(max_input_tokens)["keep"]), max_input_tokens) or None
    if not cut or not (plan.summary_needed or force) or cut >= len(view):
        return Compacted(view, None, plan, 0, None, before, plan.tokens_after)
    span, kept = view[:cut], view[cut:]
    text, used = None, "extractive"
    if model is not None:
        text, _ = summarize.summarize(
            model, span, custom_instructions=cfg.custom_instructions, retries=cfg.ptl_max_retries
        )
        used = "model"
    if text is None:
        budget = int((max_input_tokens or 200_000) * 4 * 0.05)
        text = summarize.fallback(span, None, [], budget)
    message = summarize.summary_message(
        text, file_path=archive_path, suppress_follow_up_questions=cfg.suppress_follow_up_questions
    )
    out = [_summary_in_shape(message, msgs[0]), *kept]
    archive = storage.archive_text(msgs[:cut], 0, source, 1)
    return Compacted(out, archive, plan, cut, used, before, count_tokens(out))

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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastcompact import storage, summarize
from fastcompact.config import CompactionConfig
from fastcompact.helpers import Encoding, count_tokens, find_cutoff, normalize
from fastcompact.passes import Plan, model_view


@dataclass
class Compacted:
    """A compacted conversation: ``messages`` in the input's own shape, the
    ``archive`` text of the summarized span (``None`` without a summary), the full
    text of each result the budget pass cut (by the path its marker names), why no
    summary was made (``reason``, ``None`` when one was), and the figures."""

    messages: list[Any]
    archive: str | None
    plan: Plan
    summarized: int
    summarizer: str | None
    tokens_before: int
    tokens_after: int
    saved_results: dict[str, str] = field(default_factory=dict)
    reason: str | None = None


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


def _result_paths(normal: list[dict[str, Any]], results_dir: str | None) -> list[str | None] | None:
    """Where each tool result's full text would be saved, if the budget pass cut it."""
    if results_dir is None:
        return None
    return [f"{results_dir}/{i}.txt" if m["role"] == "tool" else None for i, m in enumerate(normal)]


def _cut_results(
    normal: list[dict[str, Any]], raw: list[Any], view: list[Any], paths: list[str | None] | None
) -> list[tuple[int, str, str]]:
    """(index, path, full text) of each result whose view names its saved path."""
    if paths is None:
        return []
    return [
        (i, path, _text(normal[i]["content"]))
        for i, path in enumerate(paths)
        if path is not None and view[i] is not raw[i] and path in _text(normalize([view[i]])[0]["content"])
    ]


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)


def compact(
    messages: Sequence[Any],
    *,
    max_input_tokens: int | None = None,
    config: CompactionConfig | None = None,
    model: Any = None,
    force: bool = False,
    archive_path: str | None = None,
    results_dir: str | None = None,
    encoding: Encoding = "heuristic",
    source: str = "transcript",
) -> Compacted:
    """Compact ``messages``. The summary comes from ``model`` when given (a chat model),
    else from the core's extractive summarizer; ``force`` summarizes even below the
    trigger. ``archive_path`` is where the caller will save the archive (named in the
    summary); ``results_dir`` is where it will save the results the budget pass cuts
    (named in their markers; ``saved_results`` holds their text). Sizes are counted
    with ``encoding``."""
    msgs = list(messages)
    cfg = config or CompactionConfig()
    normal = normalize(msgs) if results_dir is not None else []
    paths = _result_paths(normal, results_dir)
    view, plan = model_view(
        msgs, cfg, max_input_tokens=max_input_tokens, archive_paths=paths, encoding=encoding
    )
    cut_results = _cut_results(normal, msgs, view, paths)
    before = plan.tokens_before
    keep = tuple(cfg.resolved(max_input_tokens)["keep"])
    cut = plan.summary_cutoff
    if cut is None and force:
        cut = find_cutoff(view, keep, max_input_tokens, encoding=encoding) or None
    if not (plan.summary_needed or force):
        reason = f"no summary needed: {plan.tokens_after:,} tokens after the cheap passes, under the trigger"
    elif not cut or cut >= len(view):
        reason = f"nothing to summarize: keeping {keep[0]}:{keep[1]:g} leaves no older message to cut"
    else:
        reason = None
    if reason is not None or cut is None:
        saved = {path: text for _, path, text in cut_results}
        return Compacted(view, None, plan, 0, None, before, plan.tokens_after, saved, reason)
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
    # A summarized result is in the archive whole; only the kept ones need saving.
    saved = {path: text for i, path, text in cut_results if i >= cut}
    return Compacted(out, archive, plan, cut, used, before, count_tokens(out, encoding=encoding), saved)

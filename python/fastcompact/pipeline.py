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

from fastcompact import steps, storage, summarize
from fastcompact.config import CompactionConfig
from fastcompact.helpers import Encoding, count_tokens, find_cutoff, normalize
from fastcompact.passes import Edit, Plan, apply_edits
from fastcompact.passes import plan as plan_passes


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


def _cut_results(raw: list[Any], edits: list[Edit], results_dir: str) -> list[tuple[int, str, str]]:
    """(index, path, full text) of each result whose final edit is the budget pass's cut
    (its marker names the path)."""
    last = {e.index: e.pass_name for e in edits if e.field == "content"}
    cut = [i for i, name in last.items() if name == "budget"]
    originals = normalize([raw[i] for i in cut])
    return [(i, f"{results_dir}/{i}.txt", _text(m["content"])) for i, m in zip(cut, originals, strict=True)]


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
    # Every message gets a path; the budget pass names it only in the results it cuts.
    paths = None if results_dir is None else [f"{results_dir}/{i}.txt" for i in range(len(msgs))]
    plan = plan_passes(msgs, cfg, max_input_tokens=max_input_tokens, archive_paths=paths, encoding=encoding)
    view = apply_edits(msgs, plan.edits)
    cut_results = [] if results_dir is None else _cut_results(msgs, plan.edits, results_dir)
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
        text, _ = steps.run(
            summarize.summarize(
                model, span, custom_instructions=cfg.custom_instructions, retries=cfg.ptl_max_retries
            )
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

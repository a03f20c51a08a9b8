"""The whole compaction of a saved transcript, outside an agent: the cheap passes, then
(when still over the trigger, or when forced) a summary of the older span and the
archive of what it replaced. Used by ``fastcompact compact``.

Example:
    >>> from fastcompact.app.offline import compact
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

from fastcompact.agent import media, memory, steps, storage, summarize
from fastcompact.api.counting import Encoding, count_tokens, normalize
from fastcompact.api.cutoffs import find_cutoff, leading_system
from fastcompact.api.passes import Edit, Plan, apply_edits, result_block_of
from fastcompact.api.passes import plan as plan_passes
from fastcompact.api.recall import ORIGINAL_KEY, SAVED_NOTE
from fastcompact.config import CompactionConfig


@dataclass
class Compacted:
    """A compacted conversation: ``messages`` in the input's own shape, the
    ``archive`` text of the summarized span (``None`` without a summary), the full
    text of each result the budget pass cut (by the path its marker names), the inline
    media of the summarized span (by the path the archive names), why no summary was
    made (``reason``, ``None`` when one was), what went wrong on the way
    (``warning``: the model failed and the digest stands in), and the
    figures."""

    messages: list[Any]
    archive: str | None
    plan: Plan
    summarized: int
    summarizer: str | None
    tokens_before: int
    tokens_after: int
    saved_results: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    media: dict[str, bytes] = field(default_factory=dict)
    warning: str | None = None


class _Kept:
    """A storage backend that keeps what is written to it, for the caller to save
    (the command line writes the media beside the archive)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def download_files(self, paths: Sequence[str]) -> list[Any]:
        return [_Found(self.files.get(p)) for p in paths]

    def upload_files(self, items: Sequence[tuple[str, bytes]]) -> list[Any]:
        self.files.update(items)
        return [_Found(None) for _ in items]


@dataclass
class _Found:
    content: bytes | None = None
    error: str | None = None


def media_folder(archive_path: str) -> str:
    """Where the media of an archive go: ``run.archive.md`` -> ``run.archive.media``.

    Example:
        >>> media_folder("out/run.archive.md")
        'out/run.archive.media'
    """
    stem = archive_path[: -len(".md")] if archive_path.endswith(".md") else archive_path
    return f"{stem}.media"


def with_originals(raw: list[Any], view: list[Any]) -> list[Any]:
    """``view`` with each edited message holding what it was (its content and its tool
    calls' arguments) under ``additional_kwargs["fastcompact_original"]``, so that
    :func:`fastcompact.recall` on the saved output still returns every original its
    placeholders name. LangChain's shapes only (objects, ``messages_to_dict``,
    ``dumpd``): a provider's own dicts have no place for it."""
    out = list(view)
    for i, (before, after) in enumerate(zip(raw, view, strict=True)):
        if after is before:
            continue
        fields = _fields(before)
        if fields is None:
            continue
        calls = [
            {"id": c.get("id"), "args": c.get("args")}
            for c in fields.get("tool_calls") or []
            if isinstance(c, Mapping)
        ]
        original = {"content": fields.get("content"), "tool_calls": calls}
        out[i] = _with_kwarg(after, ORIGINAL_KEY, original)
    return out


def _fields(message: Any) -> Mapping[str, Any] | None:
    """A LangChain message's fields, whatever its shape; ``None`` for other shapes."""
    from langchain_core.messages import BaseMessage

    if isinstance(message, BaseMessage):
        return {"content": message.content, "tool_calls": getattr(message, "tool_calls", None) or []}
    if isinstance(message, Mapping):
        for inner in ("data", "kwargs"):
            found = message.get(inner)
            if isinstance(found, Mapping) and ("type" in message or "lc" in message):
                return found
    return None


def _with_kwarg(message: Any, key: str, value: Any) -> Any:
    from langchain_core.messages import BaseMessage

    if isinstance(message, BaseMessage):
        return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, key: value}})
    for inner in ("data", "kwargs"):
        found = message.get(inner)
        if isinstance(found, Mapping):
            kwargs = dict(found.get("additional_kwargs") or {})
            kwargs[key] = value
            return {**message, inner: {**found, "additional_kwargs": kwargs}}
    return message


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


def kept_elsewhere(raw: Sequence[Any], edits: Sequence[Edit]) -> list[int]:
    """The edited results whose whole text only a file beside the output can keep:
    those whose final edit is the budget pass's cut (its marker names the file), and
    those of a provider's own shape that another pass edited (the shape has no place
    for what a message was)."""
    last = _last_content_pass(edits)
    return [i for i, name in last.items() if name == "budget" or _fields(raw[i]) is None]


def _last_content_pass(edits: Sequence[Edit]) -> dict[int, str]:
    """The pass whose edit of each message's content stands (the last to edit it)."""
    return {e.index: e.pass_name for e in edits if e.field == "content"}


def _kept_whole(
    raw: list[Any], view: list[Any], edits: list[Edit], results_dir: str
) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """(index, path, full text) of each result :func:`kept_elsewhere` names, saved
    under ``results_dir``, with the view: a result another pass than the budget's
    edited gains the path in its text (the budget's marker names it already)."""
    last = _last_content_pass(edits)
    kept = kept_elsewhere(raw, edits)
    originals = normalize([raw[i] for i in kept])
    out = list(view)
    saved = []
    for i, m in zip(kept, originals, strict=True):
        path = f"{results_dir}/{i}.txt"
        saved.append((i, path, _text(_inside_block(m["content"]))))
        if last[i] != "budget":
            out[i] = _with_note(out[i], SAVED_NOTE.format(path=path))
    return out, saved


def _with_note(message: Any, note: str) -> Any:
    """A provider-shaped message (a dict) whose text ends with ``note``: its content's,
    or that of the one ``tool_result`` block its content is."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return {**message, "content": content + note}
    block = result_block_of(content)
    if block is not None and isinstance(block.get("content"), str):
        return {**message, "content": [{**block, "content": block["content"] + note}]}
    return message


def _inside_block(content: Any) -> Any:
    """What a result's block holds, for a content that is one; else the content."""
    block = result_block_of(content)
    return content if block is None else block.get("content", "")


def _unsummarized(
    view: list[Any],
    plan: Plan,
    before: int,
    cut_results: list[tuple[int, str, str]],
    reason: str,
    warning: str | None = None,
) -> Compacted:
    """The conversation after the cheap passes alone, and why no summary was made."""
    saved = {path: text for _, path, text in cut_results}
    return Compacted(view, None, plan, 0, None, before, plan.tokens_after, saved, reason, warning=warning)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)


def _model_notes(model: Any, span: list[Any], cfg: CompactionConfig) -> tuple[str | None, str | None]:
    """The notes ``model`` writes on ``span`` (``None`` when it wrote none), and what
    went wrong when it failed (the digest then stands in)."""
    try:
        text, _ = steps.run(
            summarize.summarize(
                model, span, custom_instructions=cfg.custom_instructions, retries=cfg.ptl_max_retries
            )
        )
    except Exception as e:
        return None, f"the model failed ({type(e).__name__}: {e}); used the digest"
    return text, None


def _cut_at(
    view: list[Any],
    plan: Plan,
    keep: Any,
    max_input_tokens: int | None,
    encoding: Encoding,
    lead: int,
    *,
    force: bool,
) -> int | None:
    """Where a summary cuts: the plan's cutoff, else (``force``) ``keep``'s; never
    inside the ``lead`` system messages the conversation starts with."""
    cut = plan.summary_cutoff
    if cut is None and force:
        cut = find_cutoff(view, keep, max_input_tokens, encoding=encoding) or None
    return None if cut is not None and cut <= lead else cut


def _summary_message(
    span: list[Any], notes: str | None, cfg: CompactionConfig, window: int | None, archive_path: str | None
) -> tuple[Any, str | None]:
    """The summary message of ``span``: the memory of its numbered requests, beside a
    model's ``notes`` when it wrote some; and the notes to save whole in the archive
    when they were cut for space."""
    made = memory.remember(
        None,
        None,
        span,
        config=cfg.memory,
        window=window,
        file=archive_path,
        widths_per_token=memory.widths_per_token(span),
        notes=notes,
        notes_file=archive_path,
    )
    message = summarize.summary_message(
        memory.text(made.memory, recall=False),
        file_path=archive_path,
        suppress_follow_up_questions=cfg.suppress_follow_up_questions,
    )
    return message, made.notes_to_save


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
    """Compact ``messages``. The summary comes from ``model`` when given (a chat model;
    should it fail, the digest stands in and ``warning`` says why), else
    from the core's digest (made without a model); ``force`` summarizes even below the trigger.
    Leading system messages stay in place, ahead of the summary. ``archive_path`` is
    where the caller will save the archive (named in the summary), with the span's
    inline media under :func:`media_folder` (``media`` holds their bytes);
    ``results_dir`` is where it will save the results the budget pass cuts, and those
    of a provider's shape that a pass edited (named in their text; ``saved_results``
    holds it). Sizes are counted with ``encoding``."""
    msgs = list(messages)
    cfg = config or CompactionConfig()
    # Every message gets a path; the budget pass names it only in the results it cuts.
    paths = None if results_dir is None else [f"{results_dir}/{i}.txt" for i in range(len(msgs))]
    plan = plan_passes(msgs, cfg, max_input_tokens=max_input_tokens, archive_paths=paths, encoding=encoding)
    view = with_originals(msgs, apply_edits(msgs, plan.edits))
    cut_results: list[tuple[int, str, str]] = []
    if results_dir is not None:
        view, cut_results = _kept_whole(msgs, view, plan.edits, results_dir)
    before = plan.tokens_before
    keep = tuple(cfg.resolved(max_input_tokens)["keep"])
    # The system messages the conversation starts with are never summarized.
    lead = leading_system(msgs)
    cut = _cut_at(view, plan, keep, max_input_tokens, encoding, lead, force=force)
    if not (plan.summary_needed or force):
        reason = f"no summary needed: {plan.tokens_after:,} tokens after the cheap passes, under the trigger"
        return _unsummarized(view, plan, before, cut_results, reason)
    if not cut or cut >= len(view):
        reason = f"nothing to summarize: keeping {keep[0]}:{keep[1]:g} leaves no older message to cut"
        return _unsummarized(view, plan, before, cut_results, reason)
    span, kept = view[lead:cut], view[cut:]
    # Inline media goes to files beside the archive, which the archive and the
    # summarizer's transcript name.
    kept_media = _Kept()

    def media_saved(messages: list[Any]) -> list[Any]:
        return (
            messages
            if archive_path is None
            else media.offload(kept_media, media_folder(archive_path), messages)
        )

    with_media = media_saved(msgs[lead:cut])
    # A model's notes join the memory's numbered requests; the archive holds it all.
    text, warning = (None, None) if model is None else _model_notes(model, media_saved(span), cfg)
    message, notes_to_save = _summary_message(span, text, cfg, max_input_tokens, archive_path)
    used = "model" if text is not None else "digest"
    out = [*msgs[:lead], _summary_in_shape(message, msgs[lead]), *kept]
    archive = storage.archive_text(with_media, lead, source, 1)
    if notes_to_save:
        archive += "\n\n" + storage.notes_text([notes_to_save])
    after = count_tokens(out, encoding=encoding)
    if after >= plan.tokens_after:
        # A summary that shrinks nothing is not written (with --force too).
        reason = f"a summary would not make it smaller ({plan.tokens_after:,} -> {after:,} tokens)"
        return _unsummarized(view, plan, before, cut_results, reason, warning)
    # A summarized result is in the archive whole; only the kept ones need saving.
    saved = {path: full for i, path, full in cut_results if i >= cut}
    return Compacted(
        out, archive, plan, cut - lead, used, before, after, saved, None, kept_media.files, warning
    )

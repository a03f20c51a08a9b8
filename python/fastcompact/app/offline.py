"""The whole compaction of a saved transcript, outside an agent: the cheap passes, then
(when still over the trigger, or when forced) the agent's own compaction of it, with
the transcript read as LangChain messages and a store that keeps what it writes: the
summary of the older span, the archive of what it replaced and the files beside it.
Used by ``fastcompact compact``.

Examples:
    >>> from fastcompact.app.offline import compact
    >>> from fastcompact.samples import load_session
    >>> out = compact(load_session("research"), max_input_tokens=30_000, archive_path="run.archive.md")
    >>> out.summarized > 0, out.tokens_after < out.tokens_before, out.archive.startswith("# Conversation")
    (True, True, True)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call

from fastcompact.agent import compaction, reading, steps
from fastcompact.agent.setup import Setup
from fastcompact.api.counting import Encoding, count_once, count_tokens, normalize
from fastcompact.api.cutoffs import leading_system
from fastcompact.api.parallel import one_result_a_message
from fastcompact.api.passes import Edit, Plan, apply_edits, result_block_of
from fastcompact.api.passes import plan as plan_passes
from fastcompact.api.recall import ORIGINAL_KEY, SAVED_NOTE
from fastcompact.config import CompactionConfig

if TYPE_CHECKING:
    from fastcompact.agent.compaction import Outcome
    from fastcompact.agent.state import Turn


@dataclass
class Compacted:
    """A compacted conversation: ``messages`` in the input's own shape, the
    ``archive`` text of the summarized span (``None`` without a summary or an archive
    path), the full text of each result the budget pass cut (by the path its marker
    names), the files saved beside the archive (the summarized span's inline media, the
    notes cut for space; by the path the archive and the summary name), why no summary was
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

    def write(self, path: str, text: str) -> _Found:
        self.files[path] = text.encode()
        return _Found(None)

    def read(self, path: str, *window: int) -> str:
        # The files a transcript read are not here: the command line restores none.
        return f"Error: {path} is not kept"


@dataclass
class _Found:
    content: bytes | None = None
    error: str | None = None


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
    """The edited messages whose whole text only a file beside the output can keep:
    results whose final edit is the budget pass's cut (its marker names the file), and
    messages of a provider's own shape whose content or call arguments a pass edited
    (the shape has no place for what a message was)."""
    results = _results_kept_elsewhere(raw, edits)
    return sorted({*results, *(e.index for e in _provider_arg_edits(raw, edits))})


def _results_kept_elsewhere(raw: Sequence[Any], edits: Sequence[Edit]) -> list[int]:
    """The messages of :func:`kept_elsewhere` whose content was edited."""
    last = _last_content_pass(edits)
    return [i for i, name in last.items() if name == "budget" or _fields(raw[i]) is None]


def _provider_arg_edits(raw: Sequence[Any], edits: Sequence[Edit]) -> list[Edit]:
    """The edits of call arguments in messages of a provider's own shape."""
    return [e for e in edits if e.field == "tool_args" and _fields(raw[e.index]) is None]


def _args_kept_whole(
    raw: list[Any], edits: list[Edit], results_dir: str
) -> tuple[list[Edit], list[tuple[int, str, str]]]:
    """The edits with each shortened argument of a provider-shaped call naming the file
    that keeps the call's whole arguments, and (index, path, text) of those files: the
    text is what :func:`~fastcompact.recall` returns for ``<id>/args``."""
    from fastcompact.api.recall import ARGS_SUFFIX, recall

    shortened = {id(e) for e in _provider_arg_edits(raw, edits)}
    if not shortened:
        return edits, []
    indices = sorted({e.index for e in edits if id(e) in shortened})
    calls_of = dict(zip(indices, normalize([raw[i] for i in indices]), strict=True))
    out: list[Edit] = []
    saved = []
    for e in edits:
        if id(e) not in shortened or e.call is None:
            out.append(e)
            continue
        path = f"{results_dir}/{e.index}.{e.call}.args.json"
        call = calls_of[e.index]["tool_calls"][e.call]
        try:
            whole = recall([raw[e.index]], f"{call.get('id')}{ARGS_SUFFIX}")
        except KeyError:  # a call without an id: its arguments as recall would give them
            whole = json.dumps({"name": call.get("name"), "args": call.get("args")}, ensure_ascii=False)
        saved.append((e.index, path, whole))
        value = _noted_args(e.value, call.get("args"), SAVED_NOTE.format(path=path))
        out.append(Edit(e.index, e.pass_name, e.field, value, e.call, 0, e.target))
    return out, saved


def _noted_args(args: Any, before: Any, note: str) -> Any:
    """``args`` with ``note`` after each string a pass changed from ``before``."""
    if isinstance(args, str):
        return args if args == before else args + note
    if isinstance(args, Mapping):
        fields = before if isinstance(before, Mapping) else {}
        return {k: _noted_args(v, fields.get(k), note) for k, v in args.items()}
    if isinstance(args, list):
        items = before if isinstance(before, list) and len(before) == len(args) else [None] * len(args)
        return [_noted_args(v, w, note) for v, w in zip(args, items, strict=True)]
    return args


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
    kept = _results_kept_elsewhere(raw, edits)
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


def as_langchain(messages: Sequence[Any]) -> list[BaseMessage]:
    """``messages``, of any shape the core reads, as LangChain messages: what the
    agent's compaction works on. Tool calls whose arguments are not an object are
    kept as invalid calls, as LangChain keeps them.

    Examples:
        >>> msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
        >>> [m.type for m in as_langchain(msgs)]
        ['human', 'ai']
    """
    given = list(messages)
    return [
        m if isinstance(m, BaseMessage) else _message(n, _content_of(m, n))
        for m, n in zip(given, normalize(given), strict=True)
    ]


def _content_of(message: Any, normalized: Mapping[str, Any]) -> Any:
    """A message's content as it was given (the core's reading leaves out media bytes)."""
    fields = _fields(message) if isinstance(message, Mapping) else None
    found = (
        (fields if fields is not None else message).get("content") if isinstance(message, Mapping) else None
    )
    return normalized.get("content") if found is None else found


def _message(n: Mapping[str, Any], content: Any) -> BaseMessage:
    content = "" if content is None else content
    extra = {"id": n["id"]} if n.get("id") else {}
    role = n.get("role")
    if role == "ai":
        calls = [c for c in n.get("tool_calls") or [] if isinstance(c.get("args"), Mapping)]
        invalid = [
            invalid_tool_call(id=c.get("id"), name=c.get("name"), args=_text(c.get("args")))
            for c in n.get("tool_calls") or []
            if not isinstance(c.get("args"), Mapping)
        ]
        return AIMessage(content, tool_calls=calls, invalid_tool_calls=invalid, **extra)
    if role == "tool":
        # Anthropic's result comes as a block of a user message: the result is inside.
        content = _inside_block(content)
        return ToolMessage(content, tool_call_id=n.get("tool_call_id") or "", name=n.get("name"), **extra)
    if role == "system":
        return SystemMessage(content, **extra)
    if role == "human":
        return HumanMessage(content, **extra)
    return ChatMessage(content=content, role=n.get("role_name") or str(role), **extra)


def _system(messages: Sequence[BaseMessage]) -> SystemMessage | None:
    """The leading system messages as the one system message of a request."""
    if not messages:
        return None
    if len(messages) == 1:
        return SystemMessage(messages[0].content)
    return SystemMessage("\n\n".join(m.text for m in messages))


def _turn(
    msgs: list[Any], view: list[Any], plan: Plan, lead: int, system: SystemMessage | None, **options: Any
) -> tuple[list[BaseMessage], Turn]:
    """The turn the agent's compaction reads: the transcript after its leading system
    messages, as LangChain messages, with the plan's cutoff there and its counts
    calibrated to ``encoding``'s (the compaction counts as the agent's would)."""
    raw, edited = as_langchain(msgs[lead:]), as_langchain(view[lead:])
    cut = plan.summary_cutoff
    cut = cut - lead if cut is not None and cut > lead else None
    estimate = count_once(edited, system=system)
    counted_apart = options["encoding"] != "heuristic" or options["count_as"] is not None
    ratio = plan.tokens_after / estimate if counted_apart and estimate else 1.0
    planned = dataclasses.replace(
        plan, summary_cutoff=cut, true_tokens=plan.tokens_after, ratio=ratio, offset=0.0
    )
    turn = reading.transcript_turn(raw, edited, planned, options["window"], options["source"], lead)
    return edited, turn


@dataclasses.dataclass(frozen=True)
class _TranscriptCall:
    """A saved transcript's stand-in for a model call: no agent model, no tools."""

    messages: list[Any]
    system_message: SystemMessage | None
    state: dict[str, Any]
    model: Any = None
    tools: tuple[Any, ...] = ()
    runtime: Any = None
    model_settings: dict[str, Any] = dataclasses.field(default_factory=dict)


def _outcome(
    msgs: list[Any], view: list[Any], plan: Plan, lead: int, setup: Setup, *, force: bool, **options: Any
) -> Outcome | None:
    """The agent's compaction of the transcript (``None``: nothing to cut); the
    ``lead`` system messages are the request's system prompt, never summarized."""
    system = _system(as_langchain(msgs[:lead]))
    edited, turn = _turn(msgs, view, plan, lead, system, **options)
    # No agent model: the summary model writes, and counts are the core's own.
    request = _TranscriptCall(edited, system, {"messages": turn.raw})
    return steps.run(compaction.compacted(setup, request, turn, forced=force))


def _warning(info: Mapping[str, Any]) -> str | None:
    """What went wrong with the model's summary, when the digest stood in."""
    if info.get("summarizer") != "fallback" or not info.get("error"):
        return None
    return f"the model failed ({info['error']}); used the digest"


def _result_paths(results_dir: str | None, n: int) -> list[str | None] | None:
    """Every message's path for its whole result; the budget pass names one only in the
    results it cuts."""
    return None if results_dir is None else [f"{results_dir}/{i}.txt" for i in range(n)]


def _passed(
    msgs: list[Any], plan: Plan, results_dir: str | None
) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """The view the cheap passes' ``plan`` makes, and what they cut that is saved whole
    under ``results_dir`` (message index, path, text)."""
    edits, cut_args = plan.edits, list[tuple[int, str, str]]()
    if results_dir is not None:
        edits, cut_args = _args_kept_whole(msgs, edits, results_dir)
    view = with_originals(msgs, apply_edits(msgs, edits))
    if results_dir is None:
        return view, []
    view, cut_results = _kept_whole(msgs, view, plan.edits, results_dir)
    return view, cut_results + cut_args


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
    count_as: str | None = None,
    source: str = "transcript",
) -> Compacted:
    """Compact ``messages``. The summary comes from ``model`` when given (a chat model;
    should it fail, the digest stands in and ``warning`` says why), else
    from the core's digest (made without a model); ``force`` summarizes even below the trigger.
    The compaction is the agent's own (:func:`fastcompact.agent.compaction.compacted`),
    for a saved transcript: it commits whenever it makes the conversation smaller, and
    the keep policy's cut stands. Leading system messages stay in place, ahead of the
    summary. ``archive_path`` is where the caller will save the archive (named in the
    summary), with the span's inline media beside it (``run.archive.md``'s under
    ``run.archive.media``) and the model's notes when the memory cut them for space
    (``media`` holds both);
    ``results_dir`` is where it will save the results the budget pass cuts, and those
    of a provider's shape that a pass edited (named in their text; ``saved_results``
    holds it). Sizes are counted with ``encoding``, as ``count_as`` (a model's name)
    counts when given. A user message of parallel tool results comes out one message a
    result, each result edited on its own."""
    msgs = one_result_a_message(list(messages))
    cfg = config or CompactionConfig()
    plan = plan_passes(
        msgs,
        cfg,
        max_input_tokens=max_input_tokens,
        archive_paths=_result_paths(results_dir, len(msgs)),
        encoding=encoding,
        model=count_as,
    )
    view, cut_results = _passed(msgs, plan, results_dir)
    before = plan.tokens_before
    if not (plan.summary_needed or force):
        reason = f"no summary needed: {plan.tokens_after:,} tokens after the cheap passes, under the trigger"
        return _unsummarized(view, plan, before, cut_results, reason)
    # The agent's own compaction, writing to a store the caller saves from.
    kept_files = _Kept()
    setup = Setup(
        cfg,
        summary_model=model,
        backend=None if archive_path is None else kept_files,
        archive_file=archive_path,
        saved_transcript=True,
    )
    options = {"window": max_input_tokens, "encoding": encoding, "count_as": count_as, "source": source}
    # The system messages the conversation starts with are never summarized.
    lead = leading_system(msgs)
    outcome = _outcome(msgs, view, plan, lead, setup, force=force, **options)
    if outcome is None:
        keep = cfg.resolved(max_input_tokens)["keep"]
        reason = f"nothing to summarize: keeping {keep[0]}:{keep[1]:g} leaves no older message to cut"
        return _unsummarized(view, plan, before, cut_results, reason)
    info, warning = outcome.info, _warning(outcome.info)
    if outcome.event is None:
        # A summary that shrinks nothing is not written (with --force too).
        reason = (
            f"a summary would not make it smaller ({plan.tokens_after:,} -> {info['tokens_after']:,} tokens)"
        )
        return _unsummarized(view, plan, before, cut_results, reason, warning)
    cut = lead + info["summarized_messages"]
    summary = _summary_in_shape(outcome.event["summary_message"], msgs[lead])
    out = [*msgs[:lead], summary, *view[cut:]]
    files = dict(kept_files.files)
    archive = None if info["file_path"] is None else files.pop(info["file_path"]).decode()
    # A summarized result is in the archive whole; only the kept ones need saving.
    saved = {path: full for i, path, full in cut_results if i >= cut}
    used = "model" if info["summarizer"] == "model" else "digest"
    after = count_tokens(out, encoding=encoding, model=count_as)
    return Compacted(out, archive, plan, cut - lead, used, before, after, saved, None, files, warning)

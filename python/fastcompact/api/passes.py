"""The cheap passes: plan a turn and apply its edits (one pass alone:
:mod:`fastcompact.api.one_pass`).

A plan never removes a message or breaks a tool-call pair: it rewrites tool-result
contents and tool-call arguments only, and returns those rewrites as edits.
``apply_edits`` makes new message objects for the edited messages and keeps the same
objects for the rest.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

from typing_extensions import Unpack

import fastcompact._core as _core
from fastcompact.api import pictures
from fastcompact.api.copies import with_fields
from fastcompact.api.parallel import one_result_a_message
from fastcompact.config import (
    CompactionConfig,
    reread_tool_defaults,
)
from fastcompact.config import generation as config_generation

if TYPE_CHECKING:
    from fastcompact._core import _Progress
from fastcompact.api.counting import (
    CountingOptions,
    Encoding,
    MessageTokens,
    _as_list,
    _check_keywords,
    _input_error,
    _window,
    counting_options,
    message_list,
    message_tokens,
    plural,
    text_or_file,
)

__all__ = [
    "Edit",
    "PassStats",
    "Plan",
    "PlanOptions",
    "add_tool_kinds",
    "apply_edits",
    "model_view",
    "plan",
]


# The core makes these (its plans hand them over as they are); see their docstrings.
Edit = _core.Edit
PassStats = _core.PassStats


@dataclass(frozen=True)
class Plan:
    """One turn's plan: the edits, tokens before and after each pass, and whether a
    summary is still needed (with its pair-safe cutoff in the edited view)."""

    edits: list[Edit]
    tokens_before: int
    tokens_after: int
    passes: list[PassStats]
    summary_needed: bool
    summary_cutoff: int | None
    per_role: dict[str, int]
    per_tool: dict[str, int]
    # The view's true size after the passes: anchored on the newest provider usage that
    # counted this view, the rest estimated as ``offset + ratio * estimate``.
    true_tokens: int = 0
    ratio: float = 1.0
    offset: float = 0.0
    # The message whose reported usage anchors ``true_tokens`` (what follows it is
    # estimated).
    anchor: int | None = None
    # Messages before ``settled`` are settled (their batched edits committed); a batch
    # committed this turn from message ``batch_at`` on.
    settled: int = 0
    batch_at: int | None = None
    # The tool results whose call is in no earlier message, by index.
    orphans: tuple[int, ...] = ()
    # The user messages that answer several calls at once, by index: the passes reach
    # their results once they are one a message (see `one_result_a_message`).
    parallel: tuple[int, ...] = ()
    # For the picture (filled by `plan()`, before the passes): the largest messages, and
    # the messages' tokens before and from the summary cutoff.
    largest: tuple[MessageTokens, ...] = ()
    summarized_tokens: int = 0
    kept_tokens: int = 0
    # The window and where the trigger's token line falls, for the picture.
    max_input_tokens: int | None = None
    trigger_tokens: int | None = None

    def __repr__(self) -> str:
        # model_view applies the edits in its view and hands back none: the passes count them.
        edits = (
            plural(len(self.edits), "edit")
            if self.edits or not any(p.edits for p in self.passes)
            else f"{plural(sum(p.edits for p in self.passes), 'edit')} (applied in the view)"
        )
        lines = [
            f"Plan: {self.tokens_before:,} -> {self.tokens_after:,} tokens, {edits}, "
            + (
                f"summary needed (cut at message {self.summary_cutoff})"
                if self.summary_needed and self.summary_cutoff is not None
                else "summary needed (no safe cut)"
                if self.summary_needed
                else "no summary needed"
            )
        ]
        for p in self.passes:
            if p.edits:
                lines.append(f"  {p.name:<14} -{p.saved:>10,} tokens  ({plural(p.edits, 'edit')})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = pictures.where_tokens_go(
            self.tokens_before, self.per_role, self.per_tool, self.largest, self.passes, self.tokens_after
        )
        rows = [("before the passes", self.tokens_before), ("after the passes", self.tokens_after)]
        parts.append(pictures.gauge("against the window", rows, self.max_input_tokens, self.trigger_tokens))
        cut = self.summary_cutoff
        needed = self.summary_needed and bool(cut)
        if needed:
            parts.append(
                pictures.strip(
                    "what a summary would replace",
                    self.summarized_tokens,
                    self.kept_tokens,
                    f"cut at message {cut:,}",
                )
            )
        else:
            parts.append(pictures.note("after the cheap passes a summary is not needed"))
        return pictures.page(repr(self).splitlines()[0], parts, needed)


class PlanOptions(TypedDict, total=False):
    """The keywords :func:`plan` documents, taken by :func:`model_view` too."""

    max_input_tokens: int | None
    now: float | None
    system: Any
    tools: Sequence[Any] | None
    timestamps: Sequence[float | None] | None
    archive_paths: Sequence[str | None] | None
    model: Any
    cache_key: str | None
    encoding: Encoding


def plan(
    messages: Iterable[Any], config: CompactionConfig | None = None, **options: Unpack[PlanOptions]
) -> Plan:
    """Run the cheap passes in order and decide whether a summary is still needed.

    ``config`` defaults to ``CompactionConfig()``; its model-aware defaults use
    ``max_input_tokens``. ``now`` (seconds since the epoch) and ``timestamps`` (one per
    message; by default read from each message's ``additional_kwargs`` /
    ``response_metadata``) drive the time-gap pass. ``archive_paths`` (one per
    message) names where a result's full text is kept, for the budget pass's marker.
    ``cache_key`` names the conversation (a thread id) for the cache of per-message
    work; by default the first message's id stands for it. ``encoding``, ``system``,
    ``tools`` and ``model`` are as in :func:`fastcompact.count_tokens`. An unknown
    keyword is a ``TypeError``. Edits are made one message a result: a user message of
    parallel tool results is listed in ``parallel``, and its results are edited once
    the list is planned through :func:`one_result_a_message` (the pass helpers,
    :func:`model_view` and the middleware do so themselves).

    Examples:
        >>> from fastcompact.samples import coding_session
        >>> p = plan(coding_session(600, seed=1), max_input_tokens=200_000)
        >>> p.tokens_after < p.tokens_before
        True
        >>> [s.name for s in p.passes]
        ['budget', 'truncate_args', 'clearing', 'dedupe', 'collapse', 'time_gap']
    """
    _check_keywords(options, PlanOptions, "plan")
    raw = run_plan(_as_list(messages), config, **options)
    found = plan_of(raw)
    # The plan's own counts: the core returns them beside the plan, nothing is recounted.
    sizes = None if raw.breakdown is None else message_tokens(raw.breakdown)
    tokens = [] if sizes is None else sizes.tokens
    cut = found.summary_cutoff or 0
    window = options.get("max_input_tokens")
    # The settings `run_plan` planned with, kept: resolving them again costs more than a warm plan.
    resolved = settings_for(config or _DEFAULT_CONFIG, _window(window)).resolved
    return replace(
        found,
        largest=() if sizes is None else tuple(sizes.largest(5)),
        summarized_tokens=sum(tokens[:cut]),
        kept_tokens=sum(tokens[cut:]),
        max_input_tokens=window,
        trigger_tokens=pictures.trigger_tokens(resolved["trigger"], window),
    )


def model_view(
    messages: Iterable[Any], config: CompactionConfig | None = None, **options: Unpack[PlanOptions]
) -> tuple[list[Any], Plan]:
    """The messages as the model should see them this turn, and the plan's figures.

    The same as ``apply_edits(messages, plan(messages, ...).edits)``, built in one
    step: an edited message is copied only when its edits differ from the last
    turn's, so a turn costs little more than reading its new messages. The returned
    plan's ``edits`` is empty (they are applied in the view). A user message of
    parallel tool results is one message a result in the view, each result edited on
    its own (see :func:`one_result_a_message`).

    Examples:
        >>> from fastcompact.samples import coding_session
        >>> msgs = coding_session(600, seed=1)
        >>> view, p = model_view(msgs, max_input_tokens=200_000)
        >>> len(view) == len(msgs), p.tokens_after < p.tokens_before
        (True, True)
    """
    _check_keywords(options, PlanOptions, "model_view")
    given = _as_list(messages)
    raw = run_plan(given, config, make_edited=edited_message, **options)
    if raw.parallel:
        raw = run_plan(one_result_a_message(given), config, make_edited=edited_message, **options)
    return view_of(raw), plan_of(raw)


def view_of(raw: _core.PlanOutcome) -> list[Any]:
    if raw.view is None:
        raise RuntimeError("fastcompact: the core planned without building the view")
    return raw.view


# What `run_plan` plans with when no config is given; never handed out, so never changed.
_DEFAULT_CONFIG = CompactionConfig()

# Settings read by the core, per (config, window, pricing), until any config changes.
_SETTINGS: dict[
    tuple[int, int | None, str | None], tuple[weakref.ref[CompactionConfig], int, _core.PlanSettings]
] = {}
_SETTINGS_LIMIT = 64


def settings_for(cfg: CompactionConfig, window: int | None, pricing: str | None = None) -> _core.PlanSettings:
    """The core's copy of ``cfg.resolved(window, pricing)``, made once and kept while no
    config changes (planning every turn with the same config then costs no conversion)."""
    key = (id(cfg), window, pricing)
    now = config_generation()
    hit = _SETTINGS.get(key)
    if hit is not None and hit[0]() is cfg and hit[1] == now:
        return hit[2]
    settings = _core.PlanSettings(cfg.resolved(window, pricing))
    if len(_SETTINGS) >= _SETTINGS_LIMIT:
        _SETTINGS.clear()
    _SETTINGS[key] = (weakref.ref(cfg), now, settings)
    return settings


def run_plan(
    messages: Iterable[Any],
    config: CompactionConfig | dict[str, Any] | _core.PlanSettings | None,
    *,
    make_edited: Any = None,
    progress: _Progress | None = None,
    **options: Unpack[PlanOptions],
) -> _core.PlanOutcome:
    """Plan through the core, with :func:`plan`'s options. ``make_edited`` builds the
    model view (see :func:`model_view`). With ``progress`` (where the conversation
    stands, as the middleware keeps it), sizes are anchored on the provider usage the
    messages report."""
    max_input_tokens = _window(options.get("max_input_tokens"))
    if isinstance(config, dict | _core.PlanSettings):
        # Already resolved (the middleware resolves its settings once).
        settings = config
    else:
        cfg = config if config is not None else _DEFAULT_CONFIG
        if not isinstance(cfg, CompactionConfig):
            raise _input_error("config", f"expected a CompactionConfig, got {type(cfg).__name__}")
        settings = settings_for(cfg, max_input_tokens)
    counting = {k: v for k, v in options.items() if k in CountingOptions.__optional_keys__}
    timestamps, archive_paths = options.get("timestamps"), options.get("archive_paths")
    msgs = _as_list(messages)
    for name, given in (("timestamps", timestamps), ("archive_paths", archive_paths)):
        if given is not None and isinstance(msgs, list | tuple) and len(given) != len(msgs):
            raise _input_error(name, f"expected one per message ({len(msgs)}), got {len(given)}")
    return _core.plan(
        msgs,
        settings,
        # The middleware's messages come from graph state (see `counting_options`).
        counting_options(
            {**counting, "use_usage": progress is not None}, "plan", in_place_edits=progress is None
        ),
        max_input_tokens=max_input_tokens,
        now=options.get("now"),
        timestamps=None if timestamps is None else list(timestamps),
        archive=None if archive_paths is None else list(archive_paths),
        make_edited=make_edited,
        progress=progress,
    )


def plan_of(raw: _core.PlanOutcome) -> Plan:
    breakdown = raw.breakdown
    return Plan(
        edits=raw.edits,
        tokens_before=raw.tokens_before,
        tokens_after=raw.tokens_after,
        passes=raw.passes,
        summary_needed=raw.summary_needed,
        summary_cutoff=raw.summary_cutoff,
        per_role={} if breakdown is None else breakdown.per_role,
        per_tool={} if breakdown is None else breakdown.per_tool,
        true_tokens=raw.true_tokens,
        ratio=raw.ratio,
        offset=raw.offset,
        anchor=raw.anchor,
        settled=raw.settled,
        batch_at=raw.batch_at,
        orphans=tuple(raw.orphans),
        parallel=tuple(raw.parallel),
    )


def _new_tool_calls(calls: list[Any], edits: Sequence[Edit], openai: bool) -> list[Any]:
    out = list(calls)
    for e in edits:
        if e.call is None or not 0 <= e.call < len(out):
            continue
        call = dict(out[e.call])
        if openai and isinstance(call.get("function"), dict):
            call["function"] = {**call["function"], "arguments": json.dumps(e.value, ensure_ascii=False)}
        else:
            call["args"] = e.value
        out[e.call] = call
    return out


def _new_blocks(content: Any, calls: list[Any], edits: Sequence[Edit]) -> Any:
    """Anthropic-style content carries the same arguments as ``tool_use`` blocks: the
    block of a call's id, or (a message with its calls in its content alone) the
    call's own block, by position."""
    if not isinstance(content, list):
        return content
    uses = [i for i, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "tool_use"]
    out = list(content)
    for e in edits:
        if e.call is None or not 0 <= e.call < len(calls if calls else uses):
            continue
        if not calls:
            where = [uses[e.call]]
        else:
            call = calls[e.call]
            call_id = call.get("id") if isinstance(call, dict) else None
            where = [i for i in uses if content[i].get("id") == call_id]
        for i in where:
            out[i] = {**out[i], "input": e.value}
    return out


def result_block_of(content: Any) -> dict[str, Any] | None:
    """The ``tool_result`` block a content is made of alone (Anthropic's shape for a
    tool's result, which the core reads as that result), else ``None``."""
    if not isinstance(content, list) or len(content) != 1:
        return None
    block = content[0]
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return None
    return block if isinstance(block.get("tool_use_id"), str) else None


def _result_block(m: Any, content: Any) -> dict[str, Any] | None:
    """The result block of a user message, which an edit of the result goes into."""
    role = m.get("role") or m.get("type") if isinstance(m, dict) else getattr(m, "type", None)
    return None if role == "tool" else result_block_of(content)


def _new_content(m: Any, content: Any, new: Any) -> Any:
    """``new`` as the content, or inside the result block that ``content`` is."""
    block = _result_block(m, content)
    return [{**block, "content": new}] if block is not None else new


def edited_message(m: Any, edits: list[Edit]) -> Any:
    arg_edits: Sequence[Edit]
    if len(edits) == 1 and edits[0].field == "content":
        # Most edits replace one result's content: no lists to sort the edits into.
        new_content, arg_edits = edits[0].value, ()
    else:
        content_edits = [e for e in edits if e.field == "content"]
        arg_edits = [e for e in edits if e.field == "tool_args"]
        new_content = content_edits[-1].value if content_edits else None
    if isinstance(m, str):
        return new_content if new_content is not None else m
    if isinstance(m, tuple):
        return (m[0], new_content) if new_content is not None else m
    if isinstance(m, dict):
        # Serialized LangChain shapes keep their fields one level down.
        for inner in ("kwargs", "data"):
            if isinstance(m.get(inner), dict) and "content" not in m:
                return {**m, inner: edited_message(m[inner], edits)}
        out = dict(m)
        if new_content is not None:
            out["content"] = _new_content(m, m.get("content"), new_content)
        if arg_edits:
            given = m.get("tool_calls")
            calls: list[Any] = given if isinstance(given, list) else []
            if calls:
                out["tool_calls"] = _new_tool_calls(calls, arg_edits, openai=True)
            out["content"] = _new_blocks(out.get("content"), calls, arg_edits)
        return out
    update: dict[str, Any] = {}
    if new_content is not None:
        update["content"] = _new_content(m, m.content, new_content)
    if arg_edits:
        calls = list(getattr(m, "tool_calls", []) or [])
        update["tool_calls"] = _new_tool_calls(calls, arg_edits, openai=False)
        update["content"] = _new_blocks(update.get("content", m.content), calls, arg_edits)
    return with_fields(m, update)


# Edited copies from earlier turns, so that a turn re-creates only new edits: plans are
# stable between batches, and so are the objects a model view is built from.
_EDITED: dict[tuple[int, tuple[Any, ...]], tuple[Any, Any]] = {}
_EDITED_LIMIT = 200_000


def _edit_key(group: list[Edit]) -> tuple[Any, ...]:
    return tuple(
        e.fingerprint
        or (e.field, e.call, e.value if isinstance(e.value, str) else json.dumps(e.value, sort_keys=True))
        for e in group
    )


def apply_edits(messages: Iterable[Any], edits: Iterable[Edit]) -> list[Any]:
    """A new list with the edits applied: edited messages are new objects
    (``model_copy`` for LangChain messages, copies for dicts), the others are the same
    objects. The input is not modified. The same edit of the same message returns the
    same edited object on later calls. An edit a plan made names the message it was
    made for (``Edit.target``): applied to a list where another message has its index
    (the list changed since, or another conversation), it raises ``InputError``
    naming the index, and nothing is applied.

    Examples:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> msgs = [HumanMessage("hi"), ToolMessage("long output", tool_call_id="c1")]
        >>> out = apply_edits(msgs, [Edit(1, "clearing", "content", "[cleared]")])
        >>> out[0] is msgs[0], out[1].content, msgs[1].content
        (True, '[cleared]', 'long output')
    """
    msgs = list(message_list(messages))  # a new list: the caller's stays as it is
    if isinstance(edits, str | bytes | Mapping) or not isinstance(edits, Iterable):
        raise _input_error("edits", f"expected a list of Edit objects, got {type(edits).__name__}")
    by_index: dict[int, list[Edit]] = {}
    for e in edits:
        if not isinstance(e, Edit):
            raise _input_error("edits", f"expected Edit objects, got {type(e).__name__}")
        if not 0 <= e.index < len(msgs):
            raise _input_error("index", f"edit for message {e.index} of {len(msgs)}", e.index)
        by_index.setdefault(e.index, []).append(e)
    checked = sorted(i for i, group in by_index.items() if any(e.target for e in group))
    if checked:
        found = dict(zip(checked, _core.identities([msgs[i] for i in checked]), strict=True))
        for i in checked:
            if any(e.target and e.target != found[i] for e in by_index[i]):
                raise _input_error(
                    "edits",
                    f"the edit of message {i} was planned for another message (the list changed since "
                    "the plan, or is another conversation); plan this list again",
                    i,
                )
    for i, group in by_index.items():
        original = msgs[i]
        key = (id(original), _edit_key(group))
        hit = _EDITED.get(key)
        if hit is not None and hit[0] is original:
            msgs[i] = hit[1]
            continue
        msgs[i] = edited_message(original, group)
        if len(_EDITED) >= _EDITED_LIMIT:
            _EDITED.clear()
        _EDITED[key] = (original, msgs[i])
    return msgs


def add_tool_kinds(kinds: str | os.PathLike[str]) -> int:
    """Tell the passes what more tools are, for every config made later in this
    process: the old results of read, search, list, shell and fetch tools are cleared
    by default (the agent can run them again), and an idle gap clears write and edit
    results with them. ``kinds`` is the text of the lines, or the path of a file
    holding it (a ``pathlib.Path``), in the shape of the built-in list: one line a kind,
    ``kind: tool, tool``, with kind one of ``read``, ``search``, ``list``, ``shell``,
    ``fetch``, ``write``, ``edit``; names match exactly; blank lines and ``#`` comments
    are skipped. Returns how many lines it took. Raises
    :class:`~fastcompact.InputError` naming the first line it cannot read (and then
    adds nothing). A config made before keeps its tool sets.

    Examples:
        >>> from fastcompact import ClearingConfig
        >>> "Bash" in ClearingConfig().tools, "run_query" in ClearingConfig().tools
        (True, False)
        >>> add_tool_kinds("shell: run_query")
        1
        >>> "run_query" in ClearingConfig().tools
        True
    """
    taken = _core.add_tool_kinds(text_or_file(kinds, "kinds"))
    reread_tool_defaults()
    return taken

"""``fastcompact.inspect``: one look at a conversation — where its tokens go, what each
cheap pass would save, and where the trigger and the summary cutoff fall."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastcompact.api import pictures
from fastcompact.api.counting import (
    ContextSize,
    Encoding,
    MessageTokens,
    _as_list,
    _input_error,
    _window,
    count_tokens,
    normalize,
    plural,
    token_breakdown,
)
from fastcompact.api.cutoffs import find_cutoff, should_compact
from fastcompact.api.passes import Plan, plan
from fastcompact.config import CompactionConfig, Trigger

# From this share of Chinese, Japanese or Korean characters on, inspect says that the
# heuristic undercounts.
CJK_NOTE_SHARE = 0.3
# A tool past this share of the tokens whose results clearing never takes is named.
UNCLEARED_NOTE_SHARE = 0.1
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# Messages read to estimate the share: enough for a share, few enough to be quick.
_CJK_SAMPLE = 400


def cjk_share(messages: Sequence[Any]) -> float:
    """The share of a conversation's text characters that are Chinese, Japanese or
    Korean, from a sample of its messages spread over it.

    Examples:
        >>> cjk_share(["请阅读这个文件", "ok"])
        0.7777777777777778
    """
    if not messages:
        return 0.0
    step = max(1, len(messages) // _CJK_SAMPLE)
    texts = []
    for m in normalize(list(messages[::step])):
        content = m["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    text = "".join(texts)
    return len(_CJK.findall(text)) / len(text) if text else 0.0


@dataclass(frozen=True)
class Report:
    """What :func:`inspect` found. Prints as text, renders as a picture in Jupyter,
    and ``to_dict()`` gives the same as plain data."""

    messages: int
    encoding: str
    total_tokens: int
    system_and_tools: int
    per_role: dict[str, int]
    per_tool: dict[str, int]
    largest: list[MessageTokens]
    max_input_tokens: int | None
    trigger: list[tuple[str, float]]
    trigger_fires: bool
    keep: tuple[str, float]
    cutoff: int
    kept_tokens: int
    plan: Plan
    source: str = field(default="conversation")
    #: The share of the text's characters that are Chinese, Japanese or Korean.
    cjk_share: float = 0.0
    #: The model whose provider's count the figures follow (``None``: the encoding's).
    model: str | None = None
    #: The tools that take a large share of the tokens and that clearing does not
    #: know, with their shares, largest first.
    unclearable: list[tuple[str, float]] = field(default_factory=list)
    #: The size anchored on the newest usage a call reported in the conversation (what
    #: that call was sent, the messages after it estimated), as the agent counts;
    #: ``None`` when no call reports one.
    usage_tokens: int | None = None

    def notes(self) -> list[str]:
        """What the figures cannot show: text the heuristic undercounts, and large tools
        whose old results are never cleared."""
        notes = [
            f"note: {name} takes {100 * share:.0f}% of the tokens and its old results are not cleared: "
            f"--clear-tools {name} (ClearingConfig(tools=...) in Python, or fastcompact.add_tool_kinds) "
            "clears them when the agent can run it again"
            for name, share in self.unclearable
        ]
        if self.encoding != "heuristic" or self.cjk_share < CJK_NOTE_SHARE:
            return notes
        return [
            f"note: {100 * self.cjk_share:.0f}% of the text is Chinese, Japanese or Korean, about a token a "
            "character: the heuristic (4 characters a token) counts about a third of its tokens; "
            "--encoding o200k_base (encoding='o200k_base' in Python) counts them exactly",
            *notes,
        ]

    def counted(self) -> str:
        """How the tokens were counted: the encoding, and the model counted as.

        Examples:
            >>> import fastcompact
            >>> fastcompact.inspect([("human", "hi")], model="claude-sonnet-4-6").counted()
            "heuristic, as claude-sonnet-4-6's provider counts"
        """
        how = f"{self.encoding}, as {self.model}'s provider counts" if self.model else self.encoding
        if self.usage_tokens is not None:
            how += f"; {self.usage_tokens:,} by the usage its last call reported"
        return how

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "source": self.source,
            "messages": self.messages,
            "encoding": self.encoding,
            "usage_tokens": self.usage_tokens,
            "model": self.model,
            "total_tokens": self.total_tokens,
            "system_and_tools": self.system_and_tools,
            "per_role": dict(self.per_role),
            "per_tool": dict(self.per_tool),
            "largest": [m.__dict__ for m in self.largest],
            "max_input_tokens": self.max_input_tokens,
            "trigger": [list(t) if isinstance(t[0], str) else [list(s) for s in t] for t in self.trigger],
            "trigger_fires": self.trigger_fires,
            "keep": list(self.keep),
            "cutoff": self.cutoff,
            "summarized_messages": self.cutoff,
            "kept_tokens": self.kept_tokens,
            "passes": [
                {"name": p.name, "saved": p.saved, "edits": p.edits, "tokens_after": p.tokens_after}
                for p in self.plan.passes
            ],
            "tokens_after_passes": self.plan.tokens_after,
            "cjk_share": self.cjk_share,
            "notes": self.notes(),
            "unclearable": [[name, share] for name, share in self.unclearable],
            "summary_needed_after_passes": self.plan.summary_needed,
        }

    def _trigger_text(self) -> str:
        def clause(t: Any) -> str:
            sizes = [t] if isinstance(t[0], str) else t
            return " and ".join(f"{kind}={value:g}" for kind, value in sizes)

        return " or ".join(clause(t) for t in self.trigger)

    def __str__(self) -> str:
        total = max(self.total_tokens, 1)
        lines = [
            f"{self.source}: {plural(self.messages, 'message')}, "
            f"{self.total_tokens:,} tokens ({self.counted()})",
            *self.notes(),
            "",
        ]
        lines.append("tokens by role")
        for role, n in sorted(self.per_role.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {role:<14} {n:>12,}  {100 * n / total:5.1f}%")
        if self.per_tool:
            lines.append("tool results by tool")
            for tool, n in sorted(self.per_tool.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {tool:<14} {n:>12,}  {100 * n / total:5.1f}%")
        lines.append("largest messages")
        for m in self.largest:
            label = m.role + (f" ({m.tool})" if m.tool else "")
            lines.append(f"  #{m.index:<6} {label:<24} {m.tokens:>10,}")
        lines.append("what each cheap pass would save")
        for p in self.plan.passes:
            lines.append(f"  {p.name:<14} {p.saved:>12,}  ({plural(p.edits, 'edit')})")
        lines.append(f"  {'after passes':<14} {self.plan.tokens_after:>12,}")
        lines.append("")
        lines += self.verdict()
        return "\n".join(lines)

    def verdict(self) -> list[str]:
        """Whether the trigger fires, whether a summary is still needed after the cheap
        passes, and where the cutoff falls: one line each, in agreement (a trigger the
        passes bring the transcript back under does not fire; the cut is where a forced
        summary would fall).

        Examples:
            >>> r = inspect([{"role": "user", "content": "hi"}], max_input_tokens=100_000)
            >>> r.verdict()[0], r.verdict()[2]
            ('trigger fraction=0.85: not reached', 'keep fraction=0.1: nothing to summarize')
        """
        kind, value = self.keep
        needed = self.plan.summary_needed
        if self.trigger_fires and needed:
            fires = "FIRES"
        elif self.trigger_fires:
            fires = f"reached before the cheap passes, not after them ({self.plan.tokens_after:,} tokens)"
        else:
            fires = "not reached"
        where = (
            f"cutoff at message {self.cutoff:,}"
            if needed
            else f"a forced summary would cut at message {self.cutoff:,}"
        )
        cut = (
            f"keep {kind}={value:g}: {where} "
            f"(summarize {plural(self.cutoff, 'message')}, keep {self.kept_tokens:,} tokens)"
            if self.cutoff
            else f"keep {kind}={value:g}: nothing to summarize"
        )
        return [
            f"trigger {self._trigger_text()}: {fires}",
            f"after the cheap passes a summary is {'still needed' if needed else 'not needed'}",
            cut,
        ]

    __repr__ = __str__

    def _repr_html_(self) -> str:
        parts = pictures.where_tokens_go(
            self.total_tokens,
            self.per_role,
            self.per_tool,
            self.largest,
            self.plan.passes,
            self.plan.tokens_after,
        )
        rows = [("before the passes", self.total_tokens), ("after the passes", self.plan.tokens_after)]
        line = pictures.trigger_tokens(self.trigger, self.max_input_tokens)
        parts.append(pictures.gauge("against the window", rows, self.max_input_tokens, line))
        # The picture says what the text says: the verdict's lines, and the cut only when
        # a summary is still needed after the passes.
        parts += [pictures.note(text) for text in self.verdict()]
        needed = self.plan.summary_needed and self.cutoff > 0
        if needed:
            summarized = self.total_tokens - self.system_and_tools - self.kept_tokens
            parts.append(
                pictures.strip(
                    "what a summary would replace",
                    summarized,
                    self.kept_tokens,
                    f"cutoff at message {self.cutoff:,}",
                )
            )
        return pictures.page(str(self).splitlines()[0], parts, needed)


def _read_conversation(path: str) -> list[Any]:
    """The messages of a conversation file: ``OSError`` when it cannot be read,
    ``InputError`` when what it holds is not a conversation."""
    from fastcompact.api.transcripts import FileError, read_file

    with open(path, encoding="utf-8", errors="strict", newline="") as f:
        try:
            text = f.read()
        except UnicodeDecodeError as e:
            raise _input_error("file", f"{path} is not UTF-8 text ({e.reason})") from None
    try:
        return read_file(path, text)[0]
    except FileError as e:
        raise _input_error("file", str(e)) from None


def inspect(
    messages: Iterable[Any] | os.PathLike[str],
    *,
    max_input_tokens: int | None = None,
    trigger: Trigger | Sequence[Trigger] | None = None,
    keep: ContextSize | None = None,
    config: CompactionConfig | None = None,
    encoding: Encoding = "heuristic",
    model: Any = None,
    source: str = "conversation",
) -> Report:
    """Where a conversation's tokens go, what each cheap pass would save, and where the
    trigger and the cutoff fall. ``trigger`` / ``keep`` override ``config``'s; left out,
    they follow the DeepAgents defaults for ``max_input_tokens``; ``model`` (a chat
    model or its name) counts as its provider does. ``messages`` may be a
    ``pathlib.Path`` to a conversation file (JSON or JSON Lines, as the command line
    reads): a file that cannot be read raises ``OSError``, content that is not a
    conversation :class:`~fastcompact.InputError`.

    Examples:
        >>> import fastcompact
        >>> from fastcompact.samples import load_session
        >>> r = fastcompact.inspect(load_session("research"), max_input_tokens=200_000)
        >>> r.trigger_fires, r.cutoff > 0, r.plan.tokens_after < r.total_tokens
        (True, True, True)
    """
    if isinstance(messages, os.PathLike):
        messages = _read_conversation(os.fspath(messages))
    found = _as_list(messages)
    if not isinstance(found, list | tuple):
        count_tokens(found)  # the helpers' own check says what is wrong
    msgs = list(found)
    _window(max_input_tokens)
    cfg = config or CompactionConfig()
    if trigger is not None or keep is not None:
        from dataclasses import replace

        cfg = replace(
            cfg,
            trigger=trigger if trigger is not None else cfg.trigger,
            keep=keep if keep is not None else cfg.keep,
        )
    resolved = cfg.resolved(max_input_tokens)
    triggers = list(resolved["trigger"])
    kept_policy = tuple(resolved["keep"])
    breakdown = token_breakdown(msgs, encoding=encoding, model=model)
    # As the agent counts: anchored on the newest usage a call reported, when one did.
    anchored = count_tokens(msgs, encoding=encoding, model=model, use_usage=True)
    fires = should_compact(
        msgs, triggers, max_input_tokens=max_input_tokens, encoding=encoding, model=model, use_usage=True
    )
    cutoff = find_cutoff(msgs, kept_policy, max_input_tokens, encoding=encoding, model=model)
    return Report(
        messages=len(msgs),
        encoding=encoding,
        total_tokens=breakdown.total,
        system_and_tools=breakdown.system_and_tools,
        per_role=dict(breakdown.per_role),
        per_tool=dict(breakdown.per_tool),
        largest=breakdown.largest(5),
        max_input_tokens=max_input_tokens,
        trigger=triggers,
        trigger_fires=fires,
        keep=kept_policy,
        cutoff=cutoff,
        kept_tokens=sum(m.tokens for m in breakdown.messages[cutoff:]),
        plan=plan(msgs, cfg, max_input_tokens=max_input_tokens, encoding=encoding, model=model),
        source=source,
        cjk_share=cjk_share(msgs) if encoding == "heuristic" else 0.0,
        model=None if model is None else _model_name(model),
        unclearable=_unclearable(breakdown.per_tool, breakdown.total, cfg.clearing.tools),
        usage_tokens=anchored if anchored != breakdown.total else None,
    )


def _unclearable(per_tool: Mapping[str, int], total: int, cleared: set[str]) -> list[tuple[str, float]]:
    """The tools over a tenth of the tokens that clearing does not take, largest first."""
    shares = [(name, tokens / total) for name, tokens in per_tool.items() if total and name not in cleared]
    return sorted(((n, s) for n, s in shares if s >= UNCLEARED_NOTE_SHARE), key=lambda x: -x[1])


def _model_name(model: Any) -> str:
    """A model as the report names it: its name, or the name a chat model holds."""
    if isinstance(model, str):
        return model
    return str(getattr(model, "model", None) or getattr(model, "model_name", None) or type(model).__name__)

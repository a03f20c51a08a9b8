"""The notebook pictures of a report and a plan (``_repr_html_``).

Every chart is one grid: a fixed label column, so that all bars start at the same x,
and one scale per chart, so that a bar's length is exactly its share (88% and 100%
differ by 12% of the track). A strip shows what a summary would replace against
what it keeps, when a summary is due; a gauge shows the view against the window with
the trigger's line. Tracks are a translucent grey, so that they read on a light or a
dark notebook theme alike.

Examples:
    >>> page = chart("tokens by role", [("human", 30), ("tool", 70)], 100, "#4c78a8")
    >>> "width:70.00%" in page and "width:30.00%" in page
    True
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

#: The label column's width: every bar of every chart starts this far in.
LABEL_WIDTH_PX = 200
#: The figures' column, right of the bars.
VALUE_WIDTH_PX = 130

_GRID = (
    f"display:grid;grid-template-columns:{LABEL_WIDTH_PX}px minmax(0,1fr) {VALUE_WIDTH_PX}px;"
    "column-gap:8px;row-gap:3px;align-items:center;font:12px monospace;margin:2px 0 10px 0"
)
_LABEL = "overflow:hidden;text-overflow:ellipsis;white-space:nowrap"
# Translucent: a light grey on a white page, a dark one on a dark theme.
_TRACK = "height:12px;background:rgba(128,128,128,0.18);position:relative"
_MARK = "position:absolute;top:-2px;height:16px;width:2px"

COLORS = {
    "role": "#4c78a8",
    "tool": "#72b7b2",
    "largest": "#f58518",
    "saved": "#e45756",
    "after": "#54a24b",
    "summarized": "#bab0ac",
    "kept": "#4c78a8",
    "fill": "#9d755d",
    "trigger": "#e45756",
    "window": "#888888",
}


def _share(value: int, total: int) -> float:
    """``value`` as a share of ``total``, within [0, 1] (a bar never leaves its track)."""
    return min(max(value / total, 0.0), 1.0) if total > 0 else 0.0


def chart(title: str, rows: Sequence[tuple[str, int]], total: int, color: str) -> str:
    """A titled chart of labelled bars, each ``value / total`` of its track."""
    cells = []
    for label, value in rows:
        share = _share(value, total)
        text = html.escape(label)
        cells.append(
            f"<div class='fc-label' style='{_LABEL}' title='{text}'>{text}</div>"
            f"<div class='fc-track' style='{_TRACK}'><div class='fc-bar' data-share='{share:.6f}' "
            f"style='width:{100 * share:.2f}%;height:100%;background:{color}'></div></div>"
            f"<div class='fc-value' style='text-align:right'>{value:,} ({100 * share:.1f}%)</div>"
        )
    return (
        f"<div class='fc-title' style='font:bold 12px sans-serif;margin-top:8px'>{html.escape(title)}</div>"
        f"<div class='fc-chart' style='{_GRID}'>{''.join(cells)}</div>"
    )


def strip(title: str, summarized: int, kept: int, note: str) -> str:
    """One track split in two: the tokens a summary would replace, then those it keeps."""
    total = summarized + kept
    share = _share(summarized, total)
    legend = (
        f"summarized {summarized:,} tokens ({100 * share:.1f}%), "
        f"kept verbatim {kept:,} ({100 * (1 - share):.1f}%)"
    )
    return (
        f"<div class='fc-title' style='font:bold 12px sans-serif;margin-top:8px'>{html.escape(title)}</div>"
        f"<div class='fc-chart' style='{_GRID}'>"
        f"<div class='fc-label' style='{_LABEL}'>{html.escape(note)}</div>"
        f"<div class='fc-track fc-strip' style='{_TRACK};display:flex'>"
        f"<div class='fc-bar fc-summarized' data-share='{share:.6f}' title='summarized' "
        f"style='width:{100 * share:.2f}%;height:100%;background:{COLORS['summarized']}'></div>"
        f"<div class='fc-bar fc-kept' data-share='{1 - share:.6f}' title='kept verbatim' "
        f"style='width:{100 * (1 - share):.2f}%;height:100%;background:{COLORS['kept']}'></div></div>"
        f"<div class='fc-value' style='text-align:right'>{total:,}</div></div>"
        f"<div style='font:11px monospace;margin-left:{LABEL_WIDTH_PX + 8}px'>{html.escape(legend)}</div>"
    )


def gauge(title: str, rows: Sequence[tuple[str, int]], window: int | None, trigger: int | None) -> str:
    """The view's sizes against the window: one bar a row, on a scale that holds the
    window and every row, with a line at the trigger and one at the window's edge."""
    scale = max([window or 0, trigger or 0, *(v for _, v in rows), 1])
    marks = [(window, "window", COLORS["window"]), (trigger, "trigger", COLORS["trigger"])]
    lines = "".join(
        f"<div class='fc-mark fc-{name}' data-share='{_share(at, scale):.6f}' title='{name} {at:,}' "
        f"style='{_MARK};left:{100 * _share(at, scale):.2f}%;background:{color}'></div>"
        for at, name, color in marks
        if at
    )
    cells = []
    for label, value in rows:
        share = _share(value, scale)
        of = f" ({100 * value / window:.0f}%)" if window else ""
        cells.append(
            f"<div class='fc-label' style='{_LABEL}'>{html.escape(label)}</div>"
            f"<div class='fc-track fc-gauge' style='{_TRACK}'>"
            f"<div class='fc-bar fc-fill' data-share='{share:.6f}' "
            f"style='width:{100 * share:.2f}%;height:100%;background:{COLORS['fill']}'></div>{lines}</div>"
            f"<div class='fc-value' style='text-align:right'>{value:,}{html.escape(of)}</div>"
        )
    legend = ", ".join(f"{name} at {at:,} tokens" for at, name, _ in marks if at)
    return (
        f"<div class='fc-title' style='font:bold 12px sans-serif;margin-top:8px'>{html.escape(title)}</div>"
        f"<div class='fc-chart' style='{_GRID}'>{''.join(cells)}</div>"
        + (
            f"<div style='font:11px monospace;margin-left:{LABEL_WIDTH_PX + 8}px'>{html.escape(legend)}</div>"
            if legend
            else ""
        )
    )


def note(text: str) -> str:
    """A line of the verdict, under the charts."""
    return f"<div class='fc-note' style='font:12px monospace;margin:4px 0'>{html.escape(text)}</div>"


def trigger_tokens(trigger: Sequence[Any], window: int | None) -> int | None:
    """Where the trigger's line is drawn: the fewest tokens at which a clause can fire
    (a fraction of the window, or a count); ``None`` when no clause counts tokens.

    Examples:
        >>> trigger_tokens([("fraction", 0.85)], 8_000), trigger_tokens([("messages", 50)], None)
        (6800, None)
    """
    found = []
    for clause in trigger:
        sizes = [clause] if isinstance(clause[0], str) else clause
        for kind, value in sizes:
            if kind == "tokens":
                found.append(int(value))
            elif kind == "fraction" and window:
                found.append(int(value * window))
    return min(found) if found else None


def _by_size(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _message_label(m: Any) -> str:
    """``#12 tool (read_file)``: a message by its index, role and tool."""
    return f"#{m.index} {m.role}" + (f" ({m.tool})" if m.tool else "")


def where_tokens_go(
    total: int,
    per_role: Mapping[str, int],
    per_tool: Mapping[str, int],
    largest: Sequence[Any],
    passes: Sequence[Any],
    tokens_after: int,
) -> list[str]:
    """The charts a report and a plan share, all on the scale of ``total``: tokens by
    role, by tool, the largest messages (``MessageTokens``), what each pass saves
    (``PassStats``) and what is left."""
    parts = [chart("where the tokens go", _by_size(per_role), total, COLORS["role"])]
    if per_tool:
        parts.append(chart("tool results by tool", _by_size(per_tool), total, COLORS["tool"]))
    if largest:
        rows = [(_message_label(m), m.tokens) for m in largest]
        parts.append(chart("largest messages", rows, total, COLORS["largest"]))
    rows = [(p.name, p.saved) for p in passes]
    parts.append(chart("what each cheap pass would save", rows, total, COLORS["saved"]))
    parts.append(chart("after the cheap passes", [("tokens", tokens_after)], total, COLORS["after"]))
    return parts


def page(heading: str, parts: Sequence[str], summary_needed: bool) -> str:
    """The pieces under a heading, in one block (which says whether a summary is due,
    for the checks of the picture as drawn)."""
    due = "true" if summary_needed else "false"
    return (
        f"<div class='fc-picture' data-summary-needed='{due}'><b>{html.escape(heading)}</b>"
        f"{''.join(parts)}</div>"
    )

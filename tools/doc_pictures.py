"""The docs' pictures, drawn with matplotlib from the benchmarks' JSON, and the
architecture diagram. The SVGs under docs/pictures/ are committed; after a bench run,
this makes them again:

    python benches/bench_session.py --sessions coding-long --json session.json
    python benches/bench_middleware.py --quick --json middleware.json
    python benches/bench_scale.py --quick --json scale.json
    python tools/doc_pictures.py --session session.json --middleware middleware.json --scale scale.json

With none of the files, only the architecture diagram is drawn. ``--out`` names the folder
(docs/pictures by default).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "pictures"
# One colour per side, the same in every picture.
COLOURS = {
    "fastcompact": "#1b7f5b",
    "deepagents": "#4a6fa5",
    "compact-middleware": "#c0713a",
    "none": "#b0b0b0",
}
LABELS = {
    "fastcompact": "fastcompact",
    "deepagents": "DeepAgents' SummarizationMiddleware",
    "compact-middleware": "compact-middleware",
    "none": "no middleware (the harness alone)",
}


def _style() -> None:
    # A fixed salt and no date, so the same figures make the same file.
    plt.rcParams.update(
        {
            "svg.hashsalt": "fastcompact",
            "svg.fonttype": "none",
            "font.size": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return path


def session_bill(outcomes: list[dict[str, Any]], out: Path) -> list[Path]:
    """The bill so far after each request, a line per side, for each session."""
    made = []
    for name in dict.fromkeys(o["session"] for o in outcomes):
        rows = [o for o in outcomes if o["session"] == name and o.get("bill_by_request")]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for o in rows:
            bills = o["bill_by_request"]
            ax.plot(
                range(1, len(bills) + 1),
                bills,
                color=COLOURS.get(o["side"]),
                label=f"{LABELS.get(o['side'], o['side'])}: {bills[-1]:.2f}",
                linewidth=2 if o["side"] == "fastcompact" else 1.4,
            )
        ax.set_xlabel("user requests")
        ax.set_ylabel("bill so far (millions of input-token prices)")
        ax.set_title(f"The {name} session, billed as Anthropic bills", loc="left")
        ax.legend(frameon=False, loc="upper left")
        ax.set_ylim(bottom=0)
        made.append(_save(fig, out / f"bill-{name}.svg"))
    return made


def overhead(figures: list[dict[str, Any]], out: Path) -> Path:
    """The warm per-call overhead against the conversation's length, a line per side."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for side in dict.fromkeys(f["side"] for f in figures):
        rows = sorted((f for f in figures if f["side"] == side), key=lambda f: f["messages"])
        ax.plot(
            [f["messages"] for f in rows],
            [f["warm"] * 1e3 for f in rows],
            marker="o",
            color=COLOURS.get(side),
            label=LABELS.get(side, side),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the conversation")
    ax.set_ylabel("middleware time a call, warm (ms)")
    ax.set_title("Per-call overhead inside create_deep_agent (median)", loc="left")
    ax.legend(frameon=False)
    return _save(fig, out / "overhead.svg")


def latency(runs: dict[str, dict[str, dict[str, float]]], out: Path) -> Path:
    """A server's latency percentiles of warm calls, a group of bars per side."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    marks = ["p50", "p90", "p99", "max"]
    sides = [s for s in runs if runs[s].get("warm")]
    width = 0.8 / max(len(sides), 1)
    for i, side in enumerate(sides):
        values = [runs[side]["warm"][m] for m in marks]
        xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(marks))]
        ax.bar(xs, values, width, color=COLOURS.get(side, "#999999"), label=LABELS.get(side, side))
    ax.set_xticks(range(len(marks)), marks)
    ax.set_yscale("log")
    ax.set_ylabel("time in the middleware a call (ms)")
    ax.set_title("One process serving many conversations: warm calls", loc="left")
    ax.legend(frameon=False)
    return _save(fig, out / "server-latency.svg")


# The diagram: each box (x, y, text), then the arrows between them (from a side of one
# box to a side of another, and the label's offset from the arrow's middle).
BOXES = {
    "state": (0.0, 0.5, "agent state\nraw messages, never rewritten;\ncompaction event, counters"),
    "middleware": (0.37, 0.5, "CompactionMiddleware\nPython: reads the state,\nasks the core, commits"),
    "core": (0.74, 0.5, "Rust core\ncount, passes, cutoff,\nmemory, prices, search"),
    "archive": (0.0, 0.0, "backend archive\n/conversation_history/\n<thread>/<n>.md"),
    "model": (0.37, 0.0, "the model's view\n[memory, *kept,\nturn in progress]"),
    "recall": (0.74, 0.0, "recall tool\nthe raw state, by id,\nwords or pattern"),
}
BOX_W, BOX_H = 0.26, 0.3
ARROWS = [
    # (from, its side, to, its side, label, the label's offset, the arrow's own offset)
    ("state", "right", "middleware", "left", "each call", (0, 0.05), (0, 0)),
    ("middleware", "right", "core", "left", "messages", (0, 0.07), (0, 0.04)),
    ("core", "left", "middleware", "right", "the plan", (0, -0.07), (0, -0.04)),
    ("middleware", "bottom", "model", "top", "the view", (0.06, 0), (0, 0)),
    ("middleware", "bottom", "archive", "top", "each span once", (-0.09, 0.02), (-0.05, 0)),
    ("model", "right", "recall", "left", "asks", (0, 0.05), (0, 0)),
]


def _anchor(key: str, side: str) -> tuple[float, float]:
    x, y, _ = BOXES[key]
    return {
        "left": (x, y + BOX_H / 2),
        "right": (x + BOX_W, y + BOX_H / 2),
        "top": (x + BOX_W / 2, y + BOX_H),
        "bottom": (x + BOX_W / 2, y),
    }[side]


def architecture(out: Path) -> Path:
    """Where a call goes: the state, the middleware, the core, the model, the archive."""
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.set_axis_off()
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.02, 0.82)
    for key, (x, y, text) in BOXES.items():
        colour = "#e8f3ee" if key in ("middleware", "core") else "#f2f2f2"
        ax.add_patch(FancyBboxPatch((x, y), BOX_W, BOX_H, boxstyle="round,pad=0.005", fc=colour, ec="#555"))
        title, rest = text.split("\n", 1)
        ax.text(x + BOX_W / 2, y + BOX_H * 0.72, title, ha="center", va="center", fontsize=9.5, weight="bold")
        ax.text(x + BOX_W / 2, y + BOX_H * 0.36, rest, ha="center", va="center", fontsize=8)
    for a, side_a, b, side_b, label, (dx, dy), (ax_, ay) in ARROWS:
        (xa, ya), (xb, yb) = _anchor(a, side_a), _anchor(b, side_b)
        start, end = (xa + ax_, ya + ay), (xb, yb + ay)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color="#333"))
        mid = ((start[0] + end[0]) / 2 + dx, (start[1] + end[1]) / 2 + dy)
        ax.text(*mid, label, ha="center", va="center", fontsize=8, color="#333")
    return _save(fig, out / "architecture.svg")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", type=Path, help="bench_session.py --json output")
    parser.add_argument("--middleware", type=Path, help="bench_middleware.py --json output")
    parser.add_argument("--scale", type=Path, help="bench_scale.py --json output")
    parser.add_argument("--out", type=Path, default=OUT, help="the folder the SVGs go to")
    args = parser.parse_args(argv)
    _style()
    made = [architecture(args.out)]
    if args.session:
        made += session_bill(json.loads(args.session.read_text()), args.out)
    if args.middleware:
        made.append(overhead(json.loads(args.middleware.read_text()), args.out))
    if args.scale:
        made.append(latency(json.loads(args.scale.read_text()), args.out))
    for path in made:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Render the notebook pictures (``inspect(...)`` and ``plan(...)``) in headless
Chromium and check them as drawn: every bar starts at the same x, each bar's length
is its share of the track, the summary strip is there exactly when a summary is due
and its two parts fill it, the window and trigger lines sit inside their tracks, and
on a dark notebook theme no track is drawn as a bright bar.

    python tools/check_pictures.py [--out DIR]

``--out`` keeps each page and its screenshot. Needs Debian's ``chromium`` package
(``scripts/test.sh`` installs it when run as root). Exit status 1 names each problem.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import fastcompact
from fastcompact.samples import load_session

# After layout, the page writes where each track and bar was drawn into a <pre>,
# which --dump-dom prints.
_MEASURE = r"""
<script>
window.addEventListener('load', () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, width: r.width}; };
  const tracks = [...document.querySelectorAll('.fc-track')].map((t) => ({
    track: box(t),
    strip: t.classList.contains('fc-strip'),
    bars: [...t.querySelectorAll('.fc-bar')].map((b) => ({...box(b), share: parseFloat(b.dataset.share)})),
  }));
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const picture = document.querySelector('.fc-picture');
  const out = document.createElement('pre');
  out.id = 'fc-measure';
  out.textContent = JSON.stringify({
    due: picture ? picture.dataset.summaryNeeded === 'true' : null,
    page: rgb(getComputedStyle(document.body).backgroundColor),
    tracks: tracks.map((t, i) => ({
      ...t,
      color: rgb(getComputedStyle(document.querySelectorAll('.fc-track')[i]).backgroundColor),
      marks: [...document.querySelectorAll('.fc-track')[i].querySelectorAll('.fc-mark')].map(box),
    })),
  });
  document.body.appendChild(out);
});
</script>
"""


# The pages the pictures are drawn on: a plain one and a dark notebook theme's.
THEMES = {
    "light": "background:#ffffff;color:#000000",
    "dark": "background:#111111;color:#dddddd",
}


def pages() -> dict[str, str]:
    """The pictures checked: a report and a plan of two bundled sessions, one of each
    with a summary due."""
    coding, research = load_session("coding"), load_session("research")
    pictures = {
        "report-coding": fastcompact.inspect(coding, max_input_tokens=60_000),
        "plan-coding": fastcompact.plan(coding, max_input_tokens=60_000),
        "report-research": fastcompact.inspect(research, max_input_tokens=30_000),
        "plan-research": fastcompact.plan(research, max_input_tokens=20_000),
    }
    return {name: p._repr_html_() for name, p in pictures.items()}


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("headless Chromium is needed: apt-get install chromium")


def _chromium(exe: str, *args: str) -> str:
    command = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,2000", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-500:]}")
    return done.stdout


def measure(exe: str, page: Path) -> dict[str, Any]:
    """Where each track and its bars were drawn."""
    dom = _chromium(exe, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="fc-measure">(.*?)</pre>', dom, flags=re.S)
    if found is None:
        raise RuntimeError(f"{page.name}: the page did not report its layout")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def _luminance(color: list[float], under: list[float]) -> float:
    """The brightness (0 to 1) of ``color`` (RGB, maybe with alpha) drawn over ``under``."""
    alpha = color[3] if len(color) > 3 else 1.0
    mixed = [alpha * c + (1 - alpha) * u for c, u in zip(color[:3], under[:3], strict=True)]
    return (0.2126 * mixed[0] + 0.7152 * mixed[1] + 0.0722 * mixed[2]) / 255


def problems(name: str, drawn: dict[str, Any]) -> list[str]:
    """What is wrong with one page as drawn."""
    out = []
    tracks = drawn["tracks"]
    if not tracks:
        return [f"{name}: no bars drawn"]
    lefts = {round(t["track"]["left"], 1) for t in tracks}
    if max(lefts) - min(lefts) > 0.5:
        out.append(f"{name}: bars start at {sorted(lefts)}, not at one x")
    for k, t in enumerate(tracks):
        width = t["track"]["width"]
        for bar in t["bars"]:
            expected = bar["share"] * width
            if abs(bar["width"] - expected) > 1.0:
                out.append(
                    f"{name}: bar {k} is {bar['width']:.1f}px for a share of {bar['share']:.3f} "
                    f"of {width:.1f}px (expected {expected:.1f}px)"
                )
            if bar["left"] < t["track"]["left"] - 0.5:
                out.append(f"{name}: bar {k} starts left of its track")
        if t["strip"] and abs(sum(b["width"] for b in t["bars"]) - width) > 1.0:
            out.append(f"{name}: the summary strip's parts do not fill it")
        for mark in t["marks"]:
            if not t["track"]["left"] - 1 <= mark["left"] <= t["track"]["left"] + width + 1:
                out.append(f"{name}: a window or trigger line is drawn outside its track")
        page = drawn["page"]
        if _luminance(page, [255, 255, 255]) < 0.3 and _luminance(t["color"], page) > 0.5:
            out.append(f"{name}: track {k} is a bright bar on a dark page")
    strips = any(t["strip"] for t in tracks)
    if drawn["due"] and not strips:
        out.append(f"{name}: a summary is due, but no summarized-vs-kept strip is drawn")
    if not drawn["due"] and strips:
        out.append(f"{name}: no summary is due, yet the picture draws a cut")
    if not any(t["marks"] for t in tracks):
        out.append(f"{name}: no window or trigger line")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the pages and screenshots here")
    args = parser.parse_args(argv)
    exe = browser()
    out = args.out or Path(tempfile.mkdtemp(prefix="fastcompact-pictures-"))
    out.mkdir(parents=True, exist_ok=True)
    found = []
    checked = 0
    for picture, html in pages().items():
        for theme, style in THEMES.items():
            name = f"{picture}-{theme}"
            page = out / f"{name}.html"
            body = f"<body style='width:900px;{style}'>{html}{_MEASURE}</body>"
            page.write_text(f"<!doctype html><html>{body}</html>")
            found += problems(name, measure(exe, page))
            _chromium(exe, f"--screenshot={out / f'{name}.png'}", page.as_uri())
            checked += 1
    for p in found:
        print(p, file=sys.stderr)
    print(f"{checked} pages checked in Chromium, {len(found)} problems; pages and screenshots in {out}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

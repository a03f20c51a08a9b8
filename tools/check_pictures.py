"""Render the notebook pictures (``inspect(...)`` and ``plan(...)``) in headless
Chromium and check them as drawn: every bar starts at the same x, each bar's length
is its share of the track, and the summary strip's two parts fill it.

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
_MEASURE = """
<script>
window.addEventListener('load', () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, width: r.width}; };
  const tracks = [...document.querySelectorAll('.fc-track')].map((t) => ({
    track: box(t),
    strip: t.classList.contains('fc-strip'),
    bars: [...t.querySelectorAll('.fc-bar')].map((b) => ({...box(b), share: parseFloat(b.dataset.share)})),
  }));
  const out = document.createElement('pre');
  out.id = 'fc-measure';
  out.textContent = JSON.stringify(tracks);
  document.body.appendChild(out);
});
</script>
"""


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


def measure(exe: str, page: Path) -> list[dict[str, Any]]:
    """Where each track and its bars were drawn."""
    dom = _chromium(exe, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="fc-measure">(.*?)</pre>', dom, flags=re.S)
    if found is None:
        raise RuntimeError(f"{page.name}: the page did not report its layout")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def problems(name: str, tracks: list[dict[str, Any]]) -> list[str]:
    """What is wrong with one page as drawn."""
    out = []
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
    if not any(t["strip"] for t in tracks):
        out.append(f"{name}: no summarized-vs-kept strip")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the pages and screenshots here")
    args = parser.parse_args(argv)
    exe = browser()
    out = args.out or Path(tempfile.mkdtemp(prefix="fastcompact-pictures-"))
    out.mkdir(parents=True, exist_ok=True)
    found = []
    for name, html in pages().items():
        page = out / f"{name}.html"
        page.write_text(f"<!doctype html><html><body style='width:900px'>{html}{_MEASURE}</body></html>")
        found += problems(name, measure(exe, page))
        _chromium(exe, f"--screenshot={out / f'{name}.png'}", page.as_uri())
    for p in found:
        print(p, file=sys.stderr)
    print(f"{len(pages())} pages checked in Chromium, {len(found)} problems; pages and screenshots in {out}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""fastcompact.inspect: the notebook report."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import fastcompact
import pytest
from fastcompact.samples import load_session


def test_report_figures_agree_with_the_helpers():
    msgs = load_session("coding")
    r = fastcompact.inspect(msgs, max_input_tokens=120_000)
    assert r.messages == len(msgs)
    assert r.total_tokens == fastcompact.count_tokens(msgs)
    assert r.trigger == [("fraction", 0.85)] and r.keep == ("fraction", 0.1)
    assert r.trigger_fires is False
    assert r.cutoff == fastcompact.find_cutoff(msgs, ("fraction", 0.1), 120_000)
    assert r.plan.tokens_before == r.total_tokens
    assert r.per_tool["read_file"] == max(r.per_tool.values())
    assert r.largest[0].tokens == max(m.tokens for m in fastcompact.token_breakdown(msgs).messages)
    json.dumps(r.to_dict())  # plain data


def test_report_overrides_and_text():
    r = fastcompact.inspect(load_session("research"), trigger=("tokens", 50_000), keep=("messages", 4))
    assert r.trigger == [("tokens", 50_000)] and r.keep == ("messages", 4)
    # Keeping the last 4 would start with a page fetch's result: the cut moves back to
    # the AI message that fetched the pages.
    assert r.trigger_fires and r.cutoff == 96 - 5
    text = str(r)
    assert text.startswith("conversation: 96 messages, ")
    assert "trigger tokens=50000: FIRES" in text
    assert "keep messages=4: cutoff at message 91" in text
    assert repr(r) == text


def _reads(n: int) -> list[dict[str, object]]:
    """An OpenAI-shaped transcript of ``n`` file reads of about 1,900 tokens each."""
    msgs: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(n):
        body = "\n".join(
            f"line {k} of m{i}: def f{k}(): return {k} * {i}  # comment words here" for k in range(120)
        )
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        msgs += [
            {"role": "user", "content": f"Read /src/m{i}.py please."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": body},
            {"role": "assistant", "content": f"m{i}.py defines 120 functions."},
        ]
    return msgs


def test_the_verdict_agrees_when_the_cheap_passes_bring_it_under_the_trigger():
    """Over the trigger as it is, under it after the passes: the trigger is not said to
    fire, and the cut is where a forced summary would fall."""
    r = fastcompact.inspect(_reads(30), max_input_tokens=60_000)
    assert r.trigger_fires and not r.plan.summary_needed and r.cutoff > 0
    fires, needed, cut = r.verdict()
    after = f"{r.plan.tokens_after:,}"
    assert fires == f"trigger fraction=0.85: reached before the cheap passes, not after them ({after} tokens)"
    assert needed == "after the cheap passes a summary is not needed"
    assert cut.startswith(f"keep fraction=0.1: a forced summary would cut at message {r.cutoff:,} ")
    assert "FIRES" not in str(r)


def test_report_draws_itself_in_jupyter():
    r = fastcompact.inspect(load_session("chat"), max_input_tokens=20_000)
    page = r._repr_html_()
    for part in (
        "where the tokens go",
        "what each cheap pass would save",
        "cutoff at message",
        "get_weather",
    ):
        assert part in page
    assert page.count("<div") == page.count("</div>")


class _Picture(HTMLParser):
    """The charts of a picture: each grid's columns, and each bar's share and width."""

    def __init__(self) -> None:
        super().__init__()
        self.grids: list[str] = []
        self.bars: list[tuple[str, float, float]] = []  # (classes, share, width %)
        self.labels: list[str] = []
        self._in_label = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes, style = a.get("class") or "", a.get("style") or ""
        if "fc-chart" in classes:
            self.grids.append(re.search(r"grid-template-columns:([^;]+)", style).group(1))  # type: ignore[union-attr]
        if "fc-bar" in classes:
            width = float(re.search(r"(?:^|;)width:([\d.]+)%", style).group(1))  # type: ignore[union-attr]
            self.bars.append((classes, float(a["data-share"] or 0), width))
        self._in_label = "fc-label" in classes

    def handle_data(self, data: str) -> None:
        if self._in_label:
            self.labels.append(data)
            self._in_label = False


def _picture(page: str) -> _Picture:
    p = _Picture()
    p.feed(page)
    return p


def test_pictures_share_one_left_edge_and_draw_shares_to_scale():
    msgs = load_session("coding")
    report = fastcompact.inspect(msgs, max_input_tokens=60_000)
    plan = fastcompact.plan(msgs, max_input_tokens=60_000)
    for page, total in (
        (report._repr_html_(), report.total_tokens),
        (plan._repr_html_(), plan.tokens_before),
    ):
        p = _picture(page)
        # One label column of one width in every chart: every bar starts at one x.
        assert len(p.grids) >= 6 and len(set(p.grids)) == 1 and p.grids[0].startswith("200px ")
        # Each bar is its share of the track, unclamped: 85.6% and 100% differ.
        for _, share, width in p.bars:
            assert width == pytest.approx(100 * share, abs=0.005)
        shares = sorted(share for classes, share, _ in p.bars if classes == "fc-bar")
        assert 0.8 < shares[-1] < 0.9
        tool = next(s for c, s, _ in p.bars if c == "fc-bar")  # the first chart's first row: tool
        assert tool == pytest.approx(report.per_role["tool"] / total, abs=1e-6)
        # The largest messages, by index, role and tool.
        largest = fastcompact.token_breakdown(msgs).largest(5)
        assert [label for label in p.labels if label.startswith("#")] == [
            f"#{m.index} {m.role} ({m.tool})" for m in largest
        ]
        # No summary is due after the passes here: the picture says so, as the text
        # does, and draws no cut.
        assert not plan.summary_needed and not report.plan.summary_needed
        assert "a summary is not needed" in page and "what a summary would replace" not in page
        assert not [c for c, _, _ in p.bars if "fc-summarized" in c]


def test_a_report_with_a_summary_due_draws_its_cut_and_the_window():
    report = fastcompact.inspect(load_session("research"), max_input_tokens=20_000)
    assert report.plan.summary_needed
    page = report._repr_html_()
    for line in report.verdict():
        assert line.replace("FIRES", "fires").lower() in page.lower()
    p = _picture(page)
    # The summarized-vs-kept strip: two parts that fill it.
    strip = [(c, s) for c, s, _ in p.bars if "fc-summarized" in c or "fc-kept" in c]
    assert len(strip) == 2 and sum(s for _, s in strip) == pytest.approx(1.0, abs=1e-5)
    summarized = strip[0][1]
    kept = report.kept_tokens
    assert summarized == pytest.approx(1 - kept / (report.total_tokens - report.system_and_tools), abs=1e-6)
    # The gauge: the view after the passes against the window, the trigger at 85% of it.
    fill = [s for c, s, _ in p.bars if "fc-fill" in c]
    scale = max(20_000, report.total_tokens)
    assert fill == pytest.approx([report.total_tokens / scale, report.plan.tokens_after / scale], abs=1e-6)
    assert f"data-share='{17_000 / scale:.6f}'" in page and "trigger at 17,000 tokens" in page
    assert "window at 20,000 tokens" in page


def test_a_plan_with_a_summary_due_draws_its_cut():
    msgs = load_session("research")
    plan = fastcompact.plan(msgs, max_input_tokens=20_000)
    assert plan.summary_needed and plan.summary_cutoff
    breakdown = fastcompact.token_breakdown(msgs).messages
    assert plan.summarized_tokens == sum(m.tokens for m in breakdown[: plan.summary_cutoff])
    assert plan.kept_tokens == sum(m.tokens for m in breakdown[plan.summary_cutoff :])
    p = _picture(plan._repr_html_())
    assert f"cut at message {plan.summary_cutoff:,}" in p.labels
    share = next(s for c, s, _ in p.bars if "fc-summarized" in c)
    assert share == pytest.approx(
        plan.summarized_tokens / (plan.summarized_tokens + plan.kept_tokens), abs=1e-6
    )


def test_the_pictures_as_chromium_draws_them(tmp_path: Path):
    # The same checks on the page as laid out by a real browser (tools/check_pictures.py),
    # on a light and a dark page. scripts/test.sh installs Chromium as root and then asks
    # for every check (FASTCOMPACT_FULL_CHECK=1); elsewhere a machine without it skips.
    script = Path(__file__).resolve().parents[2] / "tools" / "check_pictures.py"
    if not shutil.which("chromium"):
        if os.environ.get("FASTCOMPACT_FULL_CHECK") == "1":
            pytest.fail("the picture check was asked for, but Chromium is not installed")
        pytest.skip("needs Debian's chromium package (scripts/test.sh installs it as root)")
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "8 pages checked in Chromium, 0 problems" in done.stdout
    assert len(list(tmp_path.glob("*.png"))) == 8

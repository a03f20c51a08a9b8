"""fastcompact.inspect: the notebook report."""

from __future__ import annotations

import json

import fastcompact
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

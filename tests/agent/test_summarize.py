"""The summary prompt, its output and the summary message."""

from __future__ import annotations

from fastcompact.agent import summarize
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


def test_prompt_has_sections_instructions_and_transcript():
    msgs = [
        HumanMessage("fix the parser"),
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "p.py"}, "id": "c1"}]),
        ToolMessage("def parse(): ...", tool_call_id="c1", name="read_file"),
    ]
    prompt = summarize.build_prompt(msgs, "Keep diffs verbatim.")
    for section in ("Primary request and intent", "User requests", "Pending tasks", "Next step"):
        assert section in prompt
    assert "<analysis>" in prompt and "Keep diffs verbatim." in prompt
    assert '-> call read_file (c1): {"file_path":"p.py"}' in prompt
    assert prompt.rstrip().endswith("</transcript>")
    assert "Keep diffs" not in summarize.build_prompt(msgs)


def test_analysis_is_stripped():
    assert summarize.final_summary("<analysis>a</analysis>\n<summary>\nS\n</summary>") == "S"
    assert summarize.final_summary("<analysis>a</analysis> plain") == "plain"
    assert summarize.final_summary("<summary>cut off") == "cut off"
    assert summarize.final_summary("<analysis>never closed") == ""
    assert (
        summarize.text_of(AIMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])) == "ab"
    )


def test_prompt_too_long_is_recognised():
    assert summarize.is_prompt_too_long(ContextOverflowError("x"))
    assert summarize.is_prompt_too_long(ValueError("prompt is too long: 300000 tokens"))
    assert not summarize.is_prompt_too_long(RuntimeError("rate limited"))
    assert summarize.drop_oldest_chunk(list(range(10))) == list(range(2, 10))
    assert summarize.drop_oldest_chunk([1, 2]) == [2]


def test_summary_message_shape():
    m = summarize.summary_message(
        "S",
        file_path="/conversation_history/t/2.md",
        restored_files=[("/a.py", "x = 1")],
        todos=[{"content": "ship", "status": "pending"}],
    )
    assert summarize.is_summary(m) and summarize.summary_text(m) == "S"
    assert m.content == (
        "This conversation was compacted to stay within the model's context window: the earlier "
        "messages were replaced by the summary below.\n\n<summary>\nS\n</summary>\n\n"
        "The full text of those messages is saved at /conversation_history/t/2.md. Read it if you "
        "need an exact detail.\n\n"
        'Files you read recently, as they are now:\n\n<file path="/a.py">\nx = 1\n</file>\n\n'
        "Your todo list:\n- [pending] ship\n\n"
        "Carry on with the work from where it stopped. Do not ask the user to repeat anything or "
        "to confirm where things stand."
    )
    plain = summarize.summary_message("S", file_path=None, suppress_follow_up_questions=False)
    assert plain.content.endswith("</summary>") and "saved at" not in plain.content


def test_a_chained_summary_keeps_a_user_message_trailing_spaces():
    from fastcompact.agent.summarize import summary_message, summary_text

    text = "## User messages (verbatim)\n- keep my indentation   "
    assert summary_text(summary_message(text, file_path=None)) == text

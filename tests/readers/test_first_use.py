"""What a new user meets in the helpers and the middleware: the system prompt kept in
place, edits applied to the wrong list, a summary prompt that hides the conversation,
recall on saved dicts, archive folders, defaults that disagree, loose arguments, and
usage that includes a system prompt the caller never passed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import fastcompact
import pytest
from deepagents.backends import FilesystemBackend
from fastcompact import CompactionConfig, CompactionMiddleware, InputError
from fastcompact.samples import coding_session
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, messages_to_dict

from tests.scripted import ProviderChatModel, compacting_agent

# --- the system prompt stays in place -----------------------------------------------


def test_partition_keeps_the_system_prompt_out_of_the_summarized_span():
    msgs = [SystemMessage("Be brief."), *coding_session(200, seed=4)]
    cut = fastcompact.find_cutoff(msgs, keep=("messages", 20))
    # The contract stays: msgs[:cut] are what a summary replaces, the system message
    # among them; partition() is the easy way to keep it.
    assert fastcompact.leading_system(msgs) == 1
    system, span, kept = fastcompact.partition(msgs, keep=("messages", 20))
    assert system == msgs[:1] and span == msgs[1:cut] and kept == msgs[cut:]
    assert fastcompact.partition(msgs[:3], keep=("messages", 5)) == (msgs[:1], [], msgs[1:3])


def test_plan_and_model_view_leave_a_leading_system_message_in_place():
    msgs = [SystemMessage("You are careful."), *coding_session(400, seed=5)]
    view, plan = fastcompact.model_view(msgs, max_input_tokens=20_000)
    assert view[0] is msgs[0]
    assert all(e.index != 0 for e in fastcompact.plan(msgs, max_input_tokens=20_000).edits)
    assert plan.tokens_after < plan.tokens_before


# --- edits land only on the messages they were made for ----------------------------


def test_edits_applied_to_a_list_they_were_not_planned_for_are_refused():
    msgs = coding_session(300, seed=2)
    edits = fastcompact.plan(msgs, max_input_tokens=20_000).edits
    assert edits and all(e.target for e in edits)
    out = fastcompact.apply_edits(msgs, edits)
    assert sum(a is not b for a, b in zip(msgs, out, strict=True)) == len({e.index for e in edits})
    shifted = [SystemMessage("You are careful."), *msgs]
    with pytest.raises(InputError, match="planned for another message") as raised:
        fastcompact.apply_edits(shifted, edits)
    assert raised.value.index == min(e.index for e in edits)
    with pytest.raises(InputError, match="planned for another message"):
        fastcompact.apply_edits(coding_session(300, seed=9), edits)
    # An edit made by hand names no message, and applies as asked.
    manual = fastcompact.Edit(2, "clearing", "content", "[cleared]")
    assert fastcompact.apply_edits(shifted, [manual])[2].content == "[cleared]"


# --- configuration checked at construction -----------------------------------------


def test_a_summary_prompt_without_the_conversation_is_refused():
    with pytest.raises(ValueError, match=r"no \{messages\} placeholder"):
        CompactionMiddleware(summary_prompt="Summarize the conversation briefly.")
    assert CompactionMiddleware(summary_prompt="Summarize:\n{messages}").summary_prompt


@pytest.mark.parametrize("prefix", ["hist", "../../escape", "/a/../b", ""])
def test_an_archive_folder_must_be_absolute_and_stay_inside(prefix: str):
    with pytest.raises(ValueError, match="history_path_prefix"):
        CompactionConfig(history_path_prefix=prefix)
    with pytest.raises(ValueError, match="history_path_prefix"):
        CompactionMiddleware(history_path_prefix=prefix)


def test_one_default_for_each_pass_setting():
    msgs: list[Any] = [HumanMessage("go")]
    for k in range(8):
        call = {"name": "read_file", "args": {"file_path": f"f{k}.py"}, "id": f"c{k}"}
        msgs += [AIMessage("", tool_calls=[call]), ToolMessage(f"{k}" * 400, tool_call_id=f"c{k}")]
    cleared = fastcompact.clear_observations(msgs)
    kept = [m for m in cleared if isinstance(m, ToolMessage) and "Cleared" not in m.content]
    assert len(kept) == fastcompact.ClearingConfig().keep_recent == 3
    # A budget smaller than the default preview derives its preview.
    out = fastcompact.budget_tool_results([ToolMessage("x" * 5_000, tool_call_id="c")], per_tool_chars=1_000)
    assert len(out[0].content) < 1_000
    assert fastcompact.TokenBudgetConfig(per_tool_chars=1_000).file_preview_chars == 100


# --- recall reads every shape ---------------------------------------------------------


def _recallable() -> list[Any]:
    call = {"name": "read_file", "args": {"file_path": "a.py"}, "id": "toolu_1"}
    return [
        HumanMessage("read a.py", id="h1"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage("print('hi')", tool_call_id="toolu_1", id="t1"),
    ]


@pytest.mark.parametrize("shape", ["objects", "messages_to_dict", "dumpd", "anthropic"])
def test_recall_reads_saved_dicts_as_every_helper_does(shape: str):
    msgs = _recallable()
    given: list[Any] = {
        "objects": lambda: msgs,
        "messages_to_dict": lambda: messages_to_dict(msgs),
        "dumpd": lambda: [dumpd(m) for m in msgs],
        "anthropic": lambda: [
            {"role": "user", "content": "read a.py"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                               "input": {"file_path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": "print('hi')"}]},
        ],
    }[shape]()  # fmt: skip
    assert fastcompact.recall(given, "toolu_1") == "print('hi')"
    assert fastcompact.recall(given, "toolu_1/args") == '{"name": "read_file", "args": {"file_path": "a.py"}}'
    if shape != "anthropic":
        assert fastcompact.recall({"messages": given}, "h1") == "read a.py"
    with pytest.raises(KeyError):
        fastcompact.recall(given, "nope")


@pytest.mark.parametrize("given", [None, "session.json", 42])
def test_recall_on_what_is_not_messages_is_an_input_error(given: Any):
    with pytest.raises(InputError, match="messages"):
        fastcompact.recall(given, "x")


# --- loose arguments ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: fastcompact.count_tokens(["a"], chars_per_token=1e-300), "chars_per_token"),
        (lambda: fastcompact.count_tokens(["a"], chars_per_token=True), "chars_per_token"),
        (lambda: fastcompact.count_tokens(["a"], chars_per_token="2"), "chars_per_token"),
        (lambda: fastcompact.count_tokens(["a"], encoding=None), "encoding"),
        (lambda: fastcompact.should_compact(["a"], max_input_tokens=10**30), "max_input_tokens"),
        (lambda: fastcompact.set_cache_capacity(10**30), "conversations"),
        (lambda: fastcompact.token_breakdown(["a"]).largest(-1), "n"),
        (lambda: fastcompact.plan(coding_session(6), timestamps=[1.0, 2.0]), "timestamps"),
        (lambda: fastcompact.plan(coding_session(6), archive_paths=["a"]), "archive_paths"),
        (lambda: fastcompact.plan(coding_session(6), model=123), "model"),
        (lambda: fastcompact.inspect(Path(__file__)), "file"),
    ],
)
def test_loose_arguments_are_input_errors_naming_the_field(call: Any, field: str):
    with pytest.raises(InputError) as raised:
        call()
    assert raised.value.field == field


def test_a_text_with_a_lone_surrogate_is_counted_as_in_a_message():
    assert fastcompact.count_text_tokens("a\udc80b") == fastcompact.count_text_tokens("a\ufffdb")


def test_inspect_of_a_missing_file_is_an_os_error():
    with pytest.raises(FileNotFoundError):
        fastcompact.inspect(Path("/nope.json"))


def test_inspect_says_when_the_heuristic_undercounts_cjk():
    msgs = [HumanMessage("请阅读这个文件并总结它的内容然后修复其中的错误。" * 20), AIMessage("好的。" * 50)]
    report = fastcompact.inspect(msgs)
    [note] = report.notes()
    assert "Chinese, Japanese or Korean" in note and "--encoding o200k_base" in note
    assert note in str(report)
    assert fastcompact.inspect(msgs, encoding="o200k_base").notes() == []
    assert fastcompact.inspect(coding_session(50)).notes() == []


# --- what a type checker sees -----------------------------------------------------------


def test_the_middleware_keywords_and_inspect_paths_type_check(tmp_path: Path):
    snippet = tmp_path / "use.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            import fastcompact
            from fastcompact import CompactionMiddleware

            fastcompact.inspect(Path("session.json"))
            CompactionMiddleware(trigger=("tokens", 1_000), keep=("messages", 4))
            CompactionMiddleware(trigers=("tokens", 1_000))
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(snippet)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"trigers"' in errors[0], done.stdout


# --- the usage anchor inside an agent -------------------------------------------------


def test_usage_that_includes_an_unpassed_prompt_is_an_offset_in_the_state(tmp_path: Path):
    # The provider counts 6,000 tokens the middleware never sees (a gateway's prompt,
    # say): the state keeps them as an offset, the ratio stays near the tokenizer's.
    prose = "The agent reads each file before it changes anything, and notes what it found."
    for k in range(12):
        (tmp_path / f"f{k}.txt").write_text("\n".join(f"{prose} ({k})" for _ in range(60)))

    def script(messages: list[Any]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            k = str(last.content).split()[-1]
            return AIMessage(
                "", tool_calls=[{"name": "read_file", "args": {"file_path": f"/f{k}.txt"}, "id": f"r{k}"}]
            )
        return AIMessage("read it")

    model = ProviderChatModel(script=script, profile={"max_input_tokens": 60_000}, hidden_tokens=6_000)
    agent = compacting_agent(model, FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    cfg = {"configurable": {"thread_id": "u"}}
    for k in range(12):
        agent.invoke({"messages": [HumanMessage(f"read file {k}")]}, cfg)
    counters = agent.get_state(cfg).values["_fastcompact"]
    assert 0.5 <= counters["ratio"] <= 1.5, counters
    assert 5_000 <= counters["offset"] <= 7_500, counters
    # The middleware's own count of its last call is within 5% of what was billed.
    last = model.calls[-1].input_tokens
    assert abs(counters["last_plan"]["tokens_sent"] - last) <= 0.05 * last


def test_a_quiet_pytest_run_still_says_how_many_passed(tmp_path: Path):
    # The project's pytest settings add no verbosity flag of their own: `-q` stays -q.
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert sum([1, 2]) == 3\n")
    config = Path(__file__).resolve().parents[2] / "pyproject.toml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(config), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    assert "1 passed" in done.stdout


def test_a_breakdown_names_the_system_prompt_only_when_there_is_one():
    assert str(fastcompact.token_breakdown(["hi"])).splitlines()[0] == "total: 5 tokens"
    with_system = str(fastcompact.token_breakdown(["hi"], system="Be brief.")).splitlines()[0]
    assert with_system.startswith("total: ") and "of them the system prompt and tools)" in with_system

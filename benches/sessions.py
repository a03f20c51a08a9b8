"""The long agent sessions of the session benchmark, as scripts.

Each session is a list of user requests and a script that decides the agent's next
message from the last message alone (and the call it answers), which every compaction
keeps, so a session runs the same with any middleware. Texts are generated from a seed,
so every run and every middleware sees the same words.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

WORDS = (
    "cache index parser record buffer window token stream batch queue worker thread "
    "socket handler schema config loader report metric vector column row value field "
    "branch commit merge review test fixture module package export import retry limit"
).split()
HAN = (
    "缓存 索引 解析器 记录 缓冲区 窗口 令牌 数据流 批次 队列 线程 套接字 处理器 模式 配置 "
    "加载器 报告 指标 向量 列 行 值 字段 分支 提交 合并 审查 测试 模块 导出 导入 重试 限制 "
    "用户 订单 库存 价格 日志 错误 修复 功能 接口 服务 数据库 查询 事务"
).split()


def prose(seed: object, chars: int, words: tuple[str, ...] | list[str] = WORDS, sep: str = " ") -> str:
    """About `chars` characters of sentences drawn from `words`, the same for the same seed."""
    rng = random.Random(str(seed))
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = sep.join(rng.choice(words) for _ in range(rng.randint(6, 14)))
        sentence = sentence[0].upper() + sentence[1:] + ("。" if sep == "" else ". ")
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:chars]


def code(seed: object, lines: int, han: bool = False) -> str:
    """A Python module of `lines` lines, with comments in Chinese when `han`."""
    rng = random.Random(str(seed))
    body = []
    for i in range(lines):
        if i % 6 == 0:
            note = prose((seed, i), 30, HAN, "") if han else prose((seed, i), 50)
            body.append(f"# {note}")
        else:
            name = rng.choice(WORDS)
            body.append(f"    {name}_{i} = compute_{rng.choice(WORDS)}({name}, limit={rng.randint(1, 999)})")
    return "\n".join(body) + "\n"


# The edit every coding step makes to the file it wrote.
RENAME = {"old_string": "limit=", "new_string": "cap=", "replace_all": True}


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


@dataclass
class Session:
    """A long session: its requests, the script that answers them, the files it starts
    with, and the tools it needs beyond DeepAgents' own."""

    name: str
    requests: list[str]
    script: Callable[[list[BaseMessage]], AIMessage]
    files: dict[str, str] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=list)
    # Runs shell commands (DeepAgents' `execute`) in its folder.
    shell: bool = False
    # How each request that needed an earlier finding went (step -> one of WAYS_BACK),
    # filled in as the session runs.
    findings: dict[int, str] = field(default_factory=dict)
    # The agent's own tools beside DeepAgents' (the side running it sets them): the
    # script searches with `recall` only when it has it.
    agent_tools: set[str] = field(default_factory=set)
    # Where each search showed the answer holding the finding it was after (step ->
    # rank among the results shown, 0 when not shown).
    search_ranks: dict[int, int] = field(default_factory=dict)


# --- the user's codes: a rule each request gives, which the model must keep in view --


def user_code(session: str, step: int) -> str:
    """The code of the rule the request of `step` gives (a ticket, a key, a rule number):
    unique to the request, and in no other text of the session."""
    return f"K{zlib.crc32(f'{session} rule {step}'.encode()) % 90_000 + 10_000}"


USER_CODE = re.compile(r"\bK\d{5}\b")


def codes_of(requests: list[str]) -> list[str | None]:
    """The code each request carries (None for a request without one)."""
    return [next(iter(USER_CODE.findall(r)), None) for r in requests]


# --- findings: what an answer found, which a later request needs -------------------


def finding(step: int) -> str:
    """The finding the answer of `step` ends with."""
    value = f"{WORDS[step % len(WORDS)]}-{zlib.crc32(f'finding {step}'.encode()) % 9973}"
    return f"Finding F{step}: {value}."


def needed(step: int, back: int) -> int | None:
    """The earlier step whose finding request `step` needs: every fifth request, `back`
    steps earlier."""
    return step - back if step % 5 == 4 and step >= back else None


def opening(request: str) -> str:
    """The words a user names an earlier request by: how it began (its first eight
    words; the first 16 characters of Chinese), never its code (a user does not recite
    a rule's code to name the request that gave it)."""
    request = USER_CODE.sub("", request)
    if "[步骤" in request:
        return request[:16]
    return " ".join(request.split()[:8])


# How a later request asks for what an earlier one found: by the words the earlier one
# began with, never by the finding's code. The agent searches with those words.
NEED = "Use what you found earlier for: {}"
NEED_HAN = "请使用之前这个请求的结果：{}"  # noqa: RUF001 (Chinese punctuation)


def with_needs(requests: list[str], back: int) -> list[str]:
    """The requests, every fifth asking for an earlier finding."""
    out = []
    for s, r in enumerate(requests):
        t = needed(s, back)
        if t is None:
            out.append(r)
            continue
        asked = NEED_HAN if "[步骤" in r else NEED
        out.append(f"{r} {asked.format(opening(requests[t]))}")
    return out


def asked_words(request: str) -> str | None:
    """The words a request names an earlier one by (see `with_needs`)."""
    for asked in (NEED, NEED_HAN):
        head = asked.split("{}")[0]
        if head in request:
            return request.split(head, 1)[1].strip()
    return None


# How a need went: met in view; got back with one more call (recall by an id in view;
# a recall search in the words of the request, which counts only when the results it
# shows hold the finding; a grep of an archive folder the view names for the answer's
# mark; a read of an archive file it names); or not got back.
VISIBLE, RECALLED, SEARCHED, GREPPED, READ, LOST = (
    "visible",
    "recalled",
    "searched",
    "grepped",
    "read",
    "lost",
)
WAYS_BACK = (VISIBLE, RECALLED, SEARCHED, GREPPED, READ, LOST)


def stepped(
    steps: Callable[[int], list[tuple[str, dict[str, Any]]]],
    answer: Callable[[int], str],
    back: int,
    log: dict[int, str],
    tools: set[str],
    ranks: dict[int, int],
) -> Callable[[list[BaseMessage]], AIMessage]:
    """A script from the tool calls of each step (`steps(s)`, in order) and the answer
    that closes it (which carries the step's finding), deciding from the last message.
    A request that needs an earlier finding looks for it in view first; when it is not
    there, it gets it back only through what the view shows or the tools it has
    (`tools`), the cheapest first: `recall` on the id a line of that answer names, a
    `recall` search in the words of the request, a grep of an archive folder the view
    names for the answer's mark, a read of an archive file the view names. It never
    uses an id that nothing in view shows. `log` records how each need went, and
    `ranks` where a search showed the finding (its rank among the results, 0: not
    shown)."""

    def first(step: int) -> AIMessage:
        calls = steps(step)
        if not calls:
            return AIMessage(f"[answer {step}] {answer(step)} {finding(step)}")
        return _call(calls[0][0], calls[0][1], f"{calls[0][0]}-{step}-0")

    def fetch(step: int, messages: list[BaseMessage]) -> AIMessage | None:
        t = needed(step, back)
        if t is None:
            return None
        view = "\n".join(str(m.content) for m in messages)
        if finding(t) in view:
            log[step] = VISIBLE
            return None
        named = re.search(rf'\[answer {t}\][^\n]*?recall\("([^"]+)"\)', view)
        if named:
            return _call("recall", {"id": named.group(1)}, f"find-{RECALLED}-{step}-{t}")
        words = asked_words(str(messages[-1].content))
        if "recall" in tools and words:
            # The words the request names the earlier one by, as a model searches.
            return _call("recall", {"query": words}, f"find-{SEARCHED}-{step}-{t}")
        # The mark the agent's own answers start with (DeepAgents' grep takes it as text).
        mark = f"[answer {t}]"
        if "/conversation_history" in view:
            args = {"pattern": mark, "path": "/conversation_history", "output_mode": "content"}
            return _call("grep", args, f"find-{GREPPED}-{step}-{t}")
        archive = re.search(r"(/conversation_history/\S+?\.md)", view)
        if archive:
            return _call("read_file", {"file_path": archive.group(1)}, f"find-{READ}-{step}-{t}")
        log[step] = LOST
        return None

    def searched(step: int, t: int, answer: str) -> None:
        """Where the results of a search showed the finding (0: nowhere)."""
        hits = re.split(r"\n(?=\d+\. )", answer)[1:]
        ranks[step] = next((rank for rank, hit in enumerate(hits, 1) if finding(t) in hit), 0)

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            step = _step_of(str(last.content))
            if step is None:
                return AIMessage("Ready.")
            return fetch(step, messages) or first(step)
        if isinstance(last, ToolMessage):
            if last.tool_call_id.startswith("find-"):
                way = last.tool_call_id.split("-")[1]
                step, t = _parts(last.tool_call_id)
                if way == SEARCHED:
                    searched(step, t, str(last.content))
                log[step] = way if finding(t) in str(last.content) else LOST
                return first(step)
            step, k = _parts(last.tool_call_id)
            calls = steps(step)
            if k + 1 < len(calls):
                tool_name, args = calls[k + 1]
                return _call(tool_name, args, f"{tool_name}-{step}-{k + 1}")
            return AIMessage(f"[answer {step}] {answer(step)} {finding(step)}")
        return AIMessage("Ready.")

    return script


def needing(
    name: str,
    requests: list[str],
    steps: Callable[[int], list[tuple[str, dict[str, Any]]]],
    answer: Callable[[int], str],
    back: int,
    **fields: Any,
) -> Session:
    """A session whose requests need a finding from `back` steps before now and then,
    scripted by `stepped`, with the log of how each need went and the tools the agent
    had."""
    log: dict[int, str] = {}
    tools: set[str] = set()
    ranks: dict[int, int] = {}
    return Session(
        name,
        with_needs(requests, back),
        stepped(steps, answer, back, log, tools, ranks),
        findings=log,
        agent_tools=tools,
        search_ranks=ranks,
        **fields,
    )


def _step_of(text: str) -> int | None:
    found = re.search(r"\[(?:step|步骤) (\d+)\]", text)
    return int(found.group(1)) if found else None


def _parts(call_id: str) -> tuple[int, int]:
    """The step and the call's position in it, from a call id `tool-step-k`."""
    parts = call_id.rsplit("-", 2)
    step, k = (parts[1], parts[2]) if len(parts) == 3 else ("0", "0")
    return int(step) if step.isdigit() else 0, int(k) if k.isdigit() else 0


# --- coding: read a module, write a new one, edit it, search, read it back ---------


def coding(steps: int = 30, name: str = "coding") -> Session:
    modules = {f"/src/mod{i}.py": code(("mod", i), 90) for i in range(8)}

    def calls(s: int) -> list[tuple[str, dict[str, Any]]]:
        path = f"/src/feature_{s}.py"
        out: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"file_path": f"/src/mod{s % 8}.py"}),
            ("write_file", {"file_path": path, "content": code(("feature", s), 70)}),
            (
                "edit_file",
                {"file_path": path, **RENAME},
            ),
            ("grep", {"pattern": f"compute_{WORDS[s % len(WORDS)]}", "path": "/src"}),
            ("read_file", {"file_path": path}),
        ]
        return out

    def answer(s: int) -> str:
        return f"Step {s} is done: feature_{s}.py is written and checked. " + prose(("answer", s), 300)

    requests = [
        f"[step {s}] Add feature {s}: follow mod{s % 8}.py, keep rule {user_code(name, s)}, then "
        + prose(("request", s), 160)
        for s in range(steps)
    ]
    # Six calls a step: a need reaches 18 calls back.
    return needing(name, requests, calls, answer, 3, files=modules)


# --- research: large web results, notes written to a file ---------------------------


@tool
def web_search(query: str) -> str:
    """Search the web and return the text of the top results."""
    return "\n\n".join(
        f"Result {i + 1} for {query!r}: https://example.org/{zlib.crc32(f'{query}/{i}'.encode())}\n"
        + prose((query, i), 2_400)
        for i in range(3)
    )


def research(questions: int = 36, name: str = "research") -> Session:
    def calls(s: int) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("web_search", {"query": f"question {s} part {k} {WORDS[(s + k) % len(WORDS)]}"})
            for k in range(3)
        ] + [("write_file", {"file_path": f"/notes/q{s}.md", "content": prose(("notes", s), 1_500)})]

    def answer(s: int) -> str:
        return f"Answer to question {s}: " + prose(("finding", s), 700)

    requests = [
        f"[step {s}] Research question {s} under rule {user_code(name, s)}: " + prose(("ask", s), 200)
        for s in range(questions)
    ]
    # Five calls a step: a need reaches 20 calls back.
    return needing(name, requests, calls, answer, 4, tools=[web_search])


# --- the coding session in Chinese: about a token a character -----------------------


def chinese(steps: int = 30, name: str = "chinese") -> Session:
    modules = {f"/src/mod{i}.py": code(("模块", i), 90, han=True) for i in range(8)}

    def calls(s: int) -> list[tuple[str, dict[str, Any]]]:
        path = f"/src/feature_{s}.py"
        doc = prose(("文档", s), 1_200, HAN, "")
        return [
            ("read_file", {"file_path": f"/src/mod{s % 8}.py"}),
            (
                "write_file",
                {"file_path": path, "content": code(("功能", s), 50, han=True) + f'"""{doc}"""\n'},
            ),
            (
                "edit_file",
                {"file_path": path, **RENAME},
            ),
            ("read_file", {"file_path": path}),
        ]

    def answer(s: int) -> str:
        return f"第 {s} 步完成。" + prose(("回答", s), 400, HAN, "")

    requests = [
        f"[步骤 {s}] 请实现功能 {s}，遵守规则 {user_code(name, s)}。" + prose(("请求", s), 200, HAN, "")  # noqa: RUF001
        for s in range(steps)
    ]
    return needing(name, requests, calls, answer, 4, files=modules)


# --- chat: long text, no tools ------------------------------------------------------


def chat(turns: int = 160, request_chars: int = 300, name: str = "chat") -> Session:
    def answer(s: int) -> str:
        return f"About point {s}: " + prose(("reply", s), 3_000)

    requests = [
        f"[step {s}] Remember rule {user_code(name, s)}. " + prose(("message", s), request_chars)
        for s in range(turns)
    ]
    # One call a step: a need reaches 20 calls back.
    return needing(name, requests, lambda s: [], answer, 20)


# --- the bundled sessions, replayed -------------------------------------------------

# The tools every DeepAgents agent has; a bundled session's other tools are replayed.
DEEPAGENTS_TOOLS = {
    "ls",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "execute",
    "write_todos",
    "task",
}


def _replayed_tool(name: str, results: dict[str, Any], example: dict[str, Any]) -> Any:
    """A tool that answers each call with the result recorded for its call id."""
    from typing import Annotated

    from langchain_core.tools import InjectedToolCallId, StructuredTool
    from pydantic import create_model

    fields: dict[str, Any] = {k: (Any, None) for k in example}
    fields["tool_call_id"] = (Annotated[str, InjectedToolCallId], ...)
    schema = create_model(f"{name}_args", **fields)

    def run(tool_call_id: str, **kwargs: Any) -> Any:
        return results.get(tool_call_id, "no result was recorded for this call")

    return StructuredTool.from_function(
        func=run, name=name, description=f"{name} (replayed)", args_schema=schema
    )


def bundled(name: str) -> Session:
    """A session bundled with fastcompact, replayed: each request and each tool result
    gets the reply recorded after it. File and shell tools run for real on the session's
    files; its other tools answer with the results recorded."""
    from fastcompact.samples import load_session, session_files

    recorded = load_session(name)
    after: dict[str, AIMessage] = {}
    results: dict[str, dict[str, Any]] = {}
    examples: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(recorded):
        for c in getattr(m, "tool_calls", None) or []:
            examples.setdefault(c["name"], c["args"])
        if isinstance(m, ToolMessage):
            tool = next(
                (
                    c["name"]
                    for r in recorded[:i]
                    for c in getattr(r, "tool_calls", None) or []
                    if c["id"] == m.tool_call_id
                ),
                "",
            )
            results.setdefault(tool, {})[m.tool_call_id] = m.content
        nxt = next((r for r in recorded[i + 1 :] if isinstance(r, AIMessage)), None)
        if nxt is not None and isinstance(m, HumanMessage | ToolMessage):
            after[m.tool_call_id if isinstance(m, ToolMessage) else f"human:{m.content}"] = nxt

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        key = last.tool_call_id if isinstance(last, ToolMessage) else f"human:{last.content}"
        found = after.get(key)
        return AIMessage(found.content, tool_calls=found.tool_calls) if found else AIMessage("Done.")

    tools = [
        _replayed_tool(t, results.get(t, {}), examples[t]) for t in examples if t not in DEEPAGENTS_TOOLS
    ]
    requests = [str(m.content) for m in recorded if isinstance(m, HumanMessage)]
    files = session_files(name) if name == "coding" else {}
    return Session(f"bundled {name}", requests, script, files=files, tools=tools, shell=name == "coding")


# The agent's own instructions, the same for every middleware.
SYSTEM_PROMPT = "You are a careful engineering assistant working in a project folder. " + prose(
    "system", 2_400
)

SESSIONS: dict[str, Callable[[], Session]] = {
    "coding": coding,
    "research": research,
    "chinese": chinese,
    "chat": chat,
    # The long sessions: where memory must stay bounded (user messages of the long chat
    # are about 130 tokens each: 400 of them are more than the window).
    "coding-long": lambda: coding(300, "coding-long"),
    "research-long": lambda: research(300, "research-long"),
    "chinese-long": lambda: chinese(300, "chinese-long"),
    "chat-long": lambda: chat(400, 780, "chat-long"),
    "bundled-coding": lambda: bundled("coding"),
    "bundled-research": lambda: bundled("research"),
    "bundled-chat": lambda: bundled("chat"),
}

"""Chat and tool sessions in which the user states what binds later work, as people
write it: rules and prohibitions, limits and budgets, preferences, facts about their
world, the goal and where it stands, some updated later in other words, among small
talk and ordinary requests. English and Chinese, plainly or under headings. Generated
from a seed, so every run and every side sees the same words.

Each statement carries the terms that say it (a subject word and a value of its own,
found nowhere else in the session), and an update names the value it replaced, so a
reader of the model's input can tell what is still there and what should be gone.
"""

# Chinese is written with its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

import random
from dataclasses import dataclass, field

WORDS = (
    "caching indexing parsing logging batching queues workers threads sockets schemas "
    "configs loaders reports metrics vectors columns branches commits reviews fixtures "
    "modules packages exports imports retries pipelines dashboards alerts backups"
).split()
HAN_WORDS = (
    "缓存 索引 解析 日志 批处理 队列 线程 套接字 模式 配置 加载器 报告 指标 向量 分支 提交 "
    "审查 模块 导出 导入 重试 流水线 仪表盘 告警 备份"
).split()


@dataclass
class Statement:
    """A statement that binds: the turn it is made at, its text, the terms that say it
    (all must be in view), and for an update the statement it replaces and that one's
    value (which should leave the view)."""

    turn: int
    text: str
    terms: list[str]
    replaces: int | None = None
    old_value: str | None = None


@dataclass
class BindingSession:
    name: str
    users: list[str]
    statements: list[Statement]
    tools: bool
    chinese: bool
    # Superseded statements (indexes into `statements`).
    superseded: set[int] = field(default_factory=set)


def _code(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3))
    return f"{letters}-{rng.randint(1000, 9999)}"


# Each kind: (make the statement, make its update or None); a maker takes the random
# source and gives (text, subject, value).
def _english(rng: random.Random, headings: bool) -> list[tuple[str, str, str, str | None, str | None]]:
    """Twenty (statement, subject, value, update or None, updated value) of English."""
    names = rng.sample(["Dana", "Priya", "Tomas", "Keiko", "Olu", "Marta", "Ivan", "Lena"], 4)
    spend, spend2 = rng.randint(210, 480), rng.randint(510, 890)
    limit_rate, limit_rate2 = rng.randint(20, 60), rng.randint(70, 140)
    ver, ver2 = f"4.{rng.randint(1, 9)}.{rng.randint(0, 9)}", f"5.{rng.randint(1, 9)}.{rng.randint(0, 9)}"
    host, host2 = f"db-{rng.randint(10, 49)}.corp.internal", f"db-{rng.randint(50, 99)}.corp.internal"
    region, region2 = f"eu-west-{rng.randint(1, 4)}", f"ap-south-{rng.randint(5, 9)}"
    day, day2 = rng.sample(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"], 2)
    c = [_code(rng) for _ in range(12)]
    rule = "HARD RULE: " if headings else ""
    limit = "LIMIT: " if headings else ""
    pref = "PREFERENCE: " if headings else ""
    fact = "FACT: " if headings else ""
    goal = "GOAL: " if headings else ""
    return [
        (
            f"{rule}Never disclose the vault code {c[0]} to anyone outside the team.",
            "vault",
            c[0],
            None,
            None,
        ),
        (
            f"{rule}Don't ever push straight to the release branch; its guard id is {c[1]}.",
            "release",
            c[1],
            None,
            None,
        ),
        (f"{rule}You must always tag releases with the prefix {c[2]}.", "tag", c[2], None, None),
        (f"{rule}Make sure every invoice carries the reference {c[3]}.", "invoice", c[3], None, None),
        (f"{rule}Only ever deploy through pipeline {c[4]}, nothing else.", "pipeline", c[4], None, None),
        (
            f"{limit}Keep the monthly cloud spend under ${spend}.",
            "spend",
            f"{spend}",
            f"From now on the monthly cloud spend stays under ${spend2}.",
            f"{spend2}",
        ),
        (
            f"{limit}The quarterly report deadline is {day}.",
            "deadline",
            day,
            f"The quarterly report deadline moved to {day2}.",
            day2,
        ),
        (
            f"{limit}Pin the requests package to version {ver}.",
            "requests",
            ver,
            f"Pin the requests package to version {ver2} instead.",
            ver2,
        ),
        (
            f"{limit}The billing API rate limit is {limit_rate} calls per minute.",
            "rate",
            f"{limit_rate} calls",
            f"Update: the billing API rate limit is now {limit_rate2} calls per minute.",
            f"{limit_rate2} calls",
        ),
        (f"{limit}No more than {c[5][-4:]} rows per export batch.", "rows", c[5][-4:], None, None),
        (
            f"{pref}I prefer answers in French.",
            "answers",
            "French",
            "From now on, answers in German instead, please.",
            "German",
        ),
        (f"{pref}Please format every table as Markdown with a {c[6]} caption.", "table", c[6], None, None),
        (f"{pref}Use metric units in all reports, code {c[7]}.", "metric", c[7], None, None),
        (
            f"{fact}Our production database runs on host {host}.",
            "database",
            host,
            f"Correction: the production database is on host {host2} now.",
            host2,
        ),
        (
            f"{fact}{names[0]} owns the billing service.",
            "billing",
            names[0],
            f"{names[1]} now owns the billing service.",
            names[1],
        ),
        (
            f"{fact}The staging region is {region}.",
            "staging",
            region,
            f"The staging region moved to {region2}.",
            region2,
        ),
        (f"{fact}The on-call escalation code is {c[8]}.", "escalation", c[8], None, None),
        (f"{fact}Our backups go to bucket {c[9].lower()}.", "backups", c[9].lower(), None, None),
        (
            f"{goal}The goal for this sprint is to ship the importer, tracked as {c[10]}.",
            "importer",
            c[10],
            None,
            None,
        ),
        (
            f"{goal}Current status: milestone {c[11]} is done, the exporter is next.",
            "milestone",
            c[11],
            None,
            None,
        ),
    ]


def _chinese(rng: random.Random, headings: bool) -> list[tuple[str, str, str, str | None, str | None]]:
    """Twenty statements in Chinese."""
    spend, spend2 = rng.randint(210, 480), rng.randint(510, 890)
    host, host2 = f"db-{rng.randint(10, 49)}.corp", f"db-{rng.randint(50, 99)}.corp"
    region, region2 = f"cn-north-{rng.randint(1, 4)}", f"cn-south-{rng.randint(5, 9)}"
    ver, ver2 = f"4.{rng.randint(1, 9)}", f"5.{rng.randint(1, 9)}"
    names = rng.sample(["王芳", "李强", "张伟", "刘洋", "陈静"], 2)
    c = [_code(rng) for _ in range(14)]
    rule = "硬性规则：" if headings else ""
    limit = "限制：" if headings else ""
    pref = "偏好：" if headings else ""
    fact = "事实：" if headings else ""
    goal = "目标：" if headings else ""
    return [
        (f"{rule}禁止向团队以外的任何人透露金库密码 {c[0]}。", "金库", c[0], None, None),
        (f"{rule}绝对不要直接推送到发布分支，它的保护编号是 {c[1]}。", "发布分支", c[1], None, None),
        (f"{rule}每次发版都必须加上前缀 {c[2]}。", "前缀", c[2], None, None),
        (f"{rule}务必在每张发票上写明编号 {c[3]}。", "发票", c[3], None, None),
        (f"{rule}只能通过流水线 {c[4]} 部署。", "流水线", c[4], None, None),
        (
            f"{limit}每月云费用预算不超过 {spend} 美元。",
            "云费用",
            f"{spend}",
            f"从现在起，每月云费用预算改为不超过 {spend2} 美元。",
            f"{spend2}",
        ),
        (
            f"{limit}请把 requests 锁定在版本 {ver}。",
            "requests",
            ver,
            f"以后 requests 改为锁定在版本 {ver2}。",
            ver2,
        ),
        (f"{limit}每批导出最多 {c[5][-4:]} 行。", "导出", c[5][-4:], None, None),
        (f"{limit}季度报告的截止期限是编号 {c[6]} 的那天。", "季度报告", c[6], None, None),
        (f"{pref}请用英文回答我。", "回答", "英文", "以后请改用日文回答。", "日文"),
        (f"{pref}表格请使用 Markdown 格式，并附上标题 {c[7]}。", "表格", c[7], None, None),
        (f"{pref}所有报告都使用公制单位，编号 {c[8]}。", "公制", c[8], None, None),
        (
            f"{fact}我们的生产数据库在主机 {host} 上。",
            "生产数据库",
            host,
            f"更正：生产数据库已经迁移到主机 {host2}。",
            host2,
        ),
        (
            f"{fact}计费服务由{names[0]}负责。",
            "计费服务",
            names[0],
            f"现在计费服务改为由{names[1]}负责。",
            names[1],
        ),
        (
            f"{fact}预发布环境的区域是 {region}。",
            "预发布",
            region,
            f"预发布环境的区域已迁移到 {region2}。",
            region2,
        ),
        (f"{fact}值班升级编号是 {c[9]}。", "值班", c[9], None, None),
        (f"{fact}我们的备份存放在存储桶 {c[10].lower()}。", "备份", c[10].lower(), None, None),
        (f"{fact}我的团队代号是 {c[11]}。", "团队", c[11], None, None),
        (f"{goal}这个迭代的目标是上线导入器，编号 {c[12]}。", "导入器", c[12], None, None),
        (f"{goal}目前进度：里程碑 {c[13]} 已完成，下一步是导出器。", "里程碑", c[13], None, None),
    ]


def _filler(rng: random.Random, chinese: bool) -> str:
    """Small talk or an ordinary request, binding nothing."""
    if chinese:
        topic = rng.choice(HAN_WORDS)
        return rng.choice(
            [
                f"能简单解释一下{topic}是怎么工作的吗？",
                "谢谢，这很有帮助。",
                f"{topic}有哪些优缺点？",
                f"帮我给团队写一封关于{topic}的简短邮件。",
                f"总结一下我们关于{topic}的讨论。",
                "好的，继续吧。",
            ]
        )
    topic = rng.choice(WORDS)
    return rng.choice(
        [
            f"Can you explain how {topic} works in a few paragraphs?",
            "Thanks, that helps a lot.",
            f"What are the pros and cons of {topic}?",
            f"Draft a short email to the team about {topic}.",
            f"Summarize what we discussed about {topic} so far.",
            "Sounds good, carry on.",
            f"How would you test {topic} in a small project?",
            "Nice, I like that idea.",
        ]
    )


def make(
    name: str,
    seed: int,
    *,
    chinese: bool = False,
    headings: bool = False,
    tools: bool = False,
    turns: int = 65,
) -> BindingSession:
    """A session of `turns` user messages, twenty of them binding statements and the
    updates of six, spread over the first four fifths (so they leave the view)."""
    rng = random.Random(f"{name} {seed}")
    made = (_chinese if chinese else _english)(rng, headings)
    updates = [i for i, m in enumerate(made) if m[3] is not None]
    slots = sorted(rng.sample(range(1, int(turns * 0.8)), len(made) + len(updates)))
    # The statements first in order, each update at a later slot than its statement.
    order = list(range(len(made)))
    rng.shuffle(order)
    firsts = slots[: len(made)]
    seconds = slots[len(made) :]
    statements: list[Statement] = []
    at: dict[int, int] = {}
    for slot, i in zip(firsts, order, strict=True):
        text, subject, value, _, _ = made[i]
        at[i] = len(statements)
        statements.append(Statement(slot, text, [subject, value]))
    superseded: set[int] = set()
    pending = sorted(updates, key=lambda i: statements[at[i]].turn)
    for slot in seconds:
        ready = [i for i in pending if statements[at[i]].turn < slot]
        if not ready:
            continue
        i = ready[0]
        pending.remove(i)
        _, subject, old, update, new = made[i]
        assert update is not None and new is not None
        superseded.add(at[i])
        statements.append(Statement(slot, update, [subject, new], replaces=at[i], old_value=old))
    by_turn = {s.turn: s.text for s in statements}
    users = [by_turn.get(t) or _filler(rng, chinese) for t in range(turns)]
    return BindingSession(name, users, statements, tools, chinese, superseded)


SESSIONS = {
    "chat": lambda: make("chat", 1),
    "chat-headings": lambda: make("chat-headings", 2, headings=True),
    "tools": lambda: make("tools", 3, tools=True),
    "chinese": lambda: make("chinese", 4, chinese=True),
    "chinese-tools-headings": lambda: make(
        "chinese-tools-headings", 5, chinese=True, tools=True, headings=True
    ),
}

"""Findable history: facts planted in a long agent session, asked for as a model asks
(a few words of its own, at least one the fact does not hold), and the search's speed
on a 100,000-message conversation beside a plain Python substring scan.

Run from the repository root after `pip install .`:

    python benches/bench_search.py

Recall@3: of the facts planted in a 1,200-message coding session whose other messages
share their words, how many have their message among the three results shown (or shown
as the answer beside a request found): the 32 of the first set (24 English, 8 Chinese),
and questions of the three kinds a model's own words miss most: a short form against
the long one ("db" for "database"), a word against its derivation ("allergy" for
"allergic"), and words spread over a request and its answer. Side by side:
fastcompact's ranked search, and the exact substring search it replaced (the query as
a whole, any case; the newest three matches shown).

Speed: the median search of a 1,000-message conversation, then of a 100,000-message one
(the first search builds the index, later ones find it in the conversation cache), and
the median of a Python scan that lowercases every message and looks for one word of the
query; the index's bytes per message.

Any text: one message of 1, 4 and 16 MB of a run of one letter, of one word without
spaces, of digits and of prose, searched once each (its index built): the time per MB
stays flat as the text grows when the search is linear in its input.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fastcompact
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

# (fact, where it is said, the words a model asks with); "spread" is a request and its
# answer, split at " || ".
FACTS: list[tuple[str, str, str]] = [
    ("The staging database listens on port 5433 behind the bastion host.", "tool", "staging database port"),
    ("Invoice INV-88213 went to Acme Corp for the March renewal.", "human", "INV-88213 invoice customer"),
    ("Root cause: the cache worker leaked file handles after every retry.", "ai", "why worker leak handles"),
    ("The benchmark page reports p95 latency of 412 ms for checkout.", "tool", "checkout latency p95 figure"),
    (
        "Never touch anything under tests/legacy; it is frozen for the audit.",
        "human",
        "legacy tests rule audit",
    ),
    ("The deploy key is rotated every 90 days by the ops rota.", "ai", "how often deploy key rotation"),
    (
        "Customer support escalations go to Priya Raman on the payments team.",
        "human",
        "who handles escalations",
    ),
    (
        "The migration 0042_add_ledger failed on a duplicate index name.",
        "tool",
        "ledger migration failure reason",
    ),
    ("Feature flag new_checkout_flow is at 25 percent of traffic.", "ai", "checkout flag rollout percent"),
    ("The backup bucket is s3://acme-backups-eu in eu-west-1.", "tool", "backup bucket region"),
    (
        "Use Python 3.11 for the build image; 3.12 breaks the grpc wheels.",
        "human",
        "python version build image",
    ),
    ("The flaky test is test_refund_partial, it races the clock.", "ai", "which test is flaky"),
    ("Rate limit for the public API is 600 requests per minute.", "tool", "api rate limit minute"),
    ("The on-call phone number for the weekend is 555-0142.", "human", "weekend on-call number"),
    ("The memory leak came from an unbounded LRU in session_store.py.", "ai", "memory leak source file"),
    ("Quarterly revenue in the report was 4.2 million euros.", "tool", "revenue quarter amount"),
    ("The vendor contract ends on 30 June 2027 unless renewed.", "human", "vendor contract end date"),
    ("Timeouts were caused by DNS lookups taking 3 seconds in the sidecar.", "ai", "cause of timeouts dns"),
    ("The search index rebuild takes 47 minutes on the large cluster.", "tool", "index rebuild duration"),
    ("Answer every user in French, including error messages.", "human", "language for answers"),
    ("The font used in the invoices is Inter, 11 point.", "ai", "invoice font size"),
    ("Kafka topic orders.v2 has 48 partitions after the resize.", "tool", "orders topic partitions count"),
    ("The product owner for onboarding is Lucas Meyer.", "human", "onboarding owner name"),
    ("Disk usage hit 91 percent on db-replica-3 last night.", "tool", "replica disk usage"),
    ("主服务器位于法兰克福数据中心，机柜编号七。", "tool", "服务器 数据中心 位置"),  # noqa: RUF001
    ("用户要求所有报告都用中文撰写。", "human", "报告 语言 要求"),
    ("支付失败的原因是证书在周五过期了。", "ai", "支付 失败 原因"),
    ("测试环境的数据库密码每月更换一次。", "human", "数据库 密码 更换"),
    ("订单服务的超时时间设置为三十秒。", "tool", "订单 超时 设置"),
    ("新版本计划在十二月十五日发布。", "ai", "发布 日期 版本"),
    ("日志保留期限为九十天。", "tool", "日志 保留 多久"),
    ("负责安全审计的是王芳。", "human", "安全 审计 负责人"),
]

# The three kinds of question a model's own words miss most, by kind.
KINDS: dict[str, list[tuple[str, str, str]]] = {
    # Each asked in words the fact holds only in another form, beside words no message
    # holds: without the other form, nothing in the question finds it.
    "short form": [
        ("Kubernetes pods in the batch namespace are capped at 2 GiB.", "ai", "k8s ceiling"),
        ("The repository mirror lives at git.acme.internal/mirror.", "tool", "repo whereabouts"),
        ("Authentication tokens are signed with the 2024 signing key.", "ai", "auth expiry"),
        ("The dependency lockfile pins grpc to 1.58 for now.", "human", "deps upgrade"),
    ],
    "derivation": [
        ("Dana is allergic to shellfish, so order lunch accordingly.", "human", "allergy rules"),
        ("The logger drops lines whenever its buffer fills up.", "ai", "logging trouble"),
        ("We migrate the billing tables on Sunday night.", "human", "when migration"),
        ("The economic model assumes three percent of growth.", "tool", "economy assumption"),
    ],
    "spread": [
        (
            "When may we deploy the mobile app? || Only on Tuesdays, after the store review clears.",
            "spread",
            "mobile app deploy weekday store",
        ),
        (
            "Which cloud region should the backups use? || Use eu-central-2, encrypted at rest.",
            "spread",
            "backups region encrypted",
        ),
        (
            "Who approves refunds above the limit? || Nadia Okafor signs off on those herself.",
            "spread",
            "refunds limit approver",
        ),
        (
            "How should the invoice emails be sent? || Batch them nightly through the mailer relay.",
            "spread",
            "invoice emails nightly relay",
        ),
    ],
}
ALL_FACTS = FACTS + [f for facts in KINDS.values() for f in facts]

FILLER = (
    "the database settings of the service were checked again",
    "the worker queue and the cache report look fine",
    "config port host values match the invoice module defaults",
    "staging and production builds ran the test suite",
    "服务器 数据 运行 正常 备份 完成",
)


def session(n_requests: int = 300) -> tuple[list[BaseMessage], dict[int, str]]:
    """A coding session of `n_requests` requests (four messages each) with the facts
    planted in it: the messages and, by fact, the id of the message that holds it."""
    msgs: list[BaseMessage] = []
    planted: dict[int, str] = {}
    for i in range(n_requests):
        filler = FILLER[i % len(FILLER)]
        every = n_requests // len(ALL_FACTS)
        k = i // every if i % every == every - 1 else len(ALL_FACTS)
        fact = ALL_FACTS[k] if k < len(ALL_FACTS) else None
        asked, answered = fact[0].split(" || ") if fact and fact[1] == "spread" else (None, None)
        ask = fact[0] if fact and fact[1] == "human" else f"Request {i}: look at {filler} for module {i}."
        ask = asked or ask
        msgs.append(HumanMessage(ask, id=f"u{i}"))
        call = {"name": "read_file", "args": {"file_path": f"/srv/module_{i}/settings.toml"}, "id": f"c{i}"}
        msgs.append(AIMessage("", tool_calls=[call], id=f"a{i}"))
        result = fact[0] if fact and fact[1] == "tool" else f"[module_{i}]\n{filler}\nport = {7000 + i}"
        msgs.append(ToolMessage(result, tool_call_id=f"c{i}", name="read_file", id=f"t{i}"))
        answer = fact[0] if fact and fact[1] == "ai" else f"Module {i}: {filler}."
        msgs.append(AIMessage(answered or answer, id=f"d{i}"))
        if fact:
            planted[k] = {"human": f"u{i}", "tool": f"c{i}", "ai": f"d{i}", "spread": f"d{i}"}[fact[1]]
    return msgs, planted


def substring_ids(msgs: list[BaseMessage], query: str, k: int = 3) -> list[str]:
    """The search fastcompact had before: the query as one substring, any case, the
    newest `k` matches."""
    q = query.lower()
    found = [
        (m.tool_call_id if isinstance(m, ToolMessage) else m.id) for m in msgs if q in str(m.content).lower()
    ]
    return [f for f in found if f][-k:]


def shown_ids(msgs: list[BaseMessage], query: str, k: int = 3) -> list[str | None]:
    """The ids of the `k` results shown, and of the answers shown beside them."""
    found = fastcompact.search(msgs, query, limit=k)
    return [m.id for m in found] + [m.answer.id for m in found if m.answer is not None]


def recall_at_3() -> tuple[dict[str, tuple[int, int, int]], int]:
    """By set (English, Chinese, then each kind): how many were found by the ranked
    search, by the substring search, and how many were asked."""
    msgs, planted = session()
    sets = {
        "English": [k for k, f in enumerate(FACTS) if not any("\u4e00" <= c <= "\u9fff" for c in f[2])],
        "Chinese": [k for k, f in enumerate(FACTS) if any("\u4e00" <= c <= "\u9fff" for c in f[2])],
    }
    at = len(FACTS)
    for kind, facts in KINDS.items():
        sets[kind] = list(range(at, at + len(facts)))
        at += len(facts)
    out = {}
    for name, ks in sets.items():
        ranked = sum(planted[k] in shown_ids(msgs, ALL_FACTS[k][2]) for k in ks)
        substring = sum(planted[k] in substring_ids(msgs, ALL_FACTS[k][2]) for k in ks)
        out[name] = (ranked, substring, len(ks))
    return out, len(msgs)


def speed(n: int = 100_000, runs: int = 15) -> dict[str, float]:
    msgs, _ = session(n // 4)
    fastcompact.clear_cache()
    before = fastcompact.cache_bytes()[0]
    t = time.perf_counter()
    fastcompact.search(msgs, "staging database port")
    first = time.perf_counter() - t
    weight = fastcompact.cache_bytes()[0] - before
    queries = [q for _, _, q in ALL_FACTS]
    warm, scan = [], []
    for r in range(runs):
        q = queries[r % len(queries)]
        t = time.perf_counter()
        fastcompact.search(msgs, q)
        warm.append(time.perf_counter() - t)
        word = q.split()[0].lower()
        t = time.perf_counter()
        _ = [i for i, m in enumerate(msgs) if word in str(m.content).lower()]
        scan.append(time.perf_counter() - t)
    return {
        "messages": len(msgs),
        "first_ms": 1000 * first,
        "warm_p50_ms": 1000 * statistics.median(warm),
        "scan_p50_ms": 1000 * statistics.median(scan),
        "cache_bytes_per_message": weight / len(msgs),
    }


# Texts a tool may return, by the shape that makes a search slow if anything does.
SHAPES = {
    "one letter": lambda n: "y" * n,
    "one word, no spaces": lambda n: ("getUserById_" * (n // 12 + 1))[:n],
    "digits": lambda n: ("0123456789" * (n // 10 + 1))[:n],
    "prose": lambda n: ("the staging database listens on port 5433 " * (n // 42 + 1))[:n],
}


def any_text(sizes_mb: tuple[int, ...] = (1, 4, 16)) -> dict[str, list[float]]:
    """Milliseconds per MB of a first search of one message of each shape and size."""
    out: dict[str, list[float]] = {}
    for name, make in SHAPES.items():
        for mb in sizes_mb:
            msgs = [HumanMessage(make(mb * 1_000_000)), AIMessage("ok")]
            fastcompact.clear_cache()
            t = time.perf_counter()
            fastcompact.search(msgs, "staging database")
            out.setdefault(name, []).append(1000 * (time.perf_counter() - t) / mb)
    return out


def main() -> None:
    found, n = recall_at_3()
    print(f"Found among the first three results, in a {n:,}-message session (same run):")
    print("| questions | fastcompact (ranked) | exact substring (before) |")
    print("|---|---:|---:|")
    for name, (ranked, substring, asked) in found.items():
        print(f"| {name} | {ranked} of {asked} | {substring} of {asked} |")
    print()
    print("Speed (medians of 15 searches):")
    print("| messages | first search (builds the index), ms | later search p50, ms | Python scan p50, ms |")
    print("|---:|---:|---:|---:|")
    for size in (1_000, 100_000):
        s = speed(size)
        print(
            f"| {s['messages']:,} | {s['first_ms']:.1f} | {s['warm_p50_ms']:.2f} | {s['scan_p50_ms']:.1f} |"
        )
    print(
        f"\nThe conversation's cache entry with its index: {s['cache_bytes_per_message']:,.0f} bytes "
        "a message (100,000 messages)."
    )
    print()
    sizes = (1, 4, 16)
    print("Any text, one message, first search, ms per MB:")
    print("| text | " + " | ".join(f"{mb} MB" for mb in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, per_mb in any_text(sizes).items():
        print(f"| {name} | " + " | ".join(f"{t:.0f}" for t in per_mb) + " |")


if __name__ == "__main__":
    main()

"""Scale: one middleware instance serving many conversations, as a LangGraph server
runs it, side by side with DeepAgents' built-in `SummarizationMiddleware` and, in the
interleaved rows, with the floor: the same process serving the same conversations with
no middleware at all (what the conversations and the harness cost by themselves, the
garbage collector's work included).

Run from the repository root after `pip install ".[bench]"`:

    python benches/bench_scale.py            # 1,000 conversations of 1,000 messages
    python benches/bench_scale.py --quick    # 100 conversations

Each side's middleware and its first request are captured from a real
`create_deep_agent` (default tools, `StateBackend`, a model that reports an Anthropic
provider and a window no conversation reaches); every later request is that one with
another conversation's messages and state, and the state each response updates is
kept for the conversation's next call. The model is a handler that answers at once
(or after 5 ms, awaited, in the async part); the agent's message of a session's next
step reports the usage of the request the model was last sent, as a provider's
does (the bundled session's own figures are of its unedited history). Figures:

- interleaved: every conversation's first call, then warm calls on conversations
  picked at random, each after its session's next step was appended (the agent's
  message with its tool calls and their results, new objects as a server gets them):
  p50 / p99 of the time in `wrap_model_call`, and the garbage collections that ran
  inside the calls (how many calls set one off, the time in them, the longest). Run
  twice: under the cache's default bound, as a server runs it (1,000 of these
  conversations weigh more than it holds, so calls find their conversation evicted),
  and with room for every conversation; under the default bound, how many warm calls
  found their conversation cached and how many conversations were evicted;
- memory: the process's resident set before the first calls, after them, and after
  the cache is cleared, per cached message, beside the weight the cache reports (the
  run with room for every one);
- 100,000 messages: one conversation's cold call and its warm calls;
- threads: warm calls over 100 conversations from one thread and from eight, five
  pairs in alternating order;
- async: 64 tasks, each awaiting `awrap_model_call` on a conversation of its own with a
  model that takes 5 ms: the latency added to the model's 5 ms, p50.

Among the interleaved calls, those that compacted (a conversation this long soon pays
for a compaction) are counted apart, with their own p50. The last three parts grow
each conversation by a user's message a call instead: they time the warm work at a
size, from threads and the event loop, which those compactions would swamp.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import random
import statistics
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import fastcompact
from bench_middleware import WINDOW, Answering, _agent, _middleware_class
from fastcompact.samples import coding_session
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

SIDES = ("fastcompact", "deepagents")
# The same process serving the same conversations with no middleware at all: what the
# conversations and the harness cost by themselves (the collector's work included).
FLOOR = "none"
# The cache's own bound, as a server that sets none runs under.
DEFAULT_BOUND = fastcompact.cache_bytes()[1]
# Room for every conversation, where the memory per message is what is measured.
ROOM = 2**40
MODEL_SECONDS = 0.005
COMPACTION_EVENT = "_summarization_event"


def capture(side: str) -> tuple[Any, Any]:
    """The side's middleware instance and the request it got, from a real agent."""
    cls = _middleware_class(side)
    seen: dict[str, Any] = {}
    original = cls.wrap_model_call

    def wrap(self: Any, request: Any, handler: Any) -> Any:
        seen.setdefault("call", (self, request))
        return original(self, request, handler)

    cls.wrap_model_call = wrap  # type: ignore[method-assign]
    try:
        agent = _agent(side, Answering(profile={"max_input_tokens": WINDOW}))
        agent.invoke({"messages": [HumanMessage("hello")]})
    finally:
        cls.wrap_model_call = original  # type: ignore[method-assign]
    return seen["call"]


class Model:
    """The model a conversation's call reaches: it answers at once (or after 5 ms,
    awaited) and keeps the request it was sent, which the conversation's next step
    reports the usage of, as a provider does."""

    def __init__(self) -> None:
        self.sent: Any = None
        # The tokens of the last request sent, once counted (see `settle`).
        self.tokens: int | None = None

    def answer(self, request: Any) -> AIMessage:
        self.sent = request
        return AIMessage("ok")

    async def answer_later(self, request: Any) -> AIMessage:
        self.sent = request
        await asyncio.sleep(MODEL_SECONDS)
        return AIMessage("ok")

    def settle(self) -> None:
        """Count the last request sent, as LangChain's estimate counts it, and let it go
        (outside the call's time and its collections)."""
        if self.sent is not None:
            system = [self.sent.system_message] if self.sent.system_message is not None else []
            self.tokens = count_tokens_approximately([*system, *self.sent.messages], tools=self.sent.tools)
            self.sent = None


class Server:
    """One side's middleware serving conversations: each keeps its messages and the
    state the middleware's responses update."""

    def __init__(self, side: str) -> None:
        self.side = side
        # The floor sends the model the request as it is: fastcompact's captured one,
        # without its middleware.
        self.middleware, self.request = capture("fastcompact" if side == FLOOR else side)
        if side == FLOOR:
            self.middleware = None
        self.conversations: dict[int, tuple[list[BaseMessage], dict[str, Any]]] = {}
        self.following: dict[int, list[BaseMessage]] = {}
        # What each conversation's last call sent the model.
        self.models: dict[int, Model] = {}
        # Whether the last call compacted its conversation (both sides say so in state).
        self.compacted = False

    def add(self, key: int, session: list[BaseMessage], length: int) -> None:
        """Serve the session's first `length` messages; the rest are its next steps."""
        self.conversations[key] = (session[:length], dict(self.request.state))
        self.following[key] = session[length:]

    def _request(self, key: int) -> Any:
        messages, state = self.conversations[key]
        return self.request.override(messages=messages, state={**state, "messages": messages})

    def _keep(self, key: int, result: Any) -> None:
        command = getattr(result, "command", None)
        update = getattr(command, "update", None)
        self.compacted = isinstance(update, dict) and COMPACTION_EVENT in update
        if isinstance(update, dict):
            state = self.conversations[key][1]
            state.update({k: v for k, v in update.items() if k != "messages"})

    def call(self, key: int) -> float:
        request = self._request(key)
        answer = self.models.setdefault(key, Model()).answer
        t = time.perf_counter()
        result = (
            answer(request) if self.middleware is None else self.middleware.wrap_model_call(request, answer)
        )
        elapsed = time.perf_counter() - t
        self._keep(key, result)
        return elapsed

    async def acall(self, key: int) -> float:
        """The time the call added to the model's."""
        request = self._request(key)
        answer_later = self.models.setdefault(key, Model()).answer_later
        t = time.perf_counter()
        if self.middleware is None:
            result = await answer_later(request)
        else:
            result = await self.middleware.awrap_model_call(request, answer_later)
        elapsed = time.perf_counter() - t - MODEL_SECONDS
        self._keep(key, result)
        return elapsed

    def grow(self, key: int, n: int) -> None:
        """Append the session's next step: its next message and the tool results after
        it (a user's message once the session has no more)."""
        messages, state = self.conversations[key]
        following = self.following[key]
        step = 1
        while step < len(following) and isinstance(following[step], ToolMessage):
            step += 1
        self.following[key] = following[step:]
        self.conversations[key] = ([*messages, *self._reported(key, following[:step])], state)
        if not following:
            self.ask(key, n)

    def _reported(self, key: int, step: list[BaseMessage]) -> list[BaseMessage]:
        """The step with its agent's message reporting the usage of the request the
        model was last sent (the session's own figures are of its unedited history)."""
        if not step or not isinstance(step[0], AIMessage) or step[0].usage_metadata is None:
            return step
        model = self.models.get(key)
        sent = model.tokens if model is not None else None
        if sent is None:
            return step
        output = step[0].usage_metadata["output_tokens"]
        usage = {"input_tokens": sent, "output_tokens": output, "total_tokens": sent + output}
        return [step[0].model_copy(update={"usage_metadata": usage}), *step[1:]]

    def ask(self, key: int, n: int) -> None:
        """Append a user's message: the conversation grows by one message, and no
        compaction comes to pay for itself."""
        messages, state = self.conversations[key]
        self.conversations[key] = ([*messages, HumanMessage(f"and then step {n}, please")], state)


# Next steps each conversation has beyond its served length.
FOLLOWING = 200


def conversations(count: int, length: int) -> Iterator[list[BaseMessage]]:
    """`count` sessions of `length` messages and `FOLLOWING` more, every one its own
    objects (copies of a few sessions, each with ids of its own)."""
    bases = [coding_session(length + FOLLOWING, seed=s) for s in range(min(count, 8))]
    for k in range(count):
        base = bases[k % len(bases)]
        yield [m.model_copy(update={"id": f"c{k}-{m.id}"}) for m in base]


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def collections_counted() -> Iterator[list[float]]:
    """The durations of the garbage collections that run meanwhile."""
    pauses: list[float] = []
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append(time.perf_counter() - started.pop())

    gc.callbacks.append(on_gc)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(on_gc)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def interleaved(side: str, count: int, length: int, warm_calls: int, bound: int) -> dict[str, Any]:
    """Every conversation's first call, then `warm_calls` on conversations picked at
    random, under a cache bound of `bound` bytes."""
    fastcompact.clear_cache()
    fastcompact.set_cache_capacity(bytes=bound)
    gc.collect()
    server = Server(side)
    for k, session in enumerate(conversations(count, length)):
        server.add(k, session, length)
    gc.collect()
    before = rss()
    with collections_counted() as pauses:
        first = [server.call(k) for k in range(count)]
    for model in server.models.values():
        model.settle()
    first_pauses = list(pauses)
    after = rss()
    weighed = fastcompact.cache_bytes()[0]
    rng = random.Random(7)
    warm, compacting, setting_off = [], [], 0
    stats = fastcompact.cache_stats()
    with collections_counted() as pauses:
        for n in range(warm_calls):
            k = rng.randrange(count)
            server.grow(k, n)
            ran = len(pauses)
            took = server.call(k)
            (compacting if server.compacted else warm).append(took)
            setting_off += len(pauses) > ran
            server.models[k].settle()
    warm_pauses = list(pauses)
    after_warm = fastcompact.cache_stats()
    fastcompact.clear_cache()
    fastcompact.set_cache_capacity(bytes=DEFAULT_BOUND)
    gc.collect()
    return {
        "first": first,
        "warm": warm,
        "compacting": compacting,
        "collections": len(first_pauses),
        "collection_ms": sum(first_pauses) * 1e3,
        "warm_setting_off": setting_off,
        "warm_collection_ms": sum(warm_pauses) * 1e3,
        "warm_longest_ms": max(warm_pauses, default=0.0) * 1e3,
        "grown": after - before,
        "weighed": weighed,
        "left": rss() - before,
        "messages": count * length,
        # Of the warm calls, those that found their conversation cached; and the
        # conversations evicted meanwhile.
        "served_warm": after_warm.found - stats.found,
        "evicted": after_warm.evicted - stats.evicted,
    }


def long_conversation(side: str, length: int, calls: int) -> tuple[float, float, float]:
    """(cold, median warm, slowest warm) seconds on one conversation of `length`
    messages."""
    fastcompact.clear_cache()
    server = Server(side)
    server.add(0, next(conversations(1, length)), length)
    cold = server.call(0)
    warm = []
    for n in range(calls):
        server.ask(0, n)
        warm.append(server.call(0))
    return cold, statistics.median(warm), max(warm)


def threaded(side: str, threads: int, count: int, length: int, calls: int) -> float:
    """Warm calls a second, `calls` of them spread over `threads` threads, each serving
    conversations of its own."""
    fastcompact.clear_cache()
    server = Server(side)
    for k, session in enumerate(conversations(count, length)):
        server.add(k, session, length)
    for k in range(count):
        server.call(k)
    mine = [[k for k in range(count) if k % threads == t] for t in range(threads)]

    def work(t: int) -> None:
        keys = mine[t]
        for n in range(calls // threads):
            k = keys[n % len(keys)]
            server.ask(k, n)
            server.call(k)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for p in pool:
        p.start()
    for p in pool:
        p.join()
    return calls / (time.perf_counter() - start)


def scaling(side: str, rounds: int = 5) -> tuple[float, float, float]:
    """Median warm calls a second from one thread and from eight, and the median of
    their ratio, over `rounds` pairs run in alternating order (the machine is shared,
    and a single pair moved by half either way)."""
    one, eight, ratios = [], [], []
    for r in range(rounds):
        pair = {}
        for threads in (1, 8) if r % 2 == 0 else (8, 1):
            pair[threads] = threaded(side, threads, 100, 1_000, 1_000)
        one.append(pair[1])
        eight.append(pair[8])
        ratios.append(pair[8] / pair[1])
    return statistics.median(one), statistics.median(eight), statistics.median(ratios)


def concurrent(side: str, tasks: int, length: int, rounds: int, in_thread: bool = False) -> float:
    """p50 ms added to a 5 ms model by `tasks` tasks calling at once; `in_thread`:
    fastcompact plans each call in a worker thread instead of on the event loop."""
    fastcompact.clear_cache()
    server = Server(side)
    if in_thread:
        server.middleware._plan_in_thread = True
    for k, session in enumerate(conversations(tasks, length)):
        server.add(k, session, length)
    for k in range(tasks):
        server.call(k)
    added: list[float] = []

    async def task(k: int) -> None:
        for n in range(rounds):
            server.ask(k, n)
            added.append(await server.acall(k))

    async def main() -> None:
        await asyncio.gather(*(task(k) for k in range(tasks)))

    asyncio.run(main())
    return statistics.median(added) * 1e3


def collected(run: dict[str, Any]) -> str:
    return (
        f"{run['warm_setting_off']:,} of {len(run['warm']) + len(run['compacting']):,}"
        f" ({run['warm_collection_ms']:,.0f}; {run['warm_longest_ms']:,.0f})"
    )


def served(run: dict[str, Any]) -> str:
    calls = len(run["warm"]) + len(run["compacting"])
    return f"{run['served_warm']:,} of {calls:,}; {run['evicted']:,}"


def compactions(run: dict[str, Any]) -> str:
    done = run["compacting"]
    return f"{len(done):,} ({pct(done, 0.5):.1f})" if done else "0"


def table(rows: list[tuple[str, Callable[[str], str]]], sides: tuple[str, ...]) -> None:
    names = {FLOOR: "no middleware (the floor)"}
    print("| | " + " | ".join(names.get(s, s) for s in sides) + " |")
    print("|---|" + "---:|" * len(sides))
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(s) for s in sides) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the interleaved calls' latency percentiles (ms)")
    args = parser.parse_args()
    # Warm calls compact conversations whose size makes it pay; the archive they write
    # goes to a StateBackend outside a graph run here, which refuses it and warns.
    # Compaction goes on regardless, as it does in a server: those warnings are noise.
    warnings.simplefilter("ignore")
    logging.getLogger("fastcompact").setLevel(logging.ERROR)
    count = 100 if args.quick else 1_000
    long = 20_000 if args.quick else 100_000
    print(f"One middleware serving {count:,} conversations of 1,000 messages (ms unless said):")
    print()
    every = (*SIDES, FLOOR)
    r = {s: interleaved(s, count, 1_000, 2 * count, ROOM) for s in every}
    d = {s: interleaved(s, count, 1_000, 5 * count, DEFAULT_BOUND) for s in every}
    k = {s: long_conversation(s, long, 15) for s in SIDES}
    scaled = {s: scaling(s) for s in SIDES}
    a = {s: concurrent(s, 64, 1_000, 5) for s in SIDES}
    offloaded = concurrent("fastcompact", 64, 1_000, 5, in_thread=True)
    bound = f"{DEFAULT_BOUND / 2**30:.0f} GiB"
    table(interleaved_rows(r, d, bound), every)
    table(other_rows(r, k, scaled, a, offloaded, long), SIDES)
    bars(r, d, k, scaled, long)
    if args.json:
        Path(args.json).write_text(json.dumps(percentiles(d), indent=2))


def percentiles(runs: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Of each side's first and warm calls (seconds), the p50, p90, p99 and the
    longest, in ms: what a server's latency picture shows."""

    def of(samples: list[float]) -> dict[str, float]:
        if not samples:
            return {}
        return {**{f"p{q}": pct(samples, q / 100) for q in (50, 90, 99)}, "max": max(samples) * 1e3}

    return {side: {"first": of(r["first"]), "warm": of(r["warm"])} for side, r in runs.items()}


def interleaved_rows(
    r: dict[str, Any], d: dict[str, Any], bound: str
) -> list[tuple[str, Callable[[str], str]]]:
    """The rows of the interleaved runs, the floor beside the two sides."""
    return [
        (
            "warm interleaved call that did not compact, p50 / p99",
            lambda s: f"{pct(r[s]['warm'], 0.5):.2f} / {pct(r[s]['warm'], 0.99):.2f}",
        ),
        ("warm calls that compacted their conversation, how many and p50", lambda s: compactions(r[s])),
        ("longest warm call", lambda s: f"{longest(r[s]):,.1f}"),
        ("warm calls that set off a garbage collection (ms in them; longest)", lambda s: collected(r[s])),
        (
            f"the same under the cache's default bound ({bound}), p50 / p99",
            lambda s: f"{pct(d[s]['warm'], 0.5):.2f} / {pct(d[s]['warm'], 0.99):.2f}",
        ),
        ("the same: longest warm call", lambda s: f"{longest(d[s]):,.1f}"),
        (
            "the same: calls that set off a garbage collection (ms in them; longest)",
            lambda s: collected(d[s]),
        ),
        (
            "the same: warm calls that found their conversation cached; conversations evicted",
            lambda s: served(d[s]) if s == "fastcompact" else "",
        ),
        (
            "first call of a conversation, p50 / p99",
            lambda s: f"{pct(r[s]['first'], 0.5):.2f} / {pct(r[s]['first'], 0.99):.2f}",
        ),
        (
            "garbage collections in the first calls (ms in them)",
            lambda s: f"{r[s]['collections']} ({r[s]['collection_ms']:.0f})",
        ),
    ]


def other_rows(
    r: dict[str, Any],
    k: dict[str, Any],
    scaled: dict[str, Any],
    a: dict[str, float],
    offloaded: float,
    long: int,
) -> list[tuple[str, Callable[[str], str]]]:
    """The rows of memory, the long conversation, threads and async."""
    return [
        (
            "memory grown by the first calls, bytes per message",
            lambda s: f"{r[s]['grown'] / r[s]['messages']:,.0f}",
        ),
        (
            "the cache's own estimate of what it holds, bytes per message",
            lambda s: f"{r[s]['weighed'] / r[s]['messages']:,.0f}",
        ),
        (
            "memory still held after clearing the cache, bytes per message",
            lambda s: f"{r[s]['left'] / r[s]['messages']:,.0f}",
        ),
        (
            f"{long:,}-message conversation, warm call, p50 / slowest",
            lambda s: f"{k[s][1] * 1e3:.1f} / {k[s][2] * 1e3:.0f}",
        ),
        (f"{long:,}-message conversation, cold call", lambda s: f"{k[s][0] * 1e3:.0f}"),
        ("1 thread, warm calls/s (median of 5)", lambda s: f"{scaled[s][0]:,.0f}"),
        (
            "8 threads, warm calls/s (median of 5; median ratio)",
            lambda s: f"{scaled[s][1]:,.0f} ({scaled[s][2]:.2f}x)",
        ),
        ("async, 64 tasks, 5 ms model: added latency p50", lambda s: f"{a[s]:.1f}"),
        (
            "the same, fastcompact planning in a worker thread",
            lambda s: f"{offloaded:.1f}" if s == "fastcompact" else "",
        ),
    ]


def longest(run: dict[str, Any]) -> float:
    """The longest warm call, compacting or not, in ms."""
    return max([*run["warm"], *run["compacting"]], default=0.0) * 1e3


def bars(r: dict[str, Any], d: dict[str, Any], k: dict[str, Any], scaled: dict[str, Any], long: int) -> None:
    """The bars a busy server's tail is held to, on the default bound (as a server runs)."""
    fc, da = "fastcompact", "deepagents"
    calls = len(d[fc]["warm"]) + len(d[fc]["compacting"])
    print("Bars (the default bound):")
    ours, theirs = pct(d[fc]["warm"], 0.99), pct(d[da]["warm"], 0.99)
    print(f"- warm p99 at most 1.2x DeepAgents': {ours:.2f} vs {theirs:.2f} ms ({ours / theirs:.2f}x)")
    print(f"- longest warm call under 100 ms: {longest(d[fc]):,.1f} ms")
    share = d[fc]["warm_setting_off"] / calls
    print(f"- calls that set off a collection at most 2%: {100 * share:.1f}%")
    print(f"- 8 threads at least one thread's calls/s: {scaled[fc][2]:.2f}x")
    grown, weighed = r[fc]["grown"] / r[fc]["messages"], r[fc]["weighed"] / r[fc]["messages"]
    print(f"- at most 400 bytes a cached message, measured: {grown:,.0f}")
    print(f"- the weight reported within 10% of it: {weighed:,.0f} ({100 * (weighed / grown - 1):+.0f}%)")
    print(f"- no eviction under the default bound: {d[fc]['evicted']:,} evicted")
    first, theirs = pct(r[fc]["first"], 0.5), pct(r[da]["first"], 0.5)
    print(f"- first call p50 at most DeepAgents': {first:.2f} vs {theirs:.2f} ms")
    ours, theirs = pct(d[fc]["warm"], 0.5), pct(d[da]["warm"], 0.5)
    print(f"- warm p50 at least 5x below DeepAgents': {ours:.2f} vs {theirs:.2f} ms ({theirs / ours:.1f}x)")
    print(f"- {long:,}-message warm call under 20 ms: {k[fc][1] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()

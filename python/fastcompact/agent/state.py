"""What the middleware keeps in the graph state and reads back from it: the compaction
event (``_summarization_event``, DeepAgents' shape) and its own counters
(``_fastcompact``), where the conversation stands for the core, one call's reading of
them (:class:`Turn`) and a compaction worked out before its I/O (:class:`Draft`).
Nothing per conversation lives anywhere else.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, Protocol

from langchain.agents.middleware.types import AgentState, PrivateStateAttr

from fastcompact.agent.setup import POLICY
from fastcompact.agent.summarize import is_summary
from fastcompact.api.counting import count_once
from fastcompact.api.passes import Plan

if TYPE_CHECKING:
    from fastcompact._core import _Progress
    from fastcompact.agent.counters import Counters
    from fastcompact.agent.storage import Read

logger = logging.getLogger("fastcompact")

EVENT_KEY = "_summarization_event"
STATE_KEY = "_fastcompact"


class CompactionState(AgentState):
    """The graph state the middleware adds: private channels, never shown to the model."""

    _summarization_event: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]
    _fastcompact: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]


class CallInput(Protocol):
    """What a compaction reads of the model call it is made for: a ``ModelRequest``
    has it all, and so has a saved transcript's stand-in (which has no agent model)."""

    @property
    def model(self) -> Any: ...
    @property
    def messages(self) -> Sequence[Any]: ...
    @property
    def system_message(self) -> Any: ...
    @property
    def tools(self) -> Sequence[Any]: ...
    @property
    def state(self) -> Any: ...
    @property
    def runtime(self) -> Any: ...
    @property
    def model_settings(self) -> Mapping[str, Any]: ...


@dataclasses.dataclass
class Turn:
    """One model call's reading of the state."""

    raw: list[Any]
    event: dict[str, Any] | None
    prior_cutoff: int
    effective: list[Any]
    view: list[Any]
    plan: Plan
    window: int | None
    counters: Counters
    # The price preset the passes were planned with (None: fixed batch sizes).
    pricing: str | None = None
    # The index ``raw[0]`` has in the caller's conversation, as archives number it (the
    # command line keeps a transcript's leading system messages out of ``raw``).
    first_index: int = 0


@dataclasses.dataclass
class Draft:
    """A compaction worked out, before its I/O (summary call, archive, file reads)."""

    state_cutoff: int
    leaving: list[Any]
    span: list[Any]
    kept: list[Any]
    thread: str
    number: int
    todos: list[Any]
    reads: list[Read]
    use_llm: bool
    forced: bool
    # The memory the last compaction left (or, when it left none, its summary's text and
    # the archive file it names), and the number the span's first request takes.
    memory: dict[str, Any] | None = None
    earlier_text: str | None = None
    earlier_file: str | None = None
    first_number: int = 1
    # Whether the agent has the `recall` tool (the memory names it only then).
    recall: bool = True
    # The summarizer is resting after failures (the digest stands in for it).
    paused: bool = False
    # Due by the price model (it commits whenever it makes the view smaller), rather
    # than by the trigger.
    priced: bool = False
    # The memory's room in the window, in widths (None: no window known), and the widths
    # a token of this conversation takes.
    room: int | None = None
    widths_per_token: float = 4.0
    # The memory's shares for this session (see `drafting.memory_shares`), once worked out.
    shares: dict[str, float] | None = None
    # The digest of the span, once made (pricing, the hopeless check and the fallback
    # all use the same one).
    digest: Summary | None = None
    # The memory beside a model's notes not yet written, made with the digest when a
    # model may summarize (see `drafting.fold_of`).
    fold: Summary | None = None


@dataclasses.dataclass(frozen=True)
class Summary:
    """What stands in for the span: the memory and its text, whether a model's notes
    are in it, how many requests left the verbatim layer, and the notes the archive
    file must take whole when they were cut for space."""

    # The memory's text in parts, the steadiest first (see ``memory.parts``).
    parts: tuple[str, ...]
    memory: dict[str, Any]
    by_model: bool = False
    folded: int = 0
    notes_to_save: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


def valid_event(event: Any, n: int) -> dict[str, Any] | None:
    """The prior event when it can be trusted; a malformed one is ignored (the whole raw
    history is sent instead, so nothing is lost)."""
    if event is None:
        return None
    try:
        cutoff = event["cutoff_index"]
        summary = event["summary_message"]
    except (KeyError, TypeError):
        logger.warning("fastcompact: ignoring a malformed %s: %r", EVENT_KEY, event)
        return None
    if not isinstance(cutoff, int) or isinstance(cutoff, bool) or not 0 <= cutoff <= n or summary is None:
        logger.warning("fastcompact: ignoring %s with cutoff_index %r for %d messages", EVENT_KEY, cutoff, n)
        return None
    return dict(event)


def run_metadata() -> Mapping[str, Any]:
    """The LangGraph run's metadata, when running inside a graph."""
    try:
        from langgraph.config import get_config

        found = get_config().get("metadata")
    except (RuntimeError, ImportError):
        return {}
    return found if isinstance(found, Mapping) else {}


def window_of(model: Any) -> int | None:
    profile = getattr(model, "profile", None)
    if isinstance(profile, Mapping):
        value = profile.get("max_input_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def thread_name(counters: Counters) -> str:
    """The conversation's name in archive paths: its thread id, else a session id made
    once and kept in state (two conversations without a thread id never share files)."""
    try:
        from langgraph.config import get_config

        thread = get_config().get("configurable", {}).get("thread_id")
    except (RuntimeError, ImportError):
        thread = None
    if thread:
        return str(thread)
    return counters.session_named(lambda: f"session-{uuid.uuid4().hex[:12]}")


def to_view(raw_index: int, event: Mapping[str, Any] | None, prior: int) -> int:
    """A raw-state index as an index in the effective view (the summary holds slot 0)."""
    if event is None:
        return max(raw_index, 0)
    return max(raw_index - prior + 1, 1)


def to_raw(view_index: int, event: Mapping[str, Any] | None, prior: int) -> int:
    return view_index if event is None else prior + max(view_index - 1, 0)


def count_of(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def progress_of(counters: Counters, event: Mapping[str, Any] | None, prior: int) -> _Progress:
    """Where the conversation stands, for the core: usage is valid only from the last
    summary and the last batch that rewrote older messages on (earlier usage counted
    another view); the calibration (offset and ratio) carries over from earlier
    anchors; batched edits before ``settled`` are committed."""
    since = max(counters.batch_at or 0, count_of(event.get("created_at_index")) if event else 0)
    settled = counters.settled
    # The core bounds both (a corrupted state gives the plain estimate).
    return {
        "min_anchor": to_view(since, event, prior),
        "ratio": float(counters.ratio) if counters.ratio is not None else 1.0,
        "offset": float(counters.offset) if counters.offset is not None else 0.0,
        "settled": to_view(settled, event, prior) if settled is not None else None,
        "calls_before": counters.calls_before or 0,
        # Before the first planned call, usage counted the messages as they were, unedited.
        "usage_of_unedited": counters.last_plan is None,
    }


def advance(counters: Counters, plan: Plan, event: Mapping[str, Any] | None, prior: int, n_raw: int) -> None:
    """Record what this turn's plan settled, in raw-state indices."""
    counters.plan_settled(plan.ratio, plan.offset, to_raw(plan.settled, event, prior))
    if plan.batch_at is not None:
        counters.batch_ran(n_raw)


def calls_so_far(turn: Turn) -> int:
    """The model calls the conversation has made: those before the last compaction's
    view, and the agent's messages in it."""
    return (turn.counters.calls_before or 0) + sum(1 for m in turn.view if getattr(m, "type", None) == "ai")


def rewrites_per_call(counters: Counters) -> float:
    """How many of the calls since the last fold wrote the memory anew (a digest each),
    of one: what a token kept in it costs beyond its reads.

    Examples:
        >>> from fastcompact.agent.counters import Counters
        >>> rewrites_per_call(Counters(memory_digests=2, memory_calls=10))
        0.2
        >>> rewrites_per_call(Counters())
        0.0
    """
    calls = counters.memory_calls or 0
    return (counters.memory_digests or 0) / calls if calls else 0.0


def growth(counters: Counters, size: float) -> tuple[float, float]:
    """What the view has grown by since the last compaction, read call after call (this
    call's read included), and how many calls that took: the reads a compaction stops
    paying, and the cycle it would close."""
    base = float(counters.base_size) if counters.base_size is not None else size
    paid = float(counters.grown_reads or 0.0)
    return paid + max(size - base, 0.0), float((counters.calls_since_compaction or 0) + 1)


def grow(counters: Counters, size: float) -> None:
    """Record this call's read of what has grown since the last compaction, and of the
    memory since its last fold."""
    grown, calls = growth(counters, size)
    counters.read_grew(grown, int(calls), size)


def newest_request(view: list[Any]) -> int | None:
    """Where the turn in progress starts: the index of the newest user message that is
    not a summary, when something older than it can be compacted."""
    for i in range(len(view) - 1, 0, -1):
        m = view[i]
        if getattr(m, "type", None) == "human" and not is_summary(m):
            return i
    return None


def unplanned() -> Plan:
    """The plan of a call that could not be planned: nothing done, nothing due."""
    return Plan(
        edits=[],
        tokens_before=0,
        tokens_after=0,
        passes=[],
        summary_needed=False,
        summary_cutoff=None,
        per_role={},
        per_tool={},
    )


def sent_size(plan: Plan) -> int:
    """The size of the planned view as the provider will count it: anchored on usage,
    else the estimate."""
    return plan.true_tokens or plan.tokens_after


def true_size(request: CallInput, turn: Turn, view: list[Any]) -> int:
    """The size the provider will see of ``view`` with the request's system prompt
    and tools: the estimate calibrated as the conversation's usage says. A memory at
    its head is counted by its tokens where they run denser than the estimate (its
    codes, numbers and marks): no usage has measured it yet."""
    estimate = count_once(view, system=request.system_message, tools=request.tools, model=request.model)
    size = turn.plan.offset + estimate * turn.plan.ratio
    if view and is_summary(view[0]):
        alone = count_once([view[0]], model=request.model) * turn.plan.ratio
        size += own_size(request, turn, view[0]) - alone
    return math.ceil(size)


def own_size(request: CallInput, turn: Turn, message: Any) -> float:
    """The size the provider will see of a message of ours (the memory, a summary
    instruction), which no usage has measured: the conversation's ratio is of its own
    text, so the message's tokens are counted where they run denser than that says."""
    calibrated = count_once([message], model=request.model) * turn.plan.ratio
    return max(calibrated, float(count_once([message], encoding="o200k_base")))


def over_window(turn: Turn) -> bool:
    """Whether the view as planned is over the model's window, or so close to it that
    what no usage has counted yet (the messages since the anchor, estimated) may take
    it over."""
    if turn.window is None:
        return False
    size = sent_size(turn.plan)
    return size + POLICY.estimate_slack * (size - _counted(turn)) > turn.window


def _counted(turn: Turn) -> int:
    """What the provider's usage has counted of the planned view: the anchor's input
    and output, 0 without an anchor."""
    anchor = turn.plan.anchor
    planned = turn.effective
    usage = (
        getattr(planned[anchor], "usage_metadata", None)
        if anchor is not None and anchor < len(planned)
        else None
    )
    if not isinstance(usage, Mapping):
        return 0
    # A usage record of another shape counts nothing, rather than failing the call.
    parts = (usage.get("input_tokens"), usage.get("output_tokens"))
    return sum(n for n in parts if isinstance(n, int) and not isinstance(n, bool))


def plan_info(plan: Plan) -> dict[str, Any]:
    return {
        "tokens_before": plan.tokens_before,
        "tokens_after": plan.tokens_after,
        "passes": [
            {
                "name": p.name,
                "tokens_before": p.tokens_before,
                "tokens_after": p.tokens_after,
                "edits": p.edits,
                "batched": p.batched,
            }
            for p in plan.passes
        ],
        "summary_needed": plan.summary_needed,
    }


def emit(payload: dict[str, Any]) -> None:
    """A LangGraph custom stream event, when running inside a graph."""
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()({"fastcompact": payload})
    except Exception:  # outside a graph, or no writer
        pass

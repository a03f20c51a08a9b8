"""Type stubs for the Rust extension module ``fastcompact._core``."""

from collections.abc import Callable, Mapping
from typing import Any, NotRequired, TypedDict, final

__all__ = [
    "ESSENTIAL_SECTION_WORDS",
    "PIN_TOOL",
    "PRICING_PRESETS",
    "SUMMARY_SECTIONS",
    "WIDTHS_PER_TOKEN",
    "WIDTHS_PER_TOKEN_BOUNDS",
    "Breakdown",
    "CommitVerdict",
    "CompactionPrice",
    "CountOptions",
    "Edit",
    "InputError",
    "PassStats",
    "PlanOutcome",
    "PlanSettings",
    "SummarizerChoice",
    "SummarizerRest",
    "SummaryCallSize",
    "_read_each",
    "add_binding_cues",
    "add_short_forms",
    "add_tool_kinds",
    "after_summary",
    "backing_off",
    "backoff_after",
    "cache_bytes",
    "cache_info",
    "cache_stats",
    "check_window",
    "choose_summarizer",
    "clear_cache",
    "commit_size",
    "commit_verdict",
    "count_text",
    "count_tokens",
    "defaults",
    "digest_and_fold",
    "find_cutoff",
    "identities",
    "input_error",
    "is_placeholder",
    "memory_budgets",
    "memory_room",
    "normalize",
    "pass_defaults",
    "pin_change",
    "pinned_result",
    "plan",
    "read_size",
    "read_triggers",
    "remember",
    "render_memory_parts",
    "render_transcript",
    "search",
    "set_cache_capacity",
    "should_compact",
    "span_floor",
    "state_cutoff",
    "summary_call",
    "text_width",
    "token_breakdown",
    "tool_kind",
    "unpinned_result",
]

PRICING_PRESETS: list[str]
"""The names ``CompactionConfig.pricing`` takes (``anthropic``, ``openai``, ...)."""
WIDTHS_PER_TOKEN: float
"""Widths a token, as the memory's budgets assume when a conversation has not said."""
SUMMARY_SECTIONS: list[str]
"""The titles of the summary's sections, in order."""
PIN_TOOL: str
"""The name of the tool the agent pins its notes to the ledger with."""
ESSENTIAL_SECTION_WORDS: list[str]
"""Words in the headings of the sections kept whole when notes are cut for space."""
WIDTHS_PER_TOKEN_BOUNDS: tuple[float, float]
"""The least and most widths a token may measure (code runs to three, prose to six)."""

class InputError(ValueError):
    """Malformed input. ``index`` is the message index (or None), ``field`` the field."""

    index: int | None
    field: str

@final
class CountOptions:
    """How to count: the options every helper takes."""

    def __new__(
        cls,
        *,
        encoding: str,
        # None: the heuristic's default for the model (Anthropic's, with ``anthropic``).
        chars_per_token: float | None,
        anthropic: bool,
        use_usage: bool,
        tools: list[Any] | None,
        # Serializes one tool not seen before (None for what is not a tool).
        tool_json: Callable[[Any], str | None],
        system: Any,
        cache_key: str | None,
        # False: messages are replaced, never edited in place (graph state); a warm
        # call rechecks the content of the newest and a rotating few only.
        in_place_edits: bool = True,
        # False: a one-off count of a list built for the occasion, kept out of the cache.
        remember: bool = True,
    ) -> CountOptions: ...

@final
class Breakdown:
    """Where counted tokens go: per message (with its role and tool name), per role
    and per tool, and the total."""

    @property
    def total(self) -> int:
        """Every token counted: the messages, the system prompt and the tools."""
    @property
    def system_and_tools(self) -> int:
        """Tokens of the system prompt and the tool schemas given in the options."""
    @property
    def per_message(self) -> list[int]:
        """Each message's tokens, in order."""
    @property
    def roles(self) -> list[str]:
        """Each message's role (``human``, ``ai``, ``tool``, ``system``, ...)."""
    @property
    def tool_names(self) -> list[str | None]:
        """Each tool result's tool, ``None`` for other messages."""
    @property
    def per_role(self) -> dict[str, int]:
        """Tokens by role."""
    @property
    def per_tool(self) -> dict[str, int]:
        """Tokens of tool results by tool."""
    def at(self, i: int) -> tuple[str, str | None]:
        """Message ``i``'s role and tool name (``IndexError`` past the end)."""
    def largest(self, n: int) -> list[int]:
        """The indices of the ``n`` largest messages, largest first (equal ones in order)."""

def count_tokens(messages: Any, opts: CountOptions) -> int:
    """Total tokens of ``messages``, with the system prompt and tools of ``opts``.

    Args:
        messages: A conversation in any shape the readers take.
        opts: How to count.

    Returns:
        The total, as ``opts.encoding`` counts it.

    Raises:
        InputError: a message the readers cannot read.
    """

def token_breakdown(messages: Any, opts: CountOptions) -> Breakdown:
    """Where the tokens of ``messages`` go: per message, per role and per tool.

    Args:
        messages: A conversation in any shape the readers take.
        opts: How to count.

    Returns:
        The breakdown, whose ``total`` equals :func:`count_tokens`.

    Raises:
        InputError: a message the readers cannot read.
    """

def find_cutoff(messages: Any, keep: object, max_input_tokens: int | None, opts: CountOptions) -> int:
    """Where a summary cuts to keep ``keep`` of the newest messages, never splitting a
    tool call from its result.

    Args:
        messages: A conversation in any shape the readers take.
        keep: A size, ``("messages", n)``, ``("tokens", n)`` or ``("fraction", f)``.
        max_input_tokens: The model's window (a fraction needs it).
        opts: How to count.

    Returns:
        The index of the first message kept (0: nothing to summarize).

    Raises:
        InputError: a message the readers cannot read, or a size that is not one.
    """

def should_compact(
    messages: Any,
    triggers: object,
    max_input_tokens: int | None,
    opts: CountOptions,
) -> bool:
    """Whether any trigger clause fires: every size of the clause reached.

    Args:
        messages: A conversation in any shape the readers take.
        triggers: A size, a dict of sizes (one clause), or a list of those.
        max_input_tokens: The model's window (a fraction needs it).
        opts: How to count.

    Returns:
        ``True`` when a clause fires.

    Raises:
        InputError: a message the readers cannot read, or a trigger that is not one.
    """

@final
class Edit:
    """One rewrite: message ``index``'s ``field`` (``"content"``, or ``"tool_args"`` of
    tool call ``call``) becomes ``value``; ``pass_name`` says which pass made it.
    ``fingerprint`` identifies the rewrite (0 when unknown), so that the same edit of
    the same message is recognised across turns without comparing values; ``target``
    identifies the message it was made for (its role and tool calls or results; 0 when
    unknown), which ``apply_edits`` checks."""

    def __new__(
        cls,
        index: int,
        pass_name: str,
        field: str,
        value: Any,
        call: int | None = None,
        fingerprint: int = 0,
        target: int = 0,
    ) -> Edit: ...
    @property
    def index(self) -> int:
        """The message edited."""
    @property
    def pass_name(self) -> str:
        """The pass that made the edit (``clearing``, ``budget``, ...)."""
    @property
    def field(self) -> str:
        """``"content"`` or ``"tool_args"``."""
    @property
    def value(self) -> Any:
        """The new content (a str), or the call's new arguments (a dict)."""
    @property
    def call(self) -> int | None:
        """For ``tool_args``, the position of the call in the message's calls."""
    @property
    def fingerprint(self) -> int:
        """Identifies the rewrite across turns (0 when unknown)."""
    @property
    def target(self) -> int:
        """Identifies the message the edit was made for (0 when unknown)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[type[Edit], tuple[int, str, str, Any, int | None, int, int]]: ...

@final
class PassStats:
    """Tokens before and after one pass, and how many edits it made."""

    def __new__(cls, name: str, tokens_before: int, tokens_after: int, edits: int) -> PassStats: ...
    @property
    def name(self) -> str:
        """The pass."""
    @property
    def tokens_before(self) -> int:
        """The view's tokens before the pass."""
    @property
    def tokens_after(self) -> int:
        """The view's tokens after it."""
    @property
    def edits(self) -> int:
        """How many edits it made."""
    @property
    def saved(self) -> int:
        """Tokens the pass took off."""
    @property
    def batched(self) -> bool:
        """Whether the pass rewrites older messages, so commits only whole batches."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[type[PassStats], tuple[str, int, int, int]]: ...

@final
class PlanOutcome:
    """One turn's plan as the core made it."""

    @property
    def edits(self) -> list[Edit]:
        """Every edit of the view, in the order the passes made them."""
    @property
    def tokens_before(self) -> int:
        """The view's tokens as it came."""
    @property
    def tokens_after(self) -> int:
        """The view's tokens with the edits applied."""
    @property
    def passes(self) -> list[PassStats]:
        """What each pass did, in the order they ran."""
    @property
    def summary_needed(self) -> bool:
        """Whether the trigger still fires after the passes."""
    @property
    def summary_cutoff(self) -> int | None:
        """Where a summary would cut (the first message kept), when one is needed."""
    @property
    def true_tokens(self) -> int:
        """The view's size anchored on the provider's reported usage."""
    @property
    def ratio(self) -> float:
        """Usage over the estimate: usage = offset + ratio * estimate."""
    @property
    def offset(self) -> float:
        """The part of usage the estimate does not scale with."""
    @property
    def anchor(self) -> int | None:
        """The message whose reported usage anchors ``true_tokens``."""
    @property
    def settled(self) -> int:
        """The messages before this index are settled: later turns keep their edits."""
    @property
    def batch_at(self) -> int | None:
        """Where a batch of older edits committed this turn, if one did."""
    @property
    def orphans(self) -> list[int]:
        """The tool results whose call is in no earlier message, by index (a provider
        refuses a request holding one)."""
    @property
    def parallel(self) -> list[int]:
        """The user messages that answer several tool calls at once (Anthropic's shape
        after parallel calls), by index: the passes reach their results once they are
        one a message (``fastcompact.one_result_a_message``)."""
    @property
    def view(self) -> list[Any] | None:
        """The edited view, when ``plan`` was given ``make_edited``."""
    @property
    def breakdown(self) -> Breakdown | None:
        """Where the tokens go, when ``plan`` was not given ``make_edited``."""

class _Progress(TypedDict):
    """Where a conversation stands (indices in the view planned)."""

    min_anchor: int
    ratio: float
    offset: NotRequired[float]
    settled: int | None
    calls_before: int
    usage_of_unedited: NotRequired[bool]

@final
class CompactionPrice:
    """A compaction's price by the settings' price model (``PlanSettings.compaction``)."""

    @property
    def price(self) -> float:
        """What it costs now: what stays rewritten, and a summary's call."""
    @property
    def due(self) -> bool:
        """The reads paid since the last compaction for what has grown reach the price."""
    @property
    def cost_over_cycle(self) -> float:
        """Its cost over the cycle's calls."""
    @property
    def paid(self) -> float:
        """The reads paid for what has grown."""

@final
class CommitVerdict:
    """Whether a compaction commits, by the trigger (``commit_verdict``)."""

    @property
    def under_trigger(self) -> bool:
        """The view it leaves is under the trigger with the commit margin to spare."""
    @property
    def commits(self) -> bool:
        """It commits."""

@final
class SummarizerRest:
    """The summarizer's failures in a row after a model summary, and its rest
    (``after_summary``)."""

    @property
    def failures(self) -> int:
        """Its failures in a row (0 again once they reached the limit)."""
    @property
    def rests_until(self) -> int | None:
        """The raw index it rests until, when the failures reached the limit."""

@final
class SummarizerChoice:
    """Of a digest and a model summary, the one the session is better off with
    (``choose_summarizer``)."""

    @property
    def model(self) -> bool:
        """A model summary (else the digest)."""
    @property
    def due(self) -> bool:
        """The chosen one is due now."""
    @property
    def span_price(self) -> float:
        """The span's part of the cheaper price: the next calls' lower bound."""

@final
class SummaryCallSize:
    """A model summary's call as it is priced, in tokens (``summary_call``)."""

    @property
    def input(self) -> float:
        """Its input."""
    @property
    def cached(self) -> float:
        """Of the input, what the provider has cached."""
    @property
    def output(self) -> float:
        """Its expected output."""

@final
class PlanSettings:
    """Resolved pass settings, read once."""

    def __new__(cls, resolved: dict[str, Any]) -> PlanSettings:
        """Read ``resolved`` once for many plans.

        Args:
            resolved: ``CompactionConfig.resolved()``.

        Raises:
            ValueError: a setting the core does not take.
        """
    def trigger_fires(self, n_messages: int, tokens: float, max_input_tokens: int | None) -> bool:
        """Whether the summary trigger fires at this size."""
    def compaction(
        self,
        *,
        size_without: float,
        size_with: float,
        prefix: float,
        grown_reads: float,
        cycle: float,
        summary_input: float = 0.0,
        summary_cached: float = 0.0,
        summary_output: float = 0.0,
    ) -> CompactionPrice | None:
        """A compaction's price, whether it is due, its cost over ``cycle`` calls, and
        the reads paid for what has grown, by the settings' price model; ``None``
        without one."""
    def verbatim_tokens(
        self, growth: float, fold_output: float, rewrites_per_call: float = 0.0
    ) -> float | None:
        """The tokens of the newest requests a memory pays to keep verbatim when they
        grow by ``growth`` tokens a call, a fold writes ``fold_output`` tokens and
        ``rewrites_per_call`` of the calls write the memory anew: the cheapest cycle
        between folds, ``sqrt(2 D g / r)`` with r a token's read and rewrites a call;
        ``None`` without a price model."""
    def restoring_pays(self, cycle: float, in_progress: bool) -> bool:
        """Whether restoring files after a compaction pays when a cycle takes ``cycle``
        calls: for the request still under way (``in_progress``; a finished request's
        files are rarely read again), while the reads of them cost less than a
        re-read's write; ``True`` without a price model."""
    @property
    def resolved(self) -> dict[str, Any]:
        """The settings as ``CompactionConfig.resolved()`` gave them."""

def plan(
    messages: Any,
    config: dict[str, Any] | PlanSettings,
    opts: CountOptions,
    *,
    max_input_tokens: int | None = None,
    now: float | None = None,
    timestamps: list[float | None] | None = None,
    archive: list[str | None] | None = None,
    # Called as make_edited(message, edits) for each message whose edits changed.
    make_edited: Callable[[Any, list[Edit]], Any] | None = None,
    progress: _Progress | None = None,
) -> PlanOutcome:
    """One turn's plan: every pass run over ``messages``, each edit placed.

    Args:
        messages: A conversation in any shape the readers take.
        config: ``CompactionConfig.resolved()``, or the same read once as ``PlanSettings``.
        opts: How to count.
        max_input_tokens: The model's window (fractions and the budget need it).
        now: The time of this call, in seconds since the epoch (the time-gap pass).
        timestamps: Each message's send time, where the messages do not say.
        archive: Where each message's full text is archived, where it is.
        make_edited: Called as ``make_edited(message, edits)`` for each message the edits
            change; its results make the plan's ``view``.
        progress: Where the conversation stood after the last turn (the middleware's).

    Returns:
        The plan: its edits, the sizes before and after, and each pass's part.

    Raises:
        InputError: a message the readers cannot read, or a window that is not one.
        ValueError: a setting the core does not take.
    """

def defaults(max_input_tokens: int | None = None) -> dict[str, Any]:
    """The sizes filled in when a caller leaves them out, for a model of this window
    (or none known): ``{"trigger": (kind, value), ..., "min_batch_tokens": n}``.

    Raises:
        InputError: a window that is not a positive int.
    """

def input_error(field: str, reason: str, index: int | None = None) -> InputError:
    """An ``InputError`` as the core makes its own, for the Python layer to raise.

    Args:
        field: The field at fault.
        reason: What is wrong with it.
        index: The message, when one is at fault.

    Returns:
        The exception (not raised).
    """

def read_size(value: object, field: str) -> tuple[str, int | float]:
    """One size as a config field holds it, checked.

    Returns:
        ``(kind, value)``: ``("messages", n)``, ``("tokens", n)`` or ``("fraction", f)``.

    Raises:
        ValueError: not a size; the message names ``field``.
    """

def read_triggers(value: object, field: str) -> list[Any]:
    """Triggers as a config field holds them (a size, a dict of sizes, or a list of
    those), checked.

    Returns:
        A ``(kind, value)`` for each single size, and a list of them for each clause of
        several.

    Raises:
        ValueError: not a trigger; the message names ``field``.
    """

def add_tool_kinds(text: str) -> int:
    """Add lines of tool names by kind (``kind: tool, tool``; kinds read, search, list,
    shell, fetch, write, edit) to the defaults made later; how many lines it took.
    Raises ``InputError`` naming the first line it cannot read, and then adds nothing."""

def tool_kind(tool: str) -> str | None:
    """What a tool is (read, search, list, shell, fetch, write or edit), by its name;
    ``None`` for a tool no kind names."""

def pass_defaults() -> dict[str, dict[str, Any]]:
    """Each pass's settings as the core fills them in when left out, by section
    (``{"clearing": {"keep_recent": 3, ...}, ...}``): the one source of these defaults;
    and under ``"compaction"`` the constants of the compaction policy."""

def commit_verdict(
    settings: PlanSettings,
    *,
    tokens: int,
    messages: int,
    before: int,
    messages_before: int,
    window: int | None,
    priced: bool,
    forced_loose: bool,
) -> CommitVerdict:
    """Whether a compaction commits, by the settings' trigger.

    Args:
        settings: The turn's settings (their trigger).
        tokens: The view the compaction leaves, in tokens as the provider counts them.
        messages: Its messages.
        before: The view it replaces, in tokens.
        messages_before: That view's messages.
        window: The model's window, when known.
        priced: Scheduled by the price model (commits whenever smaller).
        forced_loose: Forced, with nothing stricter left to try (commits whenever smaller).

    Returns:
        Whether it is under the trigger with the commit margin to spare, and commits.

    Raises:
        InputError: a trigger the window cannot resolve.
    """

def backoff_after(*, under_trigger: bool, commits: bool, priced: bool, messages: int) -> int | None:
    """The raw index a judged compaction leaves no new attempt before.

    Args:
        under_trigger: The view it leaves is under the trigger with the commit margin.
        commits: It commits.
        priced: The price model scheduled it.
        messages: The messages the graph state holds.

    Returns:
        ``None`` when it committed under the trigger (or priced); else the policy's
        back-off past ``messages``.
    """

def backing_off(messages: int, backoff_until: int | None) -> bool:
    """Whether a compaction due by the trigger waits: the state holds fewer than
    ``backoff_until`` messages."""

def after_summary(
    *, failures: int, failed: bool, max_failures: int, cooldown: int, messages: int
) -> SummarizerRest:
    """The summarizer's failures in a row after a model summary, and its rest.

    Args:
        failures: Its failures in a row before this summary.
        failed: This summary failed.
        max_failures: The failures in a row that make it rest.
        cooldown: The new messages it rests for.
        messages: The messages the graph state holds.

    Returns:
        The failures in a row and the raw index it rests until; the index is ``None``
        unless the failures reached ``max_failures`` (the count then starts again).
    """

def commit_size(settings: PlanSettings, messages: int, window: int) -> int | None:
    """The largest view of ``messages`` messages, up to ``window`` tokens, that commits
    as under the settings' trigger with the commit margin.

    Returns:
        The size in tokens, or ``None`` when no size does (a trigger in messages that
        the count alone reaches).

    Raises:
        InputError: a trigger the window cannot resolve.
    """

def span_floor(
    settings: PlanSettings,
    *,
    size: float,
    kept: float,
    quoted: float,
    kept_price: float,
    grown_reads: float,
    model_may_summarize: bool,
) -> float:
    """A lower bound of the span's part of a compaction's price, before one is drafted.

    Args:
        settings: The turn's settings (their price model).
        size: The view's size now.
        kept: What stays after the compaction.
        quoted: The span's user messages, which a digest keeps verbatim.
        kept_price: The price of rewriting what stays alone.
        grown_reads: The reads paid since the last compaction for what has grown.
        model_may_summarize: A model summary is an option (its shortest reply counts).

    Returns:
        The bound, never below 0; 0 without a price model.
    """

def choose_summarizer(
    settings: PlanSettings,
    *,
    digest: tuple[float, float, bool] | None,
    fold: tuple[float, float, bool] | None,
    kept: tuple[float, float],
    memory: tuple[float, float, int, float, int],
    horizon: float,
) -> SummarizerChoice | None:
    """Of a digest and a model summary that folds the memory, the one the session is
    better off with.

    Args:
        settings: The turn's settings (their price model).
        digest: The digest's next input, price and whether it is due; ``None`` when it
            is not an option.
        fold: The same for the model summary.
        kept: What stays alone: its next input and price.
        memory: What the memory cost since its last fold: its tokens, its reads and
            over how many calls, its rewrites by digests and how many digests.
        horizon: The calls to come.

    Returns:
        Whether a model summary is the cheaper, whether it is due, and the span's part
        of the cheaper price; ``None`` without a price model or either option.
    """

def summary_call(*, span: float, listed: int, size: float, uncached: float, shares: bool) -> SummaryCallSize:
    """A model summary's call as it is priced.

    Args:
        span: The tokens it summarizes.
        listed: The requests it lists in short.
        size: The agent's view, sent whole when the call ``shares`` its request.
        uncached: Of that view, what the provider has not cached.
        shares: The summary is asked in the agent's own request.

    Returns:
        Its input, cached input and expected output, in tokens.
    """

def memory_room(limit: int, fixed: int, per_token: float) -> int:
    """The room a compaction's memory may take, in widths: what ``limit`` tokens leave
    beside ``fixed`` ones, at ``per_token`` widths a token, with the policy's margin.

    Returns:
        The room, never below 0.
    """

def check_window(max_input_tokens: object = None) -> int | None:
    """A model window as given, checked: ``None``, or a positive int (never a bool).

    Raises:
        InputError: anything else, or more than any model's window.
    """

def state_cutoff(prior_cutoff: int | None, effective_cutoff: int) -> int:
    """The raw state's index of a cutoff made in the view after an earlier summary.

    Args:
        prior_cutoff: Where the earlier summary cut the raw state (``None``: none).
        effective_cutoff: The cutoff in the view (the summary message at index 0).

    Returns:
        The cutoff in the raw state.

    Raises:
        InputError: a cutoff the two cannot make.
    """

def count_text(text: str, encoding: str) -> int:
    """Exact tokens of a text, with no message framing.

    Args:
        text: Any text (lone surrogates count as the replacement character).
        encoding: ``"o200k_base"`` or ``"cl100k_base"``.

    Raises:
        InputError: another encoding.
    """

def render_transcript(messages: Any, first: int = 0) -> str:
    """The messages as the Markdown transcript a summarizer reads and an archive keeps.

    Args:
        messages: A conversation in any shape the readers take.
        first: The number the first message's section takes.

    Raises:
        InputError: a message the readers cannot read.
    """

def remember(
    previous: Mapping[str, Any] | None,
    earlier: str | None,
    messages: Any,
    first_number: int,
    file: str | None,
    config: dict[str, Any],
    window: int | None,
    widths_per_token: float = ...,  # WIDTHS_PER_TOKEN
    room: int | None = None,
    notes: str | None = None,
    earlier_file: str | None = None,
    notes_file: str | None = None,
    kept: Any = None,
) -> tuple[dict[str, Any], int, str | None]:
    """The memory after a compaction.

    Args:
        previous: The memory the last compaction left (as the state keeps it), or None.
        earlier: Without ``previous``, the text of an earlier summary made elsewhere.
        messages: The span taken in.
        first_number: The number its first request takes.
        file: The archive file of this compaction.
        config: A ``MemoryConfig`` as a dict.
        window: The model's window in tokens (None: unknown).
        widths_per_token: What a token of this conversation measures in widths.
        room: The widths the memory may take in all, when the window leaves less.
        notes: A model's notes on all of it: the older requests fold beside them.
        earlier_file: The archive file the earlier summary names.
        notes_file: Where notes cut for space are to be written whole.
        kept: The messages that stay in view: what they state replaces what the
            ledger held, and is not added to it.

    Returns:
        The memory, how many requests left the verbatim layer, and the notes to write
        to ``notes_file`` whole when they were cut for space (else None).

    Raises:
        ValueError: ``previous`` or ``config`` is not a memory or a memory config.
    """

def digest_and_fold(
    previous: Mapping[str, Any] | None,
    earlier: str | None,
    messages: Any,
    first_number: int,
    file: str | None,
    config: dict[str, Any],
    window: int | None,
    widths_per_token: float = ...,  # WIDTHS_PER_TOKEN
    room: int | None = None,
    earlier_file: str | None = None,
    kept: Any = None,
) -> tuple[tuple[dict[str, Any], int, str | None], tuple[dict[str, Any], int, str | None]]:
    """The digest and the fold of one span, the span taken in once: each as
    :func:`remember` returns it, without notes and beside empty notes.

    Args:
        previous: The memory the last compaction left (as the state keeps it), or None.
        earlier: Without ``previous``, the text of an earlier summary made elsewhere.
        messages: The span taken in.
        first_number: The number its first request takes.
        file: The archive file of this compaction.
        config: A ``MemoryConfig`` as a dict.
        window: The model's window in tokens (None: unknown).
        widths_per_token: What a token of this conversation measures in widths.
        room: The widths the memory may take in all, when the window leaves less.
        earlier_file: The archive file the earlier summary names.
        kept: The messages that stay in view (see :func:`remember`).

    Returns:
        The digest and the fold, each as the memory, how many requests left the
        verbatim layer, and the notes cut for space (None: no notes file named).

    Raises:
        ValueError: ``previous`` or ``config`` is not a memory or a memory config.
    """

def memory_budgets(
    config: dict[str, Any], window: int | None, widths_per_token: float = ..., room: int | None = None
) -> dict[str, int]:
    """The memory's layer budgets in widths (``users``, ``steps``, ``heads``, ``notes``).

    Raises:
        ValueError: ``config`` is not a memory config.
    """

def add_binding_cues(text: str) -> int:
    """Add lines of binding cue words to every later reading of the ledger in this
    process.

    Args:
        text: One group a line, ``kind: cue, cue`` (kinds: ``rule``, ``limit``,
            ``preference``, ``fact``, ``goal``, ``update``); blank lines and ``#``
            comments skipped.

    Returns:
        How many lines it took.

    Raises:
        InputError: naming the first line it cannot read; nothing is added then.
    """

def pinned_result(number: int, note: str) -> str:
    """What the pin tool answers when it pins ``note`` as number ``number``."""

def unpinned_result(number: int) -> str:
    """What the pin tool answers when it unpins number ``number``."""

def pin_change(result: str) -> tuple[int, str | None] | None:
    """A pin tool's result read: the number it pinned (with its note) or unpinned
    (``None`` for the note); ``None`` for any other text."""

def add_short_forms(text: str) -> int:
    """Add groups of short forms to every later search in this process.

    Args:
        text: One group a line, ``short, forms = long, forms``; blank lines and ``#``
            comments skipped.

    Returns:
        How many groups it took.

    Raises:
        InputError: naming the first line it cannot read; nothing is added then.
    """

def search(
    messages: Any,
    query: str,
    *,
    limit: int = 5,
    role: str | None = None,
    tool: str | None = None,
    requests: tuple[int, int] | None = None,
    language: str = "english",
    cache_key: str | None = None,
    skip_open_request: bool = False,
) -> tuple[
    list[tuple[int, float, str, str, str | None, int, str | None, tuple[int, str | None, str] | None]],
    int,
    int,
]:
    """The messages that best match ``query`` (BM25F over text, tool and arguments).

    Args:
        messages: The conversation, in any shape the readers take.
        query: A few words; a part in double quotes is a phrase a message must hold.
        limit: How many of the best to return.
        role: Only messages of this role (``human``, ``ai``, ``tool``, ``system``).
        tool: Only calls of this tool and their results.
        requests: Only requests from the first to the last number, both in.
        language: The Snowball stemmer's language.
        cache_key: The conversation's key in the cache, where its index is kept.
        skip_open_request: Leave out the message that opened the newest request (the
            one being answered, when the agent searches).

    Returns:
        The hits, best first, each ``(index, score, excerpt, role, tool, request,
        recall id, answer)``, where ``answer`` is, for a request, ``(index, recall id,
        ending)`` of the answer that closed it (else ``None``); how many messages
        matched; how many requests there are.

    Raises:
        InputError: a message the readers cannot read.
        ValueError: a role or language it does not know.
    """

def is_placeholder(text: str, gap_template: str | None = None) -> bool:
    """Whether ``text`` is one of the placeholders the passes put in place of what they
    cleared (the time-gap pass's as ``gap_template`` has it; its default when ``None``)."""

def text_width(text: str) -> int:
    """A text's width: about four a token in any script (what the memory budgets)."""

def render_memory_parts(memory: Mapping[str, Any], recall: bool) -> list[str]:
    """A memory's text, as the summary message holds it, in parts, the steadiest
    first: its base (the opening, the ledger and the requests in short as an earlier
    compaction left them, the same text while they stand), what was added to them and
    the notes, each verbatim request, the archive.

    Args:
        memory: A memory as ``remember`` returns it.
        recall: Whether the agent has the ``recall`` tool (the text names it only then).

    Raises:
        ValueError: ``memory`` is not a memory.
    """

def normalize(messages: Any) -> list[dict[str, Any]]:
    """What the core reads from each message, as plain dicts (``role``, ``content``,
    ``tool_calls``, ``tool_call_id``, ``name``, ``id``, ``usage``).

    Raises:
        InputError: a message the readers cannot read.
    """

def identities(messages: Any) -> list[int]:
    """What identifies each message apart from its content (its role and its calls or
    results): what an edit's ``target`` is checked against.

    Raises:
        InputError: a message the readers cannot read.
    """

def _read_each(
    messages: Any, opts: CountOptions, convert: bool
) -> list[tuple[int, list[tuple[str, str]], list[str], bool, bool, str | None]]:
    """Per message, what one reader makes of it, uncached: the counting scanner
    (``convert=False``) or conversion (``convert=True``), for tests that they agree.

    Returns:
        ``(heuristic tokens, calls, results, is_result, thinking, tool name)`` each.

    Raises:
        InputError: a message the reader cannot read.
    """

def cache_info() -> tuple[int, int]:
    """``(conversations cached, capacity)``; the capacity is ``2**64 - 1`` unbounded."""

def cache_stats() -> tuple[int, int, int]:
    """``(conversations found, not found, dropped to stay within the bounds)``."""

def cache_bytes() -> tuple[int, int]:
    """``(bytes the cached conversations weigh, bound in bytes)``."""

def set_cache_capacity(conversations: int | None = None, bytes: int | None = None) -> None:
    """Bound the cache in conversations, in bytes, or both (a bound left out stays);
    the least recently used conversations leave first."""

def clear_cache() -> None:
    """Forget every cached conversation."""

"""Configuration of compaction: when to summarize, what to keep, and each cheap pass.

The classes and fields of compact-middleware's documented configuration are accepted
as they are (`CompactionConfig`, `TokenBudgetConfig`, `TruncateArgsConfig`,
`MicrocompactConfig`, `CollapseConfig`, `RestorationConfig`), so switching is a change
of import. fastcompact's own passes have their own sub-configs (`ClearingConfig`,
`DedupeConfig`). Every field is validated at construction; a `ValueError` names it.

Defaults follow DeepAgents: with a model profile (``max_input_tokens`` known) the
summary triggers at 85% of the window and keeps 10%; without one, at 170,000 tokens
keeping 6 messages. Leaving a field out never turns a feature off.

Examples:
    >>> from fastcompact.config import CompactionConfig, ClearingConfig
    >>> cfg = CompactionConfig(trigger=("fraction", 0.8), clearing=ClearingConfig(keep_recent=3))
    >>> cfg.clearing.keep_recent, cfg.resolved(max_input_tokens=200_000)["clearing"]["clear_at_least"]
    (3, 30000)
    >>> CompactionConfig(keep=("messages", 0))
    Traceback (most recent call last):
    ...
    ValueError: CompactionConfig.keep: messages must be a whole number greater than 0, got 0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Final, Literal, TypeAlias

from fastcompact._core import PRICING_PRESETS
from fastcompact._core import defaults as core_defaults
from fastcompact._core import pass_defaults as core_pass_defaults
from fastcompact._core import read_size as core_read_size
from fastcompact._core import read_triggers as core_read_triggers
from fastcompact.pricing import pricing_of, pricing_of_responses

# A size of context: ("messages", n), ("tokens", n) or ("fraction", f) of the window.
ContextSize: TypeAlias = tuple[Literal["messages", "tokens", "fraction"], int | float]
# A trigger: a size, or sizes that must all be reached ({"tokens": n, "messages": m}).
Trigger: TypeAlias = ContextSize | Mapping[str, int | float]


class _Default:
    """Marks a field left to the model-aware default (distinct from an explicit None)."""

    def __repr__(self) -> str:
        return "DEFAULT"

    # One instance only: copies and pickles stay `DEFAULT`.
    def __copy__(self) -> _Default:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Default:
        return self

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT: Final[Any] = _Default()


def _check_size(owner: str, name: str, value: Any, *, optional: bool = False) -> None:
    # The rules and their errors are the core's (the helpers read sizes with them too).
    if value is DEFAULT or (optional and value is None):
        return
    core_read_size(value, f"{owner}.{name}")


# Each pass setting left out takes the core's default: the core is their one source.
_PASS_DEFAULTS: Final = core_pass_defaults()


def _core(section: str, name: str) -> Any:
    """The core's default of one pass setting."""
    return _PASS_DEFAULTS[section][name]


def reread_tool_defaults() -> None:
    """The default tool sets read again from the core, once tools were added to its
    kinds (``fastcompact.add_tool_kinds``): configs made after it take them."""
    fresh = core_pass_defaults()
    for section in ("clearing", "microcompact"):
        _PASS_DEFAULTS[section].update(fresh[section])


def _core_tools(section: str, name: str) -> Callable[[], set[str]]:
    """Makes the core's default set of tool names for one pass setting, a fresh set
    each time."""
    return lambda: set(_PASS_DEFAULTS[section][name])


def _warn_unused(cfg: Any, names: Iterable[str]) -> None:
    """A field kept only so that compact-middleware's configuration is accepted as it is:
    given a value other than its default, it warns that it has no effect."""
    defaults = {f.name: f.default for f in fields(cfg)}
    for name in names:
        if getattr(cfg, name) != defaults[name]:
            warnings.warn(
                f"{type(cfg).__name__}.{name} has no effect in fastcompact; it is accepted so that "
                "compact-middleware configurations load unchanged",
                DeprecationWarning,
                stacklevel=4,
            )


def _check_int(owner: str, name: str, value: Any, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}.{name}: expected an int >= {minimum}, got {value!r}")


def _check_batch(owner: str, name: str, value: Any) -> None:
    if value is not DEFAULT:
        _check_int(owner, name, value)


def _check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{owner}.{name}: expected True or False, got {value!r}")


def _check_str(owner: str, name: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str):
        raise ValueError(f"{owner}.{name}: expected a string, got {value!r}")


def _check_folder(owner: str, name: str, value: str) -> None:
    """A backend folder: absolute (backends resolve paths from their root) and without
    ``..`` (every write through it would fail, or leave the root)."""
    if not value.startswith("/"):
        raise ValueError(
            f"{owner}.{name}: expected an absolute path such as '/conversation_history', got {value!r}"
        )
    if ".." in value.split("/"):
        raise ValueError(f"{owner}.{name}: '..' is not allowed in it, got {value!r}")


# Bumped by every change to any config object: settings derived from a config are
# kept (see `passes.settings_for`) until a change anywhere makes them stale.
_generation = 0


def _changed() -> None:
    global _generation
    _generation += 1


def generation() -> int:
    """A number that changes whenever any config object (or one of its tool sets) does."""
    return _generation


class _Watched:
    """A config class whose attribute changes are noted."""

    def __setattr__(self, name: str, value: Any) -> None:
        _changed()
        object.__setattr__(self, name, value)


class _ToolNames(set[str]):
    """A set of tool names that notes its own changes; otherwise a plain set."""

    def __repr__(self) -> str:
        return repr(set(self))


def _noting(name: str) -> Any:
    base = getattr(set, name)

    def method(self: _ToolNames, *args: Any) -> Any:
        _changed()
        return base(self, *args)

    method.__name__ = name
    return method


for _name in (
    "add",
    "discard",
    "remove",
    "pop",
    "clear",
    "update",
    "intersection_update",
    "difference_update",
    "symmetric_difference_update",
    "__ior__",
    "__iand__",
    "__isub__",
    "__ixor__",
):
    setattr(_ToolNames, _name, _noting(_name))
del _name


def _tool_set(owner: str, name: str, value: Any) -> set[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"{owner}.{name}: expected a set of tool names, got {value!r}")
    out = _ToolNames(value)
    if not all(isinstance(t, str) for t in out):
        raise ValueError(f"{owner}.{name}: tool names must be strings, got {value!r}")
    return out


@dataclass
class TokenBudgetConfig(_Watched):
    """Pass 1: a tool result over ``per_tool_chars`` keeps a head and a tail
    (``file_preview_chars`` in all) with a marker; the results of one AI turn are held
    to ``per_message_chars`` together. Left out, ``file_preview_chars`` is the core's
    default, or a tenth of a smaller ``per_tool_chars``. The three token thresholds
    have no effect (kept for compact-middleware; giving one warns)."""

    per_tool_chars: int = _core("budget", "per_tool_chars")
    per_message_chars: int = _core("budget", "per_message_chars")
    file_preview_chars: int = DEFAULT
    warning_token_threshold: int = 20_000
    error_token_threshold: int = 20_000
    blocking_token_threshold: int = 3_000
    enabled: bool = _core("budget", "enabled")

    def __post_init__(self) -> None:
        o = "TokenBudgetConfig"
        _check_int(o, "per_tool_chars", self.per_tool_chars, 1)
        if self.file_preview_chars is DEFAULT:
            self.file_preview_chars = min(
                _core("budget", "file_preview_chars"), max(1, self.per_tool_chars // 10)
            )
        for name in ("per_tool_chars", "per_message_chars", "file_preview_chars"):
            _check_int(o, name, getattr(self, name), 1)
        for name in ("warning_token_threshold", "error_token_threshold", "blocking_token_threshold"):
            _check_int(o, name, getattr(self, name))
        _warn_unused(self, ("warning_token_threshold", "error_token_threshold", "blocking_token_threshold"))
        _check_bool(o, "enabled", self.enabled)
        if self.file_preview_chars >= self.per_tool_chars:
            raise ValueError(
                f"{o}.file_preview_chars: must be smaller than per_tool_chars ({self.per_tool_chars})"
            )


@dataclass
class TruncateArgsConfig(_Watched):
    """Pass 2: string arguments longer than ``max_length`` in tool calls older than
    ``keep`` are shortened once ``trigger`` is reached. ``trigger=None`` turns the
    pass off; left out, it follows DeepAgents (85% of the window, else 20 messages).
    ``truncation_text`` is appended; ``{length}`` in it becomes the original length
    and ``{id}`` the call's id. With a price model (``CompactionConfig.pricing``), the
    text a ``write_file`` / ``edit_file`` call wrote, which is on disk, keeps at most
    ``file_max_length`` characters."""

    trigger: ContextSize | None = DEFAULT
    keep: ContextSize = DEFAULT
    max_length: int = _core("truncate_args", "max_length")
    truncation_text: str = _core("truncate_args", "truncation_text")
    truncate_all_tools: bool = _core("truncate_args", "truncate_all_tools")
    min_batch_tokens: int = DEFAULT
    file_max_length: int = _core("truncate_args", "file_max_length")

    def __post_init__(self) -> None:
        o = "TruncateArgsConfig"
        _check_int(o, "file_max_length", self.file_max_length, 1)
        _check_size(o, "trigger", self.trigger, optional=True)
        _check_size(o, "keep", self.keep)
        _check_int(o, "max_length", self.max_length, 1)
        _check_str(o, "truncation_text", self.truncation_text)
        _check_bool(o, "truncate_all_tools", self.truncate_all_tools)
        _check_batch(o, "min_batch_tokens", self.min_batch_tokens)


@dataclass
class ClearingConfig(_Watched):
    """Pass 3: once the view reaches ``trigger``, results of ``tools`` (minus
    ``exclude_tools``) older than the newest ``keep_recent`` become a one-line
    placeholder naming the call, in batches that save ``clear_at_least`` tokens.
    Left out, the trigger is half the window (else 100,000 tokens) and a batch 15% of
    the window (else 30,000 tokens): large batches keep the provider's prompt cache
    valid between them. ``tools`` left out: the read, search, list, shell and fetch
    tools of common agents (DeepAgents', Claude Code's, Codex's, OpenHands',
    SWE-agent's), whose results the agent can have again by running them;
    ``fastcompact.add_tool_kinds`` names more."""

    enabled: bool = _core("clearing", "enabled")
    trigger: ContextSize = DEFAULT
    keep_recent: int = _core("clearing", "keep_recent")
    tools: set[str] = field(default_factory=_core_tools("clearing", "tools"))
    exclude_tools: set[str] = field(default_factory=_core_tools("clearing", "exclude_tools"))
    clear_at_least: int = DEFAULT

    def __post_init__(self) -> None:
        o = "ClearingConfig"
        _check_bool(o, "enabled", self.enabled)
        _check_size(o, "trigger", self.trigger)
        _check_int(o, "keep_recent", self.keep_recent)
        self.tools = _tool_set(o, "tools", self.tools)
        self.exclude_tools = _tool_set(o, "exclude_tools", self.exclude_tools)
        _check_batch(o, "clear_at_least", self.clear_at_least)


@dataclass
class DedupeConfig(_Watched):
    """Pass 4a: a read repeated with the same arguments replaces the earlier result
    with a pointer to the newer one, in batches saving ``min_batch_tokens``."""

    enabled: bool = _core("dedupe", "enabled")
    tools: set[str] = field(default_factory=_core_tools("dedupe", "tools"))
    min_batch_tokens: int = DEFAULT

    def __post_init__(self) -> None:
        o = "DedupeConfig"
        _check_bool(o, "enabled", self.enabled)
        self.tools = _tool_set(o, "tools", self.tools)
        _check_batch(o, "min_batch_tokens", self.min_batch_tokens)


@dataclass
class CollapseConfig(_Watched):
    """Pass 4b: once the view reaches ``trigger``, runs of at least
    ``min_group_size`` consecutive read/search results (``collapse_tools``) older than
    the newest ``keep_recent_messages`` fold into a one-line note. Left out, the
    trigger is 60% of the window (else 120,000 tokens)."""

    enabled: bool = _core("collapse", "enabled")
    min_group_size: int = _core("collapse", "min_group_size")
    collapse_tools: set[str] = field(default_factory=_core_tools("collapse", "collapse_tools"))
    trigger: ContextSize = DEFAULT
    keep_recent_messages: int = _core("collapse", "keep_recent_messages")
    min_batch_tokens: int = DEFAULT

    def __post_init__(self) -> None:
        o = "CollapseConfig"
        _check_bool(o, "enabled", self.enabled)
        _check_int(o, "min_group_size", self.min_group_size, 1)
        self.collapse_tools = _tool_set(o, "collapse_tools", self.collapse_tools)
        _check_size(o, "trigger", self.trigger)
        _check_int(o, "keep_recent_messages", self.keep_recent_messages)
        _check_batch(o, "min_batch_tokens", self.min_batch_tokens)


@dataclass
class MicrocompactConfig(_Watched):
    """Pass 5: after an idle gap of ``gap_threshold_minutes`` (the prompt cache has
    expired), results of ``compactable_tools`` from before the gap are cleared, except
    the newest ``keep_recent``. ``{tool}`` and ``{arg}`` in ``cleared_message`` name
    the call."""

    enabled: bool = _core("microcompact", "enabled")
    gap_threshold_minutes: float = _core("microcompact", "gap_threshold_minutes")
    keep_recent: int = _core("microcompact", "keep_recent")
    compactable_tools: set[str] = field(default_factory=_core_tools("microcompact", "compactable_tools"))
    cleared_message: str = _core("microcompact", "cleared_message")

    def __post_init__(self) -> None:
        o = "MicrocompactConfig"
        _check_bool(o, "enabled", self.enabled)
        g = self.gap_threshold_minutes
        if isinstance(g, bool) or not isinstance(g, int | float) or not math.isfinite(g) or g <= 0:
            raise ValueError(f"{o}.gap_threshold_minutes: expected a positive number, got {g!r}")
        _check_int(o, "keep_recent", self.keep_recent)
        self.compactable_tools = _tool_set(o, "compactable_tools", self.compactable_tools)
        _check_str(o, "cleared_message", self.cleared_message)


@dataclass
class RestorationConfig(_Watched):
    """After a summary: re-read up to ``max_files`` files read for the last request it
    compacted and not read again since, each the part that was read (its offset and
    limit), within ``per_file_chars`` and all within ``file_budget_chars``, and the
    current plan. With a price model, files are restored only while it pays: for the
    request still under way (not when the compaction keeps the newest request whole:
    a finished request's files are rarely read again), and while reading them on every
    call until the next compaction (as many calls as the last cycle took) costs less
    than the one read the agent makes when it needs a file again. The skill budgets
    have no effect (kept for compact-middleware; giving one warns).

    A compaction the price model schedules (see ``CompactionConfig.summarizer``) keeps
    the turn in progress whole and restores files only with ``on_schedule``. The
    session benchmark measured both; restoring cost more and kept nothing a later step
    needed that the digest's recall ids did not give back.
    """

    enabled: bool = True
    max_files: int = 5
    file_budget_chars: int = 50_000
    per_file_chars: int = 5_000
    skill_budget_chars: int = 25_000
    per_skill_chars: int = 5_000
    restore_plans: bool = True
    on_schedule: bool = False

    def __post_init__(self) -> None:
        o = "RestorationConfig"
        _check_bool(o, "enabled", self.enabled)
        _check_bool(o, "restore_plans", self.restore_plans)
        _check_bool(o, "on_schedule", self.on_schedule)
        for name in (
            "max_files",
            "file_budget_chars",
            "per_file_chars",
            "skill_budget_chars",
            "per_skill_chars",
        ):
            _check_int(o, name, getattr(self, name))
        _warn_unused(self, ("skill_budget_chars", "per_skill_chars"))


# The memory's layers together take at most this much of the window, leaving
# the rest to the system prompt, the tools, the kept messages and the turn in progress.
MEMORY_MAX_SHARE = 0.80


@dataclass
class MemoryConfig(_Watched):
    """How much of the window the compacted conversation's memory may take, by layer
    (fractions of the window): the ledger of what binds, the user's standing rules,
    limits, preferences, facts and goal in their own words and the notes the agent
    pinned (``ledger_share``: it has the first claim on the room; past its share it is
    pressed to key words, then to terms, then onto one line a kind (rules, limits,
    preferences, facts, goal), and only when the window leaves nothing else are its
    oldest entries counted on one line, whole in the archive), the newest
    user messages verbatim (``user_share``), the agent's newest steps a line each
    (``step_share``), older requests in short (``head_share``), and a model's notes on
    them (``note_share``). What does not fit goes into the next layer down, so a session
    of any length stays inside the window; a request in short keeps every name, number,
    path and code it holds even past ``head_share`` (to a few times it; past that the
    oldest become runs named by their subjects); every message stays recoverable by its
    id and in the archive. A model summary keeps the newest user messages verbatim within
    ``fold_share`` (at most ``user_share``; the older ones go into its notes), so the
    layer has room to grow again before the next summary: every token of it is read on
    every call. With a price model these shares are the most the layers take (see
    ``memory.priced_shares``).

    Examples:
        >>> MemoryConfig(user_share=0.3).user_share
        0.3
        >>> MemoryConfig(user_share=0.6, note_share=0.3)
        Traceback (most recent call last):
        ...
        ValueError: MemoryConfig: the shares add up to 1.01 of the window; keep them within 0.80
    """

    ledger_share: float = _core("memory", "ledger_share")
    user_share: float = _core("memory", "user_share")
    step_share: float = _core("memory", "step_share")
    head_share: float = _core("memory", "head_share")
    note_share: float = _core("memory", "note_share")
    fold_share: float = _core("memory", "fold_share")

    def __post_init__(self) -> None:
        o = "MemoryConfig"
        shares = ("ledger_share", "user_share", "step_share", "head_share", "note_share")
        for name in (*shares, "fold_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                raise ValueError(f"{o}.{name}: expected a fraction of the window from 0 to 1, got {v!r}")
        total = sum(getattr(self, name) for name in shares)
        if total > MEMORY_MAX_SHARE:
            raise ValueError(
                f"{o}: the shares add up to {total:.2f} of the window; "
                f"keep them within {MEMORY_MAX_SHARE:.2f}"
            )


SUMMARIZERS = ("model", "digest", "auto")


@dataclass
class CompactionConfig(_Watched):
    """All of compaction's settings. ``trigger`` (one size or a list, any fires) and
    ``keep`` left out follow DeepAgents' model-aware defaults.

    Attributes:
        trigger: When a summary is due: a size, or a list of sizes (any fires).
        keep: What a summary keeps verbatim, newest first.
        autocompact_buffer_tokens: No effect (compaction keeps its own margin, 10% below
            the trigger); accepted for compact-middleware, another value warns.
        max_output_tokens_for_summary: No effect (the memory asks for a length it keeps
            whole); accepted for compact-middleware, another value warns.
        max_consecutive_failures: Summarizer failures in a row before it rests.
        failure_cooldown_messages: How long it then rests, in new messages (the digest
            is used meanwhile).
        ptl_max_retries: Retries after "prompt too long", each without the oldest fifth
            of the span.
        token_budget: The budget pass (pass 1).
        microcompact: The idle-gap pass (pass 5).
        collapse: The read/search collapse (pass 4b).
        restoration: The files and plan attached to a summary.
        truncate_args: Argument truncation (pass 2).
        clearing: Observation clearing (pass 3).
        dedupe: Read dedupe (pass 4a).
        memory: Each layer's share of the window in the compacted memory.
        prefer_partial: No effect (compaction is always partial); accepted for
            compact-middleware, another value warns.
        custom_instructions: Extra instructions appended to every model summary's
            prompt (refused with ``summarizer="digest"``, which calls no model).
        suppress_follow_up_questions: The summary message asks the model to carry on
            without making the user repeat anything.
        history_path_prefix: The backend folder archives go to:
            ``<prefix>/<thread>/<n>.md``.
        pricing: The provider's prompt-cache prices by preset name (``anthropic``,
            ``anthropic-1h``, ``openai``, ``gemini``, ``none``); left out, picked from
            the agent's model. With prices, the passes' batches commit and the older
            span is compacted when that pays.
        summarizer: What replaces the older span: ``"digest"`` (the layered memory,
            made without a model), ``"model"`` (a summary by the summary model) or
            ``"auto"`` (digests, and a model summary of the older layers when the price
            model says it pays or the requests outgrow their share; without prices, the
            model).

    Examples:
        >>> CompactionConfig().resolved(max_input_tokens=200_000)["trigger"]
        [('fraction', 0.85)]
    """

    trigger: Trigger | Sequence[Trigger] | None = None
    keep: ContextSize | None = None
    autocompact_buffer_tokens: int = 13_000
    max_output_tokens_for_summary: int = 20_000
    max_consecutive_failures: int = 3
    failure_cooldown_messages: int = 100
    ptl_max_retries: int = 3
    token_budget: TokenBudgetConfig = field(default_factory=TokenBudgetConfig)
    microcompact: MicrocompactConfig = field(default_factory=MicrocompactConfig)
    collapse: CollapseConfig = field(default_factory=CollapseConfig)
    restoration: RestorationConfig = field(default_factory=RestorationConfig)
    truncate_args: TruncateArgsConfig = field(default_factory=TruncateArgsConfig)
    clearing: ClearingConfig = field(default_factory=ClearingConfig)
    dedupe: DedupeConfig = field(default_factory=DedupeConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    prefer_partial: bool = True
    custom_instructions: str | None = None
    suppress_follow_up_questions: bool = True
    history_path_prefix: str = "/conversation_history"
    pricing: str | None = None
    summarizer: str = "auto"

    def __post_init__(self) -> None:
        o = "CompactionConfig"
        if self.pricing is not None and self.pricing not in PRICING_PRESETS:
            raise ValueError(
                f"{o}.pricing: expected one of {', '.join(PRICING_PRESETS)}, got {self.pricing!r}"
            )
        if self.summarizer not in SUMMARIZERS:
            raise ValueError(
                f"{o}.summarizer: expected one of {', '.join(SUMMARIZERS)}, got {self.summarizer!r}"
            )
        if self.trigger is not None:
            core_read_triggers(self.trigger, f"{o}.trigger")
        _check_size(o, "keep", self.keep, optional=True)
        for name in ("autocompact_buffer_tokens", "max_output_tokens_for_summary", "ptl_max_retries"):
            _check_int(o, name, getattr(self, name))
        _check_int(o, "max_consecutive_failures", self.max_consecutive_failures, 1)
        _check_int(o, "failure_cooldown_messages", self.failure_cooldown_messages)
        for name, cls in (
            ("token_budget", TokenBudgetConfig),
            ("microcompact", MicrocompactConfig),
            ("collapse", CollapseConfig),
            ("restoration", RestorationConfig),
            ("truncate_args", TruncateArgsConfig),
            ("clearing", ClearingConfig),
            ("dedupe", DedupeConfig),
            ("memory", MemoryConfig),
        ):
            value = getattr(self, name)
            if isinstance(value, dict):
                # A partial dict merges over the sub-config's defaults.
                try:
                    value = cls(**value)
                except TypeError as e:
                    raise ValueError(f"{o}.{name}: {e}") from e
                setattr(self, name, value)
            elif not isinstance(value, cls):
                raise ValueError(f"{o}.{name}: expected a {cls.__name__}, got {type(value).__name__}")
        for name in ("prefer_partial", "suppress_follow_up_questions"):
            _check_bool(o, name, getattr(self, name))
        # Compaction is always partial, and the commit check keeps its own margin.
        _warn_unused(self, ("prefer_partial", "autocompact_buffer_tokens", "max_output_tokens_for_summary"))
        _check_str(o, "custom_instructions", self.custom_instructions, optional=True)
        if self.custom_instructions and self.summarizer == "digest":
            raise ValueError(
                f"{o}.custom_instructions: the digest is made without a model, so no instruction "
                "reaches it; use summarizer='auto' or 'model' for them to reach every model summary"
            )
        _check_str(o, "history_path_prefix", self.history_path_prefix)
        _check_folder(o, "history_path_prefix", self.history_path_prefix)

    def resolved(self, max_input_tokens: int | None = None, pricing: str | None = None) -> dict[str, Any]:
        """The settings the core runs with, model-aware defaults filled in.

        ``max_input_tokens`` is the model's window (from its profile); fractions need it.
        ``pricing`` is the preset of the model's provider, used when ``self.pricing``
        is not given (neither: the fixed batch sizes).
        """
        # The sizes left out, from the core (their one source).
        d = core_defaults(max_input_tokens)

        def pick(value: Any, name: str) -> Any:
            return d[name] if value is DEFAULT or value is None else value

        trigger = self.trigger
        triggers: list[Any] = (
            [d["trigger"]] if trigger is None else core_read_triggers(trigger, "CompactionConfig.trigger")
        )

        def batch(value: Any) -> int:
            # A batch worth breaking the prompt cache for.
            return int(d["min_batch_tokens"]) if value is DEFAULT else int(value)

        ta = self.truncate_args
        ta_trigger = None if ta.trigger is None else pick(ta.trigger, "truncate_trigger")
        budget = asdict(self.token_budget)
        return {
            "trigger": triggers,
            "keep": tuple(pick(self.keep, "keep")),
            "budget": {
                k: budget[k] for k in ("enabled", "per_tool_chars", "per_message_chars", "file_preview_chars")
            },
            "truncate_args": {
                "trigger": None if ta_trigger is None else tuple(ta_trigger),
                "keep": tuple(pick(ta.keep, "truncate_keep")),
                "max_length": ta.max_length,
                "truncation_text": ta.truncation_text,
                "truncate_all_tools": ta.truncate_all_tools,
                # Without a price model the passes batch as they always did.
                "file_max_length": ta.file_max_length if (self.pricing or pricing) else ta.max_length,
                "min_batch_tokens": batch(ta.min_batch_tokens),
            },
            "clearing": {
                **_plain(self.clearing),
                "trigger": tuple(pick(self.clearing.trigger, "clearing_trigger")),
                "clear_at_least": batch(self.clearing.clear_at_least),
            },
            "dedupe": {**_plain(self.dedupe), "min_batch_tokens": batch(self.dedupe.min_batch_tokens)},
            "collapse": {
                **_plain(self.collapse),
                "trigger": tuple(pick(self.collapse.trigger, "collapse_trigger")),
                "min_batch_tokens": batch(self.collapse.min_batch_tokens),
            },
            "microcompact": _plain(self.microcompact),
            "pricing": self.pricing or pricing,
        }


def _plain(cfg: Any) -> dict[str, Any]:
    """A sub-config as plain data (sets as sorted lists) for the core."""
    out: dict[str, Any] = {}
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        out[f.name] = sorted(value) if isinstance(value, set) else value
    return out


__all__ = [
    "DEFAULT",
    "ClearingConfig",
    "CollapseConfig",
    "CompactionConfig",
    "ContextSize",
    "DedupeConfig",
    "MicrocompactConfig",
    "RestorationConfig",
    "TokenBudgetConfig",
    "Trigger",
    "TruncateArgsConfig",
    "pricing_of",
    "pricing_of_responses",
]

"""Type stubs for the Rust extension module ``fastcompact._core``."""

from collections.abc import Callable
from typing import Any, NotRequired, TypedDict, final

__all__ = [
    "PRICING_PRESETS",
    "InputError",
    "PlanSettings",
    "_heuristic_via_messages",
    "cache_info",
    "check_window",
    "clear_cache",
    "count_text",
    "count_tokens",
    "defaults",
    "fallback_summary",
    "find_cutoff",
    "normalize",
    "plan",
    "render_transcript",
    "set_cache_capacity",
    "should_compact",
    "state_cutoff",
    "token_breakdown",
    "trigger_fires",
]

PRICING_PRESETS: list[str]

class InputError(ValueError):
    """Malformed input. ``index`` is the message index (or None), ``field`` the field."""

    index: int | None
    field: str

class _Opts(TypedDict):
    encoding: str
    # None: the heuristic's default for the model (Anthropic's, with ``anthropic``).
    chars_per_token: float | None
    anthropic: bool
    use_usage: bool
    tools: list[Any] | None
    # Serializes one tool not seen before (None for what is not a tool).
    tool_json: Callable[[Any], str | None]
    system: Any
    cache_key: str | None

class _Breakdown(TypedDict):
    total: int
    system_and_tools: int
    per_message: list[int]
    roles: list[str]
    tool_names: list[str | None]
    per_role: dict[str, int]
    per_tool: dict[str, int]

def count_tokens(messages: Any, opts: _Opts) -> int: ...
def token_breakdown(messages: Any, opts: _Opts) -> _Breakdown: ...
def find_cutoff(messages: Any, keep: tuple[str, float], max_input_tokens: int | None, opts: _Opts) -> int: ...
def should_compact(
    messages: Any,
    triggers: list[list[tuple[str, float]]],
    max_input_tokens: int | None,
    opts: _Opts,
) -> bool: ...

class _PassStats(TypedDict):
    name: str
    tokens_before: int
    tokens_after: int
    edits: int

class _Plan(TypedDict):
    # (index, pass, field, value, call, fingerprint)
    edits: list[tuple[int, str, str, Any, int | None, int]]
    tokens_before: int
    tokens_after: int
    passes: list[_PassStats]
    summary_needed: bool
    summary_cutoff: int | None
    # Where the tokens go (without make_edited), or the model view itself (with it).
    per_role: NotRequired[dict[str, int]]
    per_tool: NotRequired[dict[str, int]]
    per_message: NotRequired[list[int]]
    roles: NotRequired[list[str]]
    tool_names: NotRequired[list[str | None]]
    view: NotRequired[list[Any]]
    # The view's size anchored on provider usage, and the real/estimated ratio.
    true_tokens: int
    ratio: float
    anchor: int | None
    # Messages before `settled` are settled; a batch committed at `batch_at`.
    settled: int
    batch_at: int | None

class _Progress(TypedDict):
    """Where a conversation stands (indices in the view planned)."""

    min_anchor: int
    ratio: float
    settled: int | None
    calls_before: int

@final
class PlanSettings:
    """Resolved pass settings, read once."""

    def __new__(cls, resolved: dict[str, Any]) -> PlanSettings: ...

def plan(
    messages: Any,
    config: dict[str, Any] | PlanSettings,
    max_input_tokens: int | None,
    now: float | None,
    timestamps: list[float | None] | None,
    archive: list[str | None] | None,
    opts: _Opts,
    make_edited: Any = None,
    progress: _Progress | None = None,
) -> _Plan: ...
def trigger_fires(
    triggers: list[Any], n_messages: int, tokens: float, max_input_tokens: int | None
) -> bool: ...
def defaults(max_input_tokens: int | None = None) -> dict[str, Any]: ...
def check_window(max_input_tokens: object = None) -> int | None: ...
def state_cutoff(prior_cutoff: int | None, effective_cutoff: int) -> int: ...
def count_text(text: str, encoding: str) -> int: ...
def render_transcript(messages: Any, first: int = 0) -> str: ...
def fallback_summary(
    messages: Any, previous_summary: str | None, todos: list[tuple[str, str]], max_chars: int
) -> str: ...
def normalize(messages: Any) -> list[dict[str, Any]]: ...
def _heuristic_via_messages(messages: Any, opts: _Opts) -> list[int]: ...
def cache_info() -> tuple[int, int]: ...
def set_cache_capacity(conversations: int) -> None: ...
def clear_cache() -> None: ...

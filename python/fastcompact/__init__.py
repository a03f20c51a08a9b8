"""fastcompact: keep long-running LLM agents inside their context window.

A Rust core reads conversations, counts tokens and chooses pair-safe cutoffs; this
package exposes it to notebooks and scripts, and plugs it into LangChain and
DeepAgents agents.

Examples:
    >>> import fastcompact
    >>> from fastcompact.samples import coding_session
    >>> msgs = coding_session(200, seed=7)
    >>> fastcompact.count_tokens(msgs) > 0
    True
    >>> cut = fastcompact.find_cutoff(msgs, keep=("messages", 20))
    >>> msgs[cut].type != "tool"
    True
"""

from typing import TYPE_CHECKING, Any

from fastcompact._core import InputError
from fastcompact.api.counting import (
    CacheStats,
    ContextSize,
    CountingOptions,
    Encoding,
    MessageSizes,
    MessageTokens,
    TokenBreakdown,
    cache_bytes,
    cache_info,
    cache_stats,
    clear_cache,
    count_text_tokens,
    count_tokens,
    normalize,
    set_cache_capacity,
    token_breakdown,
)
from fastcompact.api.cutoffs import (
    effective_messages,
    find_cutoff,
    leading_system,
    partition,
    should_compact,
    state_cutoff,
)
from fastcompact.api.one_pass import (
    budget_tool_results,
    clear_after_gap,
    clear_observations,
    collapse_reads,
    dedupe_reads,
    truncate_args,
)
from fastcompact.api.parallel import one_result_a_message
from fastcompact.api.passes import (
    Edit,
    PassStats,
    Plan,
    PlanOptions,
    add_tool_kinds,
    apply_edits,
    model_view,
    plan,
)
from fastcompact.api.recall import recall
from fastcompact.api.report import Report, inspect
from fastcompact.api.search_history import Match, add_short_forms, search
from fastcompact.api.transcripts import read_transcript
from fastcompact.config import (
    ClearingConfig,
    CollapseConfig,
    CompactionConfig,
    DedupeConfig,
    MemoryConfig,
    MicrocompactConfig,
    RestorationConfig,
    TokenBudgetConfig,
    TruncateArgsConfig,
)

if TYPE_CHECKING:
    from fastcompact.agent.memory import add_binding_cues
    from fastcompact.agent.middleware import (
        CompactionMiddleware,
        CompactionState,
        CompactionToolMiddleware,
        WindowTooSmallError,
    )
    from fastcompact.agent.recall_tool import RecallMiddleware
    from fastcompact.factories import (
        compute_compaction_defaults,
        create_compaction_middleware,
        create_compaction_tool_middleware,
    )

    __version__: str

# The middleware pulls in LangChain's agent machinery: loaded on first use, so the
# notebook helpers and the command line start fast.
_MIDDLEWARE = ("CompactionMiddleware", "CompactionState", "CompactionToolMiddleware", "WindowTooSmallError")
_FACTORIES = (
    "compute_compaction_defaults",
    "create_compaction_middleware",
    "create_compaction_tool_middleware",
)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # The installed package's metadata, where the build wrote Cargo.toml's version;
        # read on first use, as looking it up costs tens of milliseconds.
        from importlib.metadata import version

        found = version("fastcompact")
        globals()["__version__"] = found
        return found
    if name in _MIDDLEWARE:
        from fastcompact.agent import middleware

        return getattr(middleware, name)
    if name == "RecallMiddleware":
        from fastcompact.agent import recall_tool

        return recall_tool.RecallMiddleware
    if name == "add_binding_cues":
        from fastcompact.agent import memory

        return memory.add_binding_cues
    if name in _FACTORIES:
        from fastcompact import factories

        return getattr(factories, name)
    raise AttributeError(f"module 'fastcompact' has no attribute {name!r}")


__all__ = [
    "CacheStats",
    "ClearingConfig",
    "CollapseConfig",
    "CompactionConfig",
    "CompactionMiddleware",
    "CompactionState",
    "CompactionToolMiddleware",
    "ContextSize",
    "CountingOptions",
    "DedupeConfig",
    "Edit",
    "Encoding",
    "InputError",
    "Match",
    "MemoryConfig",
    "MessageSizes",
    "MessageTokens",
    "MicrocompactConfig",
    "PassStats",
    "Plan",
    "PlanOptions",
    "RecallMiddleware",
    "Report",
    "RestorationConfig",
    "TokenBreakdown",
    "TokenBudgetConfig",
    "TruncateArgsConfig",
    "WindowTooSmallError",
    "__version__",
    "add_binding_cues",
    "add_short_forms",
    "add_tool_kinds",
    "apply_edits",
    "budget_tool_results",
    "cache_bytes",
    "cache_info",
    "cache_stats",
    "clear_after_gap",
    "clear_cache",
    "clear_observations",
    "collapse_reads",
    "compute_compaction_defaults",
    "count_text_tokens",
    "count_tokens",
    "create_compaction_middleware",
    "create_compaction_tool_middleware",
    "dedupe_reads",
    "effective_messages",
    "find_cutoff",
    "inspect",
    "leading_system",
    "model_view",
    "normalize",
    "one_result_a_message",
    "partition",
    "plan",
    "read_transcript",
    "recall",
    "search",
    "set_cache_capacity",
    "should_compact",
    "state_cutoff",
    "token_breakdown",
    "truncate_args",
]

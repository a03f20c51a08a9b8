"""fastcompact: keep long-running LLM agents inside their context window.

A Rust core reads conversations, counts tokens and chooses pair-safe cutoffs; this
package exposes it to notebooks and scripts, and plugs it into LangChain and
DeepAgents agents.

Example:
    >>> import fastcompact
    >>> from fastcompact.samples import coding_session
    >>> msgs = coding_session(200, seed=7)
    >>> fastcompact.count_tokens(msgs) > 0
    True
    >>> cut = fastcompact.find_cutoff(msgs, keep=("messages", 20))
    >>> msgs[cut].type != "tool"
    True
"""

from fastcompact._core import InputError
from fastcompact.helpers import (
    ContextSize,
    Encoding,
    MessageTokens,
    TokenBreakdown,
    cache_info,
    clear_cache,
    count_text_tokens,
    count_tokens,
    effective_messages,
    find_cutoff,
    normalize,
    set_cache_capacity,
    should_compact,
    state_cutoff,
    token_breakdown,
)

__version__ = "0.1.0"

__all__ = [
    "ContextSize",
    "Encoding",
    "InputError",
    "MessageTokens",
    "TokenBreakdown",
    "__version__",
    "cache_info",
    "clear_cache",
    "count_text_tokens",
    "count_tokens",
    "effective_messages",
    "find_cutoff",
    "normalize",
    "set_cache_capacity",
    "should_compact",
    "state_cutoff",
    "token_breakdown",
]

"""compact-middleware's documented factories over fastcompact: switching is a change of
import.

    # from compact_middleware import create_compaction_tool_middleware
    from fastcompact import create_compaction_tool_middleware

    tool_mw = create_compaction_tool_middleware(model, backend)
    agent = create_deep_agent(model=model, backend=backend, middleware=[tool_mw._compaction, tool_mw])

Examples:
    >>> from fastcompact import create_compaction_middleware, create_compaction_tool_middleware
    >>> create_compaction_middleware("anthropic:claude-sonnet-4-6", None).name
    'SummarizationMiddleware'
    >>> tool_mw = create_compaction_tool_middleware("anthropic:claude-sonnet-4-6", None)
    >>> [t.name for t in tool_mw.tools], [t.name for t in tool_mw._compaction.tools]
    (['compact_conversation'], ['recall', 'pin'])
"""

from __future__ import annotations

from typing import Any

from fastcompact.agent.middleware import CompactionMiddleware, CompactionToolMiddleware
from fastcompact.agent.state import window_of
from fastcompact.config import CompactionConfig

__all__ = ["compute_compaction_defaults", "create_compaction_middleware", "create_compaction_tool_middleware"]


def compute_compaction_defaults(model: Any) -> CompactionConfig:
    """The configuration a model's window gives (its profile's ``max_input_tokens``):
    trigger and keep filled in as the middleware would fill them.

    Examples:
        >>> class Model:
        ...     profile = {"max_input_tokens": 200_000}
        >>> cfg = compute_compaction_defaults(Model())
        >>> cfg.trigger, cfg.keep
        (('fraction', 0.85), ('fraction', 0.1))
    """
    resolved = CompactionConfig().resolved(window_of(model))
    [trigger] = resolved["trigger"]
    return CompactionConfig(trigger=tuple(trigger), keep=tuple(resolved["keep"]))


def create_compaction_middleware(
    model: Any, backend: Any, config: CompactionConfig | None = None
) -> CompactionMiddleware:
    """A :class:`~fastcompact.CompactionMiddleware` summarizing with ``model`` and
    archiving through ``backend``; ``config`` left out follows the model's window."""
    return CompactionMiddleware(model, backend=backend, config=config)


def create_compaction_tool_middleware(
    model: Any, backend: Any, config: CompactionConfig | None = None
) -> CompactionToolMiddleware:
    """Both middlewares in one call: the :class:`~fastcompact.CompactionToolMiddleware`,
    whose ``_compaction`` (also ``compaction``) is the automatic one; give the agent
    both."""
    return CompactionToolMiddleware(create_compaction_middleware(model, backend, config))

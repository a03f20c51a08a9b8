"""DeepAgents' summarization names and factories over fastcompact: switching is a change
of import.

    # from deepagents.middleware.summarization import create_summarization_middleware
    from fastcompact.deepagents import create_summarization_middleware

    agent = create_deep_agent(model=model, backend=backend,
                              middleware=[create_summarization_middleware(model, backend)])

The constructors take DeepAgents' keywords; whatever is not given follows fastcompact's
defaults (the cheap passes, the whole span handed to the summarizer, one archive file per
compaction event), not DeepAgents' (see docs/deepagents.md).

Examples:
    >>> from fastcompact.deepagents import SummarizationMiddleware
    >>> mw = SummarizationMiddleware("anthropic:claude-sonnet-4-6", backend=None, trigger=("fraction", 0.8))
    >>> mw.name, mw.config.trigger
    ('SummarizationMiddleware', ('fraction', 0.8))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from fastcompact.agent.middleware import CompactionMiddleware, CompactionToolMiddleware
from fastcompact.config import CompactionConfig

if TYPE_CHECKING:
    from fastcompact.agent.setup import SummarizationOptions

__all__ = [
    "SummarizationMiddleware",
    "SummarizationToolMiddleware",
    "compute_summarization_defaults",
    "create_summarization_middleware",
    "create_summarization_tool_middleware",
]


class SummarizationMiddleware(CompactionMiddleware):
    """``CompactionMiddleware`` with DeepAgents' constructor: ``model`` first,
    ``backend`` and the summarization keywords by name. A keyword left out (or ``None``)
    takes fastcompact's default.
    """

    def __init__(
        self,
        model: Any,
        *,
        backend: Any = None,
        summarizer: Any = None,
        **summarization: Unpack[SummarizationOptions],
    ) -> None:
        if summarizer is not None:
            raise ValueError(
                "summarizer: a custom Summarizer is not supported; give the model that writes summaries"
            )
        given: SummarizationOptions = {  # type: ignore[assignment]
            k: v for k, v in summarization.items() if v is not None or k == "truncate_args_settings"
        }
        super().__init__(model, backend=backend, **given)


class SummarizationToolMiddleware(CompactionToolMiddleware):
    """``CompactionToolMiddleware`` under DeepAgents' name: the ``compact_conversation``
    and ``recall`` tools, over a ``SummarizationMiddleware``.
    """


def compute_summarization_defaults(model: Any) -> dict[str, Any]:
    """The trigger, keep and argument truncation a model gets by default, in DeepAgents'
    shape: fractions of the window when the model's profile gives ``max_input_tokens``,
    fixed sizes otherwise.

    Examples:
        >>> compute_summarization_defaults(None)["trigger"]
        ('tokens', 170000)
    """
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    window = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
    resolved = CompactionConfig().resolved(window)
    truncate = resolved["truncate_args"]
    return {
        "trigger": resolved["trigger"][0],
        "keep": resolved["keep"],
        "truncate_args_settings": {
            "trigger": truncate["trigger"],
            "keep": truncate["keep"],
            "max_length": truncate["max_length"],
            "truncation_text": truncate["truncation_text"],
        },
    }


def create_summarization_middleware(
    model: Any,
    backend: Any,
    *,
    summary_prompt: str | None = None,
    trim_tokens_to_summarize: int | None = None,
    token_counter: Any = None,
    summarizer: Any = None,
) -> SummarizationMiddleware:
    """A ``SummarizationMiddleware`` with model-aware defaults, as DeepAgents' factory
    makes one.

    Examples:
        >>> create_summarization_middleware("anthropic:claude-sonnet-4-6", None).name
        'SummarizationMiddleware'
    """
    return SummarizationMiddleware(
        model,
        backend=backend,
        summary_prompt=summary_prompt,
        trim_tokens_to_summarize=trim_tokens_to_summarize,
        token_counter=token_counter,
        summarizer=summarizer,
    )


def create_summarization_tool_middleware(
    model: Any, backend: Any, *, system_prompt: str | None = None
) -> SummarizationToolMiddleware:
    """The manual-compaction tool over a fresh ``SummarizationMiddleware`` (which gives
    the agent ``recall`` and ``pin``; give the agent both, as with DeepAgents).

    Examples:
        >>> tool_mw = create_summarization_tool_middleware("openai:gpt-5", None)
        >>> [t.name for t in tool_mw.tools], [t.name for t in tool_mw.compaction.tools]
        (['compact_conversation'], ['recall', 'pin'])
    """
    return SummarizationToolMiddleware(
        create_summarization_middleware(model, backend), system_prompt=system_prompt
    )

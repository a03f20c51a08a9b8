"""What a compaction works with, whichever middleware runs it: the config, the models,
the backend, the caller's summarization settings, and the caches of what they resolve
to. :class:`~fastcompact.CompactionMiddleware` holds one and hands it to the plain
functions of the steps (``reading.py``, ``drafting.py``, ``schedule.py``,
``compaction.py``), which share nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final, TypeVar

import fastcompact._core as _core
from fastcompact.agent import storage
from fastcompact.api.passes import settings_for
from fastcompact.config import CompactionConfig

# Models made per call are keyed by id: the caches keep a few, not every one.
_MODELS_KEPT = 64

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Policy:
    """The constants of the compaction policy, as the core holds them (``src/compaction``;
    ``_core.pass_defaults()["compaction"]`` shows them): the core decides with them, and
    the steps that measure and carry out read the few they need here.

    Examples:
        >>> POLICY.backoff_messages, POLICY.clip_heads[0]
        (10, 4000)
    """

    summary_share: float
    summary_tokens: tuple[float, float]
    request_line_tokens: float
    in_place_tokens: float
    commit_margin: float
    backoff_messages: int
    room_margin: float
    clip_heads: tuple[int, ...]
    sample_messages: int
    words_per_token: float


POLICY: Final = Policy(**_core.pass_defaults()["compaction"])


@dataclasses.dataclass
class Setup:
    """The middleware's settings, and what it resolved from them once.

    Examples:
        >>> from fastcompact.config import CompactionConfig
        >>> setup = Setup(CompactionConfig(trigger=("tokens", 50_000)))
        >>> setup.plan_settings(None, None).resolved["trigger"]
        [('tokens', 50000)]
    """

    config: CompactionConfig
    model: Any = None
    summary_model: Any = None
    backend: Any = None
    summary_prompt: str | None = None
    trim_tokens_to_summarize: int | None = None
    token_counter: Any = None
    counter_takes_tools: bool = False
    # The one file archives go to, in place of `<prefix>/<thread>/<number>.md`: the
    # command line's, named after its output.
    archive_file: str | None = None
    # A saved transcript is compacted (the command line's), not a running agent's view:
    # no later call runs the trigger again, so a compaction commits whenever it makes
    # the view smaller, as a priced one does; and no turn is in progress, so the keep
    # policy's cut stands.
    saved_transcript: bool = False
    # Resolved "provider:name" summary models, shared by every conversation.
    models: dict[str, Any] = dataclasses.field(default_factory=dict)
    # A model's price preset and counting options, by the model's id.
    pricing_by_model: dict[int, tuple[Any, str | None]] = dataclasses.field(default_factory=dict)
    count_options: dict[int, tuple[Any, _core.CountOptions]] = dataclasses.field(default_factory=dict)

    def plan_settings(self, window: int | None, pricing: str | None) -> _core.PlanSettings:
        """The core's reading of the config for ``window`` and ``pricing`` (one cache,
        shared with the notebook helpers)."""
        return settings_for(self.config, window, pricing)

    def archive_path(self, thread: str, number: int, attempt: int = 0) -> str:
        """Where the archive of a thread's compaction ``number`` goes (see
        :func:`storage.archive_path`), or the given file's name."""
        if self.archive_file is not None:
            return storage.file_path(self.archive_file, attempt)
        return storage.archive_path(self.config.history_path_prefix, thread, number, attempt)

    def media_folder(self, thread: str) -> str:
        """Where the media of a thread's archives go."""
        if self.archive_file is not None:
            return storage.media_beside(self.archive_file)
        return storage.media_folder(self.config.history_path_prefix, thread)

    def summary_model_or(self, agent_model: Any) -> Any:
        """The model that writes summaries: the summary model, else the middleware's,
        else the agent's."""
        return self.summary_model or self.model or agent_model


def kept_by_model(cache: dict[int, tuple[Any, T]], model: Any, make: Callable[[Any], T]) -> T:
    """``make(model)``, remembered in ``cache`` by the model's id while the model lives."""
    found = cache.get(id(model))
    if found is not None:
        kept, made = found
        if kept is model:
            return made
    if len(cache) >= _MODELS_KEPT:
        cache.clear()
    made = make(model)
    cache[id(model)] = (model, made)
    return made

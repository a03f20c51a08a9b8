"""The ``recall`` tool the agent is given: the originals the raw state keeps, by id or by
search (see :mod:`fastcompact.api.recall`); and :class:`RecallMiddleware`, which gives
it on its own (a ``CompactionMiddleware`` gives it itself)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware.types import AgentMiddleware
from langchain.tools import ToolRuntime

from fastcompact.api.recall import RECALL_DESCRIPTION, recall
from fastcompact.api.search_history import narrowed, search_text


def recall_tool() -> Any:
    """The ``recall`` tool: reads the graph state's raw messages, by id or by search."""
    from langchain_core.tools import StructuredTool

    def run(
        runtime: ToolRuntime,
        id: str | None = None,
        query: str | None = None,
        pattern: str | None = None,
        only: str | None = None,
    ) -> str:
        state: Any = runtime.state if isinstance(runtime.state, Mapping) else {}
        try:
            if id is not None and id.strip():
                return recall(state, id)
            if not (query or "").strip() and not (pattern or "").strip():
                return (
                    "Give the id a placeholder names, or a query of a few words (or a pattern) to search "
                    "the conversation."
                )
            if query and pattern:
                pattern = None  # the words say what is wanted; the pattern would narrow it twice
            return search_text(state, query or None, pattern or None, **narrowed(only))
        except KeyError as e:
            return f"{e.args[0]}. Use the id a placeholder names, or search with a query."
        except ValueError as e:  # a bad pattern or filter, or a message the reader cannot read: say so
            return f"recall could not do that: {e}"

    return StructuredTool.from_function(func=run, name="recall", description=RECALL_DESCRIPTION)


class RecallMiddleware(AgentMiddleware):
    """Adds the ``recall`` tool on its own: the full original of a cleared result, a
    shortened argument or a summarized message, from the raw state. A
    ``CompactionMiddleware`` gives the agent the tool itself (unless made with
    ``recall=False``); given both, the agent is sent one.

    Examples:
        >>> [t.name for t in RecallMiddleware().tools]
        ['recall']
    """

    def __init__(self) -> None:
        super().__init__()
        self.tools = [recall_tool()]

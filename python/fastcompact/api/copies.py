"""Copies of LangChain messages with some fields replaced, for edited views.

A long conversation's first call after the cache let it go copies every message its
passes edit (hundreds at a time). ``with_fields`` builds the same copy as pydantic's
``model_copy(update=...)`` in less than half the time, and allocates nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

M = TypeVar("M")


_set = object.__setattr__


def with_fields(message: M, update: Mapping[str, Any]) -> M:
    """A shallow copy of ``message`` with ``update``'s fields replaced.

    Equal to ``message.model_copy(update=update)`` (its field dict, extra, fields set
    and private attributes) for a pydantic model whose fields include every key of
    ``update``; anything else goes through its own ``model_copy``.

    >>> from langchain_core.messages import ToolMessage
    >>> m = ToolMessage("a long result", tool_call_id="c1")
    >>> with_fields(m, {"content": "[cleared]"}).content
    '[cleared]'
    >>> m.content
    'a long result'
    """
    if not isinstance(message, BaseModel) or not _all_fields(type(message).__pydantic_fields__, update):
        copy_of: Any = message
        return copy_of.model_copy(update=update)  # type: ignore[no-any-return]
    private = getattr(message, "__pydantic_private__", None)
    copied = type(message).__new__(type(message))
    values = message.__dict__.copy()
    values.update(update)
    _set(copied, "__dict__", values)
    extra = message.__pydantic_extra__
    _set(copied, "__pydantic_extra__", None if extra is None else extra.copy())
    fields_set = set(message.__pydantic_fields_set__)
    fields_set.update(update)
    _set(copied, "__pydantic_fields_set__", fields_set)
    if private is None:
        _set(copied, "__pydantic_private__", None)
    else:
        _set(copied, "__pydantic_private__", {k: v for k, v in private.items() if v is not PydanticUndefined})
    return copied


def _all_fields(fields: Mapping[str, Any], update: Mapping[str, Any]) -> bool:
    # A loop rather than all(...) or key views: each of those is one more object for
    # the garbage collector to count, per copy.
    for key in update:
        if key not in fields:
            return False
    return True

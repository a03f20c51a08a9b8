"""The results of parallel tool calls, one a message.

Anthropic's API answers parallel calls with one user message of several
``tool_result`` blocks; LangChain holds them as one ``ToolMessage`` a result. The
passes clear, shorten and archive one result a message, so a conversation in
Anthropic's shape is read with each such message split into one message a result.
Nothing is lost: the blocks are kept whole and in order, and the API (and
``langchain-anthropic``) joins consecutive user messages into one turn again.

The same message is split into the same copies every time it is read, so a
conversation read turn after turn stays the one the core's cache knows.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from fastcompact.api.copies import with_fields

# The copies made of each message split so far, by the message's identity: the
# message and its content list are kept beside them (so the id is not reused while the
# entry lives, and a content replaced since is seen).
_SPLIT: dict[int, tuple[Any, list[Any], int, list[Any]]] = {}
_MOST_KEPT = 4_096
_lock = threading.Lock()


def _results_of(m: Any) -> list[Any] | None:
    """The ``tool_result`` blocks of a user message made only of them, when it holds
    more than one."""
    if isinstance(m, dict):
        content = m.get("content") if m.get("role") in ("user", "human") else None
    else:
        content = getattr(m, "content", None) if getattr(m, "type", None) == "human" else None
    if not isinstance(content, list) or len(content) < 2:
        return None
    if all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return content
    return None


def _split(m: Any, blocks: list[Any]) -> list[Any]:
    if isinstance(m, dict):
        return [{**m, "content": [block]} for block in blocks]
    own = getattr(m, "id", None)
    return [
        with_fields(m, {"content": [block], "id": f"{own}-{k}" if own and k else own})
        for k, block in enumerate(blocks)
    ]


def one_result_a_message(messages: Sequence[Any]) -> list[Any]:
    """``messages`` with each user message of several ``tool_result`` blocks (Anthropic's
    answer to parallel calls) as one message a result, as LangChain holds them: each
    result can then be cleared on its own. Other messages are the same objects; a
    message split before is split into the same copies.

    Examples:
        >>> results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ("a", "b")]
        >>> split = one_result_a_message([{"role": "user", "content": results}])
        >>> [m["content"][0]["tool_use_id"] for m in split]
        ['a', 'b']
    """
    out: list[Any] = []
    for m in messages:
        blocks = _results_of(m)
        if blocks is None:
            out.append(m)
            continue
        with _lock:
            held = _SPLIT.get(id(m))
            if held is None or held[0] is not m or held[1] is not blocks or held[2] != len(blocks):
                if len(_SPLIT) >= _MOST_KEPT:
                    _SPLIT.clear()
                held = _SPLIT[id(m)] = (m, blocks, len(blocks), _split(m, blocks))
        out.extend(held[3])
    return out

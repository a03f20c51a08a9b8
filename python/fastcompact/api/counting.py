"""Counting tokens over the Rust core, and the per-conversation cache behind it.

Every function here and in ``cutoffs.py`` accepts a list of messages in any shape the core reads: LangChain
message objects (chunks too), LangChain dicts (``messages_to_dict`` / ``dumpd``
output), OpenAI chat dicts, Anthropic messages with content blocks, ``(role, content)``
tuples and bare strings (human turns), mixed freely.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias, TypedDict, overload

from typing_extensions import Unpack

import fastcompact._core as _core
from fastcompact.config import ContextSize

if TYPE_CHECKING:
    from fastcompact._core import InputError

__all__ = [
    "CacheStats",
    "ContextSize",
    "CountingOptions",
    "Encoding",
    "MessageTokens",
    "TokenBreakdown",
    "cache_bytes",
    "cache_info",
    "cache_stats",
    "clear_cache",
    "count_text_tokens",
    "count_tokens",
    "normalize",
    "set_cache_capacity",
    "token_breakdown",
]

Encoding: TypeAlias = Literal["heuristic", "o200k_base", "cl100k_base"]


def _input_error(field: str, reason: str, index: int | None = None) -> InputError:
    # Made by the core, in the core's words.
    return _core.input_error(field, reason, index)


def text_or_file(value: Any, field: str) -> str:
    """``value`` when it is a text, else the text of the file it names (a
    ``pathlib.Path``); an :class:`InputError` naming ``field`` for anything else or a
    file that cannot be read."""
    if isinstance(value, os.PathLike):
        try:
            with open(os.fspath(value), encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise _input_error(field, f"cannot read the file: {e}") from None
    if not isinstance(value, str):
        raise _input_error(field, f"expected a text or a path, got {type(value).__name__}")
    return value


def _is_anthropic(model: Any) -> bool:
    if model is None:
        return False
    if isinstance(model, str):
        return model.startswith(("anthropic:", "claude"))
    name = type(model).__name__.lower()
    ident = str(getattr(model, "model", "") or getattr(model, "model_name", "") or "")
    return "anthropic" in name or ident.startswith("claude")


def _tool_json(tool: Any) -> str | None:
    """The tool schema as langchain-core's counter serializes it; ``None`` for what is
    not a tool (the core then names the field in its error). The core keeps each
    tool's text and calls this only for a tool it has not seen (agents rebuild their
    tool objects every call, with the same name, description and argument schema)."""
    if isinstance(tool, Mapping):
        return json.dumps(tool)
    from langchain_core.tools import BaseTool

    if isinstance(tool, BaseTool):
        from langchain_core.utils.pydantic import model_json_schema

        schema = tool.tool_call_schema
        parameters = dict(schema) if isinstance(schema, dict) else dict(model_json_schema(schema))
        parameters.pop("title", None)
        parameters.pop("description", None)
        spec = {"name": tool.name, "description": tool.description, "parameters": parameters}
    elif callable(tool):
        from langchain_core.utils.function_calling import convert_to_openai_tool

        fn = convert_to_openai_tool(tool)["function"]
        spec = {
            "name": fn["name"],
            "description": fn.get("description", ""),
            "parameters": fn.get("parameters", {}),
        }
    else:
        return None
    return json.dumps(spec)


class CountingOptions(TypedDict, total=False):
    """How to count: the keywords :func:`count_tokens` documents, taken by every
    counting helper."""

    encoding: Encoding
    tools: Sequence[Any] | None
    system: Any
    use_usage: bool
    chars_per_token: float | None
    model: Any
    cache_key: str | None


def _check_keywords(options: Mapping[str, Any], allowed: Any, where: str) -> None:
    """An unknown keyword is a ``TypeError``, as for any Python function."""
    for name in options:
        if name not in allowed.__optional_keys__:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")


def counting_options(
    options: Mapping[str, Any], where: str, *, in_place_edits: bool = True, remember: bool = True
) -> _core.CountOptions:
    """The core's counting options from a helper's keywords (any left out take their
    defaults). ``in_place_edits=False`` for messages from graph state, which are
    replaced rather than edited in place: a warm call then rechecks the content of
    the newest messages and of a rotating few, not of every one (with ``True``, every
    message's content object is checked too; what calls and content lists hold, only
    the newest and the rotating few's either way). ``remember=False``
    for a one-off count of a list built for the occasion (a slice, a candidate view):
    the cache keeps conversations, and such a list would take one's place."""
    _check_keywords(options, CountingOptions, where)
    encoding = options.get("encoding", "heuristic")
    if not isinstance(encoding, str):
        raise _input_error(
            "encoding", f"expected 'heuristic', 'o200k_base' or 'cl100k_base', got {encoding!r}"
        )
    chars_per_token = options.get("chars_per_token")
    if chars_per_token is not None and (
        isinstance(chars_per_token, bool) or not isinstance(chars_per_token, int | float)
    ):
        raise _input_error("chars_per_token", f"expected a number, got {chars_per_token!r}")
    model = options.get("model")
    if isinstance(model, int | float | bytes | Mapping | list | tuple | set):
        raise _input_error("model", f"expected a chat model or a model name, got {model!r}")
    system = options.get("system")
    if isinstance(system, str):
        system = {"role": "system", "content": system}
    tools = options.get("tools")
    # The heuristic's numbers are the core's: only the caller's choices go over.
    return _core.CountOptions(
        encoding=encoding,
        chars_per_token=None if chars_per_token is None else float(chars_per_token),
        anthropic=_is_anthropic(options.get("model")),
        use_usage=bool(options.get("use_usage", False)),
        tools=list(tools) if tools else None,
        tool_json=_tool_json,
        system=system,
        cache_key=options.get("cache_key"),
        in_place_edits=in_place_edits,
        remember=remember,
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 message``, ``2 messages``: a count with its noun (``many`` where the plural
    is not the noun and an s).

    Examples:
        >>> plural(1, "edit"), plural(1_500, "message"), plural(2, "summary", "summaries")
        ('1 edit', '1,500 messages', '2 summaries')
    """
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def _window(max_input_tokens: Any) -> int | None:
    """``max_input_tokens`` checked: ``None`` or a positive int (the model's window)."""
    return _core.check_window(max_input_tokens)


def _as_list(messages: Iterable[Any]) -> Any:
    # Lists and tuples go as they are (their identity keys the cache); a string or a
    # dict is passed on for the core to reject with a clear message.
    if isinstance(messages, list | tuple | str | bytes | Mapping) or not isinstance(messages, Iterable):
        return messages
    return list(messages)


def message_list(messages: Any, field: str = "messages") -> list[Any]:
    """``messages`` as a list (the same list when it is one); an :class:`InputError`
    naming ``field``, in the core's words, for what is not a sequence of messages
    (``None``, a number, a single string or dict).

    Examples:
        >>> message_list(("human", "hi") for _ in range(2))
        [('human', 'hi'), ('human', 'hi')]
        >>> message_list(None)
        Traceback (most recent call last):
        ...
        fastcompact._core.InputError: field 'messages': expected a list of messages, got NoneType
    """
    if isinstance(messages, str | bytes | Mapping):
        raise _input_error(field, "expected a sequence of messages, got a single string or dict")
    if not isinstance(messages, Iterable):
        raise _input_error(field, f"expected a list of messages, got {type(messages).__name__}")
    return messages if isinstance(messages, list) else list(messages)


def count_tokens(messages: Iterable[Any], **options: Unpack[CountingOptions]) -> int:
    """Count the tokens of a conversation.

    The options (keywords, each optional):

    - ``encoding``: ``"heuristic"`` (the default), ``"o200k_base"`` or ``"cl100k_base"``;
    - ``tools`` and ``system``: counted when given;
    - ``use_usage``: anchor on provider usage (default ``False``);
    - ``chars_per_token``: the heuristic's characters a token (default: the model's);
    - ``model``: the chat model or its name, for the heuristic's default;
    - ``cache_key``: names the conversation for the cache (default: the first message's id).

    ``encoding="heuristic"`` gives the same number as langchain-core's
    ``count_tokens_approximately`` (4 characters a token, 3 extra tokens a message;
    3.3 characters a token when ``model`` is an Anthropic model). ``"o200k_base"`` and
    ``"cl100k_base"`` count exactly with the BPE vocabularies embedded in the package.
    ``system`` (a string or a system message) and ``tools`` (``BaseTool`` objects,
    schema dicts or plain functions) are counted when given. Images count 85 tokens
    a block and documents 1,500, never their base64 text.

    With ``use_usage=True`` the newest AI message that reports provider usage anchors
    the count: its input plus output tokens are the real size of everything up to it,
    and only the messages after it are estimated, scaled by how far the estimate was
    off on the anchored part. However far that is, the anchor counts: Chinese text,
    images and large system prompts are where the estimate is wrong.

    Repeated calls on a growing conversation count only the new messages: per-message
    counts are cached by message identity (bounded, see :func:`cache_info`). Messages
    are treated as values; replace a message (``model_copy``) rather than mutate its
    content list in place.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> count_tokens([HumanMessage("hello world"), AIMessage("hi!")])
        13
        >>> count_tokens(["hello world"], encoding="o200k_base")
        6
    """
    opts = counting_options(options, "count_tokens")
    return _core.count_tokens(_as_list(messages), opts)


def count_once(messages: Iterable[Any], **options: Unpack[CountingOptions]) -> int:
    """:func:`count_tokens` of a list built for the occasion (a slice of a
    conversation, a candidate view), kept out of the conversation cache: each such
    list would otherwise take a conversation's place in it."""
    return _core.count_tokens(_as_list(messages), counting_options(options, "count_tokens", remember=False))


@dataclass(frozen=True)
class MessageTokens:
    """Tokens of one message."""

    index: int
    role: str
    tokens: int
    tool: str | None = None


class MessageSizes(Sequence[MessageTokens]):
    """Each message's tokens, role and tool, as a read-only sequence of
    :class:`MessageTokens` built only when one is looked at: a long conversation's
    breakdown is mostly summed and ranked, rarely read message by message.

    Examples:
        >>> from fastcompact.samples import coding_session
        >>> sizes = token_breakdown(coding_session(200, seed=1)).messages
        >>> len(sizes), sizes[0].index, sizes[-1].index
        (200, 0, 199)
        >>> sizes.largest(1)[0].tokens == max(sizes.tokens)
        True
    """

    __slots__ = ("_breakdown", "_roles", "_tools", "tokens")

    def __init__(self, breakdown: _core.Breakdown) -> None:
        self._breakdown = breakdown
        #: Each message's tokens, in order.
        self.tokens: list[int] = breakdown.per_message
        # Read from the core when a message is first looked at.
        self._roles: list[str] | None = None
        self._tools: list[str | None] | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    @overload
    def __getitem__(self, i: int) -> MessageTokens: ...
    @overload
    def __getitem__(self, i: slice) -> list[MessageTokens]: ...
    def __getitem__(self, i: int | slice) -> MessageTokens | list[MessageTokens]:
        if isinstance(i, slice):
            return [self._in_bulk(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("message index out of range")
        return self._at(i)

    def _at(self, i: int) -> MessageTokens:
        """One message, read from the core alone (a picture looks at a few)."""
        role, tool = self._breakdown.at(i)
        return MessageTokens(index=i, role=role, tokens=self.tokens[i], tool=tool)

    def _in_bulk(self, i: int) -> MessageTokens:
        """One of many: every message's role and tool are read once, on the first."""
        if self._roles is None or self._tools is None:
            self._roles, self._tools = self._breakdown.roles, self._breakdown.tool_names
        return MessageTokens(index=i, role=self._roles[i], tokens=self.tokens[i], tool=self._tools[i])

    def __iter__(self) -> Iterator[MessageTokens]:
        return (self._in_bulk(i) for i in range(len(self)))

    def largest(self, n: int = 5) -> list[MessageTokens]:
        """The ``n`` largest messages, largest first (the first of equal ones first)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise _input_error("n", f"expected an int >= 0, got {n!r}")
        return [self._at(i) for i in self._breakdown.largest(n)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageSizes({plural(len(self), 'message')})"


def message_tokens(breakdown: _core.Breakdown) -> MessageSizes:
    """Each message's tokens, role and tool, from the core's breakdown (as counting
    and planning return it)."""
    return MessageSizes(breakdown)


@dataclass(frozen=True)
class TokenBreakdown:
    """Where a conversation's tokens go: per message, per role and per tool.

    ``per_tool`` attributes each tool result to its tool's name.
    """

    total: int
    system_and_tools: int
    messages: Sequence[MessageTokens] = field(repr=False)
    per_role: dict[str, int]
    per_tool: dict[str, int]

    def largest(self, n: int = 5) -> list[MessageTokens]:
        """The ``n`` largest messages, largest first."""
        if isinstance(self.messages, MessageSizes):
            return self.messages.largest(n)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise _input_error("n", f"expected an int >= 0, got {n!r}")
        return sorted(self.messages, key=lambda m: (-m.tokens, m.index))[:n]

    def __str__(self) -> str:
        fixed = ""
        if self.system_and_tools:
            fixed = f" ({self.system_and_tools:,} of them the system prompt and tools)"
        lines = [f"total: {self.total:,} tokens{fixed}"]
        for role, tokens in sorted(self.per_role.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {role:<10} {tokens:>12,}")
        if self.per_tool:
            lines.append("tool results:")
            for tool, tokens in sorted(self.per_tool.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {tool:<14} {tokens:>12,}")
        return "\n".join(lines)


def token_breakdown(messages: Iterable[Any], **options: Unpack[CountingOptions]) -> TokenBreakdown:
    """Tokens per message, per role and per tool name, with the total.

    The options are those of :func:`count_tokens`; the total equals its result.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> msgs = [
        ...     HumanMessage("list the files"),
        ...     AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
        ...     ToolMessage("a.py b.py", tool_call_id="c1"),
        ... ]
        >>> b = token_breakdown(msgs)
        >>> b.per_tool
        {'ls': 7}
        >>> b.largest(1)[0].role
        'ai'
    """
    raw = _core.token_breakdown(_as_list(messages), counting_options(options, "token_breakdown"))
    return TokenBreakdown(
        total=raw.total,
        system_and_tools=raw.system_and_tools,
        messages=message_tokens(raw),
        per_role=raw.per_role,
        per_tool=raw.per_tool,
    )


def count_text_tokens(text: str, encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base") -> int:
    """Exact BPE tokens of a text, with no message framing.

    Examples:
        >>> count_text_tokens("tiktoken is great!", "cl100k_base")
        6
    """
    if not isinstance(text, str):
        raise _input_error("text", f"expected a str, got {type(text).__name__}")
    return _core.count_text(text, encoding)


def normalize(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """What fastcompact reads from each message, as plain dicts (for debugging input).

    Examples:
        >>> normalize([{"role": "user", "content": "hi"}])[0]["role"]
        'human'
    """
    return _core.normalize(_as_list(messages))


# The capacity ``cache_info`` reports when the count of conversations is not bounded
# (``set_cache_capacity`` takes it back), and the core's own word for it.
UNBOUNDED = math.inf
_CORE_UNBOUNDED = 2**64 - 1


def cache_info() -> tuple[int, int | float]:
    """``(conversations cached, capacity)`` of the per-conversation token cache; the
    capacity is :data:`UNBOUNDED` (``math.inf``) when only the bytes bound it (the
    default), and ``set_cache_capacity`` takes back what this reports.

    Examples:
        >>> before = cache_info()[1]
        >>> set_cache_capacity(100); cache_info()[1]
        100
        >>> set_cache_capacity(UNBOUNDED); cache_info()[1]
        inf
        >>> set_cache_capacity(before); cache_info()[1] == before
        True
    """
    held, capacity = _core.cache_info()
    return held, UNBOUNDED if capacity >= _CORE_UNBOUNDED else capacity


def cache_bytes() -> tuple[int, int]:
    """``(bytes held, bound in bytes)`` of the per-conversation token cache, as its
    conversations weigh themselves (the vectors as allocated, the converted messages,
    the edited copies kept).

    Examples:
        >>> held, bound = cache_bytes()
        >>> 0 <= held <= bound
        True
    """
    return _core.cache_bytes()


class CacheStats(NamedTuple):
    """What the per-conversation cache did since the process started (see
    :func:`cache_stats`)."""

    found: int
    """Calls that found their conversation cached and read only what changed."""
    missed: int
    """Calls that found none: a new conversation, or one dropped to stay within the
    bounds, read in full."""
    evicted: int
    """Conversations dropped to stay within the bounds."""


def cache_stats() -> CacheStats:
    """How often a call found its conversation in the cache, how often not, and how
    many conversations were dropped to stay within its bounds: a server whose
    ``evicted`` keeps growing reads conversations anew that it would otherwise have
    served warm, and may want a larger bound (:func:`set_cache_capacity`).

    Examples:
        >>> before = cache_stats()
        >>> _ = count_tokens(["hi"], cache_key="stats-example")
        >>> _ = count_tokens(["hi", "again"], cache_key="stats-example")
        >>> now = cache_stats()
        >>> now.found - before.found >= 1, now.missed - before.missed >= 1
        (True, True)
    """
    return CacheStats(*_core.cache_stats())


# More than any machine holds: a larger bound is surely a mistake.
_MAX_CONVERSATIONS = 2**32
_MAX_BYTES = 2**50


def set_cache_capacity(conversations: int | float | None = None, *, bytes: int | None = None) -> None:
    """Bound the token cache to this many conversations, to this many bytes, or both
    (0 turns it off; :data:`UNBOUNDED`, ``math.inf``, lifts the bound on conversations;
    a bound left out stays as it is). By default it holds up to 1 GiB (a few hundred
    thousand messages of a coding agent) in any number of conversations; the least
    recently used go first, and what they held is returned to the OS.

    Examples:
        >>> set_cache_capacity(bytes=256 * 2**20)
        >>> cache_bytes()[1]
        268435456
        >>> set_cache_capacity(bytes=2**30)
    """
    count: int | None
    if conversations == UNBOUNDED or conversations == _CORE_UNBOUNDED:
        count = _CORE_UNBOUNDED
    else:
        _check_bound("conversations", conversations, _MAX_CONVERSATIONS)
        count = None if conversations is None else int(conversations)
    _check_bound("bytes", bytes, _MAX_BYTES)
    _core.set_cache_capacity(count, bytes)


def _check_bound(name: str, given: Any, most: int) -> None:
    if given is None:
        return
    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
        raise _input_error(name, f"expected a non-negative int, got {given!r}")
    if given > most:
        extra = " (or UNBOUNDED)" if name == "conversations" else ""
        raise _input_error(name, f"expected at most {most:,}{extra}, got {given:,}")


def clear_cache() -> None:
    """Forget every cached count."""
    _core.clear_cache()

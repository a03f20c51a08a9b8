"""The summary: the prompt, the summarizer call with its retries, and the message that
replaces the summarized span.

The summarizer's output is only trusted once it is non-empty after the analysis
scratchpad is stripped; anything else is a failure the middleware counts (and answers
with the digest from the core).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

import fastcompact._core as _core
from fastcompact.agent.steps import Io, Steps

SUMMARY_SOURCE = "summarization"
"""``additional_kwargs["lc_source"]`` of a summary message, as DeepAgents marks it."""

# What each section of the notes holds, in the order of the core's titles (the core
# keeps the sections a model needs to carry on whole when notes must be cut).
_SECTION_TEXTS = (
    "everything the user has asked for, with the constraints they set.",
    "every rule, prohibition, limit, budget, deadline, preference and fact about their "
    "world the user stated that still holds, and where the work stands against its goal: "
    "the latest value of each (a later statement replaces an earlier one), in the user's "
    "own words, with its request number.",
    "languages, frameworks, tools and conventions in use.",
    "each file read, created or changed, with its path, why it matters, and short code "
    "excerpts where they record a decision.",
    "what went wrong, the exact error text where it matters, and how it was resolved, or "
    "that it is still open.",
    "approaches tried, what worked, what was ruled out.",
    "every request the user made (not tool output), in order, each under its number (R1, "
    "R2, ...): a line of your own words for a request that stays verbatim beside your "
    "notes; for any other, what it asked with every constraint, name, number and path, in "
    "the user's own words where they matter.",
    "what was asked for and is not finished.",
    "exactly what was under way when the transcript ends, naming files and code.",
    "the next action that follows from the latest request, quoting the user's or the "
    "agent's own words; omit it when the last task is done and nothing new was asked.",
)
# What the notes must hold, in order; both prompts ask for it.
SUMMARY_SECTIONS = (
    "\n".join(
        f"{i}. {title}: {text}"
        for i, (title, text) in enumerate(zip(_core.SUMMARY_SECTIONS, _SECTION_TEXTS, strict=True), 1)
    )
    + "\n\nKeep every reference to an image, audio, video or other file (its saved path or its URL) "
    "where the notes mention what it showed."
)

# The sections kept whole when notes must be cut, by number.
ESSENTIAL_SECTIONS = tuple(
    i
    for i, title in enumerate(_core.SUMMARY_SECTIONS, 1)
    if any(word in title.lower() for word in _core.ESSENTIAL_SECTION_WORDS)
)

SUMMARY_PROMPT = (
    """\
You are writing down the state of a working session between a user and an AI agent.
The agent will continue from your notes and the most recent messages alone: anything
you leave out, it will no longer know.

First reason inside an <analysis> block: walk through the transcript in order and note
every request, decision, file, command, error and fix. Then write the notes inside a
<summary> block, with these sections in this order:

"""
    + SUMMARY_SECTIONS.replace("{", "{{").replace("}", "}}")
    + """
{brief}{custom}
Reply with the two blocks only. The transcript:

<transcript>
{transcript}
</transcript>"""
)

# Sent after the agent's own input, so that the request shares the agent's prompt cache.
IN_PLACE_PROMPT = (
    """\
Pause the task: no tool calls now. The conversation above is about to be shortened.
Everything before {boundary} will be replaced by notes you write now; that message and
what follows stay as they are. Write the notes so that the work can go on from them and
those later messages alone.

First reason inside an <analysis> block, then write the notes inside a <summary> block,
with these sections in this order:

"""
    + SUMMARY_SECTIONS.replace("{", "{{").replace("}", "}}")
    + """
{brief}{custom}
Reply with the two blocks only."""
)


class SummaryError(Exception):
    """The summarizer gave no usable summary."""


@dataclasses.dataclass(frozen=True)
class Brief:
    """What a summary is asked to cover and how long it may be.

    ``first`` and ``last``: the numbers of the requests the summarized messages open;
    ``kept_from``: the first request that stays verbatim beside the notes (every later
    one does too; ``None``: none stays); ``words``: about the length the memory keeps
    whole (``None``: not said).

    Examples:
        >>> text = Brief(first=4, last=6, kept_from=5, words=900).text()
        >>> "The requests you summarize here are R4 to R6" in text
        True
        >>> "what R1 to R4 asked is known from your notes alone" in text
        True
        >>> "about 900 words" in text and "sections 1, 2, 7, 8, 9 and 10 whole" in text
        True
    """

    first: int | None = None
    last: int | None = None
    kept_from: int | None = None
    words: int | None = None

    def text(self) -> str:
        """The lines the prompt gives the brief in (none when it says nothing)."""
        parts: list[str] = []
        if self.first is not None and self.last is not None:
            which = f"R{self.first}" if self.first == self.last else f"R{self.first} to R{self.last}"
            parts.append(f"The requests you summarize here are {which}, in the order they come.")
        if self.kept_from == 1:
            parts.append(
                "Every request stays verbatim beside your notes, so a line of your own words is "
                "enough for each."
            )
        elif self.kept_from is not None:
            left = "R1" if self.kept_from == 2 else f"R1 to R{self.kept_from - 1}"
            parts.append(
                f"R{self.kept_from} and every later request stay verbatim beside your notes, so a line of "
                f"your own words is enough for them; what {left} asked is known from your notes alone "
                "from now on."
            )
        elif self.first is not None:
            parts.append(
                "No request stays verbatim beside your notes: what each asked is known from your notes "
                "alone from now on."
            )
        lines = " ".join(parts)
        if self.words is not None:
            kept = ", ".join(map(str, ESSENTIAL_SECTIONS[:-1])) + f" and {ESSENTIAL_SECTIONS[-1]}"
            lines += (
                f"\nKeep the notes to about {self.words:,} words: longer notes are cut to fit, keeping "
                f"sections {kept} whole."
            )
        return f"\n{lines.strip()}\n" if lines.strip() else ""


def build_prompt(
    messages: Sequence[Any],
    custom_instructions: str | None = None,
    template: str | None = None,
    brief: Brief | None = None,
) -> str:
    """The summarizer's prompt for ``messages`` (with the user's extra instructions, and
    what ``brief`` says of the requests and the length)."""
    custom = _custom(custom_instructions)
    transcript = _core.render_transcript(list(messages))
    if template is not None:
        # A caller's prompt (DeepAgents' `summary_prompt`): the transcript goes where
        # `{messages}` is; other braces are left as they are.
        return template.replace("{messages}", f"<transcript>\n{transcript}\n</transcript>") + custom
    return SUMMARY_PROMPT.format(brief=(brief or Brief()).text(), custom=custom, transcript=transcript)


def _custom(custom_instructions: str | None) -> str:
    if not custom_instructions:
        return ""
    return f"\nAlso follow these instructions from the user:\n{custom_instructions.strip()}\n"


def boundary(messages: Sequence[Any], at: int) -> str:
    """``messages[at]`` named so that no other message fits the name: by the opening
    words only it begins with, else by its tool call's id, else by its place.

    Examples:
        >>> msgs = [HumanMessage("Run the tests"), HumanMessage("Run the tests again")]
        >>> boundary(msgs, 0)
        'the message that reads "Run the tests" in full'
        >>> boundary(msgs, 1)
        'the message that begins "Run the tests again"'
    """
    m = messages[at]
    words = " ".join(text_of(m).split())
    others = [" ".join(text_of(x).split()) for i, x in enumerate(messages) if i != at]
    if words:
        for n in (60, 120, 240, 480, len(words)):
            head = words[:n]
            if not any(o.startswith(head) for o in others):
                more = "..." if len(head) < len(words) else ""
                return f'the message that begins "{_quotable(head)}{more}"'
        if words not in others:
            return f'the message that reads "{_quotable(words)}" in full'
    calls = [c for c in getattr(m, "tool_calls", None) or [] if isinstance(c, Mapping) and c.get("id")]
    if calls:
        return f'your message that calls {calls[0].get("name")} with the id "{calls[0]["id"]}"'
    from_end = len(messages) - at
    return "the last message" if from_end == 1 else f"the message {from_end} from the end (the last is 1)"


def _quotable(text: str) -> str:
    return text.replace('"', "'")


def in_place_prompt(
    sent: Sequence[Any],
    at: int,
    custom_instructions: str | None = None,
    *,
    brief: Brief | None = None,
) -> HumanMessage:
    """The instruction that follows the agent's own input ``sent`` in a summary request
    that shares its cache: it names ``sent[at]``, the first message that stays, so that
    no other message fits the name (see :func:`boundary`).

    Examples:
        >>> sent = [HumanMessage("Fix the parser"), HumanMessage("Now add the tests")]
        >>> m = in_place_prompt(sent, 1, brief=Brief(first=1, last=1))
        >>> 'before the message that begins "Now add the tests"' in m.content
        True
        >>> "The requests you summarize here are R1" in m.content
        True
    """
    text = IN_PLACE_PROMPT.format(
        boundary=boundary(sent, at), brief=(brief or Brief()).text(), custom=_custom(custom_instructions)
    )
    return HumanMessage(text)


_ANALYSIS = re.compile(r"<analysis>.*?(</analysis>|(?=<summary>)|\Z)", re.S)
_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.S)


def final_summary(text: str) -> str:
    """The summary without its analysis scratchpad (and without the tags).

    Examples:
        >>> final_summary("<analysis>thinking</analysis>\\n<summary>\\n1. Fix the bug.\\n</summary>")
        '1. Fix the bug.'
        >>> final_summary("<analysis>unfinished")
        ''
    """
    found = _SUMMARY.search(text)
    body = found.group(1) if found else _ANALYSIS.sub("", text)
    return body.strip()


def text_of(response: Any) -> str:
    """The text of a chat model's reply (string or content blocks)."""
    content = getattr(response, "content", response)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return ""


_TOO_LONG = (
    "prompt is too long",
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "input is too long",
    "reduce the length",
    "context_length_exceeded",
    "context limit exceeded",
    "exceed the configured limit",
)


def is_prompt_too_long(error: BaseException) -> bool:
    """Whether a model error says its input did not fit."""
    try:
        from langchain_core.exceptions import ContextOverflowError

        if isinstance(error, ContextOverflowError):
            return True
    except ImportError:  # older langchain-core
        pass
    text = str(error).lower()
    return any(marker in text for marker in _TOO_LONG)


def drop_oldest_chunk(messages: Sequence[Any]) -> list[Any]:
    """The span without its oldest fifth (at least one message), for a retry after
    the summarizer said the prompt was too long. The transcript is text, so no tool
    pair needs to stay whole here."""
    n = len(messages)
    return list(messages[max(1, n // 5) :])


def summary_config() -> dict[str, Any]:
    """Run config for summarizer calls: kept out of the agent's streamed output."""
    metadata: dict[str, Any] = {"lc_source": SUMMARY_SOURCE}
    try:
        from langchain.agents.middleware.internal_call_transformer import internal_call_metadata

        metadata.update(internal_call_metadata())
    except ImportError:  # langchain without internal-call tagging
        pass
    return {
        "tags": ["nostream", "fastcompact:summary"],
        "metadata": metadata,
        "run_name": "fastcompact_summary",
    }


@dataclasses.dataclass(frozen=True)
class Asking:
    """How a summary prompt is written: the user's ``custom_instructions``, a
    ``template`` of their own in place of ours, and what it is asked to cover."""

    custom_instructions: str | None = None
    template: str | None = None
    brief: Brief | None = None


def summarize(
    model: Any,
    messages: Sequence[Any],
    asking: Asking,
    *,
    retries: int,
    fits: Callable[[HumanMessage], bool] | None = None,
) -> Steps[tuple[str, dict[str, int] | None]]:
    """Summarize ``messages`` with ``model`` (steps, see :mod:`fastcompact.agent.steps`). A
    prompt that ``fits`` says is over the summarizer's window is not sent: the oldest
    chunk goes first until it fits (the newest message stays); a prompt-too-long answer
    drops the oldest chunk and tries again, up to ``retries`` times. Returns the summary
    and the summarizer's token usage (when it reports one). Raises ``SummaryError`` (or
    the model's own error) when no usable summary comes back."""
    span = list(messages)
    attempt = 0
    while True:
        prompt = [HumanMessage(build_prompt(span, asking.custom_instructions, asking.template, asking.brief))]
        if fits is not None and len(span) > 1 and not fits(prompt[0]):
            span = drop_oldest_chunk(span)
            continue
        try:
            reply = yield _invoked(model, prompt)
        except Exception as e:
            span = _shorter(e, span, attempt, retries)
            attempt += 1
            continue
        return _checked(reply)


def summarize_in_place(
    model: Any, sent: Sequence[Any], instruction: Any, **kwargs: Any
) -> Steps[tuple[str, dict[str, int] | None]]:
    """Summarize with the agent's own input ``sent`` (system prompt and messages as the
    model last saw them, ``model`` bound to its tools) followed by ``instruction``: the
    provider reads all but the instruction from its prompt cache. ``kwargs`` go to the
    call (a ``cache_control``, say). Raises what the model raises, or ``SummaryError``."""
    reply = yield _invoked(model, [*sent, instruction], **kwargs)
    return _checked(reply)


def _invoked(model: Any, prompt: list[Any], **kwargs: Any) -> Io:
    return Io(
        lambda: model.invoke(prompt, config=summary_config(), **kwargs),
        lambda: model.ainvoke(prompt, config=summary_config(), **kwargs),
    )


def _shorter(error: Exception, span: list[Any], attempt: int, retries: int) -> list[Any]:
    """The span to retry with after a prompt-too-long error; any other error, or one
    past the last retry, is raised again."""
    if is_prompt_too_long(error) and attempt < retries and len(span) > 1:
        return drop_oldest_chunk(span)
    raise error


def _checked(reply: Any) -> tuple[str, dict[str, int] | None]:
    text = final_summary(text_of(reply))
    if not text:
        raise SummaryError("the summarizer returned no summary")
    usage = getattr(reply, "usage_metadata", None)
    if not isinstance(usage, Mapping):
        return text, None
    return text, {k: int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens", "total_tokens")}


def summary_message(
    summary: str,
    *,
    file_path: str | None,
    restored_files: Sequence[tuple[str, str] | tuple[str, str, str | None]] = (),
    todos: Sequence[Mapping[str, Any]] = (),
    suppress_follow_up_questions: bool = True,
    parts: Sequence[str] = (),
) -> HumanMessage:
    """The message that stands in for the summarized span. With ``parts``, the
    summary in parts that join to it (the steadiest first, see ``memory.parts``), the
    message notes where each part ends (see :func:`blocks_of`): sent to a model that
    caches at marked blocks, each part is a block of its own.

    Examples:
        >>> m = summary_message("1. Fix the parser.", file_path="/conversation_history/t/1.md")
        >>> m.additional_kwargs["lc_source"]
        'summarization'
        >>> "/conversation_history/t/1.md" in m.content
        True
        >>> parts = ["Rules: none.", " R1: fix it."]
        >>> m = summary_message("".join(parts), file_path=None, parts=parts)
        >>> blocks_of(m)[0].endswith("<summary>" + chr(10) + "Rules: none.")
        True
        >>> blocks_of(m)[1].startswith(" R1: fix it.")
        True
    """
    sections = [
        "This conversation was compacted to stay within the model's context window: "
        "the earlier messages were replaced by the summary below.",
        f"<summary>\n{summary}\n</summary>",
    ]
    # After the summary: the file is new at every compaction, and what changes ends
    # the prefix the provider reads from its prompt cache.
    if file_path:
        sections.append(
            f"The full text of those messages is saved at {file_path}. Read it if you need an exact detail."
        )
    if restored_files:
        files = "\n\n".join(_file_block(f) for f in restored_files)
        sections.append(f"Files you read recently, as they are now:\n\n{files}")
    listed = [t for t in todos if isinstance(t, Mapping)]
    if listed:
        lines = "\n".join(f"- [{t.get('status', 'pending')}] {t.get('content', '')}" for t in listed)
        sections.append(f"Your todo list:\n{lines}")
    if suppress_follow_up_questions:
        sections.append(
            "Carry on with the work from where it stopped. Do not ask the user to repeat "
            "anything or to confirm where things stand."
        )
    kwargs: dict[str, Any] = {"lc_source": SUMMARY_SOURCE}
    if len(parts) > 1 and "".join(parts) == summary:
        # Where each block but the last ends; the last takes what follows the summary.
        opening = len(sections[0]) + len("\n\n<summary>\n")
        kwargs[PARTS_KEY] = [opening + end for end in itertools.accumulate(len(p) for p in parts[:-1])]
    return HumanMessage(
        content="\n\n".join(sections),
        additional_kwargs=kwargs,
        id=f"fastcompact-summary-{uuid.uuid4().hex}",
    )


# Where a summary message's parts end, in characters of its content.
PARTS_KEY = "fastcompact_parts"


def blocks_of(message: Any) -> list[str] | None:
    """A summary message's content in the parts :func:`summary_message` noted, or
    ``None`` when it has none (or they no longer fit its content)."""
    content = getattr(message, "content", None)
    ends = (getattr(message, "additional_kwargs", None) or {}).get(PARTS_KEY)
    if not isinstance(content, str) or not isinstance(ends, list) or not ends:
        return None
    at = [0, *ends, len(content)]
    if not all(isinstance(a, int) and isinstance(b, int) and 0 <= a < b for a, b in itertools.pairwise(at)):
        return None
    return [content[a:b] for a, b in itertools.pairwise(at)]


def caches_at_marks(model: Any) -> bool:
    """Whether ``model`` caches a prompt only up to the blocks marked for it
    (Anthropic's ``cache_control``), not at any prefix the provider saw before."""
    return getattr(model, "_llm_type", None) == "anthropic-chat"


def cache_marked(model: Any, view: list[Any]) -> list[Any]:
    """``view`` as sent to ``model``. A model that caches at marked blocks gets the
    summary message in its parts (see :func:`blocks_of`), the last part but the one
    after the summary marked, so that the next compaction, which leaves the parts
    before it as they were, finds them in its cache (one mark of the four a request
    may carry). A provider that caches any prefix gets the text as it is; the state
    keeps it so too.

    Examples:
        >>> class Claude:
        ...     _llm_type = "anthropic-chat"
        >>> m = summary_message("a b", file_path=None, parts=["a", " b"])
        >>> [sorted(block) for block in cache_marked(Claude(), [m])[0].content]
        [['cache_control', 'text', 'type'], ['text', 'type']]
        >>> cache_marked(object(), [m])[0] is m
        True
    """
    if not caches_at_marks(model):
        return view
    # A summary opens the view, after any system message: no further look is needed
    # (this runs on every call).
    for i, message in enumerate(view):
        if getattr(message, "type", None) == "system":
            continue
        parts = blocks_of(message) if is_summary(message) else None
        if parts is None:
            return view
        blocks: list[dict[str, Any]] = [{"type": "text", "text": p} for p in parts]
        blocks[-2]["cache_control"] = {"type": "ephemeral"}
        return [*view[:i], message.model_copy(update={"content": blocks}), *view[i + 1 :]]
    return view


def _file_block(restored: tuple[str, str] | tuple[str, str, str | None]) -> str:
    """A restored file as the summary shows it: ``(path, text)``, and the lines it
    holds when the read was of a part."""
    path, text, *part = restored
    lines = f' lines="{part[0]}"' if part and part[0] else ""
    return f'<file path="{path}"{lines}>\n{text}\n</file>'


# How the summaries of the common compactors open: ours, DeepAgents' (with and without
# an archive), LangChain's, and compact-middleware's and Claude Code's. A user message
# that opens so is an earlier summary, whatever shape it was saved in.
SUMMARY_OPENINGS = (
    "This conversation was compacted to stay within the model's context window",
    "You are in the middle of a conversation that has been summarized",
    "Here is a summary of the conversation to date",
    "This session is being continued from a previous conversation",
)


def is_summary(message: Any) -> bool:
    """Whether a message is a compaction summary: marked as one (ours, DeepAgents',
    compact-middleware's), or a user's message that opens as one does (a summary saved
    in a shape with no place for the mark)."""
    if isinstance(message, BaseMessage):
        if message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE:
            return True
        return message.type == "human" and _opens_as_summary(message.content)
    if isinstance(message, Mapping):
        kwargs = message.get("additional_kwargs")
        if isinstance(kwargs, Mapping) and kwargs.get("lc_source") == SUMMARY_SOURCE:
            return True
        return message.get("role") in ("user", "human") and _opens_as_summary(message.get("content"))
    return False


def _opens_as_summary(content: Any) -> bool:
    text = content if isinstance(content, str) else text_of(content)
    return text.lstrip()[:100].startswith(SUMMARY_OPENINGS)


def is_request(message: Any) -> bool:
    """Whether a message opens a request: a user's, with text, that is not a summary."""
    return (
        getattr(message, "type", None) == "human"
        and not is_summary(message)
        and bool(text_of(message).strip())
    )


def summary_text(message: Any) -> str | None:
    """The summary inside a summary message, for chaining the digest."""
    if not is_summary(message):
        return None
    content = text_of(message)
    found = _SUMMARY.search(content)
    if found is None:
        return content
    # Only the line breaks summary_message puts around it: a user message quoted at its
    # end keeps its own trailing spaces.
    inner = found.group(1)
    return inner.removeprefix("\n").removesuffix("\n")

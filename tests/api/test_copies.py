"""An edited copy is the copy pydantic's model_copy makes, field for field."""

from __future__ import annotations

from typing import Any

from fastcompact.api.copies import with_fields
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

texts = st.text(max_size=40)
calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["read_file", "grep"]),
            "args": st.dictionaries(st.text(max_size=5), texts, max_size=3),
        }
    ).map(lambda c: {**c, "id": f"call-{len(c['args'])}", "type": "tool_call"}),
    max_size=3,
)


@st.composite
def messages(draw: Any) -> Any:
    kind = draw(st.sampled_from(["human", "ai", "tool", "system"]))
    content = draw(texts)
    extra = draw(st.dictionaries(st.sampled_from(["note", "origin"]), texts, max_size=2))
    named = draw(st.booleans())
    fields: dict[str, Any] = {"id": draw(texts)} if named else {}
    if kind == "ai":
        return AIMessage(content, tool_calls=draw(calls), **fields, **extra)
    if kind == "tool":
        return ToolMessage(content, tool_call_id=draw(texts), **fields, **extra)
    cls = HumanMessage if kind == "human" else SystemMessage
    return cls(content, **fields, **extra)


def _parts(m: Any) -> tuple[Any, ...]:
    return (type(m), m.__dict__, m.__pydantic_extra__, m.__pydantic_fields_set__, m.__pydantic_private__)


@settings(max_examples=200, deadline=None)
@given(messages(), texts, st.booleans())
def test_a_copy_with_fields_is_model_copy(message: Any, content: str, with_calls: bool) -> None:
    update: dict[str, Any] = {"content": content}
    if with_calls and isinstance(message, AIMessage):
        update["tool_calls"] = []
    before = _parts(message)
    before = tuple(p.copy() if isinstance(p, dict | set) else p for p in before)
    copied = with_fields(message, update)
    assert _parts(copied) == _parts(message.model_copy(update=update))
    assert _parts(message) == before, "the original is left as it was"
    assert copied.__dict__ is not message.__dict__
    assert copied.__pydantic_fields_set__ is not message.__pydantic_fields_set__
    if message.__pydantic_extra__ is not None:
        assert copied.__pydantic_extra__ is not message.__pydantic_extra__


def test_an_unknown_field_goes_through_model_copy() -> None:
    m = ToolMessage("result", tool_call_id="c1")
    copied = with_fields(m, {"content": "[cleared]", "not_a_field": 1})
    assert _parts(copied) == _parts(m.model_copy(update={"content": "[cleared]", "not_a_field": 1}))
    assert copied.__pydantic_extra__ == {"not_a_field": 1}


def test_a_copy_set_later_leaves_the_original_alone() -> None:
    m = ToolMessage("result", tool_call_id="c1", status="success")
    copied = with_fields(m, {"content": "[cleared]"})
    copied.status = "error"
    copied.additional_kwargs = {"k": 1}
    assert m.status == "success" and m.additional_kwargs == {}
    assert "additional_kwargs" not in m.__pydantic_fields_set__

//! Python objects -> core messages: LangChain messages are read attribute by
//! attribute (never `model_dump()`); dicts in LangChain, OpenAI or Anthropic shape are
//! read key by key. Strings are borrowed from Python, not copied.

use std::sync::Arc;

use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::message::{Block, BlockKind, Content, InputError, Message, Role, Text, ToolCall, Usage};

pub(super) type Res<T> = Result<T, InputError>;

pub(super) fn py_err(field: &str, e: PyErr) -> InputError {
    InputError::new(None, field, e.to_string())
}

/// Where a message's fields come from: a LangChain object's attributes or a dict.
pub(super) enum Fields<'py> {
    Attrs(Bound<'py, PyAny>),
    /// A pydantic model: fields are read from its `__dict__` (a plain dict lookup,
    /// much cheaper than attribute resolution), anything else by attribute.
    Model(Bound<'py, PyAny>, Bound<'py, PyDict>),
    Dict(Bound<'py, PyDict>),
}

impl<'py> Fields<'py> {
    /// The dict the fields live in, when there is one.
    pub(super) fn dict(&self) -> Option<&Bound<'py, PyDict>> {
        match self {
            Fields::Model(_, d) | Fields::Dict(d) => Some(d),
            Fields::Attrs(_) => None,
        }
    }

    /// The field's value; `None` when it is absent or Python `None`.
    pub(super) fn get(&self, name: &Bound<'py, PyString>) -> Res<Option<Bound<'py, PyAny>>> {
        let field = || name.to_string();
        let value = match self {
            Fields::Model(obj, d) => match d.get_item(name) {
                Ok(Some(v)) => v,
                // Not a field: a property or a method, resolved as an attribute.
                _ => match obj.getattr(name) {
                    Ok(v) => v,
                    Err(e) if e.is_instance_of::<PyAttributeError>(obj.py()) => return Ok(None),
                    Err(e) => return Err(py_err(&field(), e)),
                },
            },
            Fields::Attrs(obj) => match obj.getattr(name) {
                Ok(v) => v,
                Err(e) if e.is_instance_of::<PyAttributeError>(obj.py()) => return Ok(None),
                Err(e) => return Err(py_err(&field(), e)),
            },
            Fields::Dict(d) => match d.get_item(name) {
                Ok(Some(v)) => v,
                Ok(None) => return Ok(None),
                Err(e) => return Err(py_err(&field(), e)),
            },
        };
        Ok((!value.is_none()).then_some(value))
    }

    pub(super) fn get_str(&self, name: &Bound<'py, PyString>) -> Res<Option<String>> {
        match self.get(name)? {
            None => Ok(None),
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Ok(Some(s.to_string_lossy().into_owned())),
                // Ids are sometimes numbers; anything else is malformed.
                Err(_) if v.is_instance_of::<pyo3::types::PyInt>() => Ok(Some(v.to_string())),
                Err(_) => Err(InputError::new(
                    None,
                    name.to_string(),
                    format!("expected a string, got {}", type_name(&v)),
                )),
            },
        }
    }
}

pub(super) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// A Python `str` held as core text, without copying its buffer.
pub(super) struct PyText(PyBackedStr);

impl AsRef<str> for PyText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

pub(super) fn text_of(s: &Bound<'_, PyString>) -> Res<Text> {
    let chars = s.len().map_err(|e| py_err("content", e))?;
    match PyBackedStr::try_from(s.clone()) {
        Ok(backed) => Ok(Text::with_len(Arc::new(PyText(backed)), chars)),
        // Lone surrogates cannot be UTF-8: keep a lossy copy (same length in code points).
        Err(_) => Ok(Text::with_len(
            Arc::new(s.to_string_lossy().into_owned()),
            chars,
        )),
    }
}

/// Deeper nesting than this is summarized by its `repr` instead of walked.
pub(super) const MAX_DEPTH: usize = 128;

/// A Python value as JSON. Never fails: what JSON cannot hold (bytes, dates, custom
/// objects, non-string keys, NaN) becomes its `str()`, so odd arguments pass through.
pub(super) fn to_value(v: &Bound<'_, PyAny>) -> Value {
    to_value_at(v, 0)
}

pub(super) fn to_value_at(v: &Bound<'_, PyAny>, depth: usize) -> Value {
    if v.is_none() {
        return Value::Null;
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Value::String(s.to_string_lossy().into_owned());
    }
    if depth < MAX_DEPTH {
        if let Ok(d) = v.cast::<PyDict>() {
            let mut map = serde_json::Map::with_capacity(d.len());
            for (k, item) in d.iter() {
                let key = match k.cast::<PyString>() {
                    Ok(s) => s.to_string_lossy().into_owned(),
                    Err(_) => k.to_string(),
                };
                map.insert(key, to_value_at(&item, depth + 1));
            }
            return Value::Object(map);
        }
        if let Ok(l) = v.cast::<PyList>() {
            return Value::Array(l.iter().map(|i| to_value_at(&i, depth + 1)).collect());
        }
        if let Ok(t) = v.cast::<PyTuple>() {
            return Value::Array(t.iter().map(|i| to_value_at(&i, depth + 1)).collect());
        }
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Value::Bool(b.is_true());
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Value::from(i);
        }
        if let Ok(u) = v.extract::<u64>() {
            return Value::from(u);
        }
    }
    if let Ok(f) = v.cast::<pyo3::types::PyFloat>() {
        if let Some(n) = serde_json::Number::from_f64(f.value()) {
            return Value::Number(n);
        }
    }
    Value::String(
        v.str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
}

pub(super) fn role_from_str(s: &str) -> Option<Role> {
    Some(match s {
        "human" | "user" | "HumanMessage" | "HumanMessageChunk" => Role::Human,
        "ai" | "assistant" | "AIMessage" | "AIMessageChunk" => Role::Ai,
        "tool" | "ToolMessage" | "ToolMessageChunk" => Role::Tool,
        "system" | "developer" | "SystemMessage" | "SystemMessageChunk" => Role::System,
        "function" | "FunctionMessage" | "FunctionMessageChunk" => Role::Function,
        "chat" | "ChatMessage" | "ChatMessageChunk" => Role::Other,
        _ => return None,
    })
}

pub(super) fn bad_content(v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        "content",
        format!(
            "expected a string, a list of content blocks or None, got {}",
            type_name(v)
        ),
    )
}

pub(super) fn bad_block(i: usize, v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        format!("content[{i}]"),
        format!("expected a dict or a string, got {}", type_name(v)),
    )
}

pub(super) fn bad_tool_calls(v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        "tool_calls",
        format!("expected a list, got {}", type_name(v)),
    )
}

pub(super) fn bad_call(i: usize, v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        format!("tool_calls[{i}]"),
        format!("expected a dict, got {}", type_name(v)),
    )
}

pub(super) fn read_content(v: Option<Bound<'_, PyAny>>) -> Res<Content> {
    let Some(v) = v else {
        return Ok(Content::default());
    };
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Content::Text(text_of(s)?));
    }
    let Ok(list) = v.cast::<PyList>() else {
        return Err(bad_content(&v));
    };
    let mut blocks = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        blocks.push(read_block(i, &item)?);
    }
    Ok(Content::Blocks(blocks))
}

pub(super) fn read_block(i: usize, item: &Bound<'_, PyAny>) -> Res<Block> {
    if let Ok(s) = item.cast::<PyString>() {
        return Ok(Block::Text(text_of(s)?));
    }
    let Ok(d) = item.cast::<PyDict>() else {
        return Err(bad_block(i, item));
    };
    let py = item.py();
    let fields = Fields::Dict(d.clone());
    let kind = fields.get_str(intern!(py, "type"))?.unwrap_or_default();
    Ok(match BlockKind::parse(&kind) {
        BlockKind::Text => match fields.get(intern!(py, "text"))? {
            Some(t) => match t.cast::<PyString>() {
                Ok(s) => Block::Text(text_of(s)?),
                Err(_) => Block::Text(Text::from(String::new())),
            },
            None => Block::Text(Text::from(String::new())),
        },
        BlockKind::Image => Block::Image,
        BlockKind::Document => Block::Document,
        _ => Block::Other {
            value: to_value(item),
            kind,
        },
    })
}

pub(super) fn read_args(v: Option<Bound<'_, PyAny>>) -> Res<Value> {
    let Some(v) = v else {
        return Ok(Value::Object(Default::default()));
    };
    if let Ok(s) = v.cast::<PyString>() {
        // OpenAI sends arguments as a JSON string (empty for a call without any).
        let raw = s.to_string_lossy();
        if raw.trim().is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        return serde_json::from_str(&raw).map_err(|e| {
            InputError::new(
                None,
                "arguments",
                format!("not valid JSON ({e}): {}", preview(&raw)),
            )
        });
    }
    Ok(to_value(&v))
}

pub(super) fn read_tool_calls(v: Option<Bound<'_, PyAny>>) -> Res<Vec<ToolCall>> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Ok(list) = v.cast::<PyList>() else {
        return Err(bad_tool_calls(&v));
    };
    let py = v.py();
    let mut calls = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let locate = |mut e: InputError| {
            e.field = format!("tool_calls[{i}].{}", e.field);
            e
        };
        let Ok(d) = item.cast::<PyDict>() else {
            return Err(bad_call(i, &item));
        };
        let call = Fields::Dict(d.clone());
        let id = call.get_str(intern!(py, "id")).map_err(locate)?;
        // OpenAI shape: {"id", "type": "function", "function": {"name", "arguments"}}.
        let (name, args) = match call.get(intern!(py, "function")).map_err(locate)? {
            Some(f) => {
                let Ok(fd) = f.cast::<PyDict>() else {
                    return Err(locate(InputError::new(None, "function", "expected a dict")));
                };
                let f = Fields::Dict(fd.clone());
                (
                    f.get_str(intern!(py, "name")).map_err(locate)?,
                    read_args(f.get(intern!(py, "arguments")).map_err(locate)?).map_err(
                        |mut e| {
                            e.field = format!("function.{}", e.field);
                            locate(e)
                        },
                    )?,
                )
            }
            None => (
                call.get_str(intern!(py, "name")).map_err(locate)?,
                read_args(call.get(intern!(py, "args")).map_err(locate)?).map_err(locate)?,
            ),
        };
        calls.push(ToolCall {
            id,
            name: name.unwrap_or_default(),
            args,
        });
    }
    Ok(calls)
}

pub(super) fn read_usage<'py>(fields: &Fields<'py>, py: Python<'py>) -> Res<Option<Usage>> {
    if let Some(u) = fields.get(intern!(py, "usage_metadata"))? {
        // Read the two counts directly: this runs for every AI message.
        if let Ok(d) = u.cast::<PyDict>() {
            let count = |key: &Bound<'py, PyString>| -> u64 {
                d.get_item(key)
                    .ok()
                    .flatten()
                    .and_then(|v| v.extract::<u64>().ok())
                    .unwrap_or(0)
            };
            let usage = Usage {
                input: count(intern!(py, "input_tokens")),
                output: count(intern!(py, "output_tokens")),
            };
            if usage.total() > 0 {
                return Ok(Some(usage));
            }
        }
    }
    let Some(meta) = fields.get(intern!(py, "response_metadata"))? else {
        return Ok(None);
    };
    let Ok(meta) = meta.cast::<PyDict>() else {
        return Ok(None);
    };
    // Convert only the usage entries: the rest of the metadata may hold anything.
    let mut picked = serde_json::Map::new();
    for key in [
        intern!(py, "usage"),
        intern!(py, "token_usage"),
        intern!(py, "usage_metadata"),
    ] {
        if let Ok(Some(v)) = meta.get_item(key) {
            picked.insert(key.to_string(), to_value(&v));
        }
    }
    if picked.is_empty() {
        return Ok(None);
    }
    Ok(Usage::from_response_metadata(&Value::Object(picked)))
}

/// An object's instance `__dict__` (where pydantic keeps field values), fetched
/// directly rather than through attribute lookup; `None` for objects without one.
/// Kept for `benches/bench_turn.py`'s resumed turn (equal messages as new objects,
/// as after a checkpointer load): `getattr(item, "__dict__")` made 10,000 messages
/// 25-40% slower there (medians 13-19 ms against 10-13 ms, alternating builds).
pub(super) fn instance_dict<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyDict>> {
    let py = item.py();
    // SAFETY: `item` is a live object we hold a reference to, with the GIL held.
    // PyObject_GenericGetDict returns a new reference, or null with an exception set
    // (objects without a __dict__), which `from_owned_ptr_or_err` takes over.
    let dict = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyObject_GenericGetDict(item.as_ptr(), std::ptr::null_mut()),
        )
    };
    dict.ok()?.cast_into::<PyDict>().ok()
}

/// A send time from `additional_kwargs` or `response_metadata` (`timestamp`,
/// `created_at`, `created`, `time`): seconds or milliseconds since the epoch, or an
/// ISO 8601 string.
pub(super) fn read_timestamp<'py>(fields: &Fields<'py>, py: Python<'py>) -> Option<f64> {
    for holder in [
        intern!(py, "additional_kwargs"),
        intern!(py, "response_metadata"),
    ] {
        let Ok(Some(d)) = fields.get(holder) else {
            continue;
        };
        let Ok(d) = d.cast::<PyDict>() else { continue };
        for key in [
            intern!(py, "timestamp"),
            intern!(py, "created_at"),
            intern!(py, "created"),
            intern!(py, "time"),
        ] {
            let Ok(Some(v)) = d.get_item(key) else {
                continue;
            };
            if v.is_instance_of::<pyo3::types::PyBool>() {
                continue;
            }
            if let Ok(s) = v.cast::<PyString>() {
                if let Some(t) = s.to_str().ok().and_then(crate::message::parse_iso8601) {
                    return Some(t);
                }
                continue;
            }
            if let Ok(t) = v.extract::<f64>() {
                if t.is_finite() && t > 0.0 {
                    // Milliseconds are larger than any date in seconds this century.
                    return Some(if t > 1e11 { t / 1000.0 } else { t });
                }
            }
        }
    }
    None
}

/// Where a message's role and fields are, for any accepted shape. `None` fields mean
/// the item was a bare string or a `(role, content)` tuple, already read.
pub(super) fn locate<'py>(item: &Bound<'py, PyAny>) -> Res<(Role, Option<String>, Fields<'py>)> {
    let py = item.py();
    let unknown = |s: &str| {
        InputError::new(
            None,
            "type",
            format!("unknown message type {s:?}; expected human/user, ai/assistant, tool, system, function or chat"),
        )
    };
    if let Ok(d) = item.cast::<PyDict>() {
        let top = Fields::Dict(d.clone());
        // dumpd(): {"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}
        if top.get_str(intern!(py, "type"))?.as_deref() == Some("constructor") {
            let class = top
                .get(intern!(py, "id"))?
                .and_then(|ids| ids.cast::<PyList>().ok().and_then(|l| l.iter().last()))
                .map(|last| last.to_string())
                .unwrap_or_default();
            let role = role_from_str(&class).ok_or_else(|| unknown(&class))?;
            let kwargs = top
                .get(intern!(py, "kwargs"))?
                .and_then(|k| k.cast_into::<PyDict>().ok())
                .ok_or_else(|| InputError::new(None, "kwargs", "expected a dict"))?;
            return Ok((role, None, Fields::Dict(kwargs)));
        }
        // messages_to_dict(): {"type": "ai", "data": {...}}
        if let (Some(t), Some(data)) = (
            top.get_str(intern!(py, "type"))?,
            top.get(intern!(py, "data"))?,
        ) {
            if let Ok(data) = data.cast_into::<PyDict>() {
                let role = role_from_str(&t).ok_or_else(|| unknown(&t))?;
                let role_name = Fields::Dict(data.clone()).get_str(intern!(py, "role"))?;
                return Ok((
                    role,
                    role_name.filter(|_| role == Role::Other),
                    Fields::Dict(data),
                ));
            }
        }
        // {"role": ...} (OpenAI / Anthropic) or {"type": ...} (LangChain dict).
        let role_str = match top.get_str(intern!(py, "role"))? {
            Some(r) => r,
            None => top.get_str(intern!(py, "type"))?.ok_or_else(|| {
                InputError::new(None, "role", "a message dict needs a 'role' or 'type' key")
            })?,
        };
        let role = role_from_str(&role_str).ok_or_else(|| unknown(&role_str))?;
        let role_name = (role_str == "developer").then(|| role_str.clone());
        return Ok((role, role_name, top));
    }
    let fields = match instance_dict(item) {
        Some(d) => Fields::Model(item.clone(), d),
        None => Fields::Attrs(item.clone()),
    };
    let role = {
        let t = fields.get(intern!(py, "type"))?;
        let t = t.ok_or_else(|| {
            InputError::new(
                None,
                "type",
                format!(
                    "expected a LangChain message, a dict, a (role, content) tuple or a string; got {}",
                    type_name(item)
                ),
            )
        })?;
        match t.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) {
            Some(name) => role_from_str(name).ok_or_else(|| unknown(name)),
            // Owned first: str() may run Python code.
            None => Err(unknown(&t.to_string())),
        }
    }?;
    let role_name = match role {
        Role::Other => fields.get_str(intern!(py, "role"))?,
        Role::System => match fields.get(intern!(py, "additional_kwargs"))? {
            Some(kw) => match kw.cast::<PyDict>() {
                Ok(kw) => Fields::Dict(kw.clone()).get_str(intern!(py, "__openai_role__"))?,
                Err(_) => None,
            },
            None => None,
        },
        _ => None,
    };
    Ok((role, role_name, fields))
}

/// What no message can do without, as LangChain's own converter requires: content
/// (an assistant message may have none: OpenAI sends `null` beside tool calls), and the
/// id of the call a tool message answers. Both readers apply it, so they fail alike.
pub(super) fn require(role: Role, has_content: bool, has_call_id: bool) -> Res<()> {
    if !has_content && role != Role::Ai {
        return Err(InputError::new(
            None,
            "content",
            "missing: every message but an assistant's needs content",
        ));
    }
    if !has_call_id {
        return Err(InputError::new(
            None,
            "tool_call_id",
            "missing: a tool message needs the id of the call it answers",
        ));
    }
    Ok(())
}

/// The start of a long text, for an error message.
pub(super) fn preview(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{:?}...", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// Where a message's content was found: the content object and the dict holding it,
/// so that the cache can notice a content reassigned in place.
pub struct Origin<'py> {
    pub content: Option<Bound<'py, PyAny>>,
    pub fields: Option<Bound<'py, PyDict>>,
}

/// Read one message of any accepted shape, with the origin of its content.
pub fn read_message<'py>(item: &Bound<'py, PyAny>) -> Res<(Message, Origin<'py>)> {
    let py = item.py();
    if let Ok(s) = item.cast::<PyString>() {
        let m = Message {
            role: Role::Human,
            content: Content::Text(text_of(s)?),
            ..Message::default()
        };
        let origin = Origin {
            content: Some(item.clone()),
            fields: None,
        };
        return Ok((m, origin));
    }
    if let Ok(t) = item.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(InputError::new(
                None,
                "tuple",
                "a message tuple must be (role, content)",
            ));
        }
        let role_str = t.get_item(0).map_err(|e| py_err("role", e))?.to_string();
        let role = role_from_str(&role_str)
            .ok_or_else(|| InputError::new(None, "role", format!("unknown role {role_str:?}")))?;
        let content = t.get_item(1).map_err(|e| py_err("content", e))?;
        let m = Message {
            role,
            content: read_content(Some(content.clone()))?,
            ..Message::default()
        };
        let origin = Origin {
            content: Some(content),
            fields: None,
        };
        return Ok((m, origin));
    }
    let (role, role_name, fields) = locate(item)?;
    let content_obj = fields.get(intern!(py, "content"))?;
    let mut m = Message {
        role,
        role_name,
        content: read_content(content_obj.clone())?,
        name: fields.get_str(intern!(py, "name"))?,
        id: fields.get_str(intern!(py, "id"))?,
        ..Message::default()
    };
    m.timestamp = read_timestamp(&fields, py);
    match role {
        Role::Ai => {
            m.tool_calls = read_tool_calls(fields.get(intern!(py, "tool_calls"))?)?;
            m.usage = read_usage(&fields, py)?;
        }
        Role::Tool => m.tool_call_id = fields.get_str(intern!(py, "tool_call_id"))?,
        _ => {}
    }
    require(
        role,
        content_obj.is_some(),
        role != Role::Tool || m.tool_call_id.is_some(),
    )?;
    let origin = Origin {
        content: content_obj,
        fields: fields.dict().cloned(),
    };
    Ok((m, origin))
}

/// The items of a message sequence (list, tuple or any iterable).
pub fn items<'py>(seq: &Bound<'py, PyAny>) -> Res<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = seq.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    if seq.is_instance_of::<PyString>() || seq.is_instance_of::<PyDict>() {
        return Err(InputError::new(
            None,
            "messages",
            "expected a sequence of messages, got a single string or dict",
        ));
    }
    let iter = seq.try_iter().map_err(|_| {
        InputError::new(
            None,
            "messages",
            format!("expected a list of messages, got {}", type_name(seq)),
        )
    })?;
    iter.map(|r| r.map_err(|e| py_err("messages", e))).collect()
}

/// The messages as a list: the list itself when given one (no copy), else a new list
/// of the sequence's items.
pub fn as_list<'py>(seq: &Bound<'py, PyAny>) -> Res<Bound<'py, PyList>> {
    if let Ok(list) = seq.cast::<PyList>() {
        return Ok(list.clone());
    }
    let items = items(seq)?;
    PyList::new(seq.py(), items).map_err(|e| py_err("messages", e))
}

/// Read every message, each error placed at its index.
pub fn read_all<'py>(seq: &Bound<'py, PyAny>) -> Res<Vec<Message>> {
    items(seq)?
        .iter()
        .enumerate()
        .map(|(i, item)| read_message(item).map(|(m, _)| m).map_err(|e| e.at(i)))
        .collect()
}

//! Python objects -> core messages. The only module besides the `_core` bindings that
//! touches pyo3 types.
//!
//! LangChain messages are read attribute by attribute (never `model_dump()`); dicts in
//! LangChain, OpenAI or Anthropic shape are read key by key. Strings are borrowed from
//! Python, not copied.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicIsize, AtomicU32, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::cutoff::PairShape;
use crate::message::{Block, Content, InputError, Message, Role, Text, ToolCall, Usage};
use crate::pyrepr;
use crate::reprlen;
use crate::tokens::{CachedCounts, ConversationCache, Encoding, HeuristicParams, Measure};

type Res<T> = Result<T, InputError>;

fn py_err(field: &str, e: PyErr) -> InputError {
    InputError::new(None, field, e.to_string())
}

/// Where a message's fields come from: a LangChain object's attributes or a dict.
enum Fields<'py> {
    Attrs(Bound<'py, PyAny>),
    /// A pydantic model: fields are read from its `__dict__` (a plain dict lookup,
    /// much cheaper than attribute resolution), anything else by attribute.
    Model(Bound<'py, PyAny>, Bound<'py, PyDict>),
    Dict(Bound<'py, PyDict>),
}

impl<'py> Fields<'py> {
    /// The dict the fields live in, when there is one.
    fn dict(&self) -> Option<&Bound<'py, PyDict>> {
        match self {
            Fields::Model(_, d) | Fields::Dict(d) => Some(d),
            Fields::Attrs(_) => None,
        }
    }

    /// The field's value; `None` when it is absent or Python `None`.
    fn get(&self, name: &Bound<'py, PyString>) -> Res<Option<Bound<'py, PyAny>>> {
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

    /// `f` of the field's value, as `get` finds it, lent instead of held: two
    /// refcount calls fewer for fields only looked at (several a message). `f` must
    /// not run Python code, which could drop the value from its dict meanwhile.
    fn peek<R>(
        &self,
        name: &Bound<'py, PyString>,
        f: impl FnOnce(Option<&Bound<'py, PyAny>>) -> R,
    ) -> Res<R> {
        if let Fields::Model(_, d) | Fields::Dict(d) = self {
            // SAFETY: `d` and `name` are live objects we hold references to, with the
            // GIL held. The result is a borrowed reference or null (absent, or an
            // error left set); it is valid while the dict keeps the entry, and `f`
            // (which may not run Python code) is all that uses it.
            let p = unsafe { pyo3::ffi::PyDict_GetItemWithError(d.as_ptr(), name.as_ptr()) };
            // SAFETY: non-null, borrowed from the dict, as above.
            if let Some(v) = unsafe { Borrowed::from_ptr_or_opt(d.py(), p) } {
                return Ok(f((!v.is_none()).then_some(&*v)));
            }
            // Absent or failed: `get` knows what that means for this kind of fields.
            let _ = PyErr::take(d.py());
        }
        Ok(f(self.get(name)?.as_ref()))
    }

    fn get_str(&self, name: &Bound<'py, PyString>) -> Res<Option<String>> {
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

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// A Python `str` held as core text, without copying its buffer.
struct PyText(PyBackedStr);

impl AsRef<str> for PyText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

fn text_of(s: &Bound<'_, PyString>) -> Res<Text> {
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
const MAX_DEPTH: usize = 128;

/// A Python value as JSON. Never fails: what JSON cannot hold (bytes, dates, custom
/// objects, non-string keys, NaN) becomes its `str()`, so odd arguments pass through.
fn to_value(v: &Bound<'_, PyAny>) -> Value {
    to_value_at(v, 0)
}

fn to_value_at(v: &Bound<'_, PyAny>, depth: usize) -> Value {
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

fn role_from_str(s: &str) -> Option<Role> {
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

fn bad_content(v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        "content",
        format!(
            "expected a string, a list of content blocks or None, got {}",
            type_name(v)
        ),
    )
}

fn bad_block(i: usize, v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        format!("content[{i}]"),
        format!("expected a dict or a string, got {}", type_name(v)),
    )
}

fn bad_tool_calls(v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        "tool_calls",
        format!("expected a list, got {}", type_name(v)),
    )
}

fn bad_call(i: usize, v: &Bound<'_, PyAny>) -> InputError {
    InputError::new(
        None,
        format!("tool_calls[{i}]"),
        format!("expected a dict, got {}", type_name(v)),
    )
}

fn read_content(v: Option<Bound<'_, PyAny>>) -> Res<Content> {
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

fn read_block(i: usize, item: &Bound<'_, PyAny>) -> Res<Block> {
    if let Ok(s) = item.cast::<PyString>() {
        return Ok(Block::Text(text_of(s)?));
    }
    let Ok(d) = item.cast::<PyDict>() else {
        return Err(bad_block(i, item));
    };
    let py = item.py();
    let fields = Fields::Dict(d.clone());
    let kind = fields.get_str(intern!(py, "type"))?.unwrap_or_default();
    Ok(match kind.as_str() {
        "text" => match fields.get(intern!(py, "text"))? {
            Some(t) => match t.cast::<PyString>() {
                Ok(s) => Block::Text(text_of(s)?),
                Err(_) => Block::Text(Text::from(String::new())),
            },
            None => Block::Text(Text::from(String::new())),
        },
        "image" | "image_url" | "input_image" => Block::Image,
        "document" | "file" | "input_file" => Block::Document,
        _ => Block::Other {
            value: to_value(item),
            kind,
        },
    })
}

fn read_args(v: Option<Bound<'_, PyAny>>) -> Res<Value> {
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

fn read_tool_calls(v: Option<Bound<'_, PyAny>>) -> Res<Vec<ToolCall>> {
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

fn read_usage<'py>(fields: &Fields<'py>, py: Python<'py>) -> Res<Option<Usage>> {
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
fn instance_dict<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyDict>> {
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
fn read_timestamp<'py>(fields: &Fields<'py>, py: Python<'py>) -> Option<f64> {
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
fn locate<'py>(item: &Bound<'py, PyAny>) -> Res<(Role, Option<String>, Fields<'py>)> {
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
    let role = fields.peek(intern!(py, "type"), |t| {
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
            None => Err(unknown(&t.clone().to_string())),
        }
    })??;
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
fn require(role: Role, has_content: bool, has_call_id: bool) -> Res<()> {
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
fn preview(text: &str) -> String {
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

fn str_len(v: &Bound<'_, PyAny>) -> usize {
    v.cast::<PyString>()
        .ok()
        .and_then(|s| s.len().ok())
        .unwrap_or(0)
}

fn str_of(v: &Bound<'_, PyAny>) -> Option<String> {
    v.cast::<PyString>()
        .ok()
        .map(|s| s.to_string_lossy().into_owned())
}

/// A message read for counting only: its measure, usage and pair shape, taken
/// straight from the Python objects without converting text or arguments.
pub struct Scanned<'py> {
    pub counts: CachedCounts,
    /// Only when asked for: collecting ids costs allocations that counting avoids.
    pub shape: Option<PairShape>,
    pub origin: Origin<'py>,
}

/// Scan one message of any accepted shape. Agrees with `read_message` followed by
/// `tokens::measure` (tested), at a fraction of the cost.
pub fn scan_message<'py>(
    item: &Bound<'py, PyAny>,
    want_shape: bool,
    want_usage: bool,
) -> Res<Scanned<'py>> {
    let py = item.py();
    // Bare strings and tuples are rare and small: read them fully.
    if item.is_instance_of::<PyString>() || item.is_instance_of::<PyTuple>() {
        let (m, origin) = read_message(item)?;
        return Ok(Scanned {
            counts: CachedCounts::of(&m),
            shape: want_shape.then(|| PairShape::from(&m)),
            origin,
        });
    }
    let (role, role_name, fields) = locate(item)?;
    let content = fields.get(intern!(py, "content"))?;
    require(role, content.is_some(), true)?;
    let mut shape = PairShape {
        role: Some(role),
        ..PairShape::default()
    };
    let (mut body, mut images, mut documents) = (0usize, 0u32, 0u32);
    let mut list_content = false;
    match &content {
        None => {}
        Some(c) if c.is_instance_of::<PyString>() => body += str_len(c),
        Some(c) => {
            let Ok(list) = c.cast::<PyList>() else {
                return Err(bad_content(c));
            };
            list_content = true;
            for (i, block) in list.iter().enumerate() {
                if block.is_instance_of::<PyString>() {
                    body += str_len(&block);
                    continue;
                }
                let Ok(d) = block.cast::<PyDict>() else {
                    return Err(bad_block(i, &block));
                };
                let b = Fields::Dict(d.clone());
                let kind = b
                    .get(intern!(py, "type"))?
                    .and_then(|t| str_of(&t))
                    .unwrap_or_default();
                match kind.as_str() {
                    "text" => body += b.get(intern!(py, "text"))?.map_or(0, |t| str_len(&t)),
                    "image" | "image_url" | "input_image" => images += 1,
                    "document" | "file" | "input_file" => documents += 1,
                    other => {
                        body += reprlen::repr_len(&block);
                        if !want_shape {
                            continue;
                        }
                        match other {
                            "tool_use" => {
                                if let Some(id) = b.get(intern!(py, "id"))?.and_then(|v| str_of(&v))
                                {
                                    let name = b.get(intern!(py, "name"))?.and_then(|v| str_of(&v));
                                    if role == Role::Ai
                                        && !shape.calls.iter().any(|(c, _)| *c == id)
                                    {
                                        shape.calls.push((id, name.unwrap_or_default()));
                                    }
                                }
                            }
                            "tool_result" => {
                                shape.is_result = true;
                                if let Some(id) =
                                    b.get(intern!(py, "tool_use_id"))?.and_then(|v| str_of(&v))
                                {
                                    if !shape.results.contains(&id) {
                                        shape.results.push(id);
                                    }
                                }
                            }
                            "thinking" | "redacted_thinking" | "reasoning" => shape.thinking = true,
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    let mut usage = None;
    match role {
        Role::Ai => {
            if let Some(calls) = fields.get(intern!(py, "tool_calls"))? {
                let Ok(list) = calls.cast::<PyList>() else {
                    return Err(bad_tool_calls(&calls));
                };
                // LangChain calls are counted as they are, as LangChain repr()s them;
                // a list holding an OpenAI call (a `function` key) as LangChain counts
                // the calls it converts the list to.
                let mut reprs = Vec::with_capacity(list.len());
                let mut calls = Vec::new();
                let mut openai = false;
                for (i, call) in list.iter().enumerate() {
                    let Ok(d) = call.cast::<PyDict>() else {
                        return Err(bad_call(i, &call));
                    };
                    let Some(len) = reprlen::tool_call_repr_len(d) else {
                        openai = true;
                        break;
                    };
                    reprs.push(len);
                    if !want_shape {
                        continue;
                    }
                    let c = Fields::Dict(d.clone());
                    if let Some(id) = c.get(intern!(py, "id"))?.as_ref().and_then(str_of) {
                        let name = c.get(intern!(py, "name"))?.as_ref().and_then(str_of);
                        calls.push((id, name.unwrap_or_default()));
                    }
                }
                if openai {
                    let (m, _) = read_message(item)?;
                    if !list_content && !m.tool_calls.is_empty() {
                        body += pyrepr::tool_calls_repr_len(&m.tool_calls);
                    }
                    if want_shape {
                        calls = m
                            .calls()
                            .into_iter()
                            .map(|(id, name)| (id.to_owned(), name.to_owned()))
                            .collect();
                    }
                } else if !list_content && !reprs.is_empty() {
                    body += pyrepr::py_list_repr_len(reprs.into_iter());
                }
                if want_shape {
                    for (id, name) in calls {
                        if !shape.calls.iter().any(|(c, _)| *c == id) {
                            shape.calls.push((id, name));
                        }
                    }
                }
            }
            if want_usage {
                usage = read_usage(&fields, py)?.map(|u| (u.input, u.output));
            }
        }
        Role::Tool => {
            shape.is_result = true;
            let (len, id, present) = fields.peek(intern!(py, "tool_call_id"), |id| {
                id.map_or((0, None, false), |id| {
                    (str_len(id), want_shape.then(|| str_of(id)).flatten(), true)
                })
            })?;
            require(role, true, present)?;
            body += len;
            if let Some(id) = id.filter(|id| !shape.results.contains(id)) {
                shape.results.insert(0, id);
            }
        }
        _ => {}
    }
    let role_str = match (&role_name, role) {
        (Some(n), Role::Other | Role::System) => n.chars().count(),
        _ => role.openai_name().len(),
    };
    body += role_str;
    let want_tool_name = want_shape && shape.is_result;
    let (name_len, tool_name) = fields.peek(intern!(py, "name"), |name| {
        name.map_or((0, None), |n| {
            (str_len(n), want_tool_name.then(|| str_of(n)).flatten())
        })
    })?;
    shape.tool_name = tool_name.filter(|n| !n.is_empty());
    Ok(Scanned {
        counts: CachedCounts::counted(
            Measure::new(body, name_len, images, documents),
            // Only AI messages report usage: for the rest, none is known without looking.
            (want_usage || role != Role::Ai).then_some(usage),
        ),
        shape: want_shape.then_some(shape),
        origin: Origin {
            content,
            fields: fields.dict().cloned(),
        },
    })
}

/// What the cache keeps of one message: the object and its content (held, so their
/// addresses cannot be reused while cached), its counts and its pair shape.
pub struct Entry {
    obj: Py<PyAny>,
    content: Option<Py<PyAny>>,
    /// The dict the content was read from (a model's `__dict__`, or the message dict).
    fields: Option<Py<PyDict>>,
    pub counts: CachedCounts,
    /// Boxed: most calls only count, and a small entry keeps a long conversation's
    /// cache compact.
    pub shape: Option<Box<PairShape>>,
    /// The converted message, when a caller (the passes) needed it.
    pub message: Option<Arc<Message>>,
    /// The edited copy last built for this message, with the fingerprint of its
    /// edits: a later turn with the same edits reuses the same object.
    pub edited: Option<(u64, Py<PyAny>)>,
}

impl Entry {
    /// The object this entry counted.
    pub fn object<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.obj.bind(py)
    }

    fn new(
        item: &Bound<'_, PyAny>,
        origin: Origin<'_>,
        counts: CachedCounts,
        shape: Option<PairShape>,
    ) -> Self {
        Entry {
            obj: item.clone().unbind(),
            content: origin.content.map(Bound::unbind),
            fields: origin.fields.map(Bound::unbind),
            counts,
            shape: shape.map(Box::new),
            message: None,
            edited: None,
        }
    }

    /// Whether the item at `ptr` is the message counted here, still holding the same
    /// content object (a content reassigned in place is counted again).
    fn still_matches(
        &self,
        py: Python<'_>,
        ptr: *mut pyo3::ffi::PyObject,
        content_key: &Bound<'_, PyString>,
    ) -> bool {
        if self.obj.as_ptr() != ptr {
            return false;
        }
        let held = self
            .content
            .as_ref()
            .map_or(std::ptr::null_mut(), Py::as_ptr);
        match &self.fields {
            // One dict lookup, much cheaper than resolving the attribute.
            Some(d) => {
                let now = content_ptr(d.bind(py), content_key);
                now == held || (held.is_null() && now == py.None().as_ptr())
            }
            // Same address as the object we hold: it is that object.
            None => {
                content_of(self.obj.bind(py)).map_or(std::ptr::null_mut(), |c| c.as_ptr()) == held
            }
        }
    }
}

impl Entry {
    /// Whether `item`, a different object at this entry's position, is an equal copy of
    /// the message counted here (a conversation reloaded from a checkpointer arrives as
    /// new objects). If so the entry adopts it and keeps its counts, conversion and
    /// edited copy: equal fields give equal results.
    fn adopt_equal(&mut self, item: &Bound<'_, PyAny>) -> bool {
        let py = item.py();
        let old = self.obj.bind(py);
        // The same object with a reassigned content is not a copy: it was changed.
        if old.is(item) || !old.get_type().is(item.get_type()) {
            return false;
        }
        // Models compare by their field dicts (C-level equality, without the model's
        // own __eq__); dicts, tuples and strings by value.
        let equal = match (instance_dict(old), instance_dict(item)) {
            (Some(a), Some(b)) => a.eq(&b),
            _ => old.eq(item),
        };
        if !equal.unwrap_or(false) {
            return false;
        }
        let fields = match &self.fields {
            Some(f) => match corresponding_dict(old, f.bind(py), item) {
                Some(d) => Some(d),
                None => return false,
            },
            None => None,
        };
        let content = match &fields {
            Some(d) => d
                .get_item(intern!(py, "content"))
                .ok()
                .flatten()
                .filter(|c| !c.is_none()),
            None => content_of(item),
        };
        self.obj = item.clone().unbind();
        self.fields = fields.map(Bound::unbind);
        self.content = content.map(Bound::unbind);
        true
    }
}

/// In `new` (equal to `old`), the dict that plays the part `fields` plays in `old`:
/// the item itself, its `data` / `kwargs` (serialized LangChain shapes), or its
/// instance `__dict__`.
fn corresponding_dict<'py>(
    old: &Bound<'py, PyAny>,
    fields: &Bound<'py, PyDict>,
    new: &Bound<'py, PyAny>,
) -> Option<Bound<'py, PyDict>> {
    if fields.is(old) {
        return new.cast::<PyDict>().ok().cloned();
    }
    if let (Ok(old), Ok(new)) = (old.cast::<PyDict>(), new.cast::<PyDict>()) {
        for key in ["data", "kwargs"] {
            if old
                .get_item(key)
                .ok()
                .flatten()
                .is_some_and(|d| d.is(fields))
            {
                return new.get_item(key).ok().flatten()?.cast_into::<PyDict>().ok();
            }
        }
        return None;
    }
    instance_dict(new)
}

/// Where `content` was last found among a field dict's entries: a LangChain model's
/// `__dict__` keeps its fields in class order, so it is nearly always the same place.
static CONTENT_AT: AtomicIsize = AtomicIsize::new(0);
/// Lookups that missed that place; one in `LEARN_EVERY` walks the dict to move it, so
/// dicts of mixed layouts cost little more than plain lookups.
static CONTENT_MISSES: AtomicU32 = AtomicU32::new(0);
const LEARN_EVERY: u32 = 8;

/// The address of `d[key]`, `key` being `"content"` (null when absent), without
/// touching the value: taking a reference would write to its refcount, a cache miss
/// per message on a warm turn. Only ever compared, never followed.
///
/// The key is looked for first at the entry where it was last found (one step of
/// `PyDict_Next` reads less memory than a hashed lookup, and this runs for every
/// message of every turn); that entry counts only if its key is that very string.
fn content_ptr(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>) -> *mut pyo3::ffi::PyObject {
    use pyo3::ffi;
    let (mut k, mut v): (*mut ffi::PyObject, *mut ffi::PyObject) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    let mut at = CONTENT_AT.load(Ordering::Relaxed);
    // SAFETY: `d` is a live dict we hold a reference to, with the GIL held.
    // PyDict_Next checks `at` against the dict's entries (out of range, it returns 0)
    // and writes borrowed pointers to a live entry, which are only compared here.
    if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut at, &mut k, &mut v) } != 0 && k == key.as_ptr() {
        return v;
    }
    // SAFETY: as above. PyDict_GetItemWithError returns a borrowed pointer (or null,
    // with an exception set only if hashing the key failed, which cannot happen for a
    // str key); the pointer is compared, not dereferenced.
    let ptr = unsafe { ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr()) };
    if ptr.is_null() {
        let _ = PyErr::take(d.py());
    } else if CONTENT_MISSES
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(LEARN_EVERY)
    {
        let mut pos = 0;
        loop {
            let at = pos;
            // SAFETY: as above; only the key's address is compared.
            if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } == 0 {
                break;
            }
            if k == key.as_ptr() {
                CONTENT_AT.store(at, Ordering::Relaxed);
                break;
            }
        }
    }
    ptr
}

/// The content object of an item that has no field dict (strings, tuples, plain
/// objects), for the identity check.
fn content_of<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if item.is_instance_of::<PyString>() {
        return Some(item.clone());
    }
    if let Ok(t) = item.cast::<PyTuple>() {
        return t.get_item(1).ok();
    }
    item.getattr(intern!(item.py(), "content"))
        .ok()
        .filter(|c| !c.is_none())
}

/// The cache key of a conversation: the caller's key, or else the first message's
/// id (stable across turns and restarts), or else its identity.
pub fn conversation_key(key: Option<&str>, list: &Bound<'_, PyList>) -> u64 {
    let mut h = DefaultHasher::new();
    match (key, list.get_item(0).ok()) {
        (Some(k), _) => ("key", k).hash(&mut h),
        (None, Some(first)) => {
            let id = first
                .getattr(intern!(first.py(), "id"))
                .ok()
                .filter(|v| !v.is_none())
                .map(|v| v.to_string());
            match id {
                Some(id) => ("id", id).hash(&mut h),
                None => ("ptr", first.as_ptr() as usize).hash(&mut h),
            }
        }
        (None, None) => "empty".hash(&mut h),
    }
    h.finish()
}

/// What the cache keeps of one conversation.
#[derive(Default)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    /// What the passes scan and what they worked out, per message: `skeletons[i]`
    /// and `memos[i]` go with `entries[i]` while that entry holds its converted
    /// message. Kept dense, beside the entries rather than in each one: the passes
    /// borrow the skeletons as they are and walk thousands of memos in memory order.
    /// Empty while the conversation is only counted.
    pub skeletons: Vec<crate::passes::Skeleton>,
    pub memos: crate::passes::Memos,
    /// The tokens of the first entries under `tokens_of`, dense: a warm turn copies
    /// them instead of working each one out of its entry again. Cut back to the first
    /// entry replaced or added; `tokens_for` extends it.
    pub tokens: Vec<f64>,
    pub tokens_of: Option<(Encoding, HeuristicParams)>,
    /// The measures of the first entries, dense for the passes; cut back like
    /// `tokens`, extended by `fill_measures`.
    pub measures: Vec<Measure>,
    /// Every tool result before this index has its link in its skeleton.
    pub links_upto: usize,
}

impl Conversation {
    /// Each entry's tokens under `enc` and `p`, working out only those not kept.
    pub fn tokens_for(&mut self, enc: Encoding, p: &HeuristicParams) -> &[f64] {
        if self.tokens_of != Some((enc, *p)) {
            self.tokens.clear();
            self.tokens_of = Some((enc, *p));
        }
        self.tokens.truncate(self.entries.len());
        let have = self.tokens.len();
        let more = self.entries[have..].iter().map(|e| e.counts.tokens(enc, p));
        self.tokens.extend(more);
        &self.tokens
    }

    /// Bring `measures` up to the entries.
    pub fn fill_measures(&mut self) {
        self.measures.truncate(self.entries.len());
        let have = self.measures.len();
        let more = self.entries[have..].iter().map(|e| e.counts.measure);
        self.measures.extend(more);
    }
}

/// Put `value` at `i`, filling any gap before it with defaults.
fn set_at<T: Default>(v: &mut Vec<T>, i: usize, value: T) {
    if i >= v.len() {
        v.resize_with(i, T::default);
        v.push(value);
    } else {
        v[i] = value;
    }
}

/// Messages read for this call: cached entries where the same objects were seen
/// before, fresh ones elsewhere.
pub struct ReadSet {
    pub kept: Conversation,
    /// `(index, message)` of each entry converted by this call that still needs its
    /// BPE count.
    pub fresh: Vec<(usize, Arc<Message>)>,
}

/// What a caller needs from each message.
#[derive(Clone, Copy)]
pub struct Want {
    /// A BPE count under this encoding (the message text is converted for it).
    pub bpe: Option<Encoding>,
    /// The pair shape (tool call and result ids).
    pub shape: bool,
    /// The whole message (text, arguments), kept for the passes.
    pub message: bool,
    /// The usage the message reports.
    pub usage: bool,
}

impl Want {
    fn satisfied_by(&self, e: &Entry) -> bool {
        self.bpe.is_none_or(|enc| e.counts.bpe(enc).is_some())
            && (!self.shape || e.shape.is_some())
            && (!self.message || e.message.is_some())
            && (!self.usage || e.counts.usage_read())
    }
}

/// Read `items` against the conversation's cached entries, converting only messages
/// not seen before, edited since, or lacking something `want` asks for.
pub fn read_with_cache(list: &Bound<'_, PyList>, cached: Conversation, want: Want) -> Res<ReadSet> {
    // Entries are updated in place: a warm turn touches only what changed.
    let Conversation {
        mut entries,
        mut skeletons,
        mut memos,
        mut tokens,
        tokens_of,
        mut measures,
        mut links_upto,
    } = cached;
    entries.truncate(list.len());
    skeletons.truncate(list.len());
    memos.truncate(list.len());
    let needed = list.len();
    // Room for the next turns' messages too: a conversation grows a little every
    // turn, and growing a full vector moves every entry (the turn after a
    // conversation is first seen would always pay for that).
    let room = needed + needed / 4 + 8;
    if entries.capacity() < needed {
        entries.reserve_exact(room - entries.len());
    }
    if want.message && skeletons.capacity() < needed {
        skeletons.reserve_exact(room - skeletons.len());
    }
    if want.message && memos.capacity() < needed {
        memos.reserve_exact(room - memos.len());
    }
    let mut fresh = Vec::new();
    let cached_len = entries.len();
    // The first cached entry replaced by another message: what the results after it
    // know of their calls (in the messages before them) is stale from there on.
    let mut first_replaced: Option<usize> = None;
    // Reading a message may run Python code (a property, a __getattr__) that changes
    // the list: its length is read again when the loop reaches the old one, and an
    // index past a shortened list finds no item, which ends the loop.
    let mut len = list.len();
    let content_key = intern!(list.py(), "content");
    let mut i = 0;
    loop {
        if i >= len {
            len = list.len();
            if i >= len {
                break;
            }
        }
        let reusable = entries.get(i).is_some_and(|e| {
            want.satisfied_by(e) && e.still_matches(list.py(), list_item_ptr(list, i), content_key)
        });
        if reusable {
            i += 1;
            continue;
        }
        let Ok(item) = list.get_item(i) else { break };
        if let Some(e) = entries.get_mut(i) {
            if want.satisfied_by(e) && e.adopt_equal(&item) {
                i += 1;
                continue;
            }
        }
        // A replaced message's skeleton and memo go with it.
        let mut skeleton = crate::passes::Skeleton::default();
        let entry = if want.bpe.is_some() || want.message {
            let (m, origin) = read_message(&item).map_err(|e| e.at(i))?;
            let m = Arc::new(m);
            let mut entry = Entry::new(
                &item,
                origin,
                CachedCounts::of(&m),
                Some(PairShape::from(&*m)),
            );
            if want.message {
                skeleton = crate::passes::Skeleton::cached(&m);
                entry.message = Some(Arc::clone(&m));
            }
            if want.bpe.is_some() {
                fresh.push((i, m));
            }
            entry
        } else {
            let scanned = scan_message(&item, want.shape, want.usage).map_err(|e| e.at(i))?;
            Entry::new(&item, scanned.origin, scanned.counts, scanned.shape)
        };
        match entries.get_mut(i) {
            Some(slot) => {
                *slot = entry;
                first_replaced.get_or_insert(i);
            }
            None => entries.push(entry),
        }
        links_upto = links_upto.min(i);
        tokens.truncate(i);
        measures.truncate(i);
        if want.message || i < skeletons.len() {
            set_at(&mut skeletons, i, skeleton);
        }
        memos.reset(i);
        i += 1;
    }
    entries.truncate(i);
    skeletons.truncate(i);
    memos.truncate(i);
    if want.message {
        // Every entry holds its message now; new ones start with empty memos.
        links_upto = links_upto.min(skeletons.len());
        skeletons.resize_with(i, crate::passes::Skeleton::default);
        memos.resize(i);
    }
    if let Some(k) = first_replaced {
        for s in skeletons.iter_mut().take(cached_len).skip(k + 1) {
            s.link = None;
        }
        for j in k + 1..cached_len.min(i) {
            memos.forget_call(j);
        }
    }
    tokens.truncate(i);
    measures.truncate(i);
    Ok(ReadSet {
        kept: Conversation {
            entries,
            skeletons,
            memos,
            tokens,
            tokens_of,
            measures,
            links_upto: links_upto.min(i),
        },
        fresh,
    })
}

/// The address of `list[i]`, without touching the item (taking a reference would
/// write to its refcount, a cache miss per message on a warm turn of a long
/// conversation). Null when `i` is out of range. Only ever compared, never followed.
fn list_item_ptr(list: &Bound<'_, PyList>, i: usize) -> *mut pyo3::ffi::PyObject {
    let Ok(index) = pyo3::ffi::Py_ssize_t::try_from(i) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `list` is a live list (we hold a reference, with the GIL) and
    // PyList_GetItem checks the index (null and IndexError when out of range, which is
    // cleared below). It returns a borrowed pointer that is compared, not dereferenced.
    let ptr = unsafe { pyo3::ffi::PyList_GetItem(list.as_ptr(), index) };
    if ptr.is_null() {
        // Discard the IndexError.
        let _ = PyErr::take(list.py());
    }
    ptr
}

/// The process-wide cache type the bindings keep.
pub type Cache = ConversationCache<Conversation>;

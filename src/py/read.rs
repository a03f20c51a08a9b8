//! Python messages -> core messages, the parts found by `source`: LangChain messages
//! are read attribute by attribute (never `model_dump()`), dicts key by key. Strings
//! are borrowed from Python, not copied.

use std::sync::Arc;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use super::source::*;
use crate::message::{Block, Content, InputError, Message, Role, Text, ToolCall, Usage};

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
        Ok(backed) => Ok(Text::borrowed(Arc::new(PyText(backed)), chars)),
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

/// The content as core content: text held, blocks converted.
pub(super) fn read_content(body: Option<Body<'_, '_>>) -> Res<Content> {
    Ok(match body {
        None => Content::default(),
        Some(Body::Text(s)) => Content::Text(text_of(s)?),
        Some(Body::Blocks(list)) => {
            let mut blocks = Vec::with_capacity(list.len());
            for (i, item) in list.iter().enumerate() {
                blocks.push(match block(i, item)? {
                    BlockSrc::Text(Some(s)) => Block::Text(text_of(&s)?),
                    BlockSrc::Text(None) => Block::Text(Text::from(String::new())),
                    BlockSrc::Image => Block::Image,
                    BlockSrc::Document => Block::Document,
                    BlockSrc::Other {
                        kind_name, block, ..
                    } => Block::Other {
                        value: to_value(block.as_any()),
                        kind: kind_name,
                    },
                });
            }
            Content::Blocks(blocks)
        }
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

/// Tool calls as core calls, their arguments parsed.
pub(super) fn read_tool_calls(calls: &[CallSrc<'_>]) -> Res<Vec<ToolCall>> {
    with_args(calls, call_heads(calls)?)
}

/// Each call's id and tool name.
fn call_heads(calls: &[CallSrc<'_>]) -> Res<Vec<(Option<String>, String)>> {
    calls
        .iter()
        .map(|c| Ok((c.id()?, c.name()?.unwrap_or_default())))
        .collect()
}

/// The calls whole: `heads` with the arguments parsed.
fn with_args(calls: &[CallSrc<'_>], heads: Vec<(Option<String>, String)>) -> Res<Vec<ToolCall>> {
    calls
        .iter()
        .zip(heads)
        .map(|(c, (id, name))| {
            let (args, place) = c.args()?;
            // A block's arguments are kept as they are, as the block itself is.
            let args = match args {
                Some(v) if c.in_content() => to_value(&v),
                _ => read_args(args).map_err(place)?,
            };
            Ok(ToolCall {
                id,
                name,
                args: args.into(),
            })
        })
        .collect()
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

/// The start of a long text, for an error message.
pub(super) fn preview(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{:?}...", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// Read one message of any accepted shape, with the origin of its content.
pub fn read_message<'py>(item: &Bound<'py, PyAny>) -> Res<(Message, Origin<'py>)> {
    let py = item.py();
    let mut src = Source::of(item)?;
    let content = read_content(src.content()?)?;
    let calls = src.tool_calls()?;
    let heads = call_heads(&calls)?;
    let name = src.get_str(intern!(py, "name"))?;
    // What the scanner never reads comes last, so that the first error in a message is
    // the one the scanner meets too.
    let mut m = Message {
        role: src.role,
        role_name: src.role_name.clone(),
        content,
        tool_calls: with_args(&calls, heads)?,
        tool_call_id: src.call_id.take().map(StrValue::into_string),
        name,
        id: src.get_str(intern!(py, "id"))?,
        result_in_block: src.result_in_block,
        ..Message::default()
    };
    if let Some(fields) = &src.fields {
        m.timestamp = read_timestamp(fields, py);
        if m.role == Role::Ai {
            m.usage = read_usage(fields, py)?;
        }
    }
    Ok((m, src.into_origin()))
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

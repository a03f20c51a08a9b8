//! Python messages measured for counting only, without converting them.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::reprlen;
use crate::cutoff::PairShape;
use crate::message::{BlockKind, Role};
use crate::pyrepr;
use crate::tokens::{CachedCounts, Measure};

use super::read::*;

pub(super) fn str_len(v: &Bound<'_, PyAny>) -> usize {
    v.cast::<PyString>()
        .ok()
        .and_then(|s| s.len().ok())
        .unwrap_or(0)
}

pub(super) fn str_of(v: &Bound<'_, PyAny>) -> Option<String> {
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
                match BlockKind::parse(&kind) {
                    BlockKind::Text => {
                        body += b.get(intern!(py, "text"))?.map_or(0, |t| str_len(&t))
                    }
                    BlockKind::Image => images += 1,
                    BlockKind::Document => documents += 1,
                    other => {
                        body += reprlen::repr_len(&block);
                        if !want_shape {
                            continue;
                        }
                        match other {
                            BlockKind::ToolUse => {
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
                            BlockKind::ToolResult => {
                                shape.is_result = true;
                                if let Some(id) =
                                    b.get(intern!(py, "tool_use_id"))?.and_then(|v| str_of(&v))
                                {
                                    if !shape.results.contains(&id) {
                                        shape.results.push(id);
                                    }
                                }
                            }
                            k if k.is_thinking() => shape.thinking = true,
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
            let (len, id, present) =
                fields
                    .get(intern!(py, "tool_call_id"))?
                    .map_or((0, None, false), |id| {
                        (
                            str_len(&id),
                            want_shape.then(|| str_of(&id)).flatten(),
                            true,
                        )
                    });
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
    let (name_len, tool_name) = fields.get(intern!(py, "name"))?.map_or((0, None), |n| {
        (str_len(&n), want_tool_name.then(|| str_of(&n)).flatten())
    });
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

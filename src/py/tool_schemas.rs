//! The JSON of each tool schema, as the counter measures it, kept per tool. Agents
//! hand over the same tools (or rebuilt, equal ones) on every turn, and serializing
//! a schema takes Python far longer than recognizing a tool already seen.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString};

use crate::message::InputError;

/// Schemas kept at most; past that the memory starts over.
const LIMIT: usize = 512;

/// One tool's schema text and what it was made from. A tool is recognized by its
/// type, its argument schema object (the tool itself when it has none), its name and
/// its description. The objects are held so that their addresses cannot be reused.
struct Kept {
    _class: Py<PyAny>,
    _anchor: Py<PyAny>,
    name: Option<Py<PyAny>>,
    description: Option<Py<PyAny>>,
    json: Arc<str>,
}

/// Schema texts by (type address, anchor address).
#[derive(Default)]
pub struct ToolSchemas {
    kept: HashMap<(usize, usize), Vec<Kept>>,
    len: usize,
}

/// What identifies a tool's schema, read off the tool.
struct Identity<'py> {
    class: Bound<'py, PyAny>,
    anchor: Bound<'py, PyAny>,
    name: Option<Bound<'py, PyAny>>,
    description: Option<Bound<'py, PyAny>>,
}

impl<'py> Identity<'py> {
    /// `None` for a tool whose name or description is not a plain string: comparing
    /// other objects could run Python code, and such tools are not kept.
    fn of(tool: &Bound<'py, PyAny>) -> Option<Self> {
        let py = tool.py();
        let attr = |name: &Bound<'py, PyString>| tool.getattr(name).ok().filter(|v| !v.is_none());
        let plain = |v: &Option<Bound<'py, PyAny>>| {
            v.as_ref()
                .is_none_or(|v| v.is_exact_instance_of::<PyString>())
        };
        let class = tool.get_type().into_any();
        let Some(schema) = attr(intern!(py, "args_schema")) else {
            // Functions and other objects: the object itself, kept alive.
            return Some(Identity {
                class,
                anchor: tool.clone(),
                name: None,
                description: None,
            });
        };
        let name = attr(intern!(py, "name"));
        let description = attr(intern!(py, "description"));
        (plain(&name) && plain(&description)).then_some(Identity {
            class,
            anchor: schema,
            name,
            description,
        })
    }

    fn key(&self) -> (usize, usize) {
        (self.class.as_ptr() as usize, self.anchor.as_ptr() as usize)
    }

    fn matches(&self, k: &Kept) -> bool {
        let same = |a: &Option<Bound<'py, PyAny>>, b: &Option<Py<PyAny>>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.eq(b.bind(a.py())).unwrap_or(false),
            _ => false,
        };
        same(&self.name, &k.name) && same(&self.description, &k.description)
    }
}

impl ToolSchemas {
    fn find(&self, id: &Identity<'_>) -> Option<Arc<str>> {
        let kept = self.kept.get(&id.key())?;
        kept.iter()
            .find(|k| id.matches(k))
            .map(|k| Arc::clone(&k.json))
    }

    /// Keep `json` for the tool `id` identifies; returns what was dropped to make
    /// room, for the caller to release once the lock is let go (dropping Python
    /// objects may run Python code).
    fn keep(&mut self, id: Identity<'_>, json: &Arc<str>) -> HashMap<(usize, usize), Vec<Kept>> {
        let dropped = if self.len >= LIMIT {
            self.len = 0;
            std::mem::take(&mut self.kept)
        } else {
            HashMap::new()
        };
        let key = id.key();
        self.kept.entry(key).or_default().push(Kept {
            _class: id.class.unbind(),
            _anchor: id.anchor.unbind(),
            name: id.name.map(Bound::unbind),
            description: id.description.map(Bound::unbind),
            json: Arc::clone(json),
        });
        self.len += 1;
        dropped
    }
}

fn tools_error(e: PyErr) -> InputError {
    InputError::new(None, "tools", e.to_string())
}

/// One tool's schema text, by `serialize`; an error for what is not a tool.
fn serialized(
    tool: &Bound<'_, PyAny>,
    serialize: &Bound<'_, PyAny>,
) -> Result<Arc<str>, InputError> {
    let text = serialize.call1((tool,)).map_err(tools_error)?;
    if text.is_none() {
        let kind = tool
            .get_type()
            .name()
            .map_or_else(|_| "?".into(), |n| n.to_string());
        return Err(InputError::new(
            None,
            "tools",
            format!("expected a BaseTool, a dict or a function, got {kind}"),
        ));
    }
    Ok(Arc::from(text.extract::<&str>().map_err(tools_error)?))
}

/// The schema text of each tool, serialized by `serialize` (a Python function of one
/// tool, returning `None` for what is not a tool) only for tools not seen before.
/// Dicts and other mappings may change between calls, so they are serialized every
/// time. `schemas` locks the kept texts; the lock is never held while Python code
/// runs (another thread could wait on it holding the interpreter).
pub fn texts(
    tools: &Bound<'_, PyAny>,
    serialize: &Bound<'_, PyAny>,
    schemas: impl Fn() -> MutexGuard<'static, ToolSchemas>,
) -> Result<Vec<Arc<str>>, InputError> {
    if tools.is_none() {
        return Ok(Vec::new());
    }
    let made = |tool: &Bound<'_, PyAny>| serialized(tool, serialize);
    let mut out = Vec::new();
    for tool in tools.try_iter().map_err(tools_error)? {
        let tool = tool.map_err(tools_error)?;
        if tool.is_exact_instance_of::<PyDict>() {
            out.push(made(&tool)?);
            continue;
        }
        let Some(id) = Identity::of(&tool) else {
            out.push(made(&tool)?);
            continue;
        };
        let found = schemas().find(&id);
        if let Some(json) = found {
            out.push(json);
            continue;
        }
        let json = made(&tool)?;
        if tool.cast::<PyMapping>().is_err() {
            let dropped = schemas().keep(id, &json);
            drop(dropped);
        }
        out.push(json);
    }
    Ok(out)
}

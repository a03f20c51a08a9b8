//! One Python message, located: its role, where its fields are, and what its content,
//! blocks and tool calls are, for every accepted shape. Both readers start here
//! (`read` converts a message for the passes, `scan` measures it for counting), so
//! they accept the same shapes, find each field in the same place and require the
//! same things. What they do with the parts differs: converting or measuring.

use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use crate::message::{BlockKind, InputError, Role};

pub(super) type Res<T> = Result<T, InputError>;

pub(super) fn py_err(field: &str, e: PyErr) -> InputError {
    InputError::new(None, field, e.to_string())
}

pub(super) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
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
    pub(super) fn into_dict(self) -> Option<Bound<'py, PyDict>> {
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
            Fields::Dict(d) => return dict_get(d, name),
        };
        Ok((!value.is_none()).then_some(value))
    }

    /// A string field (see `text_value`).
    pub(super) fn get_text(&self, name: &Bound<'py, PyString>) -> Res<Option<StrValue<'py>>> {
        text_value(name, self.get(name)?)
    }

    pub(super) fn get_str(&self, name: &Bound<'py, PyString>) -> Res<Option<String>> {
        Ok(self.get_text(name)?.map(StrValue::into_string))
    }
}

/// `d[name]`; `None` when it is absent or Python `None`.
pub(super) fn dict_get<'py>(
    d: &Bound<'py, PyDict>,
    name: &Bound<'py, PyString>,
) -> Res<Option<Bound<'py, PyAny>>> {
    match d.get_item(name) {
        Ok(v) => Ok(v.filter(|v| !v.is_none())),
        Err(e) => Err(py_err(&name.to_string(), e)),
    }
}

/// The value of string field `name`. Ids are sometimes numbers, taken as their
/// digits; anything else is malformed.
pub(super) fn text_value<'py>(
    name: &Bound<'py, PyString>,
    v: Option<Bound<'py, PyAny>>,
) -> Res<Option<StrValue<'py>>> {
    let Some(v) = v else {
        return Ok(None);
    };
    let v = match v.cast_into::<PyString>() {
        Ok(s) => return Ok(Some(StrValue::Str(s))),
        Err(e) => e.into_inner(),
    };
    if v.is_instance_of::<PyInt>() {
        return Ok(Some(StrValue::Digits(v.to_string())));
    }
    Err(InputError::new(
        None,
        name.to_string(),
        format!("expected a string, got {}", type_name(&v)),
    ))
}

/// A field of a content block, when it is a string. Blocks are kept as JSON, where
/// an id that is not a string is no id.
pub(super) fn block_str<'py>(
    d: &Bound<'py, PyDict>,
    name: &Bound<'py, PyString>,
) -> Res<Option<String>> {
    Ok(dict_get(d, name)?
        .and_then(|v| v.cast_into::<PyString>().ok())
        .map(|s| s.to_string_lossy().into_owned()))
}

/// A string field's value as read (see `Fields::get_text`).
pub(super) enum StrValue<'py> {
    Str(Bound<'py, PyString>),
    Digits(String),
}

impl StrValue<'_> {
    /// Length in code points, without copying the text.
    pub(super) fn chars(&self) -> usize {
        match self {
            StrValue::Str(s) => s.len().unwrap_or(0),
            StrValue::Digits(d) => d.len(),
        }
    }

    pub(super) fn into_string(self) -> String {
        match self {
            StrValue::Str(s) => s.to_string_lossy().into_owned(),
            StrValue::Digits(d) => d,
        }
    }
}

/// One Python message of any accepted shape, located and checked.
pub(super) struct Source<'py> {
    py: Python<'py>,
    pub role: Role,
    /// The role's own name, where the OpenAI role is not the standard one.
    pub role_name: Option<String>,
    /// Where the other fields are; `None` for a bare string or a `(role, content)`
    /// tuple, which have none.
    pub fields: Option<Fields<'py>>,
    /// The content object; `None` only for an assistant message without any.
    content: Option<Bound<'py, PyAny>>,
    /// The id of the call a tool message answers.
    pub call_id: Option<StrValue<'py>>,
    /// A user message made of one `tool_result` block, read as that tool result
    /// (`Message::result_in_block`).
    pub result_in_block: bool,
}

/// A message's content.
pub(super) enum Body<'a, 'py> {
    Text(&'a Bound<'py, PyString>),
    Blocks(&'a Bound<'py, PyList>),
}

/// One item of list content.
pub(super) enum BlockSrc<'py> {
    /// A string item or a `text` block: its text, when that is a string.
    Text(Option<Bound<'py, PyString>>),
    Image,
    Document,
    /// A block of any other kind, kept whole.
    Other {
        kind: BlockKind,
        kind_name: String,
        block: Bound<'py, PyDict>,
    },
}

/// One tool call of an assistant message.
pub(super) struct CallSrc<'py> {
    index: usize,
    pub dict: Bound<'py, PyDict>,
    /// OpenAI's shape, `{"id", "type": "function", "function": {"name", "arguments"}}`,
    /// has its name and arguments here; LangChain's has `name` and `args` at the top.
    pub function: Option<Bound<'py, PyDict>>,
    /// A `tool_use` block of the content (Anthropic's shape: `input` for arguments),
    /// item `index` of it.
    in_content: bool,
}

impl<'py> Source<'py> {
    /// Locate a message: a string, a `(role, content)` tuple, a LangChain message (or
    /// any object with a `type`), or a dict in LangChain, serialized-LangChain, OpenAI
    /// or Anthropic shape.
    pub fn of(item: &Bound<'py, PyAny>) -> Res<Self> {
        let py = item.py();
        if item.is_instance_of::<PyString>() {
            return Ok(Source {
                py,
                role: Role::Human,
                role_name: None,
                fields: None,
                content: Some(item.clone()),
                call_id: None,
                result_in_block: false,
            });
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
            let role = role_from_str(&role_str).ok_or_else(|| {
                InputError::new(None, "role", format!("unknown role {role_str:?}"))
            })?;
            return Ok(Source {
                py,
                role,
                role_name: None,
                fields: None,
                content: Some(t.get_item(1).map_err(|e| py_err("content", e))?),
                call_id: None,
                result_in_block: false,
            });
        }
        let (mut role, role_name, fields) = locate(item)?;
        let content = fields.get(intern!(py, "content"))?;
        let mut call_id = match role {
            Role::Tool => fields.get_text(intern!(py, "tool_call_id"))?,
            _ => None,
        };
        require(
            role,
            content.is_some(),
            role != Role::Tool || call_id.is_some(),
        )?;
        let in_block = match (role, &content) {
            (Role::Human, Some(c)) => result_in_block(c),
            _ => None,
        };
        let result_in_block = in_block.is_some();
        if let Some(id) = in_block {
            (role, call_id) = (Role::Tool, Some(StrValue::Str(id)));
        }
        Ok(Source {
            py,
            role,
            role_name,
            fields: Some(fields),
            content,
            call_id,
            result_in_block,
        })
    }

    /// The content: a string or a list of blocks (`None` when there is none).
    pub fn content(&self) -> Res<Option<Body<'_, 'py>>> {
        let Some(c) = &self.content else {
            return Ok(None);
        };
        if let Ok(s) = c.cast::<PyString>() {
            return Ok(Some(Body::Text(s)));
        }
        match c.cast::<PyList>() {
            Ok(list) => Ok(Some(Body::Blocks(list))),
            Err(_) => Err(bad_content(c)),
        }
    }

    /// A field; `None` when absent, and for strings and tuples, which have no fields.
    pub fn get(&self, name: &Bound<'py, PyString>) -> Res<Option<Bound<'py, PyAny>>> {
        self.fields.as_ref().map_or(Ok(None), |f| f.get(name))
    }

    pub fn get_str(&self, name: &Bound<'py, PyString>) -> Res<Option<String>> {
        self.fields.as_ref().map_or(Ok(None), |f| f.get_str(name))
    }

    pub fn get_text(&self, name: &Bound<'py, PyString>) -> Res<Option<StrValue<'py>>> {
        self.fields.as_ref().map_or(Ok(None), |f| f.get_text(name))
    }

    /// An assistant message's tool calls (none for other roles): its `tool_calls`,
    /// else the `tool_use` blocks of its content.
    pub fn tool_calls(&self) -> Res<Vec<CallSrc<'py>>> {
        if self.role != Role::Ai {
            return Ok(Vec::new());
        }
        let Some(v) = self.get(intern!(self.py, "tool_calls"))? else {
            return self.calls_in_content();
        };
        let Ok(list) = v.cast::<PyList>() else {
            return Err(bad_tool_calls(&v));
        };
        if list.is_empty() {
            return self.calls_in_content();
        }
        let function = intern!(self.py, "function");
        let mut calls = Vec::with_capacity(list.len());
        for (index, item) in list.iter().enumerate() {
            let dict = match item.cast_into::<PyDict>() {
                Ok(d) => d,
                Err(e) => return Err(bad_call(index, &e.into_inner())),
            };
            let mut call = CallSrc {
                index,
                dict,
                function: None,
                in_content: false,
            };
            let not_a_dict = || InputError::new(None, "function", "expected a dict");
            call.function = dict_get(&call.dict, function)
                .map_err(|e| call.place(e))?
                .map(|f| {
                    f.cast_into::<PyDict>()
                        .map_err(|_| call.place(not_a_dict()))
                })
                .transpose()?;
            calls.push(call);
        }
        Ok(calls)
    }

    /// The `tool_use` blocks of list content, as calls. Blocks that are not dicts are
    /// left to the content's reader, which says what is wrong with them.
    fn calls_in_content(&self) -> Res<Vec<CallSrc<'py>>> {
        let Some(Ok(list)) = self.content.as_ref().map(|c| c.cast::<PyList>()) else {
            return Ok(Vec::new());
        };
        let type_key = intern!(self.py, "type");
        let mut calls = Vec::new();
        for (index, item) in list.iter().enumerate() {
            let Ok(dict) = item.cast_into::<PyDict>() else {
                continue;
            };
            let kind = dict_get(&dict, type_key)?;
            if kind.is_some_and(|k| k.cast::<PyString>().is_ok_and(|k| k == "tool_use")) {
                calls.push(CallSrc {
                    index,
                    dict,
                    function: None,
                    in_content: true,
                });
            }
        }
        Ok(calls)
    }

    /// Where the content was found, for the cache to notice it reassigned in place.
    pub fn into_origin(self) -> Origin<'py> {
        Origin {
            content: self.content,
            fields: self.fields.and_then(Fields::into_dict),
        }
    }
}

/// The id a user message's content answers when it is one `tool_result` block with a
/// string `tool_use_id` (Anthropic's shape for a tool's result).
fn result_in_block<'py>(content: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    let list = content.cast::<PyList>().ok()?;
    if list.len() != 1 {
        return None;
    }
    let block = list.get_item(0).ok()?.cast_into::<PyDict>().ok()?;
    let py = content.py();
    let kind = dict_get(&block, intern!(py, "type")).ok()??;
    if kind.cast::<PyString>().ok()?.to_str().ok()? != "tool_result" {
        return None;
    }
    dict_get(&block, intern!(py, "tool_use_id"))
        .ok()??
        .cast_into::<PyString>()
        .ok()
}

/// Item `i` of list content: a string, or a dict typed by its `type`.
pub(super) fn block<'py>(i: usize, item: Bound<'py, PyAny>) -> Res<BlockSrc<'py>> {
    let py = item.py();
    let item = match item.cast_into::<PyString>() {
        Ok(s) => return Ok(BlockSrc::Text(Some(s))),
        Err(e) => e.into_inner(),
    };
    let block = match item.cast_into::<PyDict>() {
        Ok(d) => d,
        Err(e) => return Err(bad_block(i, &e.into_inner())),
    };
    let type_key = intern!(py, "type");
    let kind_name = dict_get(&block, type_key)
        .and_then(|v| text_value(type_key, v))
        .map_err(|mut e| {
            e.field = format!("content[{i}].{}", e.field);
            e
        })?
        .map(StrValue::into_string)
        .unwrap_or_default();
    Ok(match BlockKind::parse(&kind_name) {
        BlockKind::Text => BlockSrc::Text(
            dict_get(&block, intern!(py, "text"))?.and_then(|t| t.cast_into::<PyString>().ok()),
        ),
        BlockKind::Image => BlockSrc::Image,
        BlockKind::Document => BlockSrc::Document,
        kind => BlockSrc::Other {
            kind,
            kind_name,
            block,
        },
    })
}

impl<'py> CallSrc<'py> {
    /// An error of this call's, placed at `tool_calls[i]`.
    pub fn place(&self, mut e: InputError) -> InputError {
        let list = if self.in_content {
            "content"
        } else {
            "tool_calls"
        };
        e.field = format!("{list}[{}].{}", self.index, e.field);
        e
    }

    /// Whether the call is a `tool_use` block of the content.
    pub fn in_content(&self) -> bool {
        self.in_content
    }

    pub fn id(&self) -> Res<Option<String>> {
        self.str_field(&self.dict, intern!(self.dict.py(), "id"))
    }

    pub fn name(&self) -> Res<Option<String>> {
        let holder = self.function.as_ref().unwrap_or(&self.dict);
        self.str_field(holder, intern!(self.dict.py(), "name"))
    }

    fn str_field(
        &self,
        holder: &Bound<'py, PyDict>,
        name: &Bound<'py, PyString>,
    ) -> Res<Option<String>> {
        if self.in_content {
            // Blocks are kept as JSON, where a field that is not a string is none.
            return block_str(holder, name);
        }
        let value = dict_get(holder, name).and_then(|v| text_value(name, v));
        Ok(value.map_err(|e| self.place(e))?.map(StrValue::into_string))
    }

    /// The arguments as given (a JSON string in OpenAI's shape), and a function that
    /// places an error in reading them.
    pub fn args(
        &self,
    ) -> Res<(
        Option<Bound<'py, PyAny>>,
        impl Fn(InputError) -> InputError + '_,
    )> {
        let py = self.dict.py();
        let (holder, key, prefix) = match &self.function {
            Some(f) => (f, intern!(py, "arguments"), "function."),
            None if self.in_content => (&self.dict, intern!(py, "input"), ""),
            None => (&self.dict, intern!(py, "args"), ""),
        };
        let args = dict_get(holder, key).map_err(|e| self.place(e))?;
        let place = move |mut e: InputError| {
            e.field = format!("{prefix}{}", e.field);
            self.place(e)
        };
        Ok((args, place))
    }
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

/// Where a message's role and fields are: a LangChain message (or any object with a
/// `type`) or a dict in LangChain, serialized-LangChain, OpenAI or Anthropic shape.
/// A message given as a dict, in any of the shapes the readers take.
fn locate_dict<'py>(d: &Bound<'py, PyDict>) -> Res<(Role, Option<String>, Fields<'py>)> {
    let py = d.py();
    let top = Fields::Dict(d.clone());
    // dumpd(): {"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}
    if top.get_str(intern!(py, "type"))?.as_deref() == Some("constructor") {
        let class = top
            .get(intern!(py, "id"))?
            .and_then(|ids| ids.cast::<PyList>().ok().and_then(|l| l.iter().last()))
            .map(|last| last.to_string())
            .unwrap_or_default();
        let role = role_from_str(&class).ok_or_else(|| unknown_type(&class))?;
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
            let role = role_from_str(&t).ok_or_else(|| unknown_type(&t))?;
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
    let role = role_from_str(&role_str).ok_or_else(|| unknown_type(&role_str))?;
    let role_name = (role_str == "developer").then(|| role_str.clone());
    Ok((role, role_name, top))
}

/// The error for a message whose type names no role.
fn unknown_type(s: &str) -> InputError {
    InputError::new(
        None,
        "type",
        format!("unknown message type {s:?}; expected human/user, ai/assistant, tool, system, function or chat"),
    )
}

pub(super) fn locate<'py>(item: &Bound<'py, PyAny>) -> Res<(Role, Option<String>, Fields<'py>)> {
    let py = item.py();
    if let Ok(d) = item.cast::<PyDict>() {
        return locate_dict(d);
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
            Some(name) => role_from_str(name).ok_or_else(|| unknown_type(name)),
            // Owned first: str() may run Python code.
            None => Err(unknown_type(&t.to_string())),
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

/// Where a message's content was found: the content object and the dict holding it,
/// so that the cache can notice a content reassigned in place.
pub struct Origin<'py> {
    pub content: Option<Bound<'py, PyAny>>,
    pub fields: Option<Bound<'py, PyDict>>,
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

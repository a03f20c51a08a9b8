//! The core's own message model, independent of Python and of any provider format.
//!
//! `py/read.rs` builds these from LangChain objects and dicts; everything else in the
//! crate reads only these types.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

mod error;
mod meta;
pub use error::InputError;
pub use meta::{parse_iso8601, Usage};

/// Who spoke. `Other` covers LangChain `ChatMessage` roles and unusual system roles; its
/// name lives in [`Message::role_name`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    #[default]
    Human,
    Ai,
    Tool,
    Function,
    Other,
}

impl Role {
    /// The OpenAI role string LangChain uses when it counts a message.
    pub fn openai_name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Human => "user",
            Role::Ai => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
            Role::Other => "",
        }
    }

    /// The LangChain `type` string, used for reporting.
    pub fn type_name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Human => "human",
            Role::Ai => "ai",
            Role::Tool => "tool",
            Role::Function => "function",
            Role::Other => "chat",
        }
    }
}

/// The role string LangChain's counter adds to a message in `role`: a chat or
/// system message's own role name where it has one, else the OpenAI role.
pub fn openai_role(role: Role, role_name: Option<&str>) -> &str {
    match (role_name, role) {
        (Some(name), Role::Other | Role::System) => name,
        _ => role.openai_name(),
    }
}

/// An immutable piece of text that knows its length in Unicode code points.
///
/// The storage is shared and may be borrowed from the caller (a Python `str` keeps its
/// own buffer alive), so building a `Text` never has to copy a large tool result.
#[derive(Clone)]
pub struct Text {
    chars: usize,
    /// The first byte (0 when empty), kept so that prefix checks on a long
    /// conversation need not touch every text's storage.
    first: u8,
    /// The storage is the caller's (a Python `str` read in place).
    borrowed: bool,
    data: Arc<dyn AsRef<str> + Send + Sync>,
}

/// The counts an `Arc` allocates before its value.
pub const ARC_HEADER: usize = 2 * std::mem::size_of::<usize>();

impl Text {
    /// Text over storage whose code-point length the caller already knows.
    ///
    /// `chars` must equal `data.as_ref().chars().count()`; the converter gets it for
    /// free from Python, which stores a string's length.
    pub fn with_len(data: Arc<dyn AsRef<str> + Send + Sync>, chars: usize) -> Self {
        let first = (*data).as_ref().as_bytes().first().copied().unwrap_or(0);
        Text {
            chars,
            first,
            borrowed: false,
            data,
        }
    }

    /// Text over the caller's storage, read in place (see `with_len`).
    pub fn borrowed(data: Arc<dyn AsRef<str> + Send + Sync>, chars: usize) -> Self {
        Text {
            borrowed: true,
            ..Text::with_len(data, chars)
        }
    }

    /// What the text takes on the heap beyond the caller's storage.
    pub fn heap_bytes(&self) -> usize {
        let own = if self.borrowed {
            0
        } else {
            self.as_str().len()
        };
        ARC_HEADER + std::mem::size_of_val(&*self.data) + own
    }

    /// Whether the text may start with `prefix`: `false` is certain, `true` means
    /// look at the text.
    pub fn may_start_with(&self, prefix: &str) -> bool {
        prefix.as_bytes().first().is_none_or(|&b| b == self.first)
    }

    pub fn as_str(&self) -> &str {
        (*self.data).as_ref()
    }

    /// The first byte (0 when empty).
    pub fn first_byte(&self) -> u8 {
        self.first
    }

    /// Length in code points (what Python's `len()` returns).
    pub fn chars(&self) -> usize {
        self.chars
    }

    pub fn is_empty(&self) -> bool {
        self.chars == 0
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        let chars = s.chars().count();
        Text::with_len(Arc::new(s), chars)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::from(s.to_owned())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

/// The kinds of content block the core tells apart, parsed from a block's `type` in
/// one place: the readers, the counters and the renderer all match on this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    /// `image`, `image_url`, `input_image`: a fixed cost, never their bytes.
    Image,
    /// `document`, `file`, `input_file`: a fixed cost, never their bytes.
    Document,
    /// Anthropic's call block (its arguments are the message's tool calls too).
    ToolUse,
    /// OpenAI Responses' call item, in the same role.
    FunctionCall,
    ToolResult,
    Thinking,
    /// Encrypted reasoning, counted by its length alone.
    RedactedThinking,
    Reasoning,
    Other,
}

impl BlockKind {
    pub fn parse(kind: &str) -> Self {
        match kind {
            "text" => BlockKind::Text,
            "image" | "image_url" | "input_image" => BlockKind::Image,
            "document" | "file" | "input_file" => BlockKind::Document,
            "tool_use" => BlockKind::ToolUse,
            "function_call" => BlockKind::FunctionCall,
            "tool_result" => BlockKind::ToolResult,
            "thinking" => BlockKind::Thinking,
            "redacted_thinking" => BlockKind::RedactedThinking,
            "reasoning" => BlockKind::Reasoning,
            _ => BlockKind::Other,
        }
    }

    /// Blocks that providers require to be sent back unchanged inside a tool loop.
    pub fn is_thinking(self) -> bool {
        matches!(
            self,
            BlockKind::Thinking | BlockKind::RedactedThinking | BlockKind::Reasoning
        )
    }
}

/// The readable text of a `thinking` or `reasoning` block, when it has one.
pub fn thinking_text(block: &Value) -> Option<&str> {
    block
        .get("thinking")
        .or_else(|| block.get("reasoning"))
        .and_then(Value::as_str)
}

/// One block of a list-valued content.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// `{"type": "text", "text": ...}` or a bare string in the list.
    Text(Text),
    /// `image` / `image_url` blocks: a fixed cost, never their bytes.
    Image,
    /// `document` / `file` blocks: a fixed cost, never their bytes.
    Document,
    /// Everything else (`tool_use`, `tool_result`, `thinking`, `redacted_thinking`,
    /// provider-specific blocks), kept as the JSON it came as.
    Other { kind: String, value: Value },
}

impl Block {
    /// What the block takes on the heap beyond its own size (see `Message::heap_bytes`).
    fn heap_bytes(&self) -> usize {
        match self {
            Block::Text(t) => t.heap_bytes(),
            Block::Other { kind, value } => kind.capacity() + value_heap_bytes(value),
            Block::Image | Block::Document => 0,
        }
    }

    /// What kind of block this is.
    pub fn kind_of(&self) -> BlockKind {
        match self {
            Block::Text(_) => BlockKind::Text,
            Block::Image => BlockKind::Image,
            Block::Document => BlockKind::Document,
            Block::Other { kind, .. } => BlockKind::parse(kind),
        }
    }

    fn str_field(&self, field: &str) -> Option<&str> {
        match self {
            Block::Other { value, .. } => value.get(field).and_then(Value::as_str),
            _ => None,
        }
    }

    /// The id of an Anthropic `tool_use` block.
    pub fn tool_use_id(&self) -> Option<&str> {
        if self.kind_of() == BlockKind::ToolUse {
            self.str_field("id")
        } else {
            None
        }
    }

    /// The id a `tool_result` block answers.
    pub fn tool_result_id(&self) -> Option<&str> {
        if self.kind_of() == BlockKind::ToolResult {
            self.str_field("tool_use_id")
        } else {
            None
        }
    }

    /// `thinking`, `redacted_thinking` and `reasoning` blocks, which providers require
    /// to be sent back unchanged inside a tool loop.
    pub fn is_thinking(&self) -> bool {
        self.kind_of().is_thinking()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    Text(Text),
    Blocks(Vec<Block>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(Text::from(String::new()))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: String,
    pub args: Args,
}

/// A call's arguments: whole, or what the passes read of them. A cached message keeps
/// only the facts of arguments no pass will rewrite (`passes::slim_args`): the
/// caller's message holds them whole, and a coding agent's writes and edits carry
/// whole files.
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    /// Parsed arguments. Arguments that were not valid JSON stay a JSON string.
    Whole(Box<Value>),
    Facts(ArgFacts),
}

/// What the passes read of arguments they will not rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgFacts {
    /// Tells equal arguments apart from others (`Args::key`).
    pub key: u64,
    /// Length of their Python `repr()`, which the counts read.
    pub repr_len: u32,
    /// Bytes of their longest string value (saturating).
    pub longest: u32,
    /// The argument that names what the call did, as placeholders show it.
    pub main: Box<str>,
}

impl ToolCall {
    /// What the call takes on the heap beyond its own size.
    fn heap_bytes(&self) -> usize {
        let args = match &self.args {
            Args::Whole(v) => std::mem::size_of::<Value>() + value_heap_bytes(v),
            Args::Facts(f) => f.main.len(),
        };
        self.id.as_ref().map_or(0, String::capacity) + self.name.capacity() + args
    }
}

impl From<Value> for Args {
    fn from(v: Value) -> Self {
        Args::Whole(Box::new(v))
    }
}

impl Args {
    /// The arguments, when held whole.
    pub fn whole(&self) -> Option<&Value> {
        match self {
            Args::Whole(v) => Some(v),
            Args::Facts(_) => None,
        }
    }

    /// A key equal for equal arguments (SipHash of their JSON text with fixed keys, so
    /// the same in every process): what a repeated read is recognised by.
    pub fn key(&self) -> u64 {
        match self {
            Args::Whole(v) => text_key(&v.to_string()),
            Args::Facts(f) => f.key,
        }
    }
}

/// What a JSON value holds on the heap, as serde_json lays it out: each string's
/// bytes, each array's items and each object's entries (with their keys).
pub fn value_heap_bytes(v: &Value) -> usize {
    let value = std::mem::size_of::<Value>();
    // An object entry: its key, its value and the order index beside them.
    let entry = std::mem::size_of::<String>() + value + 2 * std::mem::size_of::<usize>();
    let mut bytes = 0;
    let mut pending = vec![v];
    while let Some(v) = pending.pop() {
        match v {
            Value::String(s) => bytes += s.capacity(),
            Value::Array(items) => {
                bytes += items.capacity() * value;
                pending.extend(items);
            }
            Value::Object(map) => {
                bytes += map.len() * entry + map.keys().map(String::capacity).sum::<usize>();
                pending.extend(map.values());
            }
            _ => {}
        }
    }
    bytes
}

/// The key of arguments whose JSON text is `text` (see `Args::key`).
pub fn text_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl fmt::Display for Args {
    /// The JSON text; arguments kept as facts show as an ellipsis.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Args::Whole(v) => write!(f, "{v}"),
            Args::Facts(_) => f.write_str("{…}"),
        }
    }
}

/// One conversation message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    pub role: Role,
    /// The role string for `Role::Other`, or a system message's `__openai_role__`.
    pub role_name: Option<String>,
    pub content: Content,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    pub id: Option<String>,
    pub usage: Option<Usage>,
    /// When the message was sent, in seconds since the epoch, if it says.
    pub timestamp: Option<f64>,
    /// A tool result held in the one `tool_result` block of a user message (Anthropic's
    /// shape): `role` is `Tool` and `tool_call_id` the block's `tool_use_id`, so the
    /// passes treat it as any result, while the content stays that block and the
    /// message counts as the user's message LangChain reads it as.
    pub result_in_block: bool,
}

impl Message {
    /// A plain-text message, mostly for tests and examples.
    pub fn text(role: Role, text: &str) -> Self {
        Message {
            role,
            content: Content::Text(Text::from(text)),
            ..Message::default()
        }
    }

    /// The role string LangChain's counter adds to every message.
    pub fn openai_role(&self) -> &str {
        openai_role(self.role, self.role_name.as_deref())
    }

    pub fn blocks(&self) -> &[Block] {
        match &self.content {
            Content::Blocks(b) => b,
            Content::Text(_) => &[],
        }
    }

    /// `(id, tool name)` of the tool calls this message makes: `tool_calls` plus
    /// `tool_use` blocks, each id once.
    pub fn calls(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = Vec::new();
        if self.role != Role::Ai {
            return out;
        }
        let from_calls = self
            .tool_calls
            .iter()
            .filter_map(|c| Some((c.id.as_deref()?, c.name.as_str())));
        let from_blocks = self.blocks().iter().filter_map(|b| {
            let name = match b {
                Block::Other { value, .. } => value.get("name").and_then(Value::as_str),
                _ => None,
            };
            Some((b.tool_use_id()?, name.unwrap_or("")))
        });
        for (id, name) in from_calls.chain(from_blocks) {
            if !out.iter().any(|(seen, _)| *seen == id) {
                out.push((id, name));
            }
        }
        out
    }

    /// Ids of the tool calls this message makes.
    pub fn call_ids(&self) -> Vec<&str> {
        self.calls().into_iter().map(|(id, _)| id).collect()
    }

    /// Ids of the tool calls this message makes, as met (a call may be in
    /// `tool_calls` and a `tool_use` block both); only an assistant makes calls.
    pub fn made_call_ids(&self) -> impl Iterator<Item = &str> {
        let calls = self.tool_calls.iter().filter_map(|c| c.id.as_deref());
        let blocks = self.blocks().iter().filter_map(Block::tool_use_id);
        calls.chain(blocks).filter(|_| self.role == Role::Ai)
    }

    /// Ids of the tool calls this message answers, as met: a ToolMessage's
    /// `tool_call_id`, or the `tool_result` blocks of a user message in Anthropic format.
    pub fn answered_ids(&self) -> impl Iterator<Item = &str> {
        let own = self
            .tool_call_id
            .as_deref()
            .filter(|_| self.role == Role::Tool);
        let blocks = self.blocks().iter().filter_map(Block::tool_result_id);
        own.into_iter().chain(blocks)
    }

    /// `answered_ids`, each once.
    pub fn result_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for id in self.answered_ids() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// True when this message carries tool results (and so must follow its calls).
    pub fn is_tool_result(&self) -> bool {
        self.role == Role::Tool
            || self
                .blocks()
                .iter()
                .any(|b| b.kind_of() == BlockKind::ToolResult)
    }

    /// The role as a reader takes it: a user message of tool results (Anthropic's
    /// answer to parallel calls) is the tools' answer, not a request.
    pub fn answering_role(&self) -> Role {
        match self.role {
            Role::Human if self.is_tool_result() => Role::Tool,
            role => role,
        }
    }

    /// The `tool_result` block a result in a block is held in.
    fn result_block(&self) -> Option<&serde_json::Map<String, Value>> {
        match (&self.content, self.result_in_block) {
            (Content::Blocks(blocks), true) => match blocks.first() {
                Some(Block::Other { value, .. }) => value.as_object(),
                _ => None,
            },
            _ => None,
        }
    }

    /// The text a pass reads and may replace: a text content, or the text of a result
    /// in a block; `None` for other content.
    pub fn result_text(&self) -> Option<&str> {
        match &self.content {
            Content::Text(t) => Some(t.as_str()),
            Content::Blocks(_) => self.result_block()?.get("content")?.as_str(),
        }
    }

    /// What a result in a block holds: its content, whatever its shape.
    pub fn result_block_content(&self) -> Option<&Value> {
        self.result_block()?.get("content")
    }

    /// Make `text` what a pass replaced: the whole content, or a result's inside its
    /// block (so the block, and the pair it makes with its call, stays).
    pub fn replace_text(&mut self, text: &str) {
        if let (Content::Blocks(blocks), true) = (&mut self.content, self.result_in_block) {
            if let Some(Block::Other {
                value: Value::Object(block),
                ..
            }) = blocks.first_mut()
            {
                block.insert("content".into(), Value::from(text));
                return;
            }
        }
        self.content = Content::Text(Text::from(text));
    }

    /// Give call `call` the arguments `args`, in its `tool_use` block too where the
    /// content holds one (list content counts its calls there).
    pub fn set_call_args(&mut self, call: usize, args: &Value) {
        let Some(c) = self.tool_calls.get_mut(call) else {
            return;
        };
        c.args = Args::from(args.clone());
        let id = c.id.clone();
        if let (Content::Blocks(blocks), Some(id)) = (&mut self.content, id) {
            for b in blocks.iter_mut() {
                if b.tool_use_id() == Some(id.as_str()) {
                    if let Block::Other {
                        value: Value::Object(block),
                        ..
                    } = b
                    {
                        block.insert("input".into(), args.clone());
                    }
                }
            }
        }
    }

    /// Characters of the content's text (text blocks only for list content).
    pub fn content_chars(&self) -> usize {
        match &self.content {
            Content::Text(t) => t.chars(),
            Content::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    Block::Text(t) => t.chars(),
                    _ => 0,
                })
                .sum(),
        }
    }

    pub fn has_thinking(&self) -> bool {
        self.blocks().iter().any(Block::is_thinking)
    }

    /// What the message takes on the heap beyond its own size: its strings, content
    /// and calls as allocated, the caller's text read in place aside.
    pub fn heap_bytes(&self) -> usize {
        let string = |s: &Option<String>| s.as_ref().map_or(0, String::capacity);
        let content = match &self.content {
            Content::Text(t) => t.heap_bytes(),
            Content::Blocks(blocks) => {
                blocks.capacity() * std::mem::size_of::<Block>()
                    + blocks.iter().map(Block::heap_bytes).sum::<usize>()
            }
        };
        let calls = self.tool_calls.capacity() * std::mem::size_of::<ToolCall>()
            + self
                .tool_calls
                .iter()
                .map(ToolCall::heap_bytes)
                .sum::<usize>();
        string(&self.role_name)
            + string(&self.tool_call_id)
            + string(&self.name)
            + string(&self.id)
            + content
            + calls
    }

    /// The normalized form, as JSON: what the core understood of the message.
    pub fn to_json(&self) -> Value {
        let content = match &self.content {
            Content::Text(t) => Value::from(t.as_str()),
            Content::Blocks(blocks) => Value::Array(
                blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text(t) => serde_json::json!({"type": "text", "text": t.as_str()}),
                        Block::Image => serde_json::json!({"type": "image"}),
                        Block::Document => serde_json::json!({"type": "document"}),
                        Block::Other { value, .. } => value.clone(),
                    })
                    .collect(),
            ),
        };
        let calls: Vec<Value> = self
            .tool_calls
            .iter()
            .map(|c| serde_json::json!({"id": c.id, "name": c.name, "args": c.args.whole()}))
            .collect();
        let results = self.role == Role::Human && self.is_tool_result();
        let role = self.answering_role().type_name();
        // Under the first call it answers, as one result's message is.
        let answers = match (&self.tool_call_id, results) {
            (None, true) => self.result_ids().first().map(|id| (*id).to_owned()),
            (id, _) => id.clone(),
        };
        serde_json::json!({
            "role": role,
            "role_name": self.role_name,
            "content": content,
            "tool_calls": calls,
            "tool_call_id": answers,
            "name": self.name,
            "id": self.id,
            "usage": self.usage.map(|u| serde_json::json!({"input": u.input, "output": u.output})),
        })
    }
}

#[cfg(test)]
mod tests;

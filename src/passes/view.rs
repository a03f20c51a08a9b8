//! The view a pass reads: the messages, their skeletons and tokens, and lookups
//! through the links of results to calls.

use serde_json::Value;

use super::*;
use crate::cutoff::Size;
use crate::message::{text_key, ArgFacts, Args, Content, Message, Role, ToolCall};
use crate::tally::measure;
use crate::tokens::{HeuristicParams, Measure};

/// The edits that shorten a message's arguments, and its tokens after them.
pub type Shortened = (Vec<Edit>, f64);

/// What the passes read of every message, kept beside the cached counts: a scan over
/// these never visits the messages themselves (scattered over the heap). Kept small
/// (64 bytes): every pass scans them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Skeleton {
    pub role: Role,
    /// Number of tool calls.
    pub calls: u32,
    /// Bytes of the longest string argument of any call (keys aside), which bounds
    /// what argument truncation can find to shorten (saturating).
    pub longest_arg: u32,
    /// Characters of a text content; `NO_TEXT` for a list of blocks (or a text too
    /// long to say here).
    text_len: u32,
    /// The first byte of a text content (0 for none, or for blocks), enough to rule
    /// out most messages as placeholders without visiting them.
    first: u8,
    /// Tells cached messages apart (0: not cached): equal serials, same message.
    pub serial: u64,
    pub timestamp: Option<f64>,
    /// For a tool result, its call, once worked out.
    pub link: Option<Link>,
}

const NO_TEXT: u32 = u32::MAX;

impl Skeleton {
    pub fn of(m: &Message) -> Self {
        let saturate = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Skeleton {
            role: m.role,
            calls: saturate(m.tool_calls.len()),
            longest_arg: saturate(
                m.tool_calls
                    .iter()
                    .map(|c| longest_arg(&c.args))
                    .max()
                    .unwrap_or(0),
            ),
            text_len: match &m.content {
                Content::Text(t) => u32::try_from(t.chars()).unwrap_or(NO_TEXT),
                Content::Blocks(_) => NO_TEXT,
            },
            first: match &m.content {
                Content::Text(t) => t.first_byte(),
                Content::Blocks(_) => m
                    .result_text()
                    .and_then(|t| t.as_bytes().first().copied())
                    .unwrap_or(0),
            },
            serial: 0,
            timestamp: m.timestamp,
            link: None,
        }
    }

    /// The skeleton of a message entering the cache, with a fresh serial.
    pub fn cached(m: &Message) -> Self {
        Skeleton {
            serial: next_serial(),
            ..Skeleton::of(m)
        }
    }

    /// An AI message with tool calls.
    pub fn calls_tools(&self) -> bool {
        self.role == Role::Ai && self.calls > 0
    }

    /// Number of tool calls.
    pub fn calls(&self) -> usize {
        self.calls as usize
    }

    /// Characters of a text content; `None` for a list of blocks.
    pub fn text_chars(&self) -> Option<usize> {
        (self.text_len != NO_TEXT).then_some(self.text_len as usize)
    }

    /// Whether the content may be a list of blocks; `false` is certain.
    pub fn may_have_blocks(&self) -> bool {
        self.text_len == NO_TEXT
    }

    /// Whether the message may hold a placeholder (`starts_as_placeholder` says for
    /// sure); `false` is certain.
    pub fn may_be_placeholder(&self, gap_template: &str) -> bool {
        self.first == b'[' || gap_template.as_bytes().first() == Some(&self.first)
    }
}

/// Which tool calls of a cached message keep their arguments whole: those with a
/// string longer than a bound (argument truncation may shorten them), or every one.
/// Ordered by what they keep: a message slimmed at one level serves any higher one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WholeArgs(u32);

impl WholeArgs {
    /// Every call keeps its arguments whole.
    pub const EVERY: WholeArgs = WholeArgs(0);

    /// Calls with a string longer than `bytes` keep their arguments whole.
    pub fn longer_than(bytes: usize) -> Self {
        WholeArgs(u32::try_from(bytes).map_or(u32::MAX, |b| b.saturating_add(1)))
    }

    /// Whether a call whose longest string has `longest` bytes keeps its arguments.
    fn keeps(self, longest: usize) -> bool {
        self.0 == 0 || longest >= self.0 as usize
    }
}

/// Keep, of each of `m`'s calls, only what the passes read of its arguments (their
/// `ArgFacts`), unless `whole` keeps them whole.
pub fn slim_args(m: &mut Message, whole: WholeArgs) {
    let saturate = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    for c in &mut m.tool_calls {
        let Args::Whole(v) = &c.args else { continue };
        let longest = longest_string(v);
        if whole.keeps(longest) {
            continue;
        }
        let facts = ArgFacts {
            key: text_key(&v.to_string()),
            repr_len: saturate(crate::pyrepr::py_repr_len(v)),
            longest: saturate(longest),
            main: main_arg_of(v).into_boxed_str(),
        };
        c.args = Args::Facts(facts);
    }
}

/// Bytes of the longest string value of a call's arguments.
pub(super) fn longest_arg(args: &Args) -> usize {
    match args {
        Args::Whole(v) => longest_string(v),
        Args::Facts(f) => f.longest as usize,
    }
}

/// Bytes of the longest string value in `v`, nested ones included (without
/// recursion: arguments can nest deeply).
pub(super) fn longest_string(v: &Value) -> usize {
    let mut longest = 0;
    let mut pending = vec![v];
    while let Some(v) = pending.pop() {
        match v {
            Value::String(s) => longest = longest.max(s.len()),
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    longest
}

/// A fresh serial for a message entering the cache.
fn next_serial() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The view a pass works on.
pub struct View<'a, 'm> {
    /// The messages as they came (edits land in `tokens` and `placeholders`).
    pub msgs: &'a [&'a Message],
    /// Each message's measure as it came (before any edit).
    pub measures: &'a [Measure],
    pub skeletons: &'a [Skeleton],
    /// Per message, whether its content (as edited so far) is one of the passes'
    /// placeholders; kept up to date as edits land, so no pass reads texts to know.
    pub placeholders: &'a [bool],
    pub tokens: &'a [f64],
    /// Tokens of the whole view, system prompt and tools included.
    pub total: f64,
    pub max_input_tokens: Option<u64>,
    pub params: &'a HeuristicParams,
    /// Per message: when it was sent, in seconds since the epoch (empty when no
    /// message says).
    pub timestamps: &'a [Option<f64>],
    /// The time of this call, in seconds since the epoch.
    pub now: Option<f64>,
    /// Per message: where its full text is archived, if it is (may be shorter than
    /// the messages).
    pub archive: &'a [Option<String>],
    /// The tool results, found once per plan (edits never change them).
    pub results: &'a [ToolResult],
    /// Tool names by `ToolResult::tool_id`.
    pub tool_names: &'a [&'a str],
    /// Per message, what earlier turns worked out.
    pub memo: &'m Memos,
}
impl<'a> View<'a, '_> {
    /// The call a result answers, when it is in the conversation.
    pub fn call(&self, r: &ToolResult) -> Option<&'a ToolCall> {
        self.msgs.get(r.caller?)?.tool_calls.get(r.position)
    }

    /// The tool a result came from (its own name, else its call's).
    pub fn tool(&self, r: &ToolResult) -> &'a str {
        self.tool_names.get(r.tool_id).copied().unwrap_or("")
    }

    /// The text of message `i` as it came (`Message::result_text`). Only the budget
    /// reads texts, and it runs first: no earlier pass has rewritten them.
    pub fn text(&self, i: usize) -> Option<&str> {
        self.msgs.get(i)?.result_text()
    }

    /// The id of the call a result answers, as the result names it.
    pub fn call_id(&self, r: &ToolResult) -> &'a str {
        self.msgs
            .get(r.index)
            .and_then(|m| m.tool_call_id.as_deref())
            .unwrap_or("")
    }

    /// Whether message `i` now holds one of the passes' placeholders.
    pub fn is_placeholder(&self, i: usize) -> bool {
        self.placeholders.get(i).copied().unwrap_or(false)
    }

    /// Whether the view has reached a pass's trigger. Measured on the view before the
    /// pass, which only grows between summaries, so a fired pass stays fired.
    pub fn reached(&self, trigger: Size) -> bool {
        match trigger {
            Size::Messages(n) => self.msgs.len() as u64 >= n,
            _ => trigger
                .tokens(self.max_input_tokens)
                .ok()
                .flatten()
                .is_some_and(|t| self.total >= t as f64),
        }
    }

    /// Tokens a message would have with `new` as its whole content.
    pub fn tokens_with_keyed(&self, i: usize, new: &Keyed) -> f64 {
        let old = self.skeletons.get(i).and_then(Skeleton::text_chars);
        match (old, self.measures.get(i)) {
            // Text content: swap its length in the measure, without visiting the message.
            (Some(old), Some(base)) => {
                let body = base.chars_without_name as usize - old + new.chars as usize;
                let name = (base.chars - base.chars_without_name) as usize;
                Measure::new(body, name, base.images, base.documents).heuristic_tokens(self.params)
            }
            _ => {
                let mut m = self.msgs[i].clone();
                m.replace_text(&new.text);
                measure(&m).heuristic_tokens(self.params)
            }
        }
    }
}

/// Per tool result, whether its tool passes `test`; each distinct name is tested once
/// (a conversation calls few tools many times).
pub fn tool_flags(view: &View<'_, '_>, test: impl Fn(&str) -> bool) -> Vec<bool> {
    let by_id: Vec<bool> = view.tool_names.iter().map(|t| test(t)).collect();
    view.results
        .iter()
        .map(|r| by_id.get(r.tool_id).copied().unwrap_or(false))
        .collect()
}

/// What a `View` borrows, worked out from messages as a first turn would: for the
/// passes' own tests.
#[cfg(test)]
pub(crate) struct ViewParts<'a> {
    refs: Vec<&'a Message>,
    skeletons: Vec<Skeleton>,
    results: Vec<ToolResult>,
    tool_names: Vec<&'a str>,
    measures: Vec<Measure>,
    placeholders: Vec<bool>,
    tokens: Vec<f64>,
    timestamps: Vec<Option<f64>>,
    params: HeuristicParams,
    memo: Memos,
}

#[cfg(test)]
impl<'a> ViewParts<'a> {
    /// Heuristic tokens, no placeholders, no times.
    pub(crate) fn new(msgs: &'a [Message]) -> Self {
        let refs: Vec<&Message> = msgs.iter().collect();
        let mut skeletons: Vec<Skeleton> = msgs.iter().map(Skeleton::of).collect();
        link_results(&refs, &mut skeletons, 0);
        let (results, tool_names) = tool_results(&refs, &skeletons);
        let n = msgs.len();
        let params = HeuristicParams::default();
        let measures: Vec<Measure> = msgs.iter().map(measure).collect();
        ViewParts {
            refs,
            skeletons,
            results,
            tool_names,
            tokens: measures
                .iter()
                .map(|m| m.heuristic_tokens(&params))
                .collect(),
            measures,
            placeholders: vec![false; n],
            timestamps: vec![None; n],
            params,
            memo: Memos::new(n),
        }
    }

    pub(crate) fn view(&self) -> View<'_, '_> {
        View {
            msgs: &self.refs,
            measures: &self.measures,
            skeletons: &self.skeletons,
            placeholders: &self.placeholders,
            tokens: &self.tokens,
            total: self.tokens.iter().sum(),
            max_input_tokens: None,
            params: &self.params,
            timestamps: &self.timestamps,
            now: None,
            archive: &[],
            results: &self.results,
            tool_names: &self.tool_names,
            memo: &self.memo,
        }
    }
}

//! What a pass returns: edits of one message's content or of one call's arguments,
//! shared with the memos that made them.

use std::sync::Arc;

use serde_json::Value;

use crate::message::Message;

/// Which pass made an edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    Budget,
    TruncateArgs,
    Clearing,
    Dedupe,
    Collapse,
    TimeGap,
}

impl Pass {
    /// The order they run in. The budget comes first: it is the only pass that reads
    /// message texts, and it reads them as they came.
    pub const ALL: [Pass; 6] = [
        Pass::Budget,
        Pass::TruncateArgs,
        Pass::Clearing,
        Pass::Dedupe,
        Pass::Collapse,
        Pass::TimeGap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pass::Budget => "budget",
            Pass::TruncateArgs => "truncate_args",
            Pass::Clearing => "clearing",
            Pass::Dedupe => "dedupe",
            Pass::Collapse => "collapse",
            Pass::TimeGap => "time_gap",
        }
    }
}

/// A set of edits by `(pass, index)`, packed into one sorted vector: a plan asks it
/// for every batched edit of a run, and a conversation keeps one between calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EditKeys(Vec<u64>);

impl EditKeys {
    /// The keys of `edits`.
    pub fn of<'e>(edits: impl IntoIterator<Item = &'e Edit>) -> Self {
        let mut keys: Vec<u64> = edits.into_iter().map(|e| pack(e.pass, e.index)).collect();
        keys.sort_unstable();
        keys.dedup();
        EditKeys(keys)
    }

    pub fn contains(&self, pass: Pass, index: usize) -> bool {
        self.0.binary_search(&pack(pass, index)).is_ok()
    }
}

/// One key per `(pass, index)`: six passes fit in the low three bits.
fn pack(pass: Pass, index: usize) -> u64 {
    ((index as u64) << 3) | pass as u64
}

/// What an edit changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The whole content becomes this text (shared with the memos that keep it).
    Content(Arc<str>),
    /// `tool_calls[call].args` becomes this value.
    ToolArgs { call: usize, args: Arc<Value> },
}

/// One change to one message.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub index: usize,
    pub pass: Pass,
    pub change: Change,
    /// The message's tokens once this pass's edits to it are applied.
    pub tokens: f64,
    /// Identifies the change (a hash of the text, or of the settings and call an
    /// argument edit follows from), so that an edit seen before is recognised cheaply.
    pub key: u64,
}

impl Edit {
    /// What the edit holds beyond its own size: its text, or its arguments.
    pub fn heap_bytes(&self) -> usize {
        crate::message::ARC_HEADER
            + match &self.change {
                Change::Content(text) => text.len(),
                Change::ToolArgs { args, .. } => crate::message::value_heap_bytes(args),
            }
    }

    /// A content edit, keyed by its text.
    pub fn content(index: usize, pass: Pass, text: Arc<str>, key: u64, tokens: f64) -> Self {
        Edit {
            index,
            pass,
            change: Change::Content(text),
            tokens,
            key,
        }
    }
}

/// A hash of a text, to key content edits.
pub fn text_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A replacement text with its key and length, made once and shared.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyed {
    pub text: Arc<str>,
    pub key: u64,
    /// Length in code points (saturating: 32 bits keep a memo slot small).
    pub chars: u32,
}

pub fn keyed(text: String) -> Keyed {
    Keyed {
        key: text_key(&text),
        chars: u32::try_from(text.chars().count()).unwrap_or(u32::MAX),
        text: Arc::from(text),
    }
}

impl Edit {
    /// The edit that makes message `index`'s content `new`, which brings it to `tokens`.
    pub fn keyed(index: usize, pass: Pass, new: &Keyed, tokens: f64) -> Self {
        Edit::content(index, pass, Arc::clone(&new.text), new.key, tokens)
    }

    /// Apply to a message (the core's copy, to count what follows).
    pub fn apply(&self, m: &mut Message) {
        match &self.change {
            Change::Content(text) => m.replace_text(text),
            Change::ToolArgs { call, args } => m.set_call_args(*call, args),
        }
    }
}

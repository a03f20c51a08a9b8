//! What a pass returns: edits of one message's content or of one call's arguments,
//! shared with the memos that made them.

use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::message::{Content, Message};

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

/// A value an edit hands out: borrowed from what the cache keeps, or made this turn.
/// Borrowing touches no reference count: a warm turn hands out thousands of kept
/// placeholders, and an atomic increment on each stalls the scan that finds them.
#[derive(Debug)]
pub enum Shared<'m, T: ?Sized> {
    Kept(&'m Arc<T>),
    Made(Arc<T>),
}

impl<T: ?Sized> Shared<'_, T> {
    /// The same value, owning its share.
    pub fn into_owned(self) -> Shared<'static, T> {
        match self {
            Shared::Kept(a) => Shared::Made(Arc::clone(a)),
            Shared::Made(a) => Shared::Made(a),
        }
    }

    /// The same value, borrowed from this one.
    pub fn borrowed(&self) -> Shared<'_, T> {
        match self {
            Shared::Kept(a) => Shared::Kept(a),
            Shared::Made(a) => Shared::Kept(a),
        }
    }
}

impl From<&str> for Shared<'_, str> {
    fn from(text: &str) -> Self {
        Shared::Made(Arc::from(text))
    }
}

impl<T: ?Sized> Clone for Shared<'_, T> {
    fn clone(&self) -> Self {
        match self {
            Shared::Kept(a) => Shared::Kept(a),
            Shared::Made(a) => Shared::Made(Arc::clone(a)),
        }
    }
}

impl<T: ?Sized> std::ops::Deref for Shared<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Shared::Kept(a) => a,
            Shared::Made(a) => a,
        }
    }
}

impl<T: ?Sized + PartialEq> PartialEq for Shared<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// What an edit changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Change<'m> {
    /// The whole content becomes this text.
    Content(Shared<'m, str>),
    /// `tool_calls[call].args` becomes this value.
    ToolArgs {
        call: usize,
        args: Shared<'m, Value>,
    },
}

impl Change<'_> {
    /// The same change, owning its value.
    pub fn into_owned(self) -> Change<'static> {
        match self {
            Change::Content(text) => Change::Content(text.into_owned()),
            Change::ToolArgs { call, args } => Change::ToolArgs {
                call,
                args: args.into_owned(),
            },
        }
    }

    /// The same change, borrowing its value from this one.
    pub fn borrowed(&self) -> Change<'_> {
        match self {
            Change::Content(text) => Change::Content(text.borrowed()),
            Change::ToolArgs { call, args } => Change::ToolArgs {
                call: *call,
                args: args.borrowed(),
            },
        }
    }
}

/// One change to one message. `'m` is the life of the memos its values may be
/// borrowed from.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit<'m> {
    pub index: usize,
    pub pass: Pass,
    pub change: Change<'m>,
    /// The message's tokens once this pass's edits to it are applied.
    pub tokens: f64,
    /// Identifies the change (a hash of the text, or of the settings and call an
    /// argument edit follows from), so that an edit seen before is recognised cheaply.
    pub key: u64,
}

impl<'m> Edit<'m> {
    /// A content edit, keyed by its text.
    pub fn content(index: usize, pass: Pass, text: Shared<'m, str>, key: u64, tokens: f64) -> Self {
        Edit {
            index,
            pass,
            change: Change::Content(text),
            tokens,
            key,
        }
    }

    /// The same edit, owning its values.
    pub fn into_owned(self) -> Edit<'static> {
        Edit {
            index: self.index,
            pass: self.pass,
            change: self.change.into_owned(),
            tokens: self.tokens,
            key: self.key,
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

impl<'m> Edit<'m> {
    /// The edit that makes message `index`'s content `new`, which brings it to `tokens`.
    pub fn keyed(index: usize, pass: Pass, new: &Keyed, tokens: f64) -> Self {
        Edit::content(
            index,
            pass,
            Shared::Made(Arc::clone(&new.text)),
            new.key,
            tokens,
        )
    }

    /// The same, with a text the memos keep: borrowed, not shared.
    pub fn kept(index: usize, pass: Pass, new: &'m Keyed, tokens: f64) -> Self {
        Edit::content(index, pass, Shared::Kept(&new.text), new.key, tokens)
    }

    /// The same, with a text kept or made (see `remembered`).
    pub fn remembered(index: usize, pass: Pass, new: &Remembered<'m, Keyed>, tokens: f64) -> Self {
        match new {
            Remembered::Kept(k) => Edit::kept(index, pass, k, tokens),
            Remembered::Made(k) => Edit::keyed(index, pass, k, tokens),
        }
    }

    /// Apply to a message (the core's copy, to count what follows).
    pub fn apply(&self, m: &mut Message) {
        match &self.change {
            Change::Content(text) => m.content = Content::Text((**text).into()),
            Change::ToolArgs { call, args } => {
                if let Some(c) = m.tool_calls.get_mut(*call) {
                    c.args = Value::clone(args);
                }
            }
        }
    }
}

//! What the passes worked out about each message and reuse on later turns.

use std::hash::Hasher;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::*;
use crate::config::PlanConfig;
use crate::tokens::HeuristicParams;

/// What the passes worked out about each message of a conversation and can reuse on
/// later turns (a message is immutable while cached; anything that depends on
/// settings carries the fingerprint of the settings it was made with). A result's
/// placeholders and read key come from its call, in an earlier message: `forget_call`
/// drops them when that may have changed.
#[derive(Debug, Default)]
pub struct Memos {
    /// Per message, its memos, made on first use: most messages (a user's, an answer,
    /// a call with short arguments) never need any, and an empty slot is 16 bytes.
    slots: Vec<OnceLock<Box<Slot>>>,
    /// The batched edits of the passes over the settled prefix, for the calls that
    /// keep the same prefix settled (most calls between two batches).
    settled: Mutex<Option<Arc<SettledRun>>>,
}

/// What the passes worked out about one message.
#[derive(Debug, Default)]
pub struct Slot {
    /// Clearing's placeholder for a result, and the result's tokens with it, under the
    /// fingerprint of the counting parameters.
    pub cleared: OnceLock<Keyed>,
    pub cleared_tokens: OnceLock<(u64, f64)>,
    /// Dedupe's placeholder for a result, and its read key (`Args::key`).
    pub superseded: OnceLock<Keyed>,
    pub read_key: OnceLock<u64>,
    /// Argument truncation of an AI message, under the settings fingerprinted.
    pub truncated: OnceLock<(u64, Option<Shortened>)>,
    /// The collapse note on a result, under the key of the run's messages.
    pub note: OnceLock<(u64, Keyed)>,
}

impl Slot {
    /// What the memos hold beyond the slot itself: their texts and edits, which the
    /// edits of a call share only while it runs.
    fn heap_bytes(&self) -> usize {
        let keyed = |k: &Keyed| crate::message::ARC_HEADER + k.text.len();
        let texts = self.cleared.get().map_or(0, keyed)
            + self.superseded.get().map_or(0, keyed)
            + self.note.get().map_or(0, |(_, k)| keyed(k));
        let shortened = self.truncated.get().and_then(|(_, s)| s.as_ref());
        let edits = shortened.map_or(0, |(edits, _)| {
            edits.capacity() * std::mem::size_of::<Edit>()
                + edits.iter().map(Edit::heap_bytes).sum::<usize>()
        });
        texts + edits
    }
}

/// The batched edits a run of the passes made over a conversation's first `upto`
/// messages, with what the run read besides those messages.
#[derive(Debug)]
pub struct SettledRun {
    pub upto: usize,
    /// A fingerprint of the sizes, window, archive and counting the run read.
    pub key: u64,
    pub config: PlanConfig,
    pub edits: EditKeys,
}

impl Memos {
    /// Empty memos for `n` messages.
    pub fn new(n: usize) -> Self {
        let mut m = Memos::default();
        m.resize(n);
        m
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// Message `i`'s memos, made empty on first use. `i` is one of the messages
    /// planned, which the memos are sized to.
    pub fn at(&self, i: usize) -> &Slot {
        self.slots[i].get_or_init(Box::default)
    }

    /// Message `i`'s memos, if any were made.
    pub fn made(&self, i: usize) -> Option<&Slot> {
        self.slots.get(i)?.get().map(|s| &**s)
    }

    /// The slots as allocated, those made and what they hold.
    pub fn bytes(&self) -> usize {
        let made: usize = self
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .map(|s| std::mem::size_of::<Slot>() + s.heap_bytes())
            .sum();
        crate::bounded_cache::Weighed::bytes(&self.slots) + made
    }

    pub fn reserve_exact(&mut self, additional: usize) {
        self.slots.reserve_exact(additional);
    }

    pub fn truncate(&mut self, n: usize) {
        self.slots.truncate(n);
        self.forget_settled_from(n);
    }

    /// Keep `n` messages' memos; new ones start empty.
    pub fn resize(&mut self, n: usize) {
        self.slots.resize_with(n, OnceLock::new);
    }

    /// Forget everything about message `i` (it was replaced).
    pub fn reset(&mut self, i: usize) {
        self.forget_settled_from(i);
        if let Some(s) = self.slots.get_mut(i) {
            *s = OnceLock::new();
        }
    }

    /// Forget what was worked out from the call message `i` answers (and its
    /// collapse note: its key would no longer match, and an empty memo can keep the
    /// next one).
    pub fn forget_call(&mut self, i: usize) {
        self.forget_settled_from(i);
        let Some(s) = self.slots.get_mut(i).and_then(OnceLock::get_mut) else {
            return;
        };
        s.cleared = OnceLock::new();
        s.cleared_tokens = OnceLock::new();
        s.superseded = OnceLock::new();
        s.read_key = OnceLock::new();
        s.note = OnceLock::new();
    }

    /// The run kept for the first `upto` messages, if it was made under `key` and
    /// `config`.
    pub fn settled_run(
        &self,
        upto: usize,
        key: u64,
        config: &PlanConfig,
    ) -> Option<Arc<SettledRun>> {
        let kept = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
        kept.as_ref()
            .filter(|r| r.upto == upto && r.key == key && r.config == *config)
            .map(Arc::clone)
    }

    /// How many messages the kept run covers, if one is kept.
    pub fn settled_upto(&self) -> Option<usize> {
        let kept = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
        kept.as_ref().map(|r| r.upto)
    }

    pub fn keep_settled_run(&self, run: Arc<SettledRun>) {
        *self.settled.lock().unwrap_or_else(PoisonError::into_inner) = Some(run);
    }

    /// Message `i` changed or went: a run over it no longer holds.
    fn forget_settled_from(&mut self, i: usize) {
        let kept = self
            .settled
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if kept.as_ref().is_some_and(|r| i < r.upto) {
            *kept = None;
        }
    }
}

/// A value from a memo, or one made this turn that no memo keeps.
pub enum Remembered<'m, T> {
    Kept(&'m T),
    Made(T),
}

impl<T> std::ops::Deref for Remembered<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Remembered::Kept(v) => v,
            Remembered::Made(v) => v,
        }
    }
}

/// A fingerprint of the counting parameters, for memos of token counts.
pub fn params_key(p: &HeuristicParams) -> u64 {
    let mut h = FastHasher::default();
    for x in [
        p.chars_per_token,
        p.extra_tokens_per_message,
        p.tokens_per_image,
        p.tokens_per_document,
    ] {
        h.write_u64(x.to_bits());
    }
    h.write_u64(u64::from(p.count_name));
    h.finish()
}

/// What `memo` holds under `key`, else `make()`, kept in `memo` for later turns when
/// the memo is still empty (a value made under another key stays and is not used).
/// Without a key nothing is kept.
pub fn remembered<'m, T>(
    memo: &'m OnceLock<(u64, T)>,
    key: Option<u64>,
    make: impl Fn() -> T,
) -> Remembered<'m, T> {
    let Some(key) = key else {
        return Remembered::Made(make());
    };
    let (kept_under, value) = memo.get_or_init(|| (key, make()));
    if *kept_under == key {
        Remembered::Kept(value)
    } else {
        Remembered::Made(make())
    }
}

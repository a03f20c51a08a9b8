//! What the passes worked out about each message and reuse on later turns.

use std::hash::Hasher;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::*;
use crate::config::PlanConfig;
use crate::tokens::HeuristicParams;

/// What the passes worked out about each message of a conversation and can reuse on
/// later turns (a message is immutable while cached; anything that depends on
/// settings carries the fingerprint of the settings it was made with). One vector per
/// kind, indexed by message: a pass reads one kind for thousands of messages, and
/// reads them in order. A result's placeholders and read key come from its call, in
/// an earlier message: `forget_call` drops them when that may have changed.
#[derive(Debug, Default)]
pub struct Memos {
    /// Clearing's placeholder for a result, and the result's tokens with it, under the
    /// fingerprint of the counting parameters.
    pub cleared: Vec<OnceLock<Keyed>>,
    pub cleared_tokens: Vec<OnceLock<(u64, f64)>>,
    /// Dedupe's placeholder for a result, and its read key.
    pub superseded: Vec<OnceLock<Keyed>>,
    pub read_key: Vec<OnceLock<String>>,
    /// Argument truncation of an AI message, under the settings fingerprinted.
    pub truncated: Vec<OnceLock<(u64, Option<Shortened>)>>,
    /// The collapse note on a result, under the key of the run's messages.
    pub note: Vec<OnceLock<(u64, Keyed)>>,
    /// The batched edits of the passes over the settled prefix, for the calls that
    /// keep the same prefix settled (most calls between two batches).
    settled: Mutex<Option<Arc<SettledRun>>>,
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

/// Do `$op` with `$v` bound to each kind's vector in turn (`shared`: by shared
/// reference): the one list of the kinds, so that none is left out when the vectors
/// are sized or weighed together.
macro_rules! each_kind {
    (shared $memos:expr, $v:ident => $op:expr) => {
        each_kind!(@list shared $memos, $v => $op)
    };
    ($memos:expr, $v:ident => $op:expr) => {
        each_kind!(@list mutable $memos, $v => $op)
    };
    (@list $mode:ident $memos:expr, $v:ident => $op:expr) => {
        each_kind!(@fields $mode $memos, $v => $op;
            cleared, cleared_tokens, superseded, read_key, truncated, note)
    };
    (@fields mutable $memos:expr, $v:ident => $op:expr; $($field:ident),*) => {{
        let memos = $memos;
        $({
            let $v = &mut memos.$field;
            $op;
        })*
    }};
    (@fields shared $memos:expr, $v:ident => $op:expr; $($field:ident),*) => {{
        let memos = $memos;
        $({
            let $v = &memos.$field;
            $op;
        })*
    }};
}

impl Memos {
    /// Empty memos for `n` messages.
    pub fn new(n: usize) -> Self {
        let mut m = Memos::default();
        m.resize(n);
        m
    }

    pub fn len(&self) -> usize {
        self.cleared.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cleared.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.cleared.capacity()
    }

    /// The vectors as allocated (not the texts their memos share with the edits).
    pub fn bytes(&self) -> usize {
        let mut n = 0;
        each_kind!(shared self, v => n += crate::bounded_cache::Weighed::bytes(v));
        n
    }

    pub fn reserve_exact(&mut self, additional: usize) {
        each_kind!(self, v => v.reserve_exact(additional));
    }

    pub fn truncate(&mut self, n: usize) {
        each_kind!(&mut *self, v => v.truncate(n));
        self.forget_settled_from(n);
    }

    /// Keep `n` messages' memos; new ones start empty.
    pub fn resize(&mut self, n: usize) {
        each_kind!(self, v => v.resize_with(n, OnceLock::new));
    }

    /// Forget everything about message `i` (it was replaced).
    pub fn reset(&mut self, i: usize) {
        self.forget_call(i);
        forget(&mut self.truncated, i);
    }

    /// Forget what was worked out from the call message `i` answers (and its
    /// collapse note: its key would no longer match, and an empty memo can keep the
    /// next one).
    pub fn forget_call(&mut self, i: usize) {
        self.forget_settled_from(i);
        forget(&mut self.cleared, i);
        forget(&mut self.cleared_tokens, i);
        forget(&mut self.superseded, i);
        forget(&mut self.read_key, i);
        forget(&mut self.note, i);
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

/// Empty the memo at `i`, if there is one.
fn forget<T>(memos: &mut [OnceLock<T>], i: usize) {
    if let Some(m) = memos.get_mut(i) {
        *m = OnceLock::new();
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

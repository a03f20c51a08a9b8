//! The conversation cache model: what was worked out for each message of a
//! conversation, kept from one call to the next, and what reading a message anew
//! invalidates. The bindings decide what an entry is and whether it still stands for
//! the message at its place (by the identity of the Python objects); this module keeps
//! the per-message vectors in step with the entries.

use crate::passes::{Memos, Skeleton, WholeArgs};
use crate::tokens::{CachedCounts, Encoding, HeuristicParams, Measure};

/// What every cached entry carries: the counts of its message.
pub trait Counted {
    fn counts(&self) -> &CachedCounts;

    /// What the entry holds beyond its own size (a converted message, say), as the
    /// binding estimates it; weighed once, when the entry is put.
    fn heap_bytes(&self) -> usize {
        0
    }

    /// What the entry keeps alive of the caller's (its message object, the text read
    /// where it lies rather than copied): while the caller holds its messages,
    /// dropping the entry would not free it.
    fn borrowed_bytes(&self) -> usize {
        0
    }
}

/// What the cache keeps of one conversation.
pub struct Conversation<E> {
    pub entries: Vec<E>,
    /// What the passes scan and what they worked out, per message: `skeletons[i]`
    /// and `memos[i]` go with `entries[i]` while that entry holds its converted
    /// message. Kept dense, beside the entries rather than in each one: the passes
    /// borrow the skeletons as they are and walk thousands of memos in memory order.
    /// Empty while the conversation is only counted.
    pub skeletons: Vec<Skeleton>,
    pub memos: Memos,
    /// The tokens of the first entries under `tokens_of`, dense: a warm turn copies
    /// them instead of working each one out of its entry again. Cut back to the first
    /// entry replaced or added; `tokens_for` extends it.
    pub tokens: Vec<f64>,
    pub tokens_of: Option<(Encoding, HeuristicParams)>,
    /// The measures of the first entries, dense for the passes; cut back like
    /// `tokens`, extended by `fill_measures`.
    pub measures: Vec<Measure>,
    /// The provider usage each of the first entries reports, dense (an anchor is looked
    /// for on every planned call); cut back like `tokens`, extended by `fill_usage`.
    pub usage: Vec<Option<(u64, u64)>>,
    /// Every tool result before this index has its link in its skeleton.
    pub links_upto: usize,
    /// The binding's identity of each entry's object (its address), dense: a warm call
    /// compares the list against these without reading an entry or an object.
    pub identities: Vec<usize>,
    /// Where the next rotating recheck starts (see `Conversation::rechecked`).
    pub sweep_from: usize,
    /// What every entry was read for, as the binding encodes it: a call that wants no
    /// more need not ask each entry.
    pub read_for: u8,
    /// No converted message of an entry keeps fewer arguments whole than this.
    pub whole_args: WholeArgs,
    /// What the entries hold beyond their own size (`Counted::heap_bytes`), kept
    /// up to date as they are put and dropped.
    pub entry_heap: usize,
    /// What the binding keeps for the conversation outside the entries' estimates
    /// (edited copies of messages), as it estimates it.
    pub held_elsewhere: usize,
    /// What the entries keep alive of the caller's (`Counted::borrowed_bytes`).
    pub entry_borrowed: usize,
    /// The caller keeps these messages between calls (its last call brought back the
    /// very objects cached): their texts are the caller's, not weighed here, until
    /// `caller_let_go` finds otherwise.
    pub shared_with_caller: bool,
    /// The search index of the first `index.len()` messages, made by the first
    /// search (most conversations never search) and grown by later ones; dropped when
    /// a message it holds is replaced or removed, and made again on the next search.
    pub search: Option<Box<crate::search::Index>>,
}

impl<E> Default for Conversation<E> {
    fn default() -> Self {
        Conversation {
            entries: Vec::new(),
            skeletons: Vec::new(),
            memos: Memos::default(),
            tokens: Vec::new(),
            tokens_of: None,
            measures: Vec::new(),
            usage: Vec::new(),
            links_upto: 0,
            identities: Vec::new(),
            sweep_from: 0,
            read_for: 0,
            whole_args: WholeArgs::EVERY,
            entry_heap: 0,
            held_elsewhere: 0,
            entry_borrowed: 0,
            shared_with_caller: false,
            search: None,
        }
    }
}

/// The newest entries a warm call rechecks in full on every call (see `Recheck`).
pub const RECHECK_NEWEST: usize = 16;
/// How many older entries each warm call rechecks in full, in rotation.
pub const RECHECK_SWEEP: usize = 64;

/// Which entries of an unchanged prefix a warm call still checks in full (the
/// content each holds, and what it was read for): the newest, and a window that
/// moves on every call.
///
/// An unchanged prefix is one whose list items are the very objects cached, a check
/// that reads only the list. It catches a message replaced or removed (LangGraph's
/// `add_messages` replaces a message by id with a new object, and `RemoveMessage`
/// takes it out), any insertion and any reordering. What it can miss: an object
/// edited in place (its `content` reassigned, a content list or `tool_calls`
/// mutated). Such an edit to one of the `RECHECK_NEWEST` newest entries is caught at
/// once; to an older one, within `len / RECHECK_SWEEP` calls, when the sweep reaches
/// it. Callers whose messages may be edited in place check every entry's content
/// object too (a reassigned `content` caught at once); what the older ones' calls and
/// content lists hold is walked only as the sweep reaches them, since walking every
/// one made a warm call at 10,000 messages five times slower.
#[derive(Clone, Debug, PartialEq)]
pub struct Recheck {
    pub newest_from: usize,
    pub sweep: std::ops::Range<usize>,
}

impl Recheck {
    pub fn contains(&self, i: usize) -> bool {
        i >= self.newest_from || self.sweep.contains(&i)
    }
}

impl<E> Conversation<E> {
    /// How many leading entries are still the list's items, `item_at(i)` giving the
    /// identity of the list's item `i` (`None` past its end).
    pub fn unchanged_prefix(&self, item_at: impl Fn(usize) -> Option<usize>) -> usize {
        self.identities
            .iter()
            .enumerate()
            .take_while(|&(i, &id)| item_at(i) == Some(id))
            .count()
    }

    /// The entries of an unchanged prefix of `same` entries to check in full this
    /// call; the sweep moves on.
    pub fn rechecked(&mut self, same: usize) -> Recheck {
        let newest_from = same.saturating_sub(RECHECK_NEWEST);
        if self.sweep_from >= newest_from {
            self.sweep_from = 0;
        }
        let start = self.sweep_from;
        let end = (start + RECHECK_SWEEP).min(newest_from);
        self.sweep_from = end;
        Recheck {
            newest_from,
            sweep: start..end,
        }
    }
}

impl<E: Counted> Conversation<E> {
    /// Each entry's tokens under `enc` and `p`, working out only those not kept.
    pub fn tokens_for(&mut self, enc: Encoding, p: &HeuristicParams) -> &[f64] {
        if self.tokens_of != Some((enc, *p)) {
            self.tokens.clear();
            self.tokens_of = Some((enc, *p));
        }
        self.tokens.truncate(self.entries.len());
        with_room(&mut self.tokens, self.entries.len());
        let have = self.tokens.len();
        let more = self.entries[have..]
            .iter()
            .map(|e| e.counts().tokens(enc, p));
        self.tokens.extend(more);
        &self.tokens
    }

    /// Bring `measures` up to the entries.
    pub fn fill_measures(&mut self) {
        self.measures.truncate(self.entries.len());
        with_room(&mut self.measures, self.entries.len());
        let have = self.measures.len();
        let more = self.entries[have..].iter().map(|e| e.counts().measure);
        self.measures.extend(more);
    }

    /// Bring `usage` up to the entries (read with their usage).
    pub fn fill_usage(&mut self) {
        self.usage.truncate(self.entries.len());
        with_room(&mut self.usage, self.entries.len());
        let have = self.usage.len();
        let more = self.entries[have..].iter().map(|e| e.counts().usage());
        self.usage.extend(more);
    }
}

impl<E: Counted> Conversation<E> {
    /// Drop the entries from `n` on, and their weight.
    fn drop_entries_from(&mut self, n: usize) {
        if n < self.entries.len() {
            let dropped: usize = self.entries[n..].iter().map(Counted::heap_bytes).sum();
            let borrowed: usize = self.entries[n..].iter().map(Counted::borrowed_bytes).sum();
            self.entry_heap = self.entry_heap.saturating_sub(dropped);
            self.entry_borrowed = self.entry_borrowed.saturating_sub(borrowed);
            self.entries.truncate(n);
        }
    }

    /// Drop the search index when it holds message `n` or a later one (replaced or
    /// removed): an index only ever grows.
    fn forget_search_from(&mut self, n: usize) {
        if self.search.as_ref().is_some_and(|s| s.len() > n) {
            self.search = None;
        }
    }
}

impl<E: Counted> crate::bounded_cache::Weighed for Conversation<E> {
    /// The vectors as allocated, what the entries and memos hold and what the binding
    /// keeps beside them: what dropping the conversation would free. The caller's
    /// messages count only once it has let go of them.
    fn bytes(&self) -> usize {
        use crate::bounded_cache::Weighed as W;
        let borrowed = if self.shared_with_caller {
            0
        } else {
            self.entry_borrowed
        };
        std::mem::size_of::<Self>()
            + self.entries.capacity() * std::mem::size_of::<E>()
            + self.entry_heap
            + borrowed
            + self.held_elsewhere
            + W::bytes(&self.skeletons)
            + self.memos.bytes()
            + W::bytes(&self.tokens)
            + W::bytes(&self.measures)
            + W::bytes(&self.usage)
            + W::bytes(&self.identities)
            + self.search.as_ref().map_or(0, |s| s.bytes())
    }

    fn caller_let_go(&mut self, caller_holds: &dyn Fn(&Self) -> bool) -> bool {
        if !self.shared_with_caller || caller_holds(self) {
            return false;
        }
        self.shared_with_caller = false;
        true
    }
}

impl<E: Counted> Conversation<E> {
    /// Start bringing the cache up to a conversation of `len` messages, read in order
    /// by the caller. `with_messages`: the passes will run, so every entry gets its
    /// skeleton and memos.
    pub fn update(mut self, len: usize, with_messages: bool) -> Update<E> {
        self.drop_entries_from(len);
        self.forget_search_from(len);
        self.identities.truncate(len);
        self.skeletons.truncate(len);
        self.memos.truncate(len);
        // Room for the next turns' messages too (see `room_for`).
        let room = room_for(len);
        if self.entries.capacity() < len {
            self.entries.reserve_exact(room - self.entries.len());
            self.identities.reserve_exact(room - self.identities.len());
        }
        if with_messages && self.skeletons.capacity() < len {
            self.skeletons.reserve_exact(room - self.skeletons.len());
        }
        if with_messages && self.memos.capacity() < len {
            self.memos.reserve_exact(room - self.memos.len());
        }
        Update {
            cached_len: self.entries.len(),
            conversation: self,
            first_replaced: None,
            with_messages,
        }
    }
}

/// One call's update of a cached conversation: each message is either kept (its
/// entry still stands for it) or `put` anew, in order, then `finish` closes it.
pub struct Update<E> {
    conversation: Conversation<E>,
    /// How many entries were cached before this call.
    cached_len: usize,
    /// The first cached entry replaced by another message: what the results after it
    /// know of their calls (in the messages before them) is stale from there on.
    first_replaced: Option<usize>,
    with_messages: bool,
}

impl<E: Counted> Update<E> {
    /// The entry cached for message `i`, if any.
    pub fn entry(&self, i: usize) -> Option<&E> {
        self.conversation.entries.get(i)
    }

    /// The same, to update it in place (it stays the entry of message `i`).
    pub fn entry_mut(&mut self, i: usize) -> Option<&mut E> {
        self.conversation.entries.get_mut(i)
    }

    /// Entry `i` now stands for an equal object of this `identity` (its counts and
    /// memos hold).
    pub fn adopted(&mut self, i: usize, identity: usize) {
        if let Some(id) = self.conversation.identities.get_mut(i) {
            *id = identity;
        }
    }

    /// Message `i` (of this `identity`) was read anew: `entry` replaces what was kept
    /// for it (or follows the entries, for a new message). What depended on the old
    /// message goes with it: its skeleton (replaced by `skeleton`) and memos, the dense
    /// tokens and measures from `i` on, and the links of the results after it.
    pub fn put(&mut self, i: usize, entry: E, identity: usize, skeleton: Skeleton) {
        let c = &mut self.conversation;
        c.entry_heap += entry.heap_bytes();
        c.entry_borrowed += entry.borrowed_bytes();
        match c.entries.get_mut(i) {
            Some(slot) => {
                c.entry_heap = c.entry_heap.saturating_sub(slot.heap_bytes());
                c.entry_borrowed = c.entry_borrowed.saturating_sub(slot.borrowed_bytes());
                *slot = entry;
                if let Some(id) = c.identities.get_mut(i) {
                    *id = identity;
                }
                self.first_replaced.get_or_insert(i);
                c.forget_search_from(i);
            }
            None => {
                c.entries.push(entry);
                c.identities.push(identity);
            }
        }
        c.links_upto = c.links_upto.min(i);
        c.tokens.truncate(i);
        c.measures.truncate(i);
        c.usage.truncate(i);
        if self.with_messages || i < c.skeletons.len() {
            set_at(&mut c.skeletons, i, skeleton);
        }
        c.memos.reset(i);
    }

    /// The conversation of the first `n` messages, as read.
    pub fn finish(self, n: usize) -> Conversation<E> {
        let Update {
            mut conversation,
            cached_len,
            first_replaced,
            with_messages,
        } = self;
        let c = &mut conversation;
        c.drop_entries_from(n);
        c.forget_search_from(n);
        c.identities.truncate(n);
        c.skeletons.truncate(n);
        c.memos.truncate(n);
        if with_messages {
            // Every entry holds its message now; new ones start with empty memos.
            c.links_upto = c.links_upto.min(c.skeletons.len());
            c.skeletons.resize_with(n, Skeleton::default);
            c.memos.resize(n);
        }
        if let Some(k) = first_replaced {
            for s in c.skeletons.iter_mut().take(cached_len).skip(k + 1) {
                s.link = None;
            }
            for j in k + 1..cached_len.min(n) {
                c.memos.forget_call(j);
            }
        }
        c.tokens.truncate(n);
        c.measures.truncate(n);
        c.usage.truncate(n);
        c.links_upto = c.links_upto.min(n);
        conversation
    }
}

/// The capacity a vector of `len` per-message items is given when it must grow: room
/// for the next turns' messages too (growing a full vector moves every item, and the
/// turn after a conversation is first seen would always pay for that), without the
/// doubling that would leave up to half of a long conversation's vectors unused.
fn room_for(len: usize) -> usize {
    len + len / 4 + 8
}

/// Make room in `v` for `len` items, as `room_for` says.
fn with_room<T>(v: &mut Vec<T>, len: usize) {
    if v.capacity() < len {
        v.reserve_exact(room_for(len) - v.len());
    }
}

/// Put `value` at `i`, filling any gap before it with defaults.
fn set_at<T: Default>(v: &mut Vec<T>, i: usize, value: T) {
    if i >= v.len() {
        v.resize_with(i, T::default);
        v.push(value);
    } else {
        v[i] = value;
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::message::{Content, Message, Role, Text};
    use crate::passes::{keyed, Link};

    /// An entry standing for message `id`, as a binding's entry stands for a Python
    /// object.
    struct E(u32, CachedCounts);

    impl Counted for E {
        fn counts(&self) -> &CachedCounts {
            &self.1
        }

        /// Its text, as if read in place, and as much again of its own.
        fn heap_bytes(&self) -> usize {
            8 * self.0 as usize
        }

        fn borrowed_bytes(&self) -> usize {
            4 * self.0 as usize
        }
    }

    fn entry(id: u32) -> E {
        let m = Message {
            role: Role::Human,
            content: Content::Text(Text::from("x".repeat(4 * id as usize))),
            ..Message::default()
        };
        E(id, CachedCounts::of(&m))
    }

    fn linked() -> Skeleton {
        let key = NonZeroU64::MIN;
        let mut s = Skeleton::default();
        s.link = Some(Link {
            back: 1,
            position: 0,
            tool_key: key,
            call_key: key,
        });
        s
    }

    /// Read messages `ids` into `conv` as a binding does: an entry whose id matches
    /// is kept, any other is put anew (with a linked skeleton and a memo filled in).
    fn read(conv: Conversation<E>, ids: &[u32]) -> (Conversation<E>, Vec<usize>) {
        let mut update = conv.update(ids.len(), true);
        let mut read = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            if update.entry(i).is_some_and(|e| e.0 == id) {
                continue;
            }
            update.put(i, entry(id), id as usize, linked());
            read.push(i);
        }
        let mut conv = update.finish(ids.len());
        for i in &read {
            let _ = conv.memos.at(*i).cleared.set(keyed(format!("memo {i}")));
        }
        conv.links_upto = ids.len();
        (conv, read)
    }

    fn ids(conv: &Conversation<E>) -> Vec<u32> {
        conv.entries.iter().map(|e| e.0).collect()
    }

    fn indexed(n: usize) -> Option<Box<crate::search::Index>> {
        let mut ix = crate::search::Index::new("english")?;
        for i in 0..n {
            ix.add(&Message::text(Role::Human, &format!("message {i}")));
        }
        Some(Box::new(ix))
    }

    #[test]
    fn the_search_index_stays_while_the_conversation_only_grows() {
        use crate::bounded_cache::Weighed;
        let (mut conv, _) = read(Conversation::default(), &[1, 2, 3]);
        let without = conv.bytes();
        conv.search = indexed(3);
        assert!(
            conv.bytes() > without,
            "the index is weighed with the conversation"
        );
        let (conv, _) = read(conv, &[1, 2, 3, 4]);
        assert_eq!(conv.search.as_ref().map(|s| s.len()), Some(3));
        // A message it holds replaced, or the conversation cut shorter: it goes.
        let (conv, _) = read(conv, &[1, 9, 3, 4]);
        assert!(conv.search.is_none());
        let (mut conv, _) = read(conv, &[1, 9, 3, 4]);
        conv.search = indexed(4);
        let (conv, _) = read(conv, &[1, 9]);
        assert!(conv.search.is_none());
    }

    #[test]
    fn a_warm_call_reads_only_the_new_messages() {
        let (mut conv, read_first) = read(Conversation::default(), &[1, 2, 3]);
        assert_eq!(read_first, vec![0, 1, 2]);
        let p = HeuristicParams::default();
        assert_eq!(conv.tokens_for(Encoding::Heuristic, &p).len(), 3);
        let (conv, read_then) = read(conv, &[1, 2, 3, 4]);
        assert_eq!(read_then, vec![3]);
        assert_eq!(ids(&conv), vec![1, 2, 3, 4]);
        // What was kept stays: the earlier links, memos and dense tokens.
        assert!(conv.skeletons[..3].iter().all(|s| s.link.is_some()));
        assert!((0..3).all(|i| conv
            .memos
            .made(i)
            .is_some_and(|s| s.cleared.get().is_some())));
        assert_eq!(conv.tokens.len(), 3);
        assert_eq!((conv.skeletons.len(), conv.memos.len()), (4, 4));
    }

    #[test]
    fn a_replaced_message_invalidates_what_followed_from_it() {
        let (mut conv, _) = read(Conversation::default(), &[1, 2, 3, 4]);
        let p = HeuristicParams::default();
        let _ = conv.tokens_for(Encoding::Heuristic, &p);
        conv.fill_measures();
        let (conv, read) = read(conv, &[1, 9, 3, 4]);
        assert_eq!(read, vec![1]);
        assert_eq!(ids(&conv), vec![1, 9, 3, 4]);
        // The dense tokens and measures are cut at the replaced message.
        assert_eq!((conv.tokens.len(), conv.measures.len()), (1, 1));
        // The results after it may answer a call it held: their links and the memos
        // made from their calls are forgotten; those before it stay.
        assert!(conv.skeletons[0].link.is_some());
        assert!(conv.skeletons[2..].iter().all(|s| s.link.is_none()));
        assert!(conv
            .memos
            .made(0)
            .is_some_and(|s| s.cleared.get().is_some()));
        assert!((2..4).all(|i| conv.memos.made(i).is_none_or(|s| s.cleared.get().is_none())));
        assert!(conv.links_upto <= 4);
    }

    #[test]
    fn a_shorter_conversation_drops_the_rest() {
        let (conv, _) = read(Conversation::default(), &[1, 2, 3, 4]);
        let (conv, read) = read(conv, &[1, 2]);
        assert!(read.is_empty());
        assert_eq!(ids(&conv), vec![1, 2]);
        assert_eq!((conv.skeletons.len(), conv.memos.len()), (2, 2));
        assert!(conv.links_upto <= 2);
    }

    #[test]
    fn counting_alone_keeps_no_skeletons() {
        let mut update = Conversation::default().update(3, false);
        for id in 0..3 {
            update.put(id as usize, entry(id), id as usize, Skeleton::default());
        }
        let conv = update.finish(3);
        assert_eq!(ids(&conv), vec![0, 1, 2]);
        assert!(conv.skeletons.is_empty() && conv.memos.is_empty());
    }

    #[test]
    fn tokens_follow_the_counting_parameters() {
        let (mut conv, _) = read(Conversation::default(), &[1, 2]);
        let p = HeuristicParams::default();
        let by_default = conv.tokens_for(Encoding::Heuristic, &p).to_vec();
        let other = HeuristicParams {
            chars_per_token: 2.0,
            ..p
        };
        let halved = conv.tokens_for(Encoding::Heuristic, &other).to_vec();
        assert_ne!(by_default, halved);
        assert_eq!(conv.tokens_of, Some((Encoding::Heuristic, other)));
    }

    #[test]
    fn an_unchanged_prefix_ends_at_the_first_other_object() {
        let (conv, _) = read(Conversation::default(), &[1, 2, 3, 4]);
        let list = |ids: &'static [usize]| move |i: usize| ids.get(i).copied();
        assert_eq!(conv.unchanged_prefix(list(&[1, 2, 3, 4, 5])), 4);
        assert_eq!(conv.unchanged_prefix(list(&[1, 2, 9, 4])), 2);
        assert_eq!(conv.unchanged_prefix(list(&[1, 2])), 2);
        assert_eq!(conv.unchanged_prefix(list(&[])), 0);
        // A replaced entry takes the new object's identity.
        let (conv, _) = read(conv, &[1, 2, 9, 4]);
        assert_eq!(conv.unchanged_prefix(list(&[1, 2, 9, 4])), 4);
    }

    #[test]
    fn the_sweep_reaches_every_entry_and_the_newest_every_call() {
        let mut conv: Conversation<E> = Conversation::default();
        let same = 1_000;
        let mut seen = vec![0usize; same];
        let calls = (same - RECHECK_NEWEST).div_ceil(RECHECK_SWEEP);
        for _ in 0..calls {
            let r = conv.rechecked(same);
            assert_eq!(r.newest_from, same - RECHECK_NEWEST);
            for (i, n) in seen.iter_mut().enumerate() {
                *n += usize::from(r.contains(i));
            }
        }
        assert!(seen.iter().all(|&n| n >= 1));
        assert!(seen[same - RECHECK_NEWEST..].iter().all(|&n| n == calls));
        // Then it starts over; a shorter prefix keeps it in range.
        assert_eq!(conv.rechecked(same).sweep, 0..RECHECK_SWEEP);
        let r = conv.rechecked(10);
        assert_eq!((r.newest_from, r.sweep.clone()), (0, 0..0));
        assert!((0..10).all(|i| r.contains(i)));
    }

    #[test]
    fn the_callers_texts_weigh_only_while_it_keeps_them() {
        use crate::bounded_cache::Weighed;
        let (mut conv, _) = read(Conversation::default(), &[1, 2, 3]);
        assert_eq!((conv.entry_heap, conv.entry_borrowed), (48, 24));
        let full = conv.bytes();
        conv.shared_with_caller = true;
        assert_eq!(conv.bytes(), full - 24);
        assert!(
            !conv.caller_let_go(&|_| true),
            "the caller still holds them"
        );
        assert_eq!(conv.bytes(), full - 24);
        assert!(conv.caller_let_go(&|_| false));
        assert_eq!(conv.bytes(), full);
        assert!(!conv.caller_let_go(&|_| false), "weighed in full already");
        // A replaced entry and a dropped one take their texts' share with them.
        let (conv, _) = read(conv, &[1, 5]);
        assert_eq!((conv.entry_heap, conv.entry_borrowed), (48, 24));
    }
}

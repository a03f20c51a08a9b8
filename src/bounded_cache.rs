//! The bounded store of per-conversation state: least recently used first out,
//! bounded in conversations and in bytes as each conversation weighs itself.

use std::collections::HashMap;

/// What a cached conversation takes in memory, as its keeper estimates it.
pub trait Weighed {
    fn bytes(&self) -> usize;

    /// Whether `bytes` left something out as the caller's that `caller_holds` now
    /// says the caller has let go of: if so it is weighed from now on.
    fn caller_let_go(&mut self, caller_holds: &dyn Fn(&Self) -> bool) -> bool {
        let _ = caller_holds;
        false
    }
}

/// Every this many puts, the cache asks its conversations whether their callers still
/// hold what they were weighed without (see `ConversationCache::reweigh`).
pub const REWEIGH_EVERY: u64 = 16;

impl<T> Weighed for Vec<T> {
    fn bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }
}

/// Per-conversation memory of the messages last counted, so that a turn counts only
/// what it has not seen. Bounded in conversations and in bytes (as each conversation
/// weighs itself): the least recently used conversation goes first. `C` is what is
/// kept of one conversation (the bindings keep each Python object's identity beside
/// its counts); the cache is only an accelerator, never a source of truth.
pub struct ConversationCache<C> {
    capacity: usize,
    max_bytes: usize,
    bytes: usize,
    tick: u64,
    /// Each conversation with when it was last put and what it weighed then.
    conversations: HashMap<u64, (u64, usize, C)>,
    /// The conversations by when they were last put, oldest first.
    order: std::collections::BTreeMap<u64, u64>,
    stats: Stats,
}

/// What the cache did since it was made: how often a conversation asked for was
/// found, how often it was not (a new one, or one dropped), and how many were
/// dropped to stay within the bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub found: u64,
    pub missed: u64,
    pub evicted: u64,
}

impl<C: Default + Weighed> ConversationCache<C> {
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        ConversationCache {
            capacity,
            max_bytes,
            bytes: 0,
            tick: 0,
            conversations: HashMap::new(),
            order: std::collections::BTreeMap::new(),
            stats: Stats::default(),
        }
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn len(&self) -> usize {
        self.conversations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conversations.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// What the conversations cached weighed when they were put.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Change the bound in conversations; returns the bytes of those it dropped.
    pub fn set_capacity(&mut self, capacity: usize) -> usize {
        self.capacity = capacity;
        self.evict()
    }

    /// Change the bound in bytes; returns the bytes of the conversations it dropped.
    pub fn set_max_bytes(&mut self, max_bytes: usize) -> usize {
        self.max_bytes = max_bytes;
        self.evict()
    }

    pub fn clear(&mut self) {
        self.conversations.clear();
        self.order.clear();
        self.bytes = 0;
    }

    /// Take a conversation out, so the caller can work on it without holding the
    /// cache, then `put` it back.
    pub fn take(&mut self, conversation: u64) -> C {
        match self.remove(conversation) {
            Some(kept) => {
                self.stats.found += 1;
                kept
            }
            None => {
                self.stats.missed += 1;
                C::default()
            }
        }
    }

    /// Take the conversation out, if kept, without counting it as asked for.
    fn remove(&mut self, conversation: u64) -> Option<C> {
        let (tick, weight, kept) = self.conversations.remove(&conversation)?;
        self.order.remove(&tick);
        self.bytes -= weight;
        Some(kept)
    }

    /// Keep a conversation (the most recently used now); returns the bytes of the
    /// conversations dropped to stay within the bounds, this one's included when it
    /// alone is over the bound in bytes.
    pub fn put(&mut self, conversation: u64, kept: C) -> usize {
        // A conversation put again without a take replaces the one kept.
        let _ = self.remove(conversation);
        if self.capacity == 0 || self.max_bytes == 0 {
            return 0;
        }
        self.tick += 1;
        let weight = kept.bytes();
        self.bytes += weight;
        self.order.insert(self.tick, conversation);
        self.conversations
            .insert(conversation, (self.tick, weight, kept));
        self.evict()
    }

    /// Whether a put just now was the `REWEIGH_EVERY`th since the last reweigh.
    pub fn reweigh_due(&self) -> bool {
        self.tick.is_multiple_of(REWEIGH_EVERY)
    }

    /// Weigh again, in full, each conversation whose caller let go of what it was
    /// weighed without (a conversation the caller dropped, whose texts only the
    /// cache keeps alive now), then drop the oldest to stay within the bounds;
    /// returns the bytes dropped.
    pub fn reweigh(&mut self, caller_holds: &dyn Fn(&C) -> bool) -> usize {
        for (_, weight, kept) in self.conversations.values_mut() {
            if kept.caller_let_go(caller_holds) {
                let now = kept.bytes();
                self.bytes = self.bytes - *weight + now;
                *weight = now;
            }
        }
        self.evict()
    }

    fn evict(&mut self) -> usize {
        let mut dropped = 0;
        while self.conversations.len() > self.capacity || self.bytes > self.max_bytes {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, weight, _)) = self.conversations.remove(&oldest) {
                self.stats.evicted += 1;
                self.bytes -= weight;
                dropped += weight;
            }
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::CachedCounts;

    #[test]
    fn cache_is_bounded_lru() {
        let mut c: ConversationCache<Vec<(u32, CachedCounts)>> =
            ConversationCache::new(2, usize::MAX);
        c.put(1, vec![(1, CachedCounts::default())]);
        c.put(2, vec![]);
        c.put(3, vec![]);
        assert_eq!(c.len(), 2);
        assert!(c.take(1).is_empty(), "oldest conversation evicted");
        assert_eq!(c.take(3).len(), 0);
        c.put(4, vec![(9, CachedCounts::default())]);
        assert_eq!(c.take(4).len(), 1);
        c.set_capacity(0);
        assert!(c.is_empty());
        c.put(5, vec![]);
        assert!(c.is_empty(), "capacity 0 disables the cache");
    }

    #[test]
    fn cache_is_bounded_in_bytes() {
        let item = std::mem::size_of::<u64>();
        let mut c: ConversationCache<Vec<u64>> = ConversationCache::new(usize::MAX, 10 * item);
        let of = |n: usize| Vec::<u64>::with_capacity(n);
        assert_eq!(c.put(1, of(4)), 0);
        assert_eq!(c.put(2, of(4)), 0);
        assert_eq!(c.bytes(), 8 * item);
        // A third goes over: the oldest makes room.
        assert_eq!(c.put(3, of(4)), 4 * item);
        assert_eq!((c.len(), c.bytes()), (2, 8 * item));
        // Using one keeps it: the other is older now.
        let two = c.take(2);
        assert_eq!(c.bytes(), 4 * item);
        c.put(2, two);
        assert_eq!(c.put(4, of(4)), 4 * item);
        assert!(c.take(3).capacity() == 0, "the least recently used went");
        assert_eq!(c.take(2).capacity(), 4);
        // Alone over the bound, a conversation is not kept (nor the older one).
        assert_eq!(c.put(5, of(11)), 15 * item);
        assert!(c.is_empty());
        // Putting one again replaces it, weighed anew.
        c.put(6, of(2));
        c.put(6, of(3));
        c.put(7, of(4));
        assert_eq!((c.len(), c.bytes()), (2, 7 * item));
        assert_eq!(c.set_max_bytes(5 * item), 3 * item);
        assert_eq!(c.take(7).capacity(), 4);
        c.clear();
        assert_eq!((c.len(), c.bytes()), (0, 0));
    }

    /// A conversation that weighs `own` bytes, and `callers` more unless it shares
    /// them with a caller.
    #[derive(Default)]
    struct Shared {
        own: usize,
        callers: usize,
        shared: bool,
        first: Option<usize>,
    }

    impl Weighed for Shared {
        fn bytes(&self) -> usize {
            self.own + if self.shared { 0 } else { self.callers }
        }

        fn caller_let_go(&mut self, caller_holds: &dyn Fn(&Self) -> bool) -> bool {
            if !self.shared || caller_holds(self) {
                return false;
            }
            self.shared = false;
            true
        }
    }

    #[test]
    fn a_conversation_let_go_weighs_in_full() {
        let shared = |first| Shared {
            own: 10,
            callers: 50,
            shared: true,
            first: Some(first),
        };
        let mut c = ConversationCache::new(usize::MAX, 120);
        c.put(1, shared(11));
        c.put(2, shared(22));
        assert_eq!(c.bytes(), 20);
        // The caller of 1 still holds it, the caller of 2 let go: 2 weighs in full.
        assert_eq!(c.reweigh(&|k: &Shared| k.first == Some(11)), 0);
        assert_eq!(c.bytes(), 70);
        assert_eq!(c.reweigh(&|_: &Shared| true), 0, "weighed once");
        // Over the bound, the oldest goes.
        let alone = Shared {
            own: 60,
            ..Shared::default()
        };
        assert_eq!(c.put(3, alone), 10);
        // A reweigh that finds the cache over its bound drops the oldest.
        c.set_max_bytes(130);
        c.put(4, shared(44));
        assert_eq!(c.bytes(), 130);
        assert_eq!(c.reweigh(&|_: &Shared| false), 60);
        assert_eq!((c.len(), c.bytes()), (2, 120));
        let stats = c.stats();
        assert_eq!((stats.found, stats.missed, stats.evicted), (0, 0, 2));
        let _ = c.take(4);
        let _ = c.take(4);
        assert_eq!((c.stats().found, c.stats().missed), (1, 1));
    }

    #[test]
    fn reweighs_come_due_every_so_many_puts() {
        let mut c: ConversationCache<Shared> = ConversationCache::new(1, usize::MAX);
        let due: Vec<bool> = (0..2 * REWEIGH_EVERY)
            .map(|k| {
                let first = Some(k as usize);
                c.put(
                    k,
                    Shared {
                        first,
                        ..Shared::default()
                    },
                );
                c.reweigh_due()
            })
            .collect();
        let expected: Vec<bool> = (1..=2 * REWEIGH_EVERY)
            .map(|n| n % REWEIGH_EVERY == 0)
            .collect();
        assert_eq!(due, expected);
    }
}

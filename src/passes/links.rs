//! Which call each tool result answers, worked out once per cached message.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::num::NonZeroU64;

use super::*;
use crate::message::{Message, Role, ToolCall};

/// A tool result's call and names, worked out once per cached message. It depends on
/// the messages before the result, so the cache forgets it when any of them is
/// replaced (appending messages after it changes nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// The calling message, this many messages back (0: the call was not found).
    pub back: u32,
    /// The call's position in that message.
    pub position: u32,
    /// Keys of the result's tool name and of the call's name (`name_key`).
    pub tool_key: NonZeroU64,
    pub call_key: NonZeroU64,
}

/// A key standing for a tool name, so that scans compare numbers, not strings (a
/// 64-bit SipHash: two names of one conversation do not collide in practice).
pub fn name_key(name: &str) -> NonZeroU64 {
    use std::hash::Hash;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    NonZeroU64::new(h.finish()).unwrap_or(NonZeroU64::MIN)
}

/// A tool result message with what is known of the call it answers (the call and
/// the tool's name are looked up through the view, only when needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub index: usize,
    /// Index of the AI message that made the call, and the call's position in it.
    pub caller: Option<usize>,
    pub position: usize,
    /// The same number for the same tool name, counting from 0 in order of first use.
    pub tool_id: usize,
    /// `name_key` of the call's name.
    pub call_key: NonZeroU64,
}

/// A small fast hash for short keys (call ids, argument texts) that come from the
/// conversation, not from an adversary choosing collisions; the maps keyed by them
/// are rebuilt every turn.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let (chunks, rest) = bytes.as_chunks::<8>();
        for c in chunks {
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(*c)).wrapping_mul(K);
        }
        for &b in rest {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Work out the link of every tool result from `from` on whose skeleton lacks one
/// (a caller that keeps links knows that those before `from` have theirs). Returns
/// the results linked.
pub fn link_results(msgs: &[&Message], skeletons: &mut [Skeleton], from: usize) -> Vec<usize> {
    // Calls seen so far, for the few results that are far from their call; built only
    // when one is (a result almost always follows its call within a few messages).
    let mut far = FarCalls::default();
    let mut linked = Vec::new();
    for i in from..skeletons.len().min(msgs.len()) {
        let s = &skeletons[i];
        if s.role == Role::Tool && s.link.is_none() {
            skeletons[i].link = link_of(msgs, skeletons, i, &mut far);
            linked.push(i);
        }
    }
    linked
}

/// The link of the tool result at `i`.
fn link_of<'a>(
    msgs: &[&'a Message],
    skeletons: &[Skeleton],
    i: usize,
    far: &mut FarCalls<'a>,
) -> Option<Link> {
    let m = msgs.get(i)?;
    let found = m
        .tool_call_id
        .as_deref()
        .and_then(|id| near_call(msgs, skeletons, i, id).or_else(|| far.find(msgs, i, id)));
    let call_name = found.map_or("", |(_, c)| c.name.as_str());
    let tool = m
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(call_name);
    let (back, position) = found
        .and_then(|(j, c)| {
            let position = msgs[j].tool_calls.iter().position(|x| std::ptr::eq(x, c))?;
            Some((u32::try_from(i - j).ok()?, u32::try_from(position).ok()?))
        })
        .unwrap_or((0, 0));
    Some(Link {
        back,
        position,
        tool_key: name_key(tool),
        call_key: name_key(call_name),
    })
}

/// Every `ToolMessage` in order, with its call when the call is in the conversation,
/// and the tool names by id. Reads the links of `skeletons` (see `link_results`).
pub fn tool_results<'a>(
    msgs: &[&'a Message],
    skeletons: &[Skeleton],
) -> (Vec<ToolResult>, Vec<&'a str>) {
    // At most one result a message; sized once (an agent's conversation is often
    // more than half results, and growing would copy them all).
    let mut out = Vec::with_capacity(msgs.len());
    let mut ids = NameIds::default();
    let mut names: Vec<&str> = Vec::new();
    let mut far = FarCalls::default();
    for (i, s) in skeletons.iter().enumerate() {
        if s.role != Role::Tool {
            continue;
        }
        let Some(link) = s.link.or_else(|| link_of(msgs, skeletons, i, &mut far)) else {
            break;
        };
        let caller = (link.back > 0)
            .then(|| i.checked_sub(link.back as usize))
            .flatten();
        let position = link.position as usize;
        let (tool_key, call_key) = (link.tool_key, link.call_key);
        let tool_id = ids.id(tool_key);
        if tool_id == names.len() {
            // First use of this name: read it once.
            let from_call = caller.and_then(|j| msgs.get(j)?.tool_calls.get(position));
            let tool = msgs
                .get(i)
                .and_then(|m| m.name.as_deref())
                .filter(|n| !n.is_empty())
                .or(from_call.map(|c| c.name.as_str()))
                .unwrap_or("");
            names.push(tool);
        }
        out.push(ToolResult {
            index: i,
            caller,
            position,
            tool_id,
            call_key,
        });
    }
    (out, names)
}

/// Small numbers for name keys, counting from 0 in order of first use. A
/// conversation calls few tools: their keys (already hashes) sit in a small table
/// probed from the key's low bits, one comparison for a name seen before; past the
/// table's share (only odd conversations get there) they go in a map.
pub struct NameIds {
    /// `(key, id)`; key 0 marks a free slot (keys are never 0).
    slots: [(u64, u32); NameIds::SLOTS],
    in_slots: usize,
    more: FastMap<NonZeroU64, usize>,
}

impl Default for NameIds {
    fn default() -> Self {
        NameIds {
            slots: [(0, 0); NameIds::SLOTS],
            in_slots: 0,
            more: FastMap::default(),
        }
    }
}

impl NameIds {
    const SLOTS: usize = 64;
    /// Filled no further than this, so a probe always ends at a free slot.
    const FILL: usize = 48;

    pub fn id(&mut self, key: NonZeroU64) -> usize {
        let raw = key.get();
        let mut at = raw as usize % Self::SLOTS;
        loop {
            let (k, id) = self.slots[at];
            if k == raw {
                return id as usize;
            }
            if k == 0 {
                break;
            }
            at = (at + 1) % Self::SLOTS;
        }
        let next = self.in_slots + self.more.len();
        if self.in_slots < Self::FILL {
            // Nothing is in the map yet, so `next` < FILL: it fits.
            self.slots[at] = (raw, next as u32);
            self.in_slots += 1;
            return next;
        }
        *self.more.entry(key).or_insert(next)
    }
}

/// How far back a result's call is looked for before the map of all calls is used.
const NEAR: usize = 16;

/// The newest call with this id among the `NEAR` messages before `i`.
fn near_call<'a>(
    msgs: &[&'a Message],
    skeletons: &[Skeleton],
    i: usize,
    id: &str,
) -> Option<(usize, &'a ToolCall)> {
    let start = i.saturating_sub(NEAR);
    (start..i).rev().find_map(|j| {
        if !skeletons.get(j).is_some_and(Skeleton::calls_tools) {
            return None;
        }
        msgs[j]
            .tool_calls
            .iter()
            .rev()
            .find(|c| c.id.as_deref() == Some(id))
            .map(|c| (j, c))
    })
}

/// Every call before some index, by id (the newest wins), extended on demand.
#[derive(Default)]
struct FarCalls<'a> {
    calls: FastMap<&'a str, (usize, &'a ToolCall)>,
    upto: usize,
}

impl<'a> FarCalls<'a> {
    /// The newest call with this id before message `i`.
    fn find(&mut self, msgs: &[&'a Message], i: usize, id: &str) -> Option<(usize, &'a ToolCall)> {
        for (j, m) in msgs.iter().enumerate().take(i).skip(self.upto) {
            if m.role == Role::Ai {
                for c in &m.tool_calls {
                    if let Some(cid) = c.id.as_deref() {
                        self.calls.insert(cid, (j, c));
                    }
                }
            }
        }
        self.upto = self.upto.max(i);
        self.calls.get(id).copied()
    }
}

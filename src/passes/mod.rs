//! The cheap passes: each reads the current view and returns edits, never new or
//! fewer messages. `plan.rs` runs them in order.
//!
//! Cache-aware batching without hidden state: a pass that acts on "older" material
//! commits only whole batches, and a batch boundary depends on nothing but the messages
//! before it. Appending messages can add boundaries after the last one, never move an
//! earlier one, so between batch points the model view of one turn starts with the
//! model view of the turn before.

pub mod budget;
pub mod clearing;
pub mod collapse;
pub mod dedupe;
pub mod time_gap;
pub mod truncate_args;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::num::NonZeroU64;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::cutoff::Size;
use crate::message::{Content, Message, Role, ToolCall};
use crate::tokens::{measure, HeuristicParams, Measure};

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
}

/// Do `$op` with `$v` bound to each kind's vector in turn: the one list of the kinds,
/// so that none is left out when the vectors are sized together.
macro_rules! each_kind {
    ($memos:expr, $v:ident => $op:expr) => {
        each_kind!(@fields $memos, $v => $op;
            cleared, cleared_tokens, superseded, read_key, truncated, note)
    };
    (@fields $memos:expr, $v:ident => $op:expr; $($field:ident),*) => {{
        let memos = $memos;
        $({
            let $v = &mut memos.$field;
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

    pub fn reserve_exact(&mut self, additional: usize) {
        each_kind!(self, v => v.reserve_exact(additional));
    }

    pub fn truncate(&mut self, n: usize) {
        each_kind!(self, v => v.truncate(n));
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
        forget(&mut self.cleared, i);
        forget(&mut self.cleared_tokens, i);
        forget(&mut self.superseded, i);
        forget(&mut self.read_key, i);
        forget(&mut self.note, i);
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

/// The edits that shorten a message's arguments, and its tokens after them.
pub type Shortened = (Vec<Edit<'static>>, f64);

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

impl Skeleton {
    pub fn of(m: &Message) -> Self {
        let saturate = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Skeleton {
            role: m.role,
            calls: saturate(m.tool_calls.len()),
            longest_arg: saturate(
                m.tool_calls
                    .iter()
                    .map(|c| longest_string(&c.args))
                    .max()
                    .unwrap_or(0),
            ),
            text_len: match &m.content {
                Content::Text(t) => u32::try_from(t.chars()).unwrap_or(NO_TEXT),
                Content::Blocks(_) => NO_TEXT,
            },
            first: match &m.content {
                Content::Text(t) => t.first_byte(),
                Content::Blocks(_) => 0,
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

    /// Whether the message may hold a placeholder (`starts_as_placeholder` says for
    /// sure); `false` is certain.
    pub fn may_be_placeholder(&self, gap_template: &str) -> bool {
        self.first == b'[' || gap_template.as_bytes().first() == Some(&self.first)
    }
}

/// Bytes of the longest string value in `v`, nested ones included (without
/// recursion: arguments can nest deeply).
fn longest_string(v: &Value) -> usize {
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

impl<'a> View<'a, '_> {
    /// The call a result answers, when it is in the conversation.
    pub fn call(&self, r: &ToolResult) -> Option<&'a ToolCall> {
        self.msgs.get(r.caller?)?.tool_calls.get(r.position)
    }

    /// The tool a result came from (its own name, else its call's).
    pub fn tool(&self, r: &ToolResult) -> &'a str {
        self.tool_names.get(r.tool_id).copied().unwrap_or("")
    }

    /// The text content of message `i` as it came; `None` for list contents. Only
    /// the budget reads texts, and it runs first: no earlier pass has rewritten them.
    pub fn text(&self, i: usize) -> Option<&str> {
        match &self.msgs.get(i)?.content {
            Content::Text(t) => Some(t.as_str()),
            Content::Blocks(_) => None,
        }
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
                m.content = Content::Text(new.text.as_ref().into());
                measure(&m).heuristic_tokens(self.params)
            }
        }
    }
}

/// The argument that best names what a call did, shortened: the path, pattern,
/// command, query or URL, else the first string argument.
pub fn main_arg(call: Option<&ToolCall>) -> String {
    const KEYS: [&str; 8] = [
        "file_path",
        "path",
        "pattern",
        "command",
        "query",
        "url",
        "glob",
        "file",
    ];
    let Some(Value::Object(args)) = call.map(|c| &c.args) else {
        return String::new();
    };
    let found = KEYS
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .or_else(|| args.values().find_map(Value::as_str))
        .unwrap_or("");
    shorten(found, 80)
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None if line.len() < s.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}

/// Placeholders the passes write, recognised so that no pass edits them again.
pub const CLEARED: &str = "[Cleared to save context: ";
pub const SUPERSEDED: &str = "[Superseded: ";
pub const COLLAPSED: &str = "[Collapsed ";
pub const COLLAPSED_MEMBER: &str = "[Collapsed into the note on ";

/// Whether a message as it came holds a placeholder (an earlier turn's view fed
/// back, say). Most texts are ruled out by their first byte alone.
pub fn starts_as_placeholder(m: &Message, gap_template: &str) -> bool {
    match &m.content {
        Content::Text(t) => {
            (t.may_start_with("[") || t.may_start_with(gap_template))
                && is_placeholder(t.as_str(), gap_template)
        }
        Content::Blocks(_) => false,
    }
}

/// Whether a text is one of the passes' placeholders. `gap_template` is the
/// configurable time-gap placeholder.
pub fn is_placeholder(text: &str, gap_template: &str) -> bool {
    let gap_prefix = gap_template.split('{').next().unwrap_or(gap_template);
    // All fixed placeholders open with a bracket: most texts are ruled out at once.
    (text.starts_with('[')
        && [CLEARED, SUPERSEDED, COLLAPSED, COLLAPSED_MEMBER]
            .iter()
            .any(|p| text.starts_with(p)))
        || (!gap_prefix.is_empty() && text.starts_with(gap_prefix))
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

/// A pass's edits gathered candidate by candidate, of which only complete batches
/// are kept: a batch closes once the savings accumulated since the previous close
/// reach `min`. That depends only on the candidates themselves, so a longer sequence
/// never uncommits what a shorter one committed.
pub struct Batches<'m> {
    edits: Vec<Edit<'m>>,
    min: f64,
    /// Savings since the last batch closed.
    open: f64,
    /// Edits in closed batches.
    committed: usize,
    /// Where the candidate being gathered starts in `edits`.
    start: usize,
}

impl<'m> Batches<'m> {
    pub fn new(min: f64) -> Self {
        Batches::with_capacity(min, 0)
    }

    /// Room for `edits` edits from the start.
    pub fn with_capacity(min: f64, edits: usize) -> Self {
        Batches {
            edits: Vec::with_capacity(edits),
            min,
            open: 0.0,
            committed: 0,
            start: 0,
        }
    }

    /// An edit of the candidate being gathered.
    pub fn push(&mut self, e: Edit<'m>) {
        self.edits.push(e);
    }

    /// The edits of the candidate being gathered.
    pub fn candidate(&self) -> &[Edit<'m>] {
        &self.edits[self.start..]
    }

    /// The candidate is complete and saves `saved` (nothing when negative).
    pub fn keep(&mut self, saved: f64) {
        self.start = self.edits.len();
        if self.close_batch(saved) {
            self.committed = self.edits.len();
        }
    }

    /// The candidate is dropped.
    pub fn discard(&mut self) {
        self.edits.truncate(self.start);
    }

    /// Count `saved` in the open batch; whether that closes it.
    fn close_batch(&mut self, saved: f64) -> bool {
        self.open += saved.max(0.0);
        let closed = self.open >= self.min;
        if closed {
            self.open = 0.0;
        }
        closed
    }

    /// The edits of the complete batches.
    pub fn into_committed(mut self) -> Vec<Edit<'m>> {
        self.edits.truncate(self.committed);
        self.edits
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        /// Ids in order of first use, past the names searched in order too.
        #[test]
        fn name_ids_count_in_order_of_first_use(keys in proptest::collection::vec(1u64..60, 0..200)) {
            let mut ids = NameIds::default();
            let mut first_use: Vec<u64> = Vec::new();
            for k in keys {
                let expected = first_use.iter().position(|&f| f == k).unwrap_or_else(|| {
                    first_use.push(k);
                    first_use.len() - 1
                });
                let key = NonZeroU64::new(k).unwrap_or(NonZeroU64::MIN);
                proptest::prop_assert_eq!(ids.id(key), expected);
            }
        }
    }

    /// The straightforward way: a map of every call seen so far.
    fn results_by_map(msgs: &[&Message]) -> Vec<(usize, Option<usize>, Option<String>)> {
        let mut calls: HashMap<&str, (usize, &ToolCall)> = HashMap::new();
        let mut out = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            for c in &m.tool_calls {
                if let Some(id) = c.id.as_deref() {
                    calls.insert(id, (i, c));
                }
            }
            if m.role == Role::Tool {
                let found = m.tool_call_id.as_deref().and_then(|id| calls.get(id));
                out.push((i, found.map(|f| f.0), found.map(|f| f.1.name.clone())));
            }
        }
        out
    }

    #[test]
    fn tool_results_find_near_far_repeated_and_missing_calls() {
        let call = |id: &str, name: &str| ToolCall {
            id: Some(id.into()),
            name: name.into(),
            args: json!({}),
        };
        let ai = |calls: Vec<ToolCall>| {
            let mut m = Message::text(Role::Ai, "");
            m.tool_calls = calls;
            m
        };
        let result = |id: &str| {
            let mut m = Message::text(Role::Tool, "r");
            m.tool_call_id = Some(id.into());
            m
        };
        let mut msgs = vec![ai(vec![call("far", "grep"), call("dup", "ls")])];
        msgs.extend((0..40).map(|_| Message::text(Role::Human, "filler")));
        msgs.push(ai(vec![call("dup", "read_file"), call("near", "execute")]));
        msgs.push(result("near"));
        msgs.push(result("far"));
        msgs.push(result("dup"));
        msgs.push(result("missing"));
        msgs.push(ai(vec![call("later", "ls")]));
        msgs.push(result("later"));
        let refs: Vec<&Message> = msgs.iter().collect();
        let fresh: Vec<_> = msgs.iter().map(Skeleton::of).collect();
        let (results, names) = tool_results(&refs, &fresh);
        let got: Vec<_> = results
            .iter()
            .map(|r| {
                let call = r.caller.map(|j| &refs[j].tool_calls[r.position]);
                (r.index, r.caller, call.map(|c| c.name.clone()))
            })
            .collect();
        assert_eq!(got, results_by_map(&refs));
        assert_eq!(
            names,
            ["execute", "grep", "read_file", "", "ls"],
            "tools by id, in order of first use"
        );
        // Links worked out beforehand (kept from an earlier turn) give the same results.
        let mut linked = fresh.clone();
        assert_eq!(link_results(&refs, &mut linked, 0), [42, 43, 44, 45, 47]);
        assert!(
            link_results(&refs, &mut linked, 0).is_empty(),
            "nothing left to link"
        );
        assert_eq!(tool_results(&refs, &linked), (results, names));
        assert_eq!(
            got[1],
            (43, Some(0), Some("grep".into())),
            "far from its call"
        );
        assert_eq!(
            got[2],
            (44, Some(41), Some("read_file".into())),
            "the newest call wins"
        );
        assert_eq!(got[3], (45, None, None));
    }

    /// How many leading candidates complete batches cover.
    fn committed_prefix(savings: impl IntoIterator<Item = f64>, min: f64) -> usize {
        let mut batches = Batches::new(min);
        let mut committed = 0;
        for (i, s) in savings.into_iter().enumerate() {
            if batches.close_batch(s) {
                committed = i + 1;
            }
        }
        committed
    }

    #[test]
    fn committed_prefix_is_stable_under_appends() {
        let s = [3.0, 3.0, 3.0, 3.0, 1.0];
        assert_eq!(committed_prefix(s, 5.0), 4);
        for n in 0..s.len() {
            let shorter = committed_prefix(s[..n].iter().copied(), 5.0);
            assert!(shorter <= committed_prefix(s, 5.0));
        }
        assert_eq!(committed_prefix([10.0], 5.0), 1);
        assert_eq!(committed_prefix([1.0, 1.0], 5.0), 0);
    }

    #[test]
    fn batches_keep_the_edits_of_complete_batches_only() {
        let e = |index| Edit::content(index, Pass::Clearing, "x".into(), 0, 1.0);
        let mut b = Batches::new(5.0);
        b.push(e(0));
        b.push(e(1));
        b.keep(3.0); // open: 3
        b.push(e(2));
        b.discard(); // dropped, no savings counted
        assert!(b.candidate().is_empty());
        b.push(e(3));
        b.keep(2.0); // 5: the batch closes
        b.push(e(4));
        b.keep(-1.0); // a loss counts as nothing
        b.push(e(5));
        b.keep(4.0); // open: 4, not closed
        let kept: Vec<usize> = b.into_committed().iter().map(|e| e.index).collect();
        assert_eq!(kept, [0, 1, 3]);
        assert_eq!(committed_prefix([3.0, 2.0, -1.0, 4.0], 5.0), 2);
    }

    #[test]
    fn memos_forget_a_call_but_keep_the_message_own_work() {
        let mut m = Memos::new(3);
        let set = |m: &Memos, i: usize| {
            let _ = m.cleared[i].set(keyed("c".into()));
            let _ = m.cleared_tokens[i].set((1, 2.0));
            let _ = m.read_key[i].set("k".into());
            let _ = m.truncated[i].set((1, None));
        };
        for i in 0..3 {
            set(&m, i);
        }
        m.forget_call(1);
        assert!(m.cleared[1].get().is_none() && m.read_key[1].get().is_none());
        assert!(
            m.cleared_tokens[1].get().is_none(),
            "tokens with the placeholder"
        );
        assert!(
            m.truncated[1].get().is_some(),
            "the message's own arguments"
        );
        m.reset(2);
        assert!(m.cleared[2].get().is_none() && m.truncated[2].get().is_none());
        assert!(m.cleared_tokens[2].get().is_none());
        assert!(
            m.cleared[0].get().is_some() && m.cleared_tokens[0].get().is_some(),
            "others untouched"
        );
        m.forget_call(7);
        m.truncate(1);
        m.resize(2);
        assert_eq!(m.len(), 2);
        assert!(m.cleared[0].get().is_some() && m.cleared[1].get().is_none());
    }

    #[test]
    fn remembered_keeps_the_first_value_under_its_key_only() {
        let memo = OnceLock::new();
        let made = |r: Remembered<'_, i32>| matches!(r, Remembered::Made(_));
        let r = remembered(&memo, None, || 1);
        assert_eq!((*r, made(r)), (1, true));
        assert!(memo.get().is_none(), "no key, nothing kept");
        let r = remembered(&memo, Some(7), || 2);
        assert_eq!((*r, made(r)), (2, false));
        let r = remembered(&memo, Some(7), || 3);
        assert_eq!((*r, made(r)), (2, false), "kept under 7");
        let r = remembered(&memo, Some(8), || 4);
        assert_eq!((*r, made(r)), (4, true), "another key");
        assert_eq!(memo.get(), Some(&(7, 2)));
    }

    proptest::proptest! {
        /// The skeleton's first-byte filter never rules out a message that holds a
        /// placeholder, whatever the time-gap template.
        #[test]
        fn skeletons_never_rule_out_a_placeholder(
            head in proptest::sample::select(vec![
                CLEARED, SUPERSEDED, COLLAPSED, COLLAPSED_MEMBER, "[", "", "Old result of ", "\u{e9}",
            ]),
            rest in ".{0,12}",
            template in proptest::sample::select(vec![
                "Old result of {tool}({arg}) cleared.", "{tool} cleared", "", "[gap] {tool}", "\u{e9}{arg}",
            ]),
        ) {
            let m = Message::text(Role::Tool, &format!("{head}{rest}"));
            if starts_as_placeholder(&m, template) {
                proptest::prop_assert!(Skeleton::of(&m).may_be_placeholder(template));
            }
        }
    }

    #[test]
    fn skeletons_stay_small() {
        assert!(std::mem::size_of::<Skeleton>() <= 64);
    }

    #[test]
    fn longest_string_looks_into_nested_values_not_keys() {
        let v = json!({"a_very_long_key_name": "ab", "n": [1, {"deep": "abcdef"}], "x": null});
        assert_eq!(longest_string(&v), 6);
        let mut deep = json!("abc");
        for _ in 0..500 {
            deep = json!([deep]);
        }
        assert_eq!(longest_string(&deep), 3);
    }

    #[test]
    fn main_arg_prefers_paths_and_shortens() {
        let call = ToolCall {
            id: None,
            name: "read_file".into(),
            args: json!({"limit": 10, "file_path": "src/a.py"}),
        };
        assert_eq!(main_arg(Some(&call)), "src/a.py");
        let long = ToolCall {
            id: None,
            name: "execute".into(),
            args: json!({"command": "x".repeat(100)}),
        };
        assert_eq!(main_arg(Some(&long)).chars().count(), 81);
        assert_eq!(shorten("a\nb", 10), "a…");
        assert_eq!(main_arg(None), "");
    }

    #[test]
    fn placeholders_are_recognised() {
        let gap = "[Idle: {tool}]";
        assert!(is_placeholder("[Cleared to save context: ls(/)]", gap));
        assert!(is_placeholder("[Idle: grep]", gap));
        assert!(!is_placeholder("def f(): pass", gap));
    }
}

//! The conversation cache: what was read of each message, kept while the message
//! object and its content stay the same.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicIsize, AtomicU32, Ordering};
use std::sync::Arc;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::bounded_cache::ConversationCache;
use crate::conversation::Counted;
use crate::cutoff::PairShape;
use crate::message::{Message, ARC_HEADER};
use crate::passes::WholeArgs;
use crate::tokens::{CachedCounts, Encoding};

use super::read::read_message;
use super::scan::scan_message;
use super::source::{instance_dict, Origin, Res};

/// What the cache keeps of one message: the object and its content (held, so their
/// addresses cannot be reused while cached), its counts and its pair shape.
pub struct Entry {
    obj: Py<PyAny>,
    content: Option<Py<PyAny>>,
    /// The dict the content was read from (a model's `__dict__`, or the message dict).
    fields: Option<Py<PyDict>>,
    /// What the tool calls and a list content were made of when read (`nested_print`;
    /// 0 for a message with neither): a call's arguments or a block changed in place
    /// are caught by it, as a content reassigned is by its address.
    nested: u64,
    pub counts: CachedCounts,
    /// The pair shape of a message only counted; one converted has it in its message
    /// (`pair_shape`), which is not kept twice. Boxed: a small entry keeps a long
    /// conversation's cache compact.
    shape: Option<Box<PairShape>>,
    /// The converted message, when a caller (the passes) needed it, its calls'
    /// arguments kept as `args` says.
    pub message: Option<Arc<Message>>,
    args: WholeArgs,
    /// The edited copy last built for this message, with the fingerprint of its
    /// edits: a later turn with the same edits reuses the same object.
    pub edited: Option<(u64, Py<PyAny>)>,
}

impl Entry {
    /// The message's pair shape: kept, or worked out from its converted message.
    pub fn pair_shape(&self) -> Option<std::borrow::Cow<'_, PairShape>> {
        use std::borrow::Cow;
        match (&self.shape, &self.message) {
            (Some(s), _) => Some(Cow::Borrowed(&**s)),
            (None, Some(m)) => Some(Cow::Owned(PairShape::from(&**m))),
            (None, None) => None,
        }
    }

    /// The object this entry counted.
    pub fn object<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.obj.bind(py)
    }

    pub(super) fn new(
        item: &Bound<'_, PyAny>,
        origin: Origin<'_>,
        counts: CachedCounts,
        shape: Option<PairShape>,
    ) -> Self {
        let nested = origin.fields.as_ref().map_or(0, nested_print);
        Entry {
            obj: item.clone().unbind(),
            content: origin.content.map(Bound::unbind),
            fields: origin.fields.map(Bound::unbind),
            nested,
            counts,
            shape: shape.map(Box::new),
            message: None,
            args: WholeArgs::EVERY,
            edited: None,
        }
    }

    /// Whether `item` is the message counted here, still holding the same content
    /// object (a content reassigned in place is counted again).
    /// With `nested`, also that what its calls and content list hold is as it was
    /// (see `nested_print`).
    pub(super) fn still_matches(
        &self,
        item: &Bound<'_, PyAny>,
        content_key: &Bound<'_, PyString>,
        nested: bool,
    ) -> bool {
        let py = item.py();
        if !self.obj.bind(py).is(item) {
            return false;
        }
        let held = self
            .content
            .as_ref()
            .map_or(std::ptr::null_mut(), Py::as_ptr);
        match &self.fields {
            // One dict lookup, much cheaper than resolving the attribute.
            Some(d) => {
                let d = d.bind(py);
                let now = content_ptr(d, content_key);
                (now == held || (held.is_null() && now == py.None().as_ptr()))
                    && (!nested || self.nested == 0 || nested_print(d) == self.nested)
            }
            // Same address as the object we hold: it is that object.
            None => {
                content_of(self.obj.bind(py)).map_or(std::ptr::null_mut(), |c| c.as_ptr()) == held
            }
        }
    }
}

impl Entry {
    /// Whether `item`, a different object at this entry's position, is an equal copy of
    /// the message counted here (a conversation reloaded from a checkpointer arrives as
    /// new objects). If so the entry adopts it and keeps its counts, conversion and
    /// edited copy: equal fields give equal results. `content_key` is `"content"`.
    pub(super) fn adopt_equal(
        &mut self,
        item: &Bound<'_, PyAny>,
        content_key: &Bound<'_, PyString>,
    ) -> bool {
        let py = item.py();
        let old = self.obj.bind(py).clone();
        // The same object with a reassigned content is not a copy: it was changed.
        if old.is(item) || !old.get_type().is(item.get_type()) {
            return false;
        }
        // The old object edited in place since it was read: what the entry holds is of
        // what it was, whatever it equals now.
        if !self.still_matches(&old, content_key, true) {
            return false;
        }
        let old = &old;
        // Models compare by their field dicts (C-level equality, without the model's
        // own __eq__); dicts, tuples and strings by value.
        let equal = match (instance_dict(old), instance_dict(item)) {
            (Some(a), Some(b)) => a.eq(&b),
            _ => old.eq(item),
        };
        if !equal.unwrap_or(false) {
            return false;
        }
        let fields = match &self.fields {
            Some(f) => match corresponding_dict(old, f.bind(py), item) {
                Some(d) => Some(d),
                None => return false,
            },
            None => None,
        };
        let content = match &fields {
            Some(d) => d
                .get_item(intern!(py, "content"))
                .ok()
                .flatten()
                .filter(|c| !c.is_none()),
            None => content_of(item),
        };
        self.obj = item.clone().unbind();
        self.nested = fields.as_ref().map_or(0, nested_print);
        self.fields = fields.map(Bound::unbind);
        self.content = content.map(Bound::unbind);
        true
    }
}

/// In `new` (equal to `old`), the dict that plays the part `fields` plays in `old`:
/// the item itself, its `data` / `kwargs` (serialized LangChain shapes), or its
/// instance `__dict__`.
fn corresponding_dict<'py>(
    old: &Bound<'py, PyAny>,
    fields: &Bound<'py, PyDict>,
    new: &Bound<'py, PyAny>,
) -> Option<Bound<'py, PyDict>> {
    if fields.is(old) {
        return new.cast::<PyDict>().ok().cloned();
    }
    if let (Ok(old), Ok(new)) = (old.cast::<PyDict>(), new.cast::<PyDict>()) {
        for key in ["data", "kwargs"] {
            if old
                .get_item(key)
                .ok()
                .flatten()
                .is_some_and(|d| d.is(fields))
            {
                return new.get_item(key).ok().flatten()?.cast_into::<PyDict>().ok();
            }
        }
        return None;
    }
    instance_dict(new)
}

/// Where `content` was last found among a field dict's entries: a LangChain model's
/// `__dict__` keeps its fields in class order, so it is nearly always the same place.
/// Kept for `benches/bench_turn.py`'s warm turn: at 10,000 messages a plain lookup
/// (`d.get_item`, a reference taken and dropped per message) made it 2-3x slower in
/// alternating builds (medians 3.1-3.6 ms against 0.9-2.5 ms).
static CONTENT_AT: AtomicIsize = AtomicIsize::new(0);
/// Lookups that missed that place; one in `LEARN_EVERY` walks the dict to move it, so
/// dicts of mixed layouts cost little more than plain lookups.
static CONTENT_MISSES: AtomicU32 = AtomicU32::new(0);
const LEARN_EVERY: u32 = 8;

/// The address of `d[key]`, `key` being `"content"` (null when absent), without
/// touching the value: taking a reference would write to its refcount, a cache miss
/// per message on a warm turn. Only ever compared, never followed.
///
/// The key is looked for first at the entry where it was last found (one step of
/// `PyDict_Next` reads less memory than a hashed lookup, and this runs for every
/// message of every turn); that entry counts only if its key is that very string.
fn content_ptr(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>) -> *mut pyo3::ffi::PyObject {
    use pyo3::ffi;
    let (mut k, mut v): (*mut ffi::PyObject, *mut ffi::PyObject) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    let mut at = CONTENT_AT.load(Ordering::Relaxed);
    // SAFETY: `d` is a live dict we hold a reference to, with the GIL held.
    // PyDict_Next checks `at` against the dict's entries (out of range, it returns 0)
    // and writes borrowed pointers to a live entry, which are only compared here.
    if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut at, &mut k, &mut v) } != 0 && k == key.as_ptr() {
        return v;
    }
    // SAFETY: as above. PyDict_GetItemWithError returns a borrowed pointer (or null,
    // with an exception set only if hashing the key failed, which cannot happen for a
    // str key); the pointer is compared, not dereferenced.
    let ptr = unsafe { ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr()) };
    if ptr.is_null() {
        let _ = PyErr::take(d.py());
    } else if CONTENT_MISSES
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(LEARN_EVERY)
    {
        let mut pos = 0;
        loop {
            let at = pos;
            // SAFETY: as above; only the key's address is compared.
            if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } == 0 {
                break;
            }
            if k == key.as_ptr() {
                CONTENT_AT.store(at, Ordering::Relaxed);
                break;
            }
        }
    }
    ptr
}

/// A fingerprint of what a message's tool calls and list content are made of: the
/// addresses of the containers and of every value in them, nested ones included,
/// never their text (a long argument costs what a short one does). Python values
/// are immutable or these containers, so an edit in place changes an address or a
/// length on the way. 0 when the message has neither.
///
/// It runs for every message with calls on every warm call, so it only reads: the
/// references it walks are borrowed, and no refcount is written (a write per object
/// touched made the warm count at 10,000 messages several times slower).
fn nested_print(fields: &Bound<'_, PyDict>) -> u64 {
    use pyo3::ffi;
    use std::hash::Hasher;
    let py = fields.py();
    let mut h = crate::passes::FastHasher::default();
    let mut any = false;
    for key in [intern!(py, "tool_calls"), intern!(py, "content")] {
        // SAFETY: `fields` is a live dict and `key` a live str, with the GIL held.
        // PyDict_GetItemWithError returns a borrowed pointer (or null; with a str key
        // no exception is set but by a failed hash, which cannot happen) that stays
        // valid while the dict is not changed, and nothing below runs Python code.
        let v = unsafe { ffi::PyDict_GetItemWithError(fields.as_ptr(), key.as_ptr()) };
        if v.is_null() {
            let _ = PyErr::take(py);
            continue;
        }
        // SAFETY: `v` is a live object (borrowed above).
        if unsafe { ffi::PyList_Check(v) } != 0 && unsafe { ffi::PyList_Size(v) } > 0 {
            // SAFETY: as above; see `walk_addresses`.
            unsafe { walk_addresses(v, &mut h, 0) };
            any = true;
        }
    }
    if any {
        h.finish() | 1
    } else {
        0
    }
}

/// Feed `h` the address and length of `v` and, for a list, tuple or dict, of what it
/// holds (`MAX_NESTING` deep).
///
/// # Safety
/// `v` must be a live object, the GIL held, and no Python code run while the walk
/// lasts: every pointer it reads is borrowed from its container, valid only while the
/// containers stay as they are. The functions it calls (type checks, sizes,
/// `PyDict_Next`, `PyList_GetItem`, `PyTuple_GetItem`) run none.
unsafe fn walk_addresses(
    v: *mut pyo3::ffi::PyObject,
    h: &mut crate::passes::FastHasher,
    depth: usize,
) {
    use pyo3::ffi;
    use std::hash::Hasher;
    const MAX_NESTING: usize = 32;
    h.write_usize(v as usize);
    if depth >= MAX_NESTING {
        return;
    }
    if ffi::PyDict_Check(v) != 0 {
        h.write_usize(ffi::PyDict_Size(v) as usize);
        let (mut pos, mut k, mut item) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        while ffi::PyDict_Next(v, &mut pos, &mut k, &mut item) != 0 {
            h.write_usize(k as usize);
            walk_addresses(item, h, depth + 1);
        }
    } else {
        type Sized = unsafe extern "C" fn(*mut ffi::PyObject) -> ffi::Py_ssize_t;
        type Item = unsafe extern "C" fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject;
        let sequence: Option<(Sized, Item)> = if ffi::PyList_Check(v) != 0 {
            Some((ffi::PyList_Size, ffi::PyList_GetItem))
        } else if ffi::PyTuple_Check(v) != 0 {
            Some((ffi::PyTuple_Size, ffi::PyTuple_GetItem))
        } else {
            None
        };
        if let Some((size, item_at)) = sequence {
            let n = size(v);
            h.write_usize(n as usize);
            for i in 0..n {
                let item = item_at(v, i);
                if !item.is_null() {
                    walk_addresses(item, h, depth + 1);
                }
            }
        }
    }
}

/// The content object of an item that has no field dict (strings, tuples, plain
/// objects), for the identity check.
fn content_of<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if item.is_instance_of::<PyString>() {
        return Some(item.clone());
    }
    if let Ok(t) = item.cast::<PyTuple>() {
        return t.get_item(1).ok();
    }
    item.getattr(intern!(item.py(), "content"))
        .ok()
        .filter(|c| !c.is_none())
}

/// The cache key of a conversation: the caller's key, or else the first message's
/// id (stable across turns and restarts), or else its identity.
pub fn conversation_key(key: Option<&str>, list: &Bound<'_, PyList>) -> u64 {
    let mut h = DefaultHasher::new();
    match (key, list.get_item(0).ok()) {
        (Some(k), _) => ("key", k).hash(&mut h),
        (None, Some(first)) => {
            let id = first
                .getattr(intern!(first.py(), "id"))
                .ok()
                .filter(|v| !v.is_none())
                .map(|v| v.to_string());
            match id {
                Some(id) => ("id", id).hash(&mut h),
                None => ("ptr", first.as_ptr() as usize).hash(&mut h),
            }
        }
        (None, None) => "empty".hash(&mut h),
    }
    h.finish()
}

/// What the cache keeps of one conversation: an entry per message.
pub type Conversation = crate::conversation::Conversation<Entry>;

impl Counted for Entry {
    fn counts(&self) -> &CachedCounts {
        &self.counts
    }

    /// The converted message and the pair shape, as allocated.
    fn heap_bytes(&self) -> usize {
        let message = self.message.as_deref().map_or(0, |m| {
            ARC_HEADER + std::mem::size_of::<Message>() + m.heap_bytes()
        });
        let shape = self
            .shape
            .as_deref()
            .map_or(0, |s| std::mem::size_of::<PairShape>() + s.heap_bytes());
        message + shape
    }

    /// The caller's message object the entry holds, with its content: dropping the
    /// entry frees them only once the caller has let go.
    fn borrowed_bytes(&self) -> usize {
        PY_MESSAGE_BYTES + self.counts.measure.chars as usize
    }
}

/// Whether the caller still holds a cached conversation's messages between calls:
/// the newest one's object has a holder besides its entry.
pub fn caller_holds(py: Python<'_>, c: &Conversation) -> bool {
    c.entries.last().is_some_and(|e| {
        // SAFETY: the entry holds a reference to the object, so it is live, and the
        // `py` token proves the GIL is held while its count is read.
        unsafe { pyo3::ffi::Py_REFCNT(e.object(py).as_ptr()) > 1 }
    })
}

/// What an edited copy of a message takes on the Python heap (the copied model, its
/// field dict, its set of fields and the placeholder text), as measured on LangChain
/// messages (`tests/api/test_cache_memory.py` holds the weight to what it measures).
pub const EDITED_COPY_BYTES: usize = 1_350;

/// What a LangChain message object takes on the Python heap, its content aside (as
/// measured there too).
pub const PY_MESSAGE_BYTES: usize = 700;

/// Messages read for this call: cached entries where the same objects were seen
/// before, fresh ones elsewhere.
pub struct ReadSet {
    pub kept: Conversation,
    /// `(index, message)` of each entry converted by this call that still needs its
    /// BPE count.
    pub fresh: Vec<(usize, Arc<Message>)>,
    /// How many entries this call read anew.
    pub read_anew: usize,
}

impl ReadSet {
    /// The BPE counts of the `fresh` messages are made: the messages kept are slimmed
    /// as their entries say.
    pub fn counted(&mut self) {
        for (i, m) in std::mem::take(&mut self.fresh) {
            drop(m);
            let Some(e) = self.kept.entries.get_mut(i) else {
                continue;
            };
            let args = e.args;
            if let Some(m) = e.message.as_mut().and_then(Arc::get_mut) {
                // The entry was weighed with its arguments whole.
                let before = m.heap_bytes();
                crate::passes::slim_args(m, args);
                let freed = before.saturating_sub(m.heap_bytes());
                self.kept.entry_heap = self.kept.entry_heap.saturating_sub(freed);
            }
        }
    }
}

/// What a caller needs from each message.
#[derive(Clone, Copy)]
pub struct Want {
    /// A BPE count under this encoding (the message text is converted for it).
    pub bpe: Option<Encoding>,
    /// The pair shape (tool call and result ids).
    pub shape: bool,
    /// The converted message, kept for the passes.
    pub message: bool,
    /// Which of its calls keep their arguments whole.
    pub args: WholeArgs,
    /// The usage the message reports.
    pub usage: bool,
    /// Check every message's content object, not only the newest and a sweep's (see
    /// `conversation::Recheck`); what its calls and content list hold is walked for
    /// those alone either way.
    pub recheck_all: bool,
}

impl Want {
    /// What this asks for, as bits (one per encoding): a conversation keeps the bits
    /// every entry was read for.
    fn bits(&self) -> u8 {
        let enc = match self.bpe {
            None => 0,
            Some(Encoding::Heuristic) => 0,
            Some(Encoding::O200kBase) => 1,
            Some(Encoding::Cl100kBase) => 2,
        };
        enc | u8::from(self.shape) << 2 | u8::from(self.message) << 3 | u8::from(self.usage) << 4
    }

    pub(super) fn satisfied_by(&self, e: &Entry) -> bool {
        self.bpe.is_none_or(|enc| e.counts.bpe(enc).is_some())
            && (!self.shape || e.shape.is_some() || e.message.is_some())
            && (!self.message || (e.message.is_some() && e.args <= self.args))
            && (!self.usage || e.counts.usage_read())
    }
}

/// Read `items` against the conversation's cached entries, converting only messages
/// not seen before, edited since, or lacking something `want` asks for.
pub fn read_with_cache(
    list: &Bound<'_, PyList>,
    mut cached: Conversation,
    want: Want,
) -> Res<ReadSet> {
    let read_before = cached.read_for;
    // The leading entries whose objects are still the list's items, found from the
    // list alone: only those `recheck` names are checked further.
    let same = cached.unchanged_prefix(|i| item_address(list, i));
    let skip = Skip {
        same,
        recheck: cached.rechecked(same),
        // Every entry was read for at least what this call wants: none need be asked.
        all_satisfy: read_before & want.bits() == want.bits()
            && (!want.message || cached.whole_args <= want.args),
    };
    // Entries are updated in place: a warm turn touches only what changed.
    let mut update = cached.update(list.len(), want.message);
    let mut fresh = Vec::new();
    let (n, read_anew) = read_items(list, &mut update, &skip, want, &mut fresh)?;
    // Entries skipped unread stand for items a shortened list no longer has.
    fresh.retain(|(j, _)| *j < n);
    let mut kept = update.finish(n);
    // The caller holds the messages it passed: what the entries borrow of them is its
    // own until a reweigh finds it let go (`caller_holds`).
    kept.shared_with_caller = true;
    // Each entry was kept because it satisfied `want`, or read anew for it (its BPE
    // count is set from `fresh` before the conversation is stored); with none read
    // anew, what they were all read for before still holds.
    kept.read_for = want.bits() | if read_anew > 0 { 0 } else { read_before };
    // Every entry with a message was kept because its arguments are as whole as this
    // call wants, or read anew so.
    if want.message {
        kept.whole_args = want.args;
    }
    Ok(ReadSet {
        kept,
        fresh,
        read_anew,
    })
}

/// Which entries a read passes over without asking Python anything.
struct Skip {
    /// The leading entries whose objects are still the list's items.
    same: usize,
    /// Of those, the ones to check in full.
    recheck: crate::conversation::Recheck,
    /// Every entry was read for at least what this call wants.
    all_satisfy: bool,
}

/// How far a read looks at an item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Not at all: its entry stands.
    Pass,
    /// Its content object only (`Want::recheck_all`).
    Content,
    /// In full: the object, its content and what its calls and content list hold.
    Full,
}

impl Skip {
    fn look(&self, i: usize, update: &crate::conversation::Update<Entry>, want: Want) -> Look {
        let unchanged = i < self.same && !self.recheck.contains(i);
        let satisfied =
            || self.all_satisfy || update.entry(i).is_some_and(|e| want.satisfied_by(e));
        match (unchanged && satisfied(), want.recheck_all) {
            (true, false) => Look::Pass,
            (true, true) => Look::Content,
            (false, _) => Look::Full,
        }
    }
}

/// Read the list's items into `update`, each entry kept that still stands for its item
/// and the others read anew (their index and message in `fresh` when they need a BPE
/// count). Returns how many items the list has and how many were read anew.
fn read_items(
    list: &Bound<'_, PyList>,
    update: &mut crate::conversation::Update<Entry>,
    skip: &Skip,
    want: Want,
    fresh: &mut Vec<(usize, Arc<Message>)>,
) -> Res<(usize, usize)> {
    // Reading a message may run Python code (a property, a __getattr__) that changes
    // the list: its length is read again when the loop reaches the old one, and an
    // index past a shortened list finds no item, which ends the loop.
    let (mut len, mut i, mut read_anew) = (list.len(), 0, 0);
    let content_key = intern!(list.py(), "content");
    loop {
        if i >= len {
            len = list.len();
            if i >= len {
                break;
            }
        }
        let look = skip.look(i, update, want);
        if look == Look::Pass {
            i += 1;
            continue;
        }
        let Ok(item) = list.get_item(i) else { break };
        if !still_holds(update, i, &item, want, content_key, look == Look::Full) {
            let (entry, skeleton) =
                read_entry(&item, want, |m| fresh.push((i, m))).map_err(|e| e.at(i))?;
            update.put(i, entry, item.as_ptr() as usize, skeleton);
            read_anew += 1;
        }
        i += 1;
    }
    Ok((i.min(list.len()), read_anew))
}

/// Whether entry `i` still stands for `item`: the same object with the same content,
/// or an equal message in a new object (as after a checkpointer load), which it then
/// adopts.
fn still_holds(
    update: &mut crate::conversation::Update<Entry>,
    i: usize,
    item: &Bound<'_, PyAny>,
    want: Want,
    content_key: &Bound<'_, PyString>,
    nested: bool,
) -> bool {
    let Some(e) = update.entry_mut(i).filter(|e| want.satisfied_by(e)) else {
        return false;
    };
    if e.still_matches(item, content_key, nested) {
        return true;
    }
    if e.adopt_equal(item, content_key) {
        update.adopted(i, item.as_ptr() as usize);
        return true;
    }
    false
}

/// One message read anew for what `want` asks: converted when the passes or a BPE
/// count need it (`needs_bpe` gets the message then), scanned for its counts
/// otherwise; with the skeleton the passes keep (a replaced message's goes with it).
fn read_entry(
    item: &Bound<'_, PyAny>,
    want: Want,
    needs_bpe: impl FnOnce(Arc<Message>),
) -> Res<(Entry, crate::passes::Skeleton)> {
    if want.bpe.is_none() && !want.message {
        let scanned = scan_message(item, want.shape, want.usage)?;
        let entry = Entry::new(item, scanned.origin, scanned.counts, scanned.shape);
        return Ok((entry, crate::passes::Skeleton::default()));
    }
    let (mut m, origin) = read_message(item)?;
    // Kept apart only when the message is not (see `Entry::pair_shape`).
    let shape = (!want.message).then(|| PairShape::from(&m));
    let mut entry = Entry::new(item, origin, CachedCounts::of(&m), shape);
    let mut skeleton = crate::passes::Skeleton::default();
    if want.message {
        skeleton = crate::passes::Skeleton::cached(&m);
        entry.args = want.args;
        // A BPE count reads the arguments whole: they are slimmed once it is made
        // (`ReadSet::counted`).
        if want.bpe.is_none() {
            crate::passes::slim_args(&mut m, want.args);
        }
    }
    let m = Arc::new(m);
    if want.message {
        entry.message = Some(Arc::clone(&m));
    }
    if want.bpe.is_some() {
        needs_bpe(m);
    }
    Ok((entry, skeleton))
}

/// The address of the list's item `i`, without taking a reference to it (that would
/// write to the item, a cache miss per message on a warm call). Only ever compared.
fn item_address(list: &Bound<'_, PyList>, i: usize) -> Option<usize> {
    if i >= list.len() {
        return None;
    }
    let at = isize::try_from(i).ok()?;
    // SAFETY: `list` is a live list we hold a reference to, with the GIL held, and
    // `at` is within its length (read just above, with no Python code run since), so
    // PyList_GetItem returns a borrowed pointer to a live item without setting an
    // error. The pointer is compared, never followed.
    let item = unsafe { pyo3::ffi::PyList_GetItem(list.as_ptr(), at) };
    (!item.is_null()).then_some(item as usize)
}

/// The process-wide cache type the bindings keep.
pub type Cache = ConversationCache<Conversation>;

//! Lengths of `repr()` of live Python values (tool calls, unknown content blocks),
//! worked out from the objects without building the strings.
//!
//! The heuristic count reads every tool call of a conversation this way, so the walk
//! keeps to exact built-in types through borrowed references: one pointer comparison
//! per value, no reference counting for leaves. Anything else asks Python for its
//! `repr()`, which is right by definition (a `str` enum, an `OrderedDict`).

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::pyrepr;

/// Deeper nesting than this is measured by Python's own `repr()`.
const MAX_DEPTH: usize = 128;

/// Length of `repr(v)`. Never fails: a value whose `repr()` raises counts as empty.
pub fn repr_len(v: &Bound<'_, PyAny>) -> usize {
    len_at(v.as_borrowed(), 0)
}

fn len_at(v: Borrowed<'_, '_, PyAny>, depth: usize) -> usize {
    if let Ok(s) = v.cast_exact::<PyString>() {
        return str_repr_len(&s);
    }
    if v.is_none() {
        return 4;
    }
    if depth < MAX_DEPTH {
        if let Ok(d) = v.cast_exact::<PyDict>() {
            // Owned: a value's `repr()` below may run Python code that drops the
            // dict from its container.
            return dict_repr_len(&d.to_owned(), depth);
        }
        if let Ok(l) = v.cast_exact::<PyList>() {
            return list_repr_len(&l.to_owned(), depth);
        }
    }
    if let Ok(b) = v.cast_exact::<PyBool>() {
        return if b.is_true() { 4 } else { 5 };
    }
    if v.cast_exact::<PyInt>().is_ok() {
        if let Ok(i) = v.extract::<i64>() {
            return decimal_len(i);
        }
    }
    if let Ok(f) = v.cast_exact::<PyFloat>() {
        return pyrepr::py_float_repr_len(f.value());
    }
    // Subclasses, tuples, sets, custom objects, very deep nesting: Python's answer.
    let owned = v.to_owned();
    owned.repr().and_then(|r| r.len()).unwrap_or(0)
}

/// The four keys of every LangChain tool call, interned by LangChain and by
/// `intern!` alike: recognised by address, their lengths known. The interned
/// objects live as long as the process (`intern!` keeps them), so no other string
/// can take their address.
static KNOWN: OnceLock<[(usize, usize); 4]> = OnceLock::new();

fn known(py: Python<'_>) -> &'static [(usize, usize); 4] {
    KNOWN.get_or_init(|| {
        [
            intern!(py, "name"),
            intern!(py, "args"),
            intern!(py, "id"),
            intern!(py, "type"),
        ]
        .map(|s| {
            (
                s.as_ptr() as usize,
                s.to_str().map_or(0, pyrepr::py_str_repr_len),
            )
        })
    })
}

fn str_repr_len(s: &Bound<'_, PyString>) -> usize {
    match s.to_str() {
        Ok(text) => pyrepr::py_str_repr_len(text),
        // Lone surrogates are not UTF-8 (Python escapes them): str's own repr().
        Err(_) => s.repr().and_then(|r| r.len()).unwrap_or(0),
    }
}

/// Length of `repr()` of a tool call dict; `None` for an OpenAI call (one with a
/// `function` key), which LangChain converts before it counts.
pub fn tool_call_repr_len(d: &Bound<'_, PyDict>) -> Option<usize> {
    let py = d.py();
    let (known, function) = (known(py), intern!(py, "function"));
    let mut openai = false;
    let len = walk_dict(d, 0, |key| {
        // LangChain's keys are recognised by address; a parsed `function` key may be
        // a string of its own.
        let at = key.as_ptr() as usize;
        if let Some(&(_, len)) = known.iter().find(|(p, _)| *p == at) {
            return len;
        }
        openai |= key.is(function) || key.to_str().is_ok_and(|k| k == "function");
        str_repr_len(key)
    });
    (!openai).then_some(len)
}

fn dict_repr_len(d: &Bound<'_, PyDict>, depth: usize) -> usize {
    walk_dict(d, depth, str_repr_len)
}

/// `{k: v, ...}` over the dict as it is while walked, str keys measured by
/// `key_len` (which must not run Python code). PyDict_Next checks its position
/// against the dict's current entries, so a dict changed by a value's `repr()`
/// ends or shortens the walk instead of failing it.
fn walk_dict(
    d: &Bound<'_, PyDict>,
    depth: usize,
    mut key_len: impl FnMut(&Bound<'_, PyString>) -> usize,
) -> usize {
    let py = d.py();
    let mut pos = 0;
    let mut key = std::ptr::null_mut();
    let mut value = std::ptr::null_mut();
    let entries = std::iter::from_fn(|| {
        // SAFETY: `d` is a live dict we hold a reference to, and the GIL is held.
        // PyDict_Next hands out borrowed references to the current entry (non-null
        // when it returns 1). They stay valid while the dict keeps the entry, which
        // only Python code could change: see below for how none runs while one is in
        // use.
        if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut key, &mut value) } == 0 {
            return None;
        }
        // SAFETY: the pointers were just handed out, and nothing has run since.
        let (k, v) = unsafe { (Borrowed::from_ptr(py, key), Borrowed::from_ptr(py, value)) };
        Some(match k.cast_exact::<PyString>() {
            // A str key is measured without running Python code (even its repr(),
            // for lone surrogates, is C code making an untracked object, so no
            // collection either), so the borrowed value is still the entry's when
            // `len_at` takes it; `len_at` owns anything before running code on it.
            Ok(s) => (key_len(&s), len_at(v, depth + 1)),
            // Any other key's repr() may run Python code: own both first.
            Err(_) => {
                let (k, v) = (k.to_owned(), v.to_owned());
                (
                    len_at(k.as_borrowed(), depth + 1),
                    len_at(v.as_borrowed(), depth + 1),
                )
            }
        })
    });
    pyrepr::py_dict_repr_len(entries)
}

/// `[a, b, ...]` over the list as it is while walked (an item's `repr()` may
/// change it).
fn list_repr_len(l: &Bound<'_, PyList>, depth: usize) -> usize {
    let items = (0..).map_while(|i| l.get_item(i).ok());
    pyrepr::py_list_repr_len(items.map(|item| len_at(item.as_borrowed(), depth + 1)))
}

/// Characters of an integer written in decimal.
fn decimal_len(i: i64) -> usize {
    let sign = usize::from(i < 0);
    let mut n = i.unsigned_abs();
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    sign + digits
}

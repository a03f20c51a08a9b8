//! Lengths of `repr()` of live Python values (tool calls, unknown content blocks),
//! worked out from the objects without building the strings.
//!
//! Exact built-in types are measured here; anything else asks Python for its
//! `repr()`, which is right by definition (a `str` enum, an `OrderedDict`).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::pyrepr;

/// Deeper nesting than this is measured by Python's own `repr()`.
const MAX_DEPTH: usize = 128;

/// Length of `repr(v)`. Never fails: a value whose `repr()` raises counts as empty.
pub fn repr_len(v: &Bound<'_, PyAny>) -> usize {
    len_at(v.as_borrowed(), 0)
}

/// The length of `v`'s `repr()`. Leaves of exact built-in types (most of what a block
/// or a call holds) are measured on the borrowed pointer: nothing here runs Python code
/// or allocates a tracked object, so no collection can change the containers above
/// meanwhile. A container is owned while it is walked, and a value Python must
/// `repr()` itself (which may run any code) is owned before it is asked.
fn len_at(v: Borrowed<'_, '_, PyAny>, depth: usize) -> usize {
    if let Ok(s) = v.cast_exact::<PyString>() {
        return str_repr_len(s);
    }
    if v.is_none() {
        return 4;
    }
    if depth < MAX_DEPTH {
        if let Ok(d) = v.cast_exact::<PyDict>() {
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
        if let Some(i) = small_int(v) {
            return decimal_len(i);
        }
    }
    if let Ok(f) = v.cast_exact::<PyFloat>() {
        return pyrepr::py_float_repr_len(f.value());
    }
    // Subclasses, tuples, sets, custom objects, very deep nesting, big ints: Python's
    // answer.
    python_repr_len(&v.to_owned())
}

fn python_repr_len(v: &Bound<'_, PyAny>) -> usize {
    v.repr().and_then(|r| r.len()).unwrap_or(0)
}

/// An exact int that fits an `i64`, read without raising (an error object could set
/// off a collection).
fn small_int(v: Borrowed<'_, '_, PyAny>) -> Option<i64> {
    let mut overflow = 0;
    // SAFETY: `v` is a live exact int (checked by the caller) and the GIL is held.
    // With `overflow` given, PyLong_AsLongLongAndOverflow sets no exception for a
    // value out of range; it returns -1 with no error set then, or for -1 itself.
    let i = unsafe { ffi::PyLong_AsLongLongAndOverflow(v.as_ptr(), &mut overflow) };
    (overflow == 0).then_some(i)
}

fn str_repr_len(s: Borrowed<'_, '_, PyString>) -> usize {
    match s.to_str() {
        Ok(text) => pyrepr::py_str_repr_len(text),
        // Lone surrogates are not UTF-8 (Python escapes them): str's own repr().
        Err(_) => python_repr_len(&s.to_owned().into_any()),
    }
}

/// `{k: v, ...}` over the dict as it is while walked: PyDict_Next checks its
/// position against the dict's current entries, so a dict changed by a value's
/// `repr()` ends or shortens the walk instead of failing it. Kept for
/// `benches/bench_tokens.py`'s cold count: a snapshot of the entries (`d.items()`, a
/// tuple each) gave 3.3-4.0x against langchain-core, this walk 5.1-6.6x.
fn dict_repr_len(d: &Bound<'_, PyDict>, depth: usize) -> usize {
    let py = d.py();
    let mut pos = 0;
    let mut key = std::ptr::null_mut();
    let mut value = std::ptr::null_mut();
    let entries = std::iter::from_fn(|| {
        // SAFETY: `d` is a live dict we own, and the GIL is held. PyDict_Next hands out
        // borrowed references to a live entry (non-null when it returns 1).
        if unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut key, &mut value) } == 0 {
            return None;
        }
        // SAFETY: as above. A str key is measured running no code, so the entry (and
        // the value) are still there for the value's turn, which owns whatever it hands
        // to Python; any other key may run code, so both are owned first.
        let (k, v) = unsafe { (Borrowed::from_ptr(py, key), Borrowed::from_ptr(py, value)) };
        if k.is_exact_instance_of::<PyString>() {
            return Some((len_at(k, depth + 1), len_at(v, depth + 1)));
        }
        let (k, v) = (k.to_owned(), v.to_owned());
        Some((
            len_at(k.as_borrowed(), depth + 1),
            len_at(v.as_borrowed(), depth + 1),
        ))
    });
    pyrepr::py_dict_repr_len(entries)
}

/// `[a, b, ...]` over the list as it is while walked (an item's `repr()` may
/// change it: each item is fetched by its index once the one before is measured).
fn list_repr_len(l: &Bound<'_, PyList>, depth: usize) -> usize {
    let py = l.py();
    let items = (0..).map_while(|i| {
        let at = ffi::Py_ssize_t::try_from(i).ok().filter(|_| i < l.len())?;
        // SAFETY: `l` is a live list we own, and the GIL is held. The index is checked
        // against its current size, so PyList_GetItem sets no error; it returns a
        // borrowed reference (null is taken as the end), which `len_at` owns before
        // anything may run code.
        unsafe { Borrowed::from_ptr_or_opt(py, ffi::PyList_GetItem(l.as_ptr(), at)) }
    });
    pyrepr::py_list_repr_len(items.map(|item| len_at(item, depth + 1)))
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

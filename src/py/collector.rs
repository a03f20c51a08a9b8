//! The edited copies the cache keeps, out of the garbage collector's sight.
//!
//! A long conversation's first call makes hundreds of edited copies of its messages,
//! which the cache keeps for the calls after it. Tracked, they survive into the
//! collector's oldest generation, and each copy made adds to the count that sets off
//! a full pass, which walks the whole heap (a server's every conversation): pauses of
//! a second on a busy server. Untracked, the collector neither counts them as
//! survivors nor walks them; reference counting frees them as before, when the cache
//! lets go and the last view holding them is dropped.
//!
//! What is untracked is only what was made for the copy: the copy, its instance dict
//! and pydantic's per-instance fields set, extra and private dicts. What it shares
//! with the message it copies stays tracked. The collector can no longer break a
//! reference cycle through an untracked object, so one would leak; none forms: the
//! copy is referred to by the cache and by the views handed to the model, and
//! nothing it refers to (the original's field values, made before it, and the edited
//! values, made for it from text) refers back to it. Only code that stores a view
//! message inside that message's own fields could close one.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::source::instance_dict;

/// Pydantic's per-instance containers, made anew for each copy.
const PYDANTIC_SLOTS: [&str; 3] = [
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
];

/// Untrack `copy`, the edited copy of `original` that the cache keeps, and the
/// containers made with it (see the module's comment).
pub(super) fn untrack_copy(original: &Bound<'_, PyAny>, copy: &Bound<'_, PyAny>) {
    if copy.is(original) {
        return;
    }
    untrack(copy);
    if copy.is_instance_of::<PyDict>() {
        return;
    }
    if let Some(dict) = instance_dict(copy) {
        if !instance_dict(original).is_some_and(|d| d.is(&dict)) {
            untrack(dict.as_any());
        }
    }
    for name in PYDANTIC_SLOTS {
        let Ok(part) = copy.getattr(name) else {
            continue;
        };
        if !original.getattr(name).is_ok_and(|o| o.is(&part)) {
            untrack(&part);
        }
    }
}

fn untrack(obj: &Bound<'_, PyAny>) {
    // SAFETY: the GIL is held (the module declares `gil_used`, and the `Bound` proves
    // it) and so is a strong reference to `obj`, which keeps it alive.
    // `PyObject_GC_IsTracked` takes any object (0 for a type without the collector's
    // support); `PyObject_GC_UnTrack` is called only on an object it says is tracked,
    // which has the header that call needs. Untracking frees and moves nothing: the
    // collector stops visiting the object, and the objects it refers to stay alive as
    // they do for any reference from outside the collector's view. A dict given a
    // container later is tracked again by CPython itself.
    unsafe {
        if pyo3::ffi::PyObject_GC_IsTracked(obj.as_ptr()) == 1 {
            pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast());
        }
    }
}

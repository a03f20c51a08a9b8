//! The ledger's words as Python sees them: the cue words a user adds, and how the pin
//! tool's results read (written by the tool, read back by the memory).

use pyo3::prelude::*;

/// Add lines of binding cue words (the shape of the built-in file: `kind: cue, cue`,
/// kinds rule, limit, preference, fact, goal and update) to every later reading; how
/// many lines it took. Raises `InputError` naming the first line it cannot read, and
/// then adds nothing.
#[pyfunction]
pub fn add_binding_cues(text: &str) -> PyResult<usize> {
    crate::memory::ledger::cues::add(text)
        .map_err(|e| super::errors::InputError::new_err(format!("binding cues: {e}")))
}

/// What the pin tool answers when it pins `note` as number `number`.
#[pyfunction]
pub fn pinned_result(number: u32, note: &str) -> String {
    crate::memory::ledger::pinned_result(number, note)
}

/// What the pin tool answers when it unpins number `number`.
#[pyfunction]
pub fn unpinned_result(number: u32) -> String {
    crate::memory::ledger::unpinned_result(number)
}

/// A pin tool's result read: the number it pinned or unpinned and, for a pin, its note;
/// `None` for any other text.
#[pyfunction]
pub fn pin_change(result: &str) -> Option<(u32, Option<String>)> {
    crate::memory::ledger::pin_change(result)
}

//! Malformed input, located by message index and field.

use std::fmt;

/// Malformed input, located by message index and field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub index: Option<usize>,
    pub field: String,
    pub reason: String,
}

impl InputError {
    pub fn new(index: Option<usize>, field: impl Into<String>, reason: impl Into<String>) -> Self {
        InputError {
            index,
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error, placed at message `index` (used when a field-level reader does
    /// not know which message it is reading).
    pub fn at(mut self, index: usize) -> Self {
        self.index.get_or_insert(index);
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "message {i}: field '{}': {}", self.field, self.reason),
            None => write!(f, "field '{}': {}", self.field, self.reason),
        }
    }
}

impl std::error::Error for InputError {}

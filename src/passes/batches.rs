//! Cache-aware batching: only whole batches of a pass's edits are committed.

use super::*;

/// A pass's edits gathered candidate by candidate, of which only complete batches
/// are kept: a batch closes once the savings accumulated since the previous close
/// reach `min`. That depends only on the candidates themselves, so a longer sequence
/// never uncommits what a shorter one committed.
pub struct Batches {
    edits: Vec<Edit>,
    min: f64,
    /// Savings since the last batch closed.
    open: f64,
    /// Edits in closed batches.
    committed: usize,
    /// Where the candidate being gathered starts in `edits`.
    start: usize,
}

impl Batches {
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
    pub fn push(&mut self, e: Edit) {
        self.edits.push(e);
    }

    /// The edits of the candidate being gathered.
    pub fn candidate(&self) -> &[Edit] {
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
    pub(super) fn close_batch(&mut self, saved: f64) -> bool {
        self.open += saved.max(0.0);
        let closed = self.open >= self.min;
        if closed {
            self.open = 0.0;
        }
        closed
    }

    /// The edits of the complete batches.
    pub fn into_committed(mut self) -> Vec<Edit> {
        self.edits.truncate(self.committed);
        self.edits
    }
}

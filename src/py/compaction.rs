//! The compaction policy (`crate::compaction`) for the middleware: each function reads
//! the trigger and the price model from the turn's `PlanSettings` and asks the core.

use pyo3::prelude::*;

use super::planning::PlanSettings;
use crate::compaction::commit::{self, Proposal};
use crate::compaction::schedule::{self, MemoryCosts};
use crate::compaction::{self as policy, SummaryCall};
use crate::cutoff::any_clause_fires;

/// Whether a compaction that leaves `tokens` in `messages` messages, in place of
/// `before` in `messages_before`, commits: `(under the trigger with its margin, commits)`.
#[pyfunction]
#[pyo3(signature = (settings, *, tokens, messages, before, messages_before, window, priced, forced_loose))]
#[allow(clippy::too_many_arguments)]
pub(super) fn commit_verdict(
    settings: &PlanSettings,
    tokens: u64,
    messages: usize,
    before: u64,
    messages_before: usize,
    window: Option<u64>,
    priced: bool,
    forced_loose: bool,
) -> PyResult<(bool, bool)> {
    let p = Proposal {
        tokens,
        messages,
        before,
        messages_before,
        window,
        priced,
        forced_loose,
    };
    let v = commit::judge(&p, |n, t, w| {
        any_clause_fires(&settings.config().trigger, n, t, w)
    })?;
    Ok((v.under_trigger, v.commits))
}

/// The largest view of `messages` messages, up to `window` tokens, that commits as
/// under the trigger; `None` when no size does.
#[pyfunction]
pub(super) fn commit_size(
    settings: &PlanSettings,
    messages: usize,
    window: u64,
) -> PyResult<Option<u64>> {
    let trigger = &settings.config().trigger;
    Ok(commit::commit_size(messages, window, |n, t| {
        any_clause_fires(trigger, n, t, Some(window))
    })?)
}

/// A lower bound of the span's part of a compaction's price before one is drafted
/// (see `compaction::schedule::span_floor`); 0 without a price model.
#[pyfunction]
#[pyo3(signature = (settings, *, size, kept, quoted, kept_price, grown_reads, model_may_summarize))]
pub(super) fn span_floor(
    settings: &PlanSettings,
    size: f64,
    kept: f64,
    quoted: f64,
    kept_price: f64,
    grown_reads: f64,
    model_may_summarize: bool,
) -> f64 {
    settings.config().pricing.map_or(0.0, |p| {
        schedule::span_floor(
            &p,
            size,
            kept,
            quoted,
            kept_price,
            grown_reads,
            model_may_summarize,
        )
    })
}

/// Whether a fold of the memory pays rather than another digest, given what the memory
/// cost since its last fold (`memory`: tokens, reads, calls, rewrites, digests); `None`
/// without a price model.
#[pyfunction]
#[pyo3(signature = (settings, memory, *, extra, smaller_by, left, horizon))]
pub(super) fn fold_pays(
    settings: &PlanSettings,
    memory: (f64, f64, u64, f64, u64),
    extra: f64,
    smaller_by: f64,
    left: f64,
    horizon: f64,
) -> Option<bool> {
    let (tokens, reads, calls, rewrites, digests) = memory;
    let costs = MemoryCosts {
        tokens,
        reads,
        calls,
        rewrites,
        digests,
    };
    let p = settings.config().pricing?;
    Some(costs.fold(extra, smaller_by, left, horizon).pays(&p))
}

/// A model summary's call as it is priced: `(input, cached input, output)`.
#[pyfunction]
#[pyo3(signature = (*, span, listed, size, uncached, shares))]
pub(super) fn summary_call(
    span: f64,
    listed: usize,
    size: f64,
    uncached: f64,
    shares: bool,
) -> (f64, f64, f64) {
    let c = SummaryCall::estimate(span, listed, size, uncached, shares);
    (c.input, c.cached, c.output)
}

/// The room a compaction's memory may take, in widths.
#[pyfunction]
pub(super) fn memory_room(limit: i64, fixed: i64, per_token: f64) -> i64 {
    policy::memory_room(limit, fixed, per_token)
}

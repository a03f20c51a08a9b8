//! The compaction policy (`crate::compaction`) for the middleware: each function reads
//! the trigger and the price model from the turn's `PlanSettings` and asks the core.

use pyo3::prelude::*;

use super::planning::PlanSettings;
use crate::compaction::commit::{self, Proposal};
use crate::compaction::schedule::{self, MemoryCosts};
use crate::compaction::{self as policy, SummaryCall};
use crate::cutoff::any_clause_fires;

// The records the functions below return, with named fields for Python to read.

/// Whether a compaction commits, by the trigger.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct CommitVerdict {
    /// The view it leaves is under the trigger with the commit margin to spare.
    under_trigger: bool,
    /// It commits.
    commits: bool,
}

/// The summarizer's failures in a row after a model summary, and its rest.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct SummarizerRest {
    /// Its failures in a row (0 again once they reached the limit).
    failures: u64,
    /// The raw index it rests until, when the failures reached the limit.
    rests_until: Option<u64>,
}

/// Of a digest and a model summary, the one the session is better off with.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct SummarizerChoice {
    /// A model summary (else the digest).
    model: bool,
    /// The chosen one is due now.
    due: bool,
    /// The span's part of the cheaper price: the next calls' lower bound.
    span_price: f64,
}

/// A model summary's call as it is priced, in tokens.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct SummaryCallSize {
    /// Its input.
    input: f64,
    /// Of the input, what the provider has cached.
    cached: f64,
    /// Its expected output.
    output: f64,
}

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
) -> PyResult<CommitVerdict> {
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
    Ok(CommitVerdict {
        under_trigger: v.under_trigger,
        commits: v.commits,
    })
}

/// The raw index a judged compaction leaves no new attempt before, or `None` (see
/// `compaction::commit::backoff_after`).
#[pyfunction]
#[pyo3(signature = (*, under_trigger, commits, priced, messages))]
pub(super) fn backoff_after(
    under_trigger: bool,
    commits: bool,
    priced: bool,
    messages: u64,
) -> Option<u64> {
    commit::backoff_after(
        &commit::Verdict {
            under_trigger,
            commits,
        },
        priced,
        messages,
    )
}

/// Whether a compaction due by the trigger waits for the back-off.
#[pyfunction]
pub(super) fn backing_off(messages: u64, backoff_until: Option<u64>) -> bool {
    commit::backing_off(messages, backoff_until)
}

/// The summarizer's failures in a row after a model summary, and the raw index it
/// rests until when they reached `max_failures` (else `None`).
#[pyfunction]
#[pyo3(signature = (*, failures, failed, max_failures, cooldown, messages))]
pub(super) fn after_summary(
    failures: u64,
    failed: bool,
    max_failures: u64,
    cooldown: u64,
    messages: u64,
) -> SummarizerRest {
    let (failures, rests_until) =
        commit::after_summary(failures, failed, max_failures, cooldown, messages);
    SummarizerRest {
        failures,
        rests_until,
    }
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

/// Of a digest and a model summary that folds the memory (each `(next input, price,
/// due)`, or `None`), the one the session is better off with: `(a model summary, due,
/// the span's part of the cheaper price)`; `None` without a price model or either.
/// `memory`: what the memory cost since its last fold (tokens, reads, calls, rewrites,
/// digests).
#[pyfunction]
#[pyo3(signature = (settings, *, digest, fold, kept, memory, horizon))]
pub(super) fn choose_summarizer(
    settings: &PlanSettings,
    digest: Option<(f64, f64, bool)>,
    fold: Option<(f64, f64, bool)>,
    kept: (f64, f64),
    memory: (f64, f64, u64, f64, u64),
    horizon: f64,
) -> Option<SummarizerChoice> {
    let priced = |(next_input, price, due): (f64, f64, bool)| schedule::Priced {
        next_input,
        price,
        due,
    };
    let (tokens, reads, calls, rewrites, digests) = memory;
    let costs = MemoryCosts {
        tokens,
        reads,
        calls,
        rewrites,
        digests,
    };
    let p = settings.config().pricing?;
    let c = schedule::choose(
        &p,
        digest.map(priced),
        fold.map(priced),
        kept,
        &costs,
        horizon,
    )?;
    Some(SummarizerChoice {
        model: c.model,
        due: c.due,
        span_price: c.span_price,
    })
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
) -> SummaryCallSize {
    let c = SummaryCall::estimate(span, listed, size, uncached, shares);
    SummaryCallSize {
        input: c.input,
        cached: c.cached,
        output: c.output,
    }
}

/// The room a compaction's memory may take, in widths.
#[pyfunction]
pub(super) fn memory_room(limit: i64, fixed: i64, per_token: f64) -> i64 {
    policy::memory_room(limit, fixed, per_token)
}

//! Planning one turn from Python: settings read once, the passes run without the
//! interpreter, and the model view built from the edits.

use std::sync::Arc;

use pyo3::prelude::*;

use super::cache::{self};
use super::counting::*;
use super::errors::enter_core_ok;
use super::results::{edit_fingerprint, edit_object, PlanOutcome};
use crate::config::PlanConfig;
use crate::message::InputError as CoreInputError;
use crate::message::Message;
use crate::plan::PlanInput;

pub(super) fn parse_settings(resolved: &Bound<'_, PyAny>) -> PyResult<PlanConfig> {
    pythonize::depythonize(resolved)
        .map_err(|e| PyErr::from(CoreInputError::new(None, "config", e.to_string())))
}

/// A compaction's price by the settings' price model.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct CompactionPrice {
    /// What it costs now: what stays rewritten, and a summary's call.
    pub(super) price: f64,
    /// The reads paid since the last compaction for what has grown reach the price.
    pub(super) due: bool,
    /// Its cost over the cycle's calls.
    pub(super) cost_over_cycle: f64,
    /// The reads paid for what has grown.
    pub(super) paid: f64,
}

/// Resolved pass settings, read once: a caller that plans many turns with the same
/// settings keeps one of these instead of handing the dict over every turn.
#[pyclass(frozen, module = "fastcompact._core")]
pub(super) struct PlanSettings {
    config: Arc<PlanConfig>,
    /// What it was read from, so that it copies and pickles.
    resolved: Py<PyAny>,
}

impl PlanSettings {
    /// The settings as the core reads them.
    pub(super) fn config(&self) -> &PlanConfig {
        &self.config
    }
}

#[pymethods]
impl PlanSettings {
    #[new]
    pub(super) fn new(resolved: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PlanSettings {
            config: Arc::new(parse_settings(resolved)?),
            resolved: resolved.clone().unbind(),
        })
    }

    /// Whether the summary trigger fires at this size (the trigger as read once here,
    /// not converted again).
    fn trigger_fires(
        &self,
        n_messages: usize,
        tokens: f64,
        max_input_tokens: Option<u64>,
    ) -> PyResult<bool> {
        let trigger = &self.config.trigger;
        Ok(crate::cutoff::any_clause_fires(
            trigger,
            n_messages,
            tokens,
            max_input_tokens,
        )?)
    }

    /// A compaction priced by these settings' price model: its price, whether it is
    /// due, its cost over a cycle of `cycle` later calls (see `economics::Compaction`),
    /// and the reads paid for what has grown (what its price is weighed against);
    /// `None` without a price model.
    #[pyo3(signature = (*, size_without, size_with, prefix, grown_reads, cycle, summary_input=0.0, summary_cached=0.0, summary_output=0.0))]
    #[allow(clippy::too_many_arguments)]
    fn compaction(
        &self,
        size_without: f64,
        size_with: f64,
        prefix: f64,
        grown_reads: f64,
        cycle: f64,
        summary_input: f64,
        summary_cached: f64,
        summary_output: f64,
    ) -> Option<CompactionPrice> {
        let p = self.config.pricing?;
        let c = crate::economics::Compaction {
            size_without,
            size_with,
            prefix,
            summary_input,
            summary_cached,
            summary_output,
            grown_reads,
        };
        Some(CompactionPrice {
            price: c.price(&p),
            due: c.due(&p),
            cost_over_cycle: c.cost_over(&p, cycle),
            paid: c.paid(&p),
        })
    }

    /// The tokens of the newest requests a memory pays to keep verbatim, when they grow
    /// by `growth` tokens a call, a fold writes `fold_output` and `rewrites_per_call` of
    /// the calls rewrite the memory (see `economics::verbatim_tokens`); `None` without a
    /// price model.
    #[pyo3(signature = (growth, fold_output, rewrites_per_call=0.0))]
    fn verbatim_tokens(
        &self,
        growth: f64,
        fold_output: f64,
        rewrites_per_call: f64,
    ) -> Option<f64> {
        let p = self.config.pricing?;
        Some(crate::economics::verbatim_tokens(
            &p,
            growth,
            fold_output,
            rewrites_per_call,
        ))
    }

    /// Whether restoring files after a compaction pays when a cycle takes `cycle` calls
    /// and the files were read for the request still under way (`in_progress`) or a
    /// finished one (see `economics::restoring_pays`); `True` without a price model.
    fn restoring_pays(&self, cycle: f64, in_progress: bool) -> bool {
        self.config
            .pricing
            .is_none_or(|p| crate::economics::restoring_pays(&p, cycle, in_progress))
    }

    /// The settings as `CompactionConfig.resolved()` gave them.
    #[getter]
    fn resolved(&self, py: Python<'_>) -> Py<PyAny> {
        self.resolved.clone_ref(py)
    }

    pub(super) fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyAny>, (Py<PyAny>,)) {
        let py = slf.py();
        (
            slf.get_type().into_any(),
            (slf.get().resolved.clone_ref(py),),
        )
    }
}

/// When a plan runs with the interpreter released, so that other threads run
/// meanwhile: when it has this many messages, or read this many anew (a first call),
/// it takes milliseconds. A shorter one keeps it: taking the interpreter back waits
/// for whichever thread holds it to let go, up to its switch interval (5 ms by
/// default), far longer than the plan; 8 threads on 2 cores served fewer calls with
/// every plan released than with none.
const DETACH_FROM_MESSAGES: usize = 50_000;
const DETACH_FROM_READ: usize = 1_000;

/// The cheap passes and the summary decision for one turn. With `make_edited`
/// (called as `make_edited(message, edits)` for each message whose edits changed
/// since the last turn), the result holds the model view itself under `"view"`
/// instead of the edits.
#[pyfunction]
#[pyo3(signature = (messages, config, opts, *, max_input_tokens=None, now=None, timestamps=None, archive=None, make_edited=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn plan<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    config: &Bound<'py, PyAny>,
    opts: PyRef<'py, Opts>,
    max_input_tokens: Option<u64>,
    now: Option<f64>,
    timestamps: Option<Vec<Option<f64>>>,
    archive: Option<Vec<Option<String>>>,
    make_edited: Option<&Bound<'py, PyAny>>,
    progress: Option<Progress>,
) -> PyResult<PlanOutcome> {
    let cfg = match config.cast::<PlanSettings>() {
        Ok(settings) => Arc::clone(&settings.get().config),
        Err(_) => Arc::new(parse_settings(config)?),
    };
    let given = Given {
        max_input_tokens,
        now,
        timestamps,
        archive,
        progress: progress.unwrap_or_default(),
        params: opts.params()?,
        use_usage: opts.use_usage,
        keep_counts: make_edited.is_none(),
    };
    // The heuristic counts (cached) and the converted messages (cached too).
    let whole = crate::passes::truncate_args::whole_args(&cfg.truncate_args);
    let (key, mut counted) = count(py, messages, &opts, false, Some(whole))?;
    let long = counted.read.kept.entries.len() >= DETACH_FROM_MESSAGES
        || counted.read.read_anew >= DETACH_FROM_READ;
    let input = plan_input(&mut counted, given);
    let result = enter_core_ok(py, long, || crate::plan::plan(input, cfg.as_ref()))?;
    let out = outcome(py, &mut counted, &result, make_edited)?;
    store(py, key, counted);
    Ok(out)
}

/// What the caller gave `plan` beside the messages and settings.
struct Given {
    max_input_tokens: Option<u64>,
    now: Option<f64>,
    timestamps: Option<Vec<Option<f64>>>,
    archive: Option<Vec<Option<String>>>,
    progress: Progress,
    params: crate::tokens::HeuristicParams,
    use_usage: bool,
    /// Whether the counts are still needed after the plan (for the breakdown).
    keep_counts: bool,
}

/// The plan's input from the counted conversation: everything the passes need from
/// the cached entries, which line up with the messages only when every entry is
/// planned (otherwise the plan works them out afresh).
fn plan_input(counted: &mut Counted, given: Given) -> PlanInput<'_, '_> {
    counted.read.kept.fill_measures();
    let fixed = counted.fixed;
    let tokens = counted.counts_for_plan(given.keep_counts);
    let kept = &mut counted.read.kept;
    let n = kept.entries.len();
    let entries = &kept.entries;
    let msgs = messages_of(entries);
    let whole = msgs.len() == n && kept.skeletons.len() == n && kept.memos.len() == n;
    if whole {
        link_new_results(&msgs, &mut kept.skeletons, &mut kept.links_upto);
    }
    let skeletons = whole.then_some(kept.skeletons.as_slice());
    let timestamps = given
        .timestamps
        .unwrap_or_else(|| times_of(skeletons, &msgs));
    let progress = given.progress;
    PlanInput {
        measures: whole.then_some(kept.measures.as_slice()),
        skeletons,
        memos: whole.then_some(&kept.memos),
        tokens,
        msgs,
        fixed,
        max_input_tokens: given.max_input_tokens,
        params: given.params,
        timestamps,
        now: given.now,
        archive: given.archive.unwrap_or_default(),
        // Filled by `count` when usage is used.
        usage: if given.use_usage { &kept.usage } else { &[] },
        min_anchor: progress.min_anchor,
        prior: crate::calibration::Calibration::checked(progress.offset, progress.ratio),
        usage_of_unedited: progress.usage_of_unedited,
        settled: progress.settled,
        calls_before: progress.calls_before,
    }
}

impl Counted {
    /// The per-message counts for a plan: moved out when nothing reads them after it
    /// (the model view needs no breakdown).
    fn counts_for_plan(&mut self, keep: bool) -> Vec<f64> {
        match keep {
            true => self.per_message.clone(),
            false => std::mem::take(&mut self.per_message),
        }
    }
}

/// Results new to the cache get their links now, kept for later turns.
fn link_new_results(
    msgs: &[&Message],
    skeletons: &mut [crate::passes::Skeleton],
    upto: &mut usize,
) {
    crate::passes::link_results(msgs, skeletons, *upto);
    *upto = msgs.len();
}

/// The converted messages of the entries (all of them, when every entry has one).
fn messages_of(entries: &[cache::Entry]) -> Vec<&Message> {
    // Sized up front: a filtered collect would grow (and copy) step by step.
    let mut msgs: Vec<&Message> = Vec::with_capacity(entries.len());
    msgs.extend(entries.iter().filter_map(|e| e.message.as_deref()));
    msgs
}

/// Each message's send time, from the kept skeletons when they line up.
fn times_of(skeletons: Option<&[crate::passes::Skeleton]>, msgs: &[&Message]) -> Vec<Option<f64>> {
    match skeletons {
        Some(s) => timestamps_if_any(s.iter().map(|s| s.timestamp)),
        None => timestamps_if_any(msgs.iter().map(|m| m.timestamp)),
    }
}

/// The plan as Python sees it: the model view built with `make_edited`, or the edits
/// (each naming the message it was made for) with where the tokens go.
fn outcome(
    py: Python<'_>,
    counted: &mut Counted,
    result: &crate::plan::Plan,
    make_edited: Option<&Bound<'_, PyAny>>,
) -> PyResult<PlanOutcome> {
    let Some(make) = make_edited else {
        let entries = &counted.read.kept.entries;
        let target = |i: usize| {
            entries
                .get(i)
                .and_then(|e| e.message.as_deref())
                .map_or(0, |m| crate::cutoff::PairShape::from(m).identity())
        };
        let mut out = PlanOutcome::new(py, result, Some(&target as &dyn Fn(usize) -> u64))?;
        if let Some(b) = breakdown(counted) {
            out.breakdown = Some(Py::new(py, b)?);
        }
        return Ok(out);
    };
    let mut out = PlanOutcome::new(py, result, None)?;
    let (view, copies) = build_view(py, &mut counted.read.kept.entries, &result.edits, make)?;
    counted.read.kept.held_elsewhere = copies * cache::EDITED_COPY_BYTES;
    out.view = Some(view.into_any().unbind());
    Ok(out)
}

/// Where a conversation stands, as the middleware keeps it in state (indices are
/// in the view planned).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(super) struct Progress {
    min_anchor: usize,
    ratio: f64,
    #[pyo3(default)]
    offset: f64,
    settled: Option<usize>,
    calls_before: usize,
    /// The usage counted the messages unedited (the first call on a history).
    #[pyo3(default)]
    usage_of_unedited: bool,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            min_anchor: 0,
            ratio: 1.0,
            offset: 0.0,
            settled: None,
            calls_before: 0,
            usage_of_unedited: false,
        }
    }
}

/// Each message's time, or none at all when no message has one (no gap can be
/// found then, and the plan needs no per-message vector).
pub(super) fn timestamps_if_any(
    stamps: impl Iterator<Item = Option<f64>> + Clone,
) -> Vec<Option<f64>> {
    if stamps.clone().any(|t| t.is_some()) {
        stamps.collect()
    } else {
        Vec::new()
    }
}

/// The model view: the messages, with each edited one replaced by its edited copy,
/// built by `make` only when its edits differ from last turn's; and how many edited
/// copies the entries now keep.
pub(super) fn build_view<'py>(
    py: Python<'py>,
    entries: &mut [cache::Entry],
    edits: &[crate::passes::Edit],
    make: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, pyo3::types::PyList>, usize)> {
    // Edits come pass by pass; a stable sort groups them by message, in pass order.
    let mut sorted: Vec<&crate::passes::Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| e.index);
    let mut pending = sorted.as_slice();
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(entries.len());
    // Every message with edits keeps its copy; the others drop theirs.
    let mut copies = 0;
    for (i, entry) in entries.iter_mut().enumerate() {
        let len = pending.iter().take_while(|e| e.index == i).count();
        let (group, rest) = pending.split_at(len);
        pending = rest;
        if group.is_empty() {
            // Written only when set: a write to every entry would dirty the whole
            // cache of a long conversation each turn.
            if entry.edited.is_some() {
                entry.edited = None;
            }
            items.push(entry.object(py).clone());
            continue;
        }
        copies += 1;
        items.push(edited_copy(py, entry, group, make)?);
    }
    Ok((pyo3::types::PyList::new(py, items)?, copies))
}

/// The entry's message with `group`'s edits: the copy kept from last turn when the
/// edits are the same, else a new one from `make`, kept for the next.
fn edited_copy<'py>(
    py: Python<'py>,
    entry: &mut cache::Entry,
    group: &[&crate::passes::Edit],
    make: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    use std::hash::Hasher;
    let mut h = crate::passes::FastHasher::default();
    for e in group {
        h.write_u64(edit_fingerprint(e));
    }
    let fingerprint = h.finish();
    if let Some((fp, obj)) = &entry.edited {
        if *fp == fingerprint {
            return Ok(obj.bind(py).clone());
        }
    }
    let target = entry
        .message
        .as_deref()
        .map_or(0, |m| crate::cutoff::PairShape::from(m).identity());
    let objects = pyo3::types::PyList::empty(py);
    for e in group {
        objects.append(edit_object(py, e, target)?)?;
    }
    let edited = make.call1((entry.object(py), objects))?;
    super::collector::untrack_copy(entry.object(py), &edited);
    entry.edited = Some((fingerprint, edited.clone().unbind()));
    Ok(edited)
}

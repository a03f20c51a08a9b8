//! fastcompact's core: reading conversations, counting tokens, choosing cutoffs.
//!
//! Everything here is plain Rust and testable with `cargo test`; the Python bindings
//! (`convert` and the `_core` module below) are compiled only with the `python` feature.

pub mod config;
pub mod cutoff;
pub mod economics;
pub mod message;
pub mod passes;
pub mod plan;
pub mod printable;
pub mod pyrepr;
pub mod render;
pub mod tokens;

// Each turn's plan allocates and frees vectors sized by the conversation; the system
// allocator hands large ones back to the kernel and page-faults them in again the next
// turn (about 150 faults a turn at 10,000 messages), mimalloc keeps them. Thread-local
// storage is the dynamic kind, as a library loaded with dlopen needs.
#[cfg(feature = "python")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "python")]
mod convert;
#[cfg(feature = "python")]
mod reprlen;
#[cfg(feature = "python")]
mod tool_schemas;

/// The Python module `fastcompact._core`: bindings only.
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _core {
    use std::collections::BTreeMap;
    use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

    use pyo3::create_exception;
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;

    use crate::config::PlanConfig;
    use crate::convert::{self, Cache, ReadSet};
    use crate::cutoff::{self, Size};
    use crate::message::InputError as CoreInputError;
    use crate::message::Message;
    use crate::passes::Change;
    use crate::plan::{Plan, PlanInput};
    use crate::tokens::{self, Encoding, HeuristicParams};

    // Named by its full module path so that it pickles (worker processes send it back).
    create_exception!(
        fastcompact._core,
        InputError,
        PyValueError,
        "Malformed input, naming the message index and field."
    );

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("InputError", m.py().get_type::<InputError>())?;
        let presets: Vec<&str> = crate::economics::PRESETS.iter().map(|(n, _)| *n).collect();
        m.add("PRICING_PRESETS", presets)
    }

    /// Default bound of the token cache, in conversations.
    const DEFAULT_CACHE_CONVERSATIONS: usize = 1_000;

    static CACHE: LazyLock<Mutex<Cache>> =
        LazyLock::new(|| Mutex::new(Cache::new(DEFAULT_CACHE_CONVERSATIONS)));

    static TOOL_SCHEMAS: LazyLock<Mutex<crate::tool_schemas::ToolSchemas>> =
        LazyLock::new(Mutex::default);

    fn cache() -> MutexGuard<'static, Cache> {
        // A panic elsewhere cannot leave the cache inconsistent: entries are replaced whole.
        CACHE.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn input_error(py: Python<'_>, e: CoreInputError) -> PyErr {
        let err = InputError::new_err(e.to_string());
        let value = err.value(py);
        // Attributes for programs; the message already says it all for people.
        let _ = value.setattr("index", e.index);
        let _ = value.setattr("field", e.field.as_str());
        err
    }

    /// Counting options, as the Python layer passes them.
    #[derive(FromPyObject)]
    #[pyo3(from_item_all)]
    struct Opts {
        encoding: String,
        chars_per_token: f64,
        extra_tokens_per_message: f64,
        tokens_per_image: f64,
        tokens_per_document: f64,
        count_name: bool,
        use_usage: bool,
        /// The tools as given, and the Python function that serializes one.
        tools: Py<PyAny>,
        tool_json: Py<PyAny>,
        system: Option<Py<PyAny>>,
        cache_key: Option<String>,
    }

    impl Opts {
        fn encoding(&self) -> Result<Encoding, CoreInputError> {
            Encoding::parse(&self.encoding).ok_or_else(|| {
                CoreInputError::new(
                    None,
                    "encoding",
                    format!(
                        "unknown encoding {:?}; expected 'heuristic', 'o200k_base' or 'cl100k_base'",
                        self.encoding
                    ),
                )
            })
        }

        fn params(&self) -> Result<HeuristicParams, CoreInputError> {
            if !(self.chars_per_token.is_finite() && self.chars_per_token > 0.0) {
                return Err(CoreInputError::new(
                    None,
                    "chars_per_token",
                    "must be a positive number",
                ));
            }
            Ok(HeuristicParams {
                chars_per_token: self.chars_per_token,
                extra_tokens_per_message: self.extra_tokens_per_message,
                tokens_per_image: self.tokens_per_image,
                tokens_per_document: self.tokens_per_document,
                count_name: self.count_name,
            })
        }
    }

    /// Counted messages of one call.
    struct Counted {
        per_message: Vec<f64>,
        /// System prompt and tool schemas.
        fixed: f64,
        total: f64,
        read: ReadSet,
    }

    /// Read (through the cache), count and total `messages`; the caller gets the read
    /// entries to inspect and must hand them back with `store`.
    fn count(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        opts: &Opts,
        shapes: bool,
        messages_too: bool,
    ) -> Result<(u64, Counted), CoreInputError> {
        let enc = opts.encoding()?;
        let p = opts.params()?;
        let list = convert::as_list(messages)?;
        let key = convert::conversation_key(opts.cache_key.as_deref(), &list);
        let cached = cache().take(key);
        let want = convert::Want {
            bpe: (enc != Encoding::Heuristic).then_some(enc),
            shape: shapes,
            message: messages_too,
            usage: opts.use_usage,
        };
        let mut read = convert::read_with_cache(&list, cached, want)?;
        if enc != Encoding::Heuristic && !read.fresh.is_empty() {
            let fresh = &read.fresh;
            let counts = py.detach(|| tokens::bpe_counts(enc, fresh, &p));
            for (i, n) in counts {
                if let Some(e) = read.kept.entries.get_mut(i) {
                    e.counts.set_bpe(enc, n);
                }
            }
        }
        let per_message = read.kept.tokens_for(enc, &p).to_vec();
        let tools =
            crate::tool_schemas::texts(opts.tools.bind(py), opts.tool_json.bind(py), || {
                TOOL_SCHEMAS.lock().unwrap_or_else(|p| p.into_inner())
            })?;
        let mut fixed = tokens::tools_tokens(enc, &tools, &p);
        if let Some(system) = &opts.system {
            let (m, _) = convert::read_message(system.bind(py)).map_err(|mut e| {
                e.field = format!("system.{}", e.field);
                e
            })?;
            fixed += match enc {
                Encoding::Heuristic => tokens::measure(&m).heuristic_tokens(&p),
                _ => tokens::bpe_message_tokens(enc, &m, &p) as f64,
            };
        }
        let total = if opts.use_usage {
            let usage: Vec<Option<(u64, u64)>> =
                read.kept.entries.iter().map(|e| e.counts.usage()).collect();
            tokens::anchored_total(fixed, &per_message, &usage, 0, 1.0).total
        } else {
            (fixed + per_message.iter().sum::<f64>()).ceil()
        };
        Ok((
            key,
            Counted {
                per_message,
                fixed,
                total,
                read,
            },
        ))
    }

    fn store(key: u64, counted: Counted) {
        cache().put(key, counted.read.kept);
    }

    /// Total tokens of `messages` (plus system prompt and tools in `opts`).
    #[pyfunction]
    fn count_tokens(py: Python<'_>, messages: &Bound<'_, PyAny>, opts: Opts) -> PyResult<u64> {
        let (key, counted) =
            count(py, messages, &opts, false, false).map_err(|e| input_error(py, e))?;
        let total = counted.total as u64;
        store(key, counted);
        Ok(total)
    }

    /// Tokens per message, per role and per tool, with the total.
    #[pyfunction]
    fn token_breakdown<'py>(
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        opts: Opts,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let (key, counted) =
            count(py, messages, &opts, true, false).map_err(|e| input_error(py, e))?;
        let b = breakdown(&counted).unwrap_or_default();
        let out = pyo3::types::PyDict::new(py);
        out.set_item("total", counted.total as u64)?;
        out.set_item("system_and_tools", counted.fixed as u64)?;
        out.set_item(
            "per_message",
            counted
                .per_message
                .iter()
                .map(|t| *t as u64)
                .collect::<Vec<_>>(),
        )?;
        out.set_item("roles", b.roles.clone())?;
        out.set_item("tool_names", b.tool_names.clone())?;
        out.set_item("per_role", to_int_map(&b.per_role))?;
        out.set_item("per_tool", to_int_map(&b.per_tool))?;
        store(key, counted);
        Ok(out)
    }

    /// Where the counted tokens go, per role and per tool (`None` if an entry was read
    /// without its pair shape).
    fn breakdown(counted: &Counted) -> Option<tokens::Breakdown> {
        let shapes: Vec<_> = counted
            .read
            .kept
            .entries
            .iter()
            .filter_map(|e| e.shape.as_deref())
            .collect();
        (shapes.len() == counted.per_message.len())
            .then(|| tokens::breakdown(&shapes, &counted.per_message))
    }

    fn to_int_map(m: &BTreeMap<String, f64>) -> BTreeMap<String, u64> {
        m.iter().map(|(k, v)| (k.clone(), *v as u64)).collect()
    }

    /// Pair-safe cutoff for `keep` = (kind, value).
    #[pyfunction]
    #[pyo3(signature = (messages, keep, max_input_tokens, opts))]
    fn find_cutoff(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        keep: (String, f64),
        max_input_tokens: Option<u64>,
        opts: Opts,
    ) -> PyResult<usize> {
        let run = || -> Result<usize, CoreInputError> {
            let keep = Size::parse(&keep.0, keep.1, "keep")?;
            let (key, counted) = count(py, messages, &opts, true, false)?;
            let shapes: Vec<_> = counted
                .read
                .kept
                .entries
                .iter()
                .filter_map(|e| e.shape.as_deref().cloned())
                .collect();
            let cut = cutoff::find_cutoff(&shapes, &counted.per_message, keep, max_input_tokens);
            store(key, counted);
            cut
        };
        run().map_err(|e| input_error(py, e))
    }

    /// Whether any trigger clause fires (every size of it reached).
    #[pyfunction]
    #[pyo3(signature = (messages, triggers, max_input_tokens, opts))]
    fn should_compact(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        triggers: Vec<Vec<(String, f64)>>,
        max_input_tokens: Option<u64>,
        opts: Opts,
    ) -> PyResult<bool> {
        let run = || -> Result<bool, CoreInputError> {
            let clauses = triggers
                .iter()
                .map(|clause| {
                    clause
                        .iter()
                        .map(|(k, v)| Size::parse(k, *v, "trigger"))
                        .collect::<Result<Vec<_>, _>>()
                        .map(cutoff::Clause)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let (key, counted) = count(py, messages, &opts, false, false)?;
            let n = counted.per_message.len();
            let fired = cutoff::any_clause_fires(&clauses, n, counted.total, max_input_tokens);
            store(key, counted);
            fired
        };
        run().map_err(|e| input_error(py, e))
    }

    /// Whether a trigger (as `CompactionConfig.resolved()` gives it) fires at this size.
    #[pyfunction]
    #[pyo3(signature = (triggers, n_messages, tokens, max_input_tokens))]
    fn trigger_fires(
        py: Python<'_>,
        triggers: &Bound<'_, PyAny>,
        n_messages: usize,
        tokens: f64,
        max_input_tokens: Option<u64>,
    ) -> PyResult<bool> {
        let clauses: Vec<cutoff::Clause> = pythonize::depythonize(triggers)
            .map_err(|e| input_error(py, CoreInputError::new(None, "trigger", e.to_string())))?;
        cutoff::any_clause_fires(&clauses, n_messages, tokens, max_input_tokens)
            .map_err(|e| input_error(py, e))
    }

    fn parse_settings(resolved: &Bound<'_, PyAny>) -> PyResult<PlanConfig> {
        pythonize::depythonize(resolved).map_err(|e| {
            input_error(
                resolved.py(),
                CoreInputError::new(None, "config", e.to_string()),
            )
        })
    }

    /// Resolved pass settings, read once: a caller that plans many turns with the same
    /// settings keeps one of these instead of handing the dict over every turn.
    #[pyclass(frozen, module = "fastcompact._core")]
    struct PlanSettings {
        config: Arc<PlanConfig>,
        /// What it was read from, so that it copies and pickles.
        resolved: Py<PyAny>,
    }

    #[pymethods]
    impl PlanSettings {
        #[new]
        fn new(resolved: &Bound<'_, PyAny>) -> PyResult<Self> {
            Ok(PlanSettings {
                config: Arc::new(parse_settings(resolved)?),
                resolved: resolved.clone().unbind(),
            })
        }

        fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyAny>, (Py<PyAny>,)) {
            let py = slf.py();
            (
                slf.get_type().into_any(),
                (slf.get().resolved.clone_ref(py),),
            )
        }
    }

    /// The cheap passes and the summary decision for one turn. With `make_edited`
    /// (called as `make_edited(message, edits)` for each message whose edits changed
    /// since the last turn), the result holds the model view itself under `"view"`
    /// instead of the edits.
    #[pyfunction]
    #[pyo3(signature = (messages, config, max_input_tokens, now, timestamps, archive, opts, make_edited=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn plan<'py>(
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        config: &Bound<'py, PyAny>,
        max_input_tokens: Option<u64>,
        now: Option<f64>,
        timestamps: Option<Vec<Option<f64>>>,
        archive: Option<Vec<Option<String>>>,
        opts: Opts,
        make_edited: Option<&Bound<'py, PyAny>>,
        progress: Option<Progress>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let progress = progress.unwrap_or_default();
        let cfg = match config.cast::<PlanSettings>() {
            Ok(settings) => Arc::clone(&settings.get().config),
            Err(_) => Arc::new(parse_settings(config)?),
        };
        let p = opts.params().map_err(|e| input_error(py, e))?;
        // The heuristic counts (cached) and the converted messages (cached too).
        let (key, mut counted) =
            count(py, messages, &opts, false, true).map_err(|e| input_error(py, e))?;
        // Everything the passes need from the cached entries.
        counted.read.kept.fill_measures();
        let entries = &counted.read.kept.entries;
        let skeletons = &mut counted.read.kept.skeletons;
        let memos = &counted.read.kept.memos;
        let n = entries.len();
        // Sized up front: a filtered collect would grow (and copy) step by step.
        let mut msgs: Vec<&Message> = Vec::with_capacity(n);
        msgs.extend(entries.iter().filter_map(|e| e.message.as_deref()));
        // The pair shapes only matter when a summary may be needed, which the view
        // before the passes tells: they never add tokens (should one ever, the plan
        // works the shapes out itself).
        let before = counted.fixed + counted.per_message.iter().sum::<f64>();
        let may_summarize = !cfg.trigger.is_empty()
            && cutoff::any_clause_fires(&cfg.trigger, n, before, max_input_tokens).unwrap_or(true);
        let shapes: Option<Vec<_>> = may_summarize.then(|| {
            let mut shapes = Vec::with_capacity(n);
            shapes.extend(entries.iter().filter_map(|e| e.shape.as_deref()));
            shapes
        });
        // The kept skeletons, memos and measures line up with the messages only when
        // every entry is planned (otherwise the plan works them out afresh).
        let whole = msgs.len() == n && skeletons.len() == n && memos.len() == n;
        let measures = whole.then_some(counted.read.kept.measures.as_slice());
        if whole {
            // Results new to the cache get their links now, kept for later turns.
            let links_upto = &mut counted.read.kept.links_upto;
            crate::passes::link_results(&msgs, skeletons, *links_upto);
            *links_upto = n;
        }
        let skeletons = whole.then_some(skeletons.as_slice());
        let memos = whole.then_some(memos);
        let timestamps = timestamps.unwrap_or_else(|| match skeletons {
            Some(s) => timestamps_if_any(s.iter().map(|s| s.timestamp)),
            None => timestamps_if_any(msgs.iter().map(|m| m.timestamp)),
        });
        let input = PlanInput {
            // The model view needs no breakdown afterwards: the counts can move.
            tokens: if make_edited.is_some() {
                std::mem::take(&mut counted.per_message)
            } else {
                counted.per_message.clone()
            },
            measures,
            skeletons,
            msgs,
            fixed: counted.fixed,
            max_input_tokens,
            params: p,
            timestamps,
            now,
            archive: archive.unwrap_or_default(),
            shapes,
            memos,
            usage: if opts.use_usage {
                entries.iter().map(|e| e.counts.usage()).collect()
            } else {
                Vec::new()
            },
            min_anchor: progress.min_anchor,
            prior_ratio: progress.ratio,
            settled: progress.settled,
            calls_before: progress.calls_before,
        };
        // A bug in a pass must not take the agent down: it becomes a Python error the
        // caller can handle (the middleware then sends the unedited view).
        let result = py
            .detach(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::plan::plan(input, cfg.as_ref())
                }))
            })
            .map_err(|_| {
                pyo3::exceptions::PyRuntimeError::new_err(
                    "fastcompact: internal error while planning",
                )
            })?;
        let out = plan_to_dict(py, &result, make_edited.is_none())?;
        if let Some(make) = make_edited {
            let view = build_view(py, &mut counted.read.kept.entries, &result.edits, make)?;
            out.set_item("view", view)?;
        }
        // Where the tokens go, from the counts already at hand (for `plan()`'s
        // picture; the model-view path does without).
        if let Some(b) = make_edited.is_none().then(|| breakdown(&counted)).flatten() {
            out.set_item("per_role", to_int_map(&b.per_role))?;
            out.set_item("per_tool", to_int_map(&b.per_tool))?;
        }
        store(key, counted);
        Ok(out)
    }

    /// Where a conversation stands, as the middleware keeps it in state (indices are
    /// in the view planned).
    #[derive(FromPyObject)]
    #[pyo3(from_item_all)]
    struct Progress {
        min_anchor: usize,
        ratio: f64,
        settled: Option<usize>,
        calls_before: usize,
    }

    impl Default for Progress {
        fn default() -> Self {
            Progress {
                min_anchor: 0,
                ratio: 1.0,
                settled: None,
                calls_before: 0,
            }
        }
    }

    /// Each message's time, or none at all when no message has one (no gap can be
    /// found then, and the plan needs no per-message vector).
    fn timestamps_if_any(stamps: impl Iterator<Item = Option<f64>> + Clone) -> Vec<Option<f64>> {
        if stamps.clone().any(|t| t.is_some()) {
            stamps.collect()
        } else {
            Vec::new()
        }
    }

    /// A 63-bit fingerprint of an edit's pass and change (never 0, which means
    /// "unknown" to Python).
    fn edit_fingerprint(e: &crate::passes::Edit) -> u64 {
        let pass = e.pass as u64;
        ((e.key ^ pass.wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 1).max(1)
    }

    /// The model view: the messages, with each edited one replaced by its edited copy,
    /// built by `make` only when its edits differ from last turn's.
    fn build_view<'py>(
        py: Python<'py>,
        entries: &mut [convert::Entry],
        edits: &[crate::passes::Edit],
        make: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        use std::hash::Hasher;
        // Edits come pass by pass; a stable sort groups them by message, in pass order.
        let mut sorted: Vec<&crate::passes::Edit> = edits.iter().collect();
        sorted.sort_by_key(|e| e.index);
        let mut pending = sorted.as_slice();
        let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(entries.len());
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
            let mut h = crate::passes::FastHasher::default();
            for e in group {
                h.write_u64(edit_fingerprint(e));
            }
            let fingerprint = h.finish();
            if let Some((fp, obj)) = &entry.edited {
                if *fp == fingerprint {
                    items.push(obj.bind(py).clone());
                    continue;
                }
            }
            let tuples = pyo3::types::PyList::empty(py);
            for e in group {
                tuples.append(edit_tuple(py, e)?)?;
            }
            let edited = make.call1((entry.object(py), tuples))?;
            entry.edited = Some((fingerprint, edited.clone().unbind()));
            items.push(edited);
        }
        pyo3::types::PyList::new(py, items)
    }

    /// An edit as the tuple Python sees: (index, pass, field, value, call, fingerprint).
    fn edit_tuple<'py>(
        py: Python<'py>,
        e: &crate::passes::Edit,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let fingerprint = edit_fingerprint(e);
        let (field, value, call) = match &e.change {
            Change::Content(text) => (
                "content",
                (**text).into_pyobject(py)?.into_any(),
                None::<usize>,
            ),
            Change::ToolArgs { call, args } => (
                "tool_args",
                pythonize::pythonize(py, &**args)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?,
                Some(*call),
            ),
        };
        (e.index, e.pass.name(), field, value, call, fingerprint).into_pyobject(py)
    }

    fn plan_to_dict<'py>(
        py: Python<'py>,
        plan: &Plan,
        with_edits: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        use pyo3::types::PyDict;
        let out = PyDict::new(py);
        let edits = pyo3::types::PyList::empty(py);
        if with_edits {
            for e in &plan.edits {
                edits.append(edit_tuple(py, e)?)?;
            }
        }
        out.set_item("edits", edits)?;
        out.set_item("tokens_before", plan.tokens_before.ceil() as u64)?;
        out.set_item("tokens_after", plan.tokens_after.ceil() as u64)?;
        let passes = pyo3::types::PyList::empty(py);
        for s in &plan.passes {
            let d = PyDict::new(py);
            d.set_item("name", s.pass.name())?;
            d.set_item("tokens_before", s.tokens_before.ceil() as u64)?;
            d.set_item("tokens_after", s.tokens_after.ceil() as u64)?;
            d.set_item("edits", s.edits)?;
            passes.append(d)?;
        }
        out.set_item("passes", passes)?;
        out.set_item("summary_needed", plan.summary_needed)?;
        out.set_item("summary_cutoff", plan.summary_cutoff)?;
        out.set_item("true_tokens", plan.true_tokens.ceil() as u64)?;
        out.set_item("ratio", plan.ratio)?;
        out.set_item("anchor", plan.anchor)?;
        out.set_item("settled", plan.settled)?;
        out.set_item("batch_at", plan.batch_at)?;
        Ok(out)
    }

    /// Raw-state cutoff of an effective-view cutoff, after an optional prior one.
    #[pyfunction]
    #[pyo3(signature = (prior_cutoff, effective_cutoff))]
    fn state_cutoff(
        py: Python<'_>,
        prior_cutoff: Option<u64>,
        effective_cutoff: u64,
    ) -> PyResult<u64> {
        cutoff::state_cutoff(prior_cutoff, effective_cutoff).map_err(|e| input_error(py, e))
    }

    /// Exact tokens of a text under a BPE encoding (no message framing).
    #[pyfunction]
    fn count_text(py: Python<'_>, text: &str, encoding: &str) -> PyResult<u64> {
        let enc = Encoding::parse(encoding)
            .filter(|e| *e != Encoding::Heuristic)
            .ok_or_else(|| {
                input_error(
                    py,
                    CoreInputError::new(
                        None,
                        "encoding",
                        format!("expected 'o200k_base' or 'cl100k_base', got {encoding:?}"),
                    ),
                )
            })?;
        let text = text.to_owned();
        Ok(py.detach(move || tokens::bpe_text_tokens(enc, &text)))
    }

    /// The messages as a Markdown transcript, numbered from `first`.
    #[pyfunction]
    #[pyo3(signature = (messages, first=0))]
    fn render_transcript(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        first: usize,
    ) -> PyResult<String> {
        let msgs = convert::read_all(messages).map_err(|e| input_error(py, e))?;
        let refs: Vec<&Message> = msgs.iter().collect();
        Ok(py.detach(|| crate::render::transcript(&refs, first)))
    }

    /// The summary made without a language model.
    #[pyfunction]
    #[pyo3(signature = (messages, previous_summary, todos, max_chars))]
    fn fallback_summary(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        previous_summary: Option<String>,
        todos: Vec<(String, String)>,
        max_chars: usize,
    ) -> PyResult<String> {
        let msgs = convert::read_all(messages).map_err(|e| input_error(py, e))?;
        let refs: Vec<&Message> = msgs.iter().collect();
        let todos: Vec<crate::render::Todo> = todos
            .into_iter()
            .map(|(content, status)| crate::render::Todo { content, status })
            .collect();
        Ok(py.detach(|| {
            crate::render::fallback_summary(&refs, previous_summary.as_deref(), &todos, max_chars)
        }))
    }

    /// What the core reads from each message, as plain dicts.
    #[pyfunction]
    fn normalize<'py>(
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let msgs = convert::read_all(messages).map_err(|e| input_error(py, e))?;
        let values: Vec<serde_json::Value> = msgs.iter().map(|m| m.to_json()).collect();
        pythonize::pythonize(py, &values).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Per-message heuristic tokens through full conversion (the path the Rust-side
    /// passes use), for tests that both readers agree.
    #[pyfunction]
    fn _heuristic_via_messages(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        opts: Opts,
    ) -> PyResult<Vec<u64>> {
        let p = opts.params().map_err(|e| input_error(py, e))?;
        let msgs = convert::read_all(messages).map_err(|e| input_error(py, e))?;
        Ok(msgs
            .iter()
            .map(|m| tokens::measure(m).heuristic_tokens(&p) as u64)
            .collect())
    }

    /// (conversations cached, capacity).
    #[pyfunction]
    fn cache_info() -> (usize, usize) {
        let c = cache();
        (c.len(), c.capacity())
    }

    #[pyfunction]
    fn set_cache_capacity(conversations: usize) {
        cache().set_capacity(conversations);
    }

    #[pyfunction]
    fn clear_cache() {
        cache().clear();
    }
}

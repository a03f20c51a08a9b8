//! The Python bindings, compiled with the `python` feature: the only code that
//! touches pyo3 types. Reading Python messages (`read`, `scan`), the conversation cache
//! (`cache`), the counting flow (`counting`), planning (`planning`), error conversion
//! (`errors`), the compaction policy (`compaction`), the memory handed back to the OS
//! (`allocator`), and the module
//! `fastcompact._core` itself.

mod allocator;
mod cache;
mod collector;
mod compaction;
mod counting;
mod errors;
mod ledger;
mod planning;
mod read;
mod reprlen;
mod results;
mod scan;
mod search;
mod sizes;
mod source;
mod tool_schemas;

/// The Python module `fastcompact._core`: bindings only.
///
/// It declares that it needs the GIL: the readers walk dicts and lists through borrowed
/// references (`PyDict_Next`, `PyList_GetItem`), which stay valid only while no other
/// thread can change those objects. The GIL guarantees that; free-threaded CPython
/// does not, so there the interpreter turns the GIL back on when it imports this module.
#[pyo3::pymodule(gil_used = true)]
mod _core {

    use pyo3::prelude::*;

    use super::read;
    use super::sizes;
    use crate::config::MAX_WINDOW;
    use crate::cutoff;
    use crate::memory::{after_compaction, Earlier, Files, Span};
    use crate::message::InputError as CoreInputError;
    use crate::message::Message;

    use crate::tokens::{self, Encoding};

    use super::allocator::return_freed_memory;
    use super::counting::*;
    use super::errors::{depythonized, enter_core_ok, pythonized, InputError};

    /// What `_read_each` gives per message.
    type ReaderView = (
        u64,
        Vec<(String, String)>,
        Vec<String>,
        bool,
        bool,
        Option<String>,
    );

    #[pymodule_export]
    use super::compaction::{
        after_summary, backing_off, backoff_after, choose_summarizer, commit_size, commit_verdict,
        memory_room, span_floor, summary_call, CommitVerdict, SummarizerChoice, SummarizerRest,
        SummaryCallSize,
    };
    #[pymodule_export]
    use super::counting::Opts;
    #[pymodule_export]
    use super::ledger::{add_binding_cues, pin_change, pinned_result, unpinned_result};
    #[pymodule_export]
    use super::planning::{plan, CompactionPrice, PlanSettings};
    #[pymodule_export]
    use super::results::{Breakdown, Edit, PassStats, PlanOutcome};
    #[pymodule_export]
    use super::search::{add_short_forms, search};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("InputError", m.py().get_type::<InputError>())?;
        let presets: Vec<&str> = crate::economics::PRESETS.iter().map(|(n, _)| *n).collect();
        m.add("PRICING_PRESETS", presets)?;
        m.add("WIDTHS_PER_TOKEN", crate::config::WIDTHS_PER_TOKEN)?;
        m.add("SUMMARY_SECTIONS", crate::memory::notes::SECTIONS.to_vec())?;
        m.add("PIN_TOOL", crate::memory::ledger::PIN_TOOL)?;
        // The sections notes keep whole while others are cut: the essential ones and
        // those that go last.
        let kept: Vec<&str> = crate::memory::notes::ESSENTIAL
            .iter()
            .chain(crate::memory::notes::LAST_TO_GO.iter())
            .copied()
            .collect();
        m.add("ESSENTIAL_SECTION_WORDS", kept)?;
        m.add(
            "WIDTHS_PER_TOKEN_BOUNDS",
            crate::config::WIDTHS_PER_TOKEN_BOUNDS,
        )
    }
    /// Total tokens of `messages` (plus system prompt and tools in `opts`).
    #[pyfunction]
    fn count_tokens(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        opts: PyRef<'_, Opts>,
    ) -> PyResult<u64> {
        let (key, counted) = count(py, messages, &opts, false, None)?;
        let total = counted.total() as u64;
        store(py, key, counted);
        Ok(total)
    }

    /// Tokens per message, per role and per tool, with the total.
    #[pyfunction]
    fn token_breakdown<'py>(
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        opts: PyRef<'_, Opts>,
    ) -> PyResult<Breakdown> {
        let (key, counted) = count(py, messages, &opts, true, None)?;
        let b = breakdown(&counted).unwrap_or_else(|| {
            let none = tokens::Breakdown::default();
            Breakdown::new(counted.total(), counted.fixed, &counted.per_message, none)
        });
        store(py, key, counted);
        Ok(b)
    }

    /// Pair-safe cutoff for `keep` = (kind, value).
    #[pyfunction]
    #[pyo3(signature = (messages, keep, max_input_tokens, opts))]
    fn find_cutoff(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        keep: &Bound<'_, PyAny>,
        max_input_tokens: Option<u64>,
        opts: PyRef<'_, Opts>,
    ) -> PyResult<usize> {
        let run = || -> Result<usize, CoreInputError> {
            let keep = sizes::read_size(keep, "keep")?;
            let (key, counted) = count(py, messages, &opts, true, None)?;
            let shapes: Vec<_> = counted
                .read
                .kept
                .entries
                .iter()
                .filter_map(super::cache::Entry::pair_shape)
                .collect();
            let shapes: Vec<&cutoff::PairShape> = shapes.iter().map(AsRef::as_ref).collect();
            let cut = cutoff::find_cutoff(&shapes, &counted.per_message, keep, max_input_tokens);
            store(py, key, counted);
            cut
        };
        Ok(run()?)
    }

    /// Whether any trigger clause fires (every size of it reached).
    #[pyfunction]
    #[pyo3(signature = (messages, triggers, max_input_tokens, opts))]
    fn should_compact(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        triggers: &Bound<'_, PyAny>,
        max_input_tokens: Option<u64>,
        opts: PyRef<'_, Opts>,
    ) -> PyResult<bool> {
        let run = || -> Result<bool, CoreInputError> {
            let clauses = sizes::read_triggers(triggers, "trigger")?;
            let (key, counted) = count(py, messages, &opts, false, None)?;
            let n = counted.per_message.len();
            let fired = cutoff::any_clause_fires(&clauses, n, counted.total(), max_input_tokens);
            store(py, key, counted);
            fired
        };
        Ok(run()?)
    }

    /// The sizes filled in when a caller leaves them out, for a model window (or none
    /// known): `{"trigger": (kind, value), ..., "min_batch_tokens": n}`.
    #[pyfunction]
    #[pyo3(signature = (max_input_tokens=None))]
    fn defaults<'py>(
        py: Python<'py>,
        max_input_tokens: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let max_input_tokens = check_window(max_input_tokens)?;
        let pair = sizes::size_pair;
        let d = crate::config::Defaults::for_window(max_input_tokens);
        let out = pyo3::types::PyDict::new(py);
        out.set_item("trigger", pair(py, d.trigger)?)?;
        out.set_item("keep", pair(py, d.keep)?)?;
        out.set_item("truncate_trigger", pair(py, d.truncate_trigger)?)?;
        out.set_item("truncate_keep", pair(py, d.truncate_keep)?)?;
        out.set_item("clearing_trigger", pair(py, d.clearing_trigger)?)?;
        out.set_item("collapse_trigger", pair(py, d.collapse_trigger)?)?;
        out.set_item("min_batch_tokens", d.min_batch_tokens)?;
        Ok(out)
    }

    /// An `InputError` as the core makes its own, for the checks the Python layer
    /// makes (the exception object, to raise there).
    #[pyfunction]
    #[pyo3(signature = (field, reason, index=None))]
    fn input_error<'py>(
        py: Python<'py>,
        field: &str,
        reason: &str,
        index: Option<usize>,
    ) -> Bound<'py, pyo3::exceptions::PyBaseException> {
        PyErr::from(CoreInputError::new(index, field, reason))
            .into_value(py)
            .into_bound(py)
    }

    /// One size as a config field holds it, checked: `(kind, value)` back, or a
    /// `ValueError` naming `field`.
    #[pyfunction]
    fn read_size<'py>(value: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
        let size = sizes::read_size(value, field).map_err(sizes::config_error)?;
        sizes::size_pair(value.py(), size)
    }

    /// Triggers as a config field holds them (a size, a dict of sizes, or a list of
    /// those), checked: a list with a `(kind, value)` for each single size and a list
    /// of them for each clause of several.
    #[pyfunction]
    fn read_triggers<'py>(
        value: &Bound<'py, PyAny>,
        field: &str,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let clauses = sizes::read_triggers(value, field).map_err(sizes::config_error)?;
        let py = value.py();
        clauses
            .into_iter()
            .map(|c| match c.0.as_slice() {
                [one] => sizes::size_pair(py, *one),
                all => {
                    let pairs = all.iter().map(|s| sizes::size_pair(py, *s));
                    Ok(pairs
                        .collect::<PyResult<Vec<_>>>()?
                        .into_pyobject(py)?
                        .into_any())
                }
            })
            .collect()
    }

    /// Add lines of tool names by kind (the shape of the built-in file: `kind: tool,
    /// tool`, kinds read, search, list, shell, fetch, write and edit) to the defaults
    /// made later; how many lines it took. Raises `InputError` naming the first line it
    /// cannot read, and then adds nothing.
    #[pyfunction]
    fn add_tool_kinds(text: &str) -> PyResult<usize> {
        crate::passes::tool_kinds::add(text)
            .map_err(|e| InputError::new_err(format!("tool kinds: {e}")))
    }

    /// What a tool is (read, search, list, shell, fetch, write or edit), by its name;
    /// `None` for a tool no kind names.
    #[pyfunction]
    fn tool_kind(tool: &str) -> Option<&'static str> {
        crate::passes::tool_kinds::kind_of(tool)
    }

    /// Each pass's settings as the core fills them in when left out, by section
    /// (`"clearing": {"keep_recent": 3, ...}`): the one source of these defaults.
    #[pyfunction]
    fn pass_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        use crate::config::*;
        #[derive(serde::Serialize)]
        struct Sections {
            budget: BudgetConfig,
            truncate_args: TruncateArgsConfig,
            clearing: ClearingConfig,
            dedupe: DedupeConfig,
            collapse: CollapseConfig,
            microcompact: MicrocompactConfig,
            memory: MemoryConfig,
            compaction: crate::compaction::Policy,
        }
        let sections = Sections {
            budget: BudgetConfig::default(),
            truncate_args: TruncateArgsConfig::default(),
            clearing: ClearingConfig::default(),
            dedupe: DedupeConfig::default(),
            collapse: CollapseConfig::default(),
            microcompact: MicrocompactConfig::default(),
            memory: MemoryConfig::default(),
            compaction: crate::compaction::POLICY,
        };
        pythonized(py, &sections)
    }

    /// A model window as given: `None`, or a positive int (never a bool); the one check
    /// of it, with the one error.
    #[pyfunction]
    #[pyo3(signature = (max_input_tokens=None))]
    fn check_window(max_input_tokens: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
        let Some(v) = max_input_tokens.filter(|v| !v.is_none()) else {
            return Ok(None);
        };
        let is_int =
            v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>();
        let window = is_int.then(|| v.extract::<u64>().ok()).flatten();
        let reason = match window {
            Some(n) if (1..=MAX_WINDOW).contains(&n) => return Ok(Some(n)),
            _ if is_int && v.gt(0)? => format!(
                "{} is more than any model's window (at most {MAX_WINDOW})",
                v.repr()?
            ),
            _ => format!("expected a positive int, got {}", v.repr()?),
        };
        Err(CoreInputError::new(None, "max_input_tokens", reason).into())
    }

    /// Raw-state cutoff of an effective-view cutoff, after an optional prior one.
    #[pyfunction]
    #[pyo3(signature = (prior_cutoff, effective_cutoff))]
    fn state_cutoff(prior_cutoff: Option<u64>, effective_cutoff: u64) -> PyResult<u64> {
        Ok(cutoff::state_cutoff(prior_cutoff, effective_cutoff)?)
    }

    /// Exact tokens of a text under a BPE encoding (no message framing).
    #[pyfunction]
    fn count_text(
        py: Python<'_>,
        text: &Bound<'_, pyo3::types::PyString>,
        encoding: &str,
    ) -> PyResult<u64> {
        let enc = Encoding::parse(encoding)
            .filter(|e| *e != Encoding::Heuristic)
            .ok_or_else(|| {
                PyErr::from(CoreInputError::new(
                    None,
                    "encoding",
                    format!("expected 'o200k_base' or 'cl100k_base', got {encoding:?}"),
                ))
            })?;
        // Lone surrogates cannot be UTF-8: counted as the replacement character, as
        // message texts are.
        let text = text.to_string_lossy().into_owned();
        enter_core_ok(py, true, move || tokens::bpe_text_tokens(enc, &text))
    }

    /// The messages as a Markdown transcript, numbered from `first`.
    #[pyfunction]
    #[pyo3(signature = (messages, first=0))]
    fn render_transcript(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        first: usize,
    ) -> PyResult<String> {
        let msgs = read::read_all(messages)?;
        let refs: Vec<&Message> = msgs.iter().collect();
        enter_core_ok(py, true, || crate::render::transcript(&refs, first))
    }

    /// The memory after a compaction (see `memory::after_compaction`): `previous` (a
    /// memory as the state keeps it, else `None`; without one, an earlier summary's
    /// text `earlier` and the archive file it names, `earlier_file`), with `messages`
    /// taken in (their requests numbered from `first_number`, archived in `file`), held
    /// to the budgets of `config` for `window` (see `memory_budgets`). With `notes`, a
    /// model's summary of all of it, the older requests fold beside them. Returns the
    /// memory, how many requests left the verbatim layer, and the notes to write whole
    /// to `notes_file` when they were cut for space (else `None`).
    #[pyfunction]
    #[pyo3(signature = (previous, earlier, messages, first_number, file, config, window, widths_per_token=crate::config::WIDTHS_PER_TOKEN, room=None, notes=None, earlier_file=None, notes_file=None, kept=None))]
    #[allow(clippy::too_many_arguments)]
    fn remember<'py>(
        py: Python<'py>,
        previous: Option<&Bound<'py, PyAny>>,
        earlier: Option<String>,
        messages: &Bound<'py, PyAny>,
        first_number: u32,
        file: Option<String>,
        config: &Bound<'py, PyAny>,
        window: Option<u64>,
        widths_per_token: f64,
        room: Option<usize>,
        notes: Option<String>,
        earlier_file: Option<String>,
        notes_file: Option<String>,
        kept: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Remembered<'py>> {
        let (previous, msgs, budgets) =
            span_inputs(previous, messages, config, window, widths_per_token, room)?;
        let kept = kept_messages(kept)?;
        let earlier = earlier_summary(earlier.as_deref(), earlier_file.as_deref());
        let files = Files {
            archive: file.as_deref(),
            notes: notes_file.as_deref(),
        };
        let (memory, fitted) = enter_core_ok(py, true, || {
            let refs: Vec<&Message> = msgs.iter().collect();
            let kept: Vec<&Message> = kept.iter().collect();
            let span = Span {
                msgs: &refs,
                first_number,
                kept: &kept,
            };
            after_compaction(previous, earlier, span, files, &budgets, notes.as_deref())
        })?;
        Ok((pythonized(py, &memory)?, fitted.folded, fitted.to_save))
    }

    /// The messages that stay in view beside a compaction's span, read (none given:
    /// none).
    fn kept_messages(kept: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Message>> {
        match kept.filter(|k| !k.is_none()) {
            Some(k) => Ok(read::read_all(k)?),
            None => Ok(Vec::new()),
        }
    }

    /// The digest and the fold of one span, with the span taken in once (see
    /// `memory::digest_and_fold`): each as `remember` returns it without notes and with
    /// empty notes, for a price check to weigh.
    #[pyfunction]
    #[pyo3(signature = (previous, earlier, messages, first_number, file, config, window, widths_per_token=crate::config::WIDTHS_PER_TOKEN, room=None, earlier_file=None, kept=None))]
    #[allow(clippy::too_many_arguments)]
    fn digest_and_fold<'py>(
        py: Python<'py>,
        previous: Option<&Bound<'py, PyAny>>,
        earlier: Option<String>,
        messages: &Bound<'py, PyAny>,
        first_number: u32,
        file: Option<String>,
        config: &Bound<'py, PyAny>,
        window: Option<u64>,
        widths_per_token: f64,
        room: Option<usize>,
        earlier_file: Option<String>,
        kept: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Remembered<'py>, Remembered<'py>)> {
        let (previous, msgs, budgets) =
            span_inputs(previous, messages, config, window, widths_per_token, room)?;
        let kept = kept_messages(kept)?;
        let earlier = earlier_summary(earlier.as_deref(), earlier_file.as_deref());
        let files = Files {
            archive: file.as_deref(),
            notes: None,
        };
        let (digest, fold) = enter_core_ok(py, true, || {
            let refs: Vec<&Message> = msgs.iter().collect();
            let kept: Vec<&Message> = kept.iter().collect();
            let span = Span {
                msgs: &refs,
                first_number,
                kept: &kept,
            };
            crate::memory::digest_and_fold(previous, earlier, span, files, &budgets)
        })?;
        let python = |(m, f): (crate::memory::Memory, crate::memory::Fitted)| {
            Ok::<_, PyErr>((pythonized(py, &m)?, f.folded, f.to_save))
        };
        Ok((python(digest)?, python(fold)?))
    }

    /// A memory as Python gets it, how many requests left the verbatim layer, and the
    /// notes to write whole.
    type Remembered<'py> = (Bound<'py, PyAny>, usize, Option<String>);

    /// What a memory is made from, read: the memory the last compaction left, the span,
    /// and the budgets it is held to.
    fn span_inputs(
        previous: Option<&Bound<'_, PyAny>>,
        messages: &Bound<'_, PyAny>,
        config: &Bound<'_, PyAny>,
        window: Option<u64>,
        widths_per_token: f64,
        room: Option<usize>,
    ) -> PyResult<(
        Option<crate::memory::Memory>,
        Vec<Message>,
        crate::memory::Budgets,
    )> {
        Ok((
            memory_given(previous)?,
            read::read_all(messages)?,
            budgets_of(config, window, widths_per_token, room)?,
        ))
    }

    /// An earlier summary's text and the archive file it names, when given.
    fn earlier_summary<'a>(text: Option<&'a str>, file: Option<&'a str>) -> Option<Earlier<'a>> {
        text.map(|text| Earlier { text, file })
    }

    /// A memory as the state keeps it, read (`None` for none).
    fn memory_given(given: Option<&Bound<'_, PyAny>>) -> PyResult<Option<crate::memory::Memory>> {
        given
            .filter(|p| !p.is_none())
            .map(|p| depythonized(p, "memory"))
            .transpose()
    }

    fn budgets_of(
        config: &Bound<'_, PyAny>,
        window: Option<u64>,
        widths_per_token: f64,
        room: Option<usize>,
    ) -> PyResult<crate::memory::Budgets> {
        let config: crate::config::MemoryConfig = depythonized(config, "memory config")?;
        let budgets = config.budgets(window, widths_per_token);
        Ok(room.map_or(budgets, |r| budgets.within(r)))
    }

    /// The memory's layer budgets in widths (`users`, `steps`, `heads`, `notes`) for
    /// `config` (a `MemoryConfig` as a dict) and a model of `window` tokens, where a
    /// token takes `widths_per_token`, scaled down to `room` widths when given.
    #[pyfunction]
    #[pyo3(signature = (config, window, widths_per_token=crate::config::WIDTHS_PER_TOKEN, room=None))]
    fn memory_budgets(
        config: &Bound<'_, PyAny>,
        window: Option<u64>,
        widths_per_token: f64,
        room: Option<usize>,
    ) -> PyResult<std::collections::BTreeMap<&'static str, usize>> {
        let b = budgets_of(config, window, widths_per_token, room)?;
        Ok([
            ("users", b.users),
            ("steps", b.steps),
            ("heads", b.heads),
            ("notes", b.notes),
        ]
        .into_iter()
        .collect())
    }

    /// Whether a text is one of the passes' placeholders for what they cleared (the
    /// time-gap pass's as `gap_template` has it, by default its default).
    #[pyfunction]
    #[pyo3(signature = (text, gap_template = None))]
    fn is_placeholder(text: &str, gap_template: Option<&str>) -> bool {
        let default = crate::config::MicrocompactConfig::default().cleared_message;
        crate::passes::is_placeholder(text, gap_template.unwrap_or(&default))
    }

    /// A text's width (see `memory::text::width`).
    #[pyfunction]
    fn text_width(text: &str) -> usize {
        crate::memory::text::width(text)
    }

    /// A memory's text in parts, the steadiest first (see
    /// `memory::render::render_parts`), naming `recall` only when the agent has it.
    #[pyfunction]
    fn render_memory_parts(memory: &Bound<'_, PyAny>, recall: bool) -> PyResult<Vec<String>> {
        let m: crate::memory::Memory = depythonized(memory, "memory")?;
        Ok(crate::memory::render::render_parts(
            &m,
            crate::memory::render::Ways { recall },
        ))
    }

    /// What identifies each message apart from its content (see
    /// `PairShape::identity`): what an edit's `target` is checked against.
    #[pyfunction]
    fn identities(messages: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let msgs = read::read_all(messages)?;
        Ok(msgs
            .iter()
            .map(|m| cutoff::PairShape::from(m).identity())
            .collect())
    }

    /// What the core reads from each message, as plain dicts.
    #[pyfunction]
    fn normalize<'py>(
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let msgs = read::read_all(messages)?;
        let values: Vec<serde_json::Value> = msgs.iter().map(|m| m.to_json()).collect();
        pythonized(py, &values)
    }

    /// Per message, what one reader makes of it, uncached: the scanner that counts
    /// (`convert=False`) or conversion with the core's rules (`convert=True`). For
    /// tests that the two agree: `(heuristic tokens, calls, results, is_result,
    /// thinking, tool_name)` each.
    #[pyfunction]
    fn _read_each(
        messages: &Bound<'_, PyAny>,
        opts: PyRef<'_, Opts>,
        convert: bool,
    ) -> PyResult<Vec<ReaderView>> {
        let p = opts.params()?;
        let view = |measure: tokens::Measure, s: cutoff::PairShape| {
            let tokens = measure.heuristic_tokens(&p) as u64;
            (
                tokens,
                s.calls,
                s.results,
                s.is_result,
                s.thinking,
                s.tool_name,
            )
        };
        let items = read::items(messages)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let (measure, shape) = if convert {
                let (m, _) = read::read_message(item).map_err(|e| e.at(i))?;
                crate::tally::Tally::of(&m, true)
            } else {
                let s = super::scan::scan_message(item, true, false).map_err(|e| e.at(i))?;
                (s.counts.measure, s.shape)
            };
            out.push(view(measure, shape.unwrap_or_default()));
        }
        Ok(out)
    }

    /// (conversations cached, capacity).
    #[pyfunction]
    fn cache_info() -> (usize, usize) {
        let c = conversation_cache();
        (c.len(), c.capacity())
    }

    /// (conversations found, not found, and dropped to stay within the bounds).
    #[pyfunction]
    fn cache_stats() -> (u64, u64, u64) {
        let s = conversation_cache().stats();
        (s.found, s.missed, s.evicted)
    }

    /// (bytes the cached conversations weigh, bound in bytes).
    #[pyfunction]
    fn cache_bytes() -> (usize, usize) {
        let c = conversation_cache();
        (c.bytes(), c.max_bytes())
    }

    /// Bound the cache in conversations, in bytes, or both (what is left out stays).
    #[pyfunction]
    #[pyo3(signature = (conversations=None, bytes=None))]
    fn set_cache_capacity(conversations: Option<usize>, bytes: Option<usize>) {
        let dropped = {
            let mut c = conversation_cache();
            conversations.map_or(0, |n| c.set_capacity(n)) + bytes.map_or(0, |b| c.set_max_bytes(b))
        };
        if dropped > 0 {
            return_freed_memory();
        }
    }

    #[pyfunction]
    fn clear_cache() {
        conversation_cache().clear();
        return_freed_memory();
    }
}

//! The counting flow every binding shares: messages read through the conversation
//! cache, counted, and the cache kept for the next call.

use std::sync::{LazyLock, Mutex, MutexGuard};

use pyo3::prelude::*;

use super::allocator::freed;
use super::cache::{self, Cache, ReadSet};
use super::read;
use super::results::Breakdown;
use crate::message::InputError as CoreInputError;
use crate::tokens::{self, Encoding, HeuristicParams};
/// Default bound of the conversation cache, in bytes as the conversations weigh
/// themselves (a few hundred thousand messages of a coding agent); none in
/// conversations.
pub(super) const DEFAULT_CACHE_BYTES: usize = 1 << 30;

pub(super) static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(Cache::new(usize::MAX, DEFAULT_CACHE_BYTES)));

pub(super) static TOOL_SCHEMAS: LazyLock<Mutex<super::tool_schemas::ToolSchemas>> =
    LazyLock::new(Mutex::default);

pub(super) fn conversation_cache() -> MutexGuard<'static, Cache> {
    // A panic elsewhere cannot leave the cache inconsistent: entries are replaced whole.
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}
/// How to count: the options every helper takes, built once by the Python layer.
#[pyclass(frozen, name = "CountOptions", module = "fastcompact._core")]
pub(super) struct Opts {
    pub(super) encoding: String,
    /// The caller's; `None`: the heuristic's default for the model (`anthropic`).
    pub(super) chars_per_token: Option<f64>,
    pub(super) anthropic: bool,
    pub(super) use_usage: bool,
    /// The tools as given, and the Python function that serializes one.
    pub(super) tools: Py<PyAny>,
    pub(super) tool_json: Py<PyAny>,
    pub(super) system: Option<Py<PyAny>>,
    pub(super) cache_key: Option<String>,
    /// The caller may edit a message object in place between calls (see
    /// `conversation::Recheck`); messages from graph state are replaced instead.
    pub(super) in_place_edits: bool,
    /// Keep what was read in the conversation cache; `false` for one-off counts of
    /// lists built for the occasion (a slice, a candidate view), which would otherwise
    /// each take a conversation's place in it.
    pub(super) remember: bool,
}

#[pymethods]
impl Opts {
    #[new]
    #[pyo3(signature = (*, encoding, chars_per_token, anthropic, use_usage, tools, tool_json, system, cache_key, in_place_edits=true, remember=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        encoding: String,
        chars_per_token: Option<f64>,
        anthropic: bool,
        use_usage: bool,
        tools: Py<PyAny>,
        tool_json: Py<PyAny>,
        system: Option<Py<PyAny>>,
        cache_key: Option<String>,
        in_place_edits: bool,
        remember: bool,
    ) -> Self {
        Opts {
            encoding,
            chars_per_token,
            anthropic,
            use_usage,
            tools,
            tool_json,
            system,
            cache_key,
            in_place_edits,
            remember,
        }
    }
}

impl Opts {
    pub(super) fn encoding(&self) -> Result<Encoding, CoreInputError> {
        Encoding::parse(&self.encoding).ok_or_else(|| {
            CoreInputError::new(
                None,
                "encoding",
                format!(
                    "unknown encoding '{}'; expected 'heuristic', 'o200k_base' or 'cl100k_base'",
                    self.encoding
                ),
            )
        })
    }

    pub(super) fn params(&self) -> Result<HeuristicParams, CoreInputError> {
        HeuristicParams::for_model(self.chars_per_token, self.anthropic)
    }
}

/// Counted messages of one call.
pub(super) struct Counted {
    pub(super) per_message: Vec<f64>,
    /// System prompt and tool schemas.
    pub(super) fixed: f64,
    pub(super) read: ReadSet,
    /// Whether the total is anchored on the usage the messages report.
    use_usage: bool,
    /// Whether `store` keeps it (see `Opts::remember`).
    pub(super) remember: bool,
}

/// Read (through the cache), count and total `messages`; the caller gets the read
/// entries to inspect and must hand them back with `store`.
pub(super) fn count(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    opts: &Opts,
    shapes: bool,
    messages_too: Option<crate::passes::WholeArgs>,
) -> Result<(u64, Counted), CoreInputError> {
    let enc = opts.encoding()?;
    let p = opts.params()?;
    let list = read::as_list(messages)?;
    let key = cache::conversation_key(opts.cache_key.as_deref(), &list);
    let cached = if opts.remember {
        taken_from_cache(key)
    } else {
        cache::Conversation::default()
    };
    let want = cache::Want {
        bpe: (enc != Encoding::Heuristic).then_some(enc),
        shape: shapes,
        message: messages_too.is_some(),
        args: messages_too.unwrap_or(crate::passes::WholeArgs::EVERY),
        usage: opts.use_usage,
        recheck_all: opts.in_place_edits,
    };
    let mut read = cache::read_with_cache(&list, cached, want)?;
    if enc != Encoding::Heuristic && !read.fresh.is_empty() {
        count_fresh(py, &mut read, enc, &p);
    }
    if opts.use_usage {
        read.kept.fill_usage();
    }
    let counted = Counted {
        per_message: read.kept.tokens_for(enc, &p).to_vec(),
        fixed: fixed_tokens(py, opts, enc, &p)?,
        read,
        use_usage: opts.use_usage,
        remember: opts.remember,
    };
    Ok((key, counted))
}

/// The BPE counts of the messages read anew, set on their entries (the encoding runs
/// without the interpreter).
fn count_fresh(
    py: Python<'_>,
    read: &mut cache::ReadSet,
    enc: Encoding,
    p: &tokens::HeuristicParams,
) {
    let fresh = &read.fresh;
    let counts = py.detach(|| tokens::bpe_counts(enc, fresh, p));
    for (i, n) in counts {
        if let Some(e) = read.kept.entries.get_mut(i) {
            e.counts.set_bpe(enc, n);
        }
    }
    read.counted();
}

/// The conversation's cache entry, taken out until `store` puts it back (empty when
/// none is cached).
pub(super) fn taken_from_cache(key: u64) -> cache::Conversation {
    conversation_cache().take(key)
}

/// Tokens of the tool schemas and the system prompt the options name.
fn fixed_tokens(
    py: Python<'_>,
    opts: &Opts,
    enc: Encoding,
    p: &tokens::HeuristicParams,
) -> Result<f64, CoreInputError> {
    let tools = super::tool_schemas::texts(opts.tools.bind(py), opts.tool_json.bind(py), || {
        TOOL_SCHEMAS.lock().unwrap_or_else(|p| p.into_inner())
    })?;
    let mut fixed = tokens::tools_tokens(enc, &tools, p);
    if let Some(system) = &opts.system {
        let (m, _) = read::read_message(system.bind(py)).map_err(|mut e| {
            e.field = format!("system.{}", e.field);
            e
        })?;
        fixed += match enc {
            Encoding::Heuristic => crate::tally::measure(&m).heuristic_tokens(p),
            _ => tokens::bpe_message_tokens(enc, &m, p) as f64,
        };
    }
    Ok(fixed)
}

impl Counted {
    /// The total, anchored on reported usage where asked: worked out when a caller
    /// needs it (a plan for the model view does not), as it reads every message's.
    pub(super) fn total(&self) -> f64 {
        if self.use_usage {
            let usage = &self.read.kept.usage;
            crate::calibration::anchored_total(
                self.fixed,
                &self.per_message,
                usage,
                0,
                Default::default(),
            )
            .total
        } else {
            (self.fixed + self.per_message.iter().sum::<f64>()).ceil()
        }
    }
}

pub(super) fn store(py: Python<'_>, key: u64, counted: Counted) {
    if counted.remember {
        let mut cache = conversation_cache();
        let mut dropped = cache.put(key, counted.read.kept);
        if cache.reweigh_due() {
            dropped += cache.reweigh(&|c| cache::caller_holds(py, c));
        }
        drop(cache);
        freed(dropped);
    }
}
/// Where the counted tokens go, per role and per tool (`None` if an entry was read
/// without its pair shape).
pub(super) fn breakdown(counted: &Counted) -> Option<Breakdown> {
    let shapes: Vec<_> = counted
        .read
        .kept
        .entries
        .iter()
        .filter_map(cache::Entry::pair_shape)
        .collect();
    let per_message = &counted.per_message;
    (shapes.len() == per_message.len()).then(|| {
        let b = tokens::breakdown(&shapes, per_message);
        Breakdown::new(counted.total(), counted.fixed, per_message, b)
    })
}

//! Token counters: the LangChain-compatible heuristic, exact BPE (o200k_base,
//! cl100k_base), usage anchoring, and the per-message counts a cached conversation keeps.

use std::borrow::Borrow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;
use tiktoken_rs::CoreBPE;

use crate::cutoff::PairShape;
use crate::message::{thinking_text, Block, BlockKind, Content, InputError, Message, Role};
use crate::passes::FastMap;

/// How tokens are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Characters / `chars_per_token`, as langchain-core's `count_tokens_approximately`.
    Heuristic,
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "heuristic" | "approximate" => Some(Encoding::Heuristic),
            "o200k_base" => Some(Encoding::O200kBase),
            "cl100k_base" => Some(Encoding::Cl100kBase),
            _ => None,
        }
    }
}

// One tokenizer per thread and encoding. tiktoken-rs's shared instances serialize
// threads on the regex's internal cache (two threads ran no faster than one); a
// private copy per thread scales. Built on first use (about 0.2 s), from the
// vocabularies embedded in the crate, so it works offline.
thread_local! {
    static O200K: Option<CoreBPE> = tiktoken_rs::o200k_base().ok();
    static CL100K: Option<CoreBPE> = tiktoken_rs::cl100k_base().ok();
}

/// Run `f` with this thread's tokenizer for `enc`; `None` for the heuristic (or if
/// the embedded vocabulary could not be loaded).
fn with_bpe<R>(enc: Encoding, f: impl FnOnce(Option<&CoreBPE>) -> R) -> R {
    match enc {
        Encoding::Heuristic => f(None),
        Encoding::O200kBase => O200K.with(|b| f(b.as_ref())),
        Encoding::Cl100kBase => CL100K.with(|b| f(b.as_ref())),
    }
}

/// Parameters of the heuristic; the defaults are langchain-core's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeuristicParams {
    pub chars_per_token: f64,
    pub extra_tokens_per_message: f64,
    pub tokens_per_image: f64,
    /// A `document`/`file` block (PDF and the like) costs this much, never its base64.
    pub tokens_per_document: f64,
    pub count_name: bool,
}

impl Default for HeuristicParams {
    fn default() -> Self {
        HeuristicParams {
            chars_per_token: 4.0,
            extra_tokens_per_message: 3.0,
            tokens_per_image: 85.0,
            tokens_per_document: 1_500.0,
            count_name: true,
        }
    }
}

/// Anthropic models tokenize denser text than OpenAI's, so the heuristic uses fewer
/// characters per token for them.
pub const ANTHROPIC_CHARS_PER_TOKEN: f64 = 3.3;

/// The heuristic's characters a token that a caller may set: no tokenizer packs fewer
/// than a quarter of a character, or more than 64, into a token.
pub const CHARS_PER_TOKEN_RANGE: std::ops::RangeInclusive<f64> = 0.25..=64.0;

impl HeuristicParams {
    /// The heuristic with the caller's `chars_per_token`, else the model's default
    /// (Anthropic's tokenizer packs fewer characters into a token).
    pub fn for_model(chars_per_token: Option<f64>, anthropic: bool) -> Result<Self, InputError> {
        let default = HeuristicParams::default();
        let chars_per_token = match chars_per_token {
            None if anthropic => ANTHROPIC_CHARS_PER_TOKEN,
            None => default.chars_per_token,
            Some(c) if CHARS_PER_TOKEN_RANGE.contains(&c) => c,
            Some(c) => {
                return Err(InputError::new(
                    None,
                    "chars_per_token",
                    format!(
                        "must be a number from {} to {}, got {c:?}",
                        CHARS_PER_TOKEN_RANGE.start(),
                        CHARS_PER_TOKEN_RANGE.end()
                    ),
                ))
            }
        };
        Ok(HeuristicParams {
            chars_per_token,
            ..default
        })
    }
}

/// What a counter needs to know about one message: its character measure (for the
/// heuristic) and media blocks. Independent of the heuristic's parameters, so one
/// cached measure serves every `chars_per_token`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    pub chars: u64,
    pub chars_without_name: u64,
    pub images: u32,
    pub documents: u32,
}

impl Measure {
    /// `body` counts everything but the name: content, tool calls, tool call id, role.
    pub fn new(body: usize, name: usize, images: u32, documents: u32) -> Self {
        Measure {
            chars: (body + name) as u64,
            chars_without_name: body as u64,
            images,
            documents,
        }
    }

    pub fn heuristic_tokens(&self, p: &HeuristicParams) -> f64 {
        let chars = if p.count_name {
            self.chars
        } else {
            self.chars_without_name
        };
        ceil_non_negative(chars as f64 / p.chars_per_token)
            + p.extra_tokens_per_message
            + f64::from(self.images) * p.tokens_per_image
            + f64::from(self.documents) * p.tokens_per_document
    }
}

/// `x.ceil()`, inline for the non-negative values token counts are: the baseline
/// x86-64 target has no rounding instruction, so `f64::ceil` is a library call, and
/// a long conversation's turn makes one per message.
pub fn ceil_non_negative(x: f64) -> f64 {
    // From 2^52 on every f64 is a whole number; below it, `as u64` truncates exactly.
    const WHOLE: f64 = 4_503_599_627_370_496.0;
    if !(x > 0.0 && x < WHOLE) {
        return x.ceil();
    }
    let t = x as u64 as f64;
    if t < x {
        t + 1.0
    } else {
        t
    }
}

/// Exact BPE token count of a text. Falls back to the heuristic if the tokenizer
/// fails on pathological input, so a count is always returned.
pub fn bpe_text_tokens(enc: Encoding, text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    let estimate = || (text.chars().count() as f64 / 4.0).ceil() as u64;
    with_bpe(enc, |bpe| match bpe {
        Some(bpe) => catch_unwind(AssertUnwindSafe(|| bpe.encode_ordinary(text).len() as u64))
            .unwrap_or_else(|_| estimate()),
        None => estimate(),
    })
}

/// Tokens of a message under a BPE encoding: its texts, tool calls as name plus JSON
/// arguments, the name, and 3 tokens of message framing (OpenAI's chat format).
/// Media blocks cost the heuristic's fixed amounts.
pub fn bpe_message_tokens(enc: Encoding, m: &Message, p: &HeuristicParams) -> u64 {
    let t = |s: &str| bpe_text_tokens(enc, s);
    let mut n = 3 + t(m.openai_role());
    match &m.content {
        Content::Text(text) => n += t(text.as_str()),
        Content::Blocks(blocks) => {
            for b in blocks {
                n += match b {
                    Block::Text(text) => t(text.as_str()),
                    Block::Image => p.tokens_per_image as u64,
                    Block::Document => p.tokens_per_document as u64,
                    Block::Other { value, .. } => block_tokens(enc, value),
                };
            }
        }
    }
    if matches!(m.content, Content::Text(_)) {
        for c in &m.tool_calls {
            // Counted before a cached message keeps its arguments as facts
            // (`passes::slim_args`), so these are whole.
            debug_assert!(c.args.whole().is_some(), "BPE count of slimmed arguments");
            n += t(&c.name) + t(&c.args.to_string());
        }
    }
    if let Some(name) = m.name.as_deref().filter(|s| !s.is_empty()) {
        n += 1 + t(name);
    }
    n
}

fn block_tokens(enc: Encoding, v: &Value) -> u64 {
    let t = |s: &str| bpe_text_tokens(enc, s);
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match BlockKind::parse(kind) {
        BlockKind::Thinking | BlockKind::Reasoning => match thinking_text(v) {
            Some(text) => t(text),
            None => t(&v.to_string()),
        },
        // Opaque encrypted data that the provider counts by its own rules; its length
        // is the best estimate there is.
        BlockKind::RedactedThinking => {
            (v.get("data").and_then(Value::as_str).map_or(0, str::len) as u64).div_ceil(4)
        }
        BlockKind::ToolUse => {
            t(v.get("name").and_then(Value::as_str).unwrap_or(""))
                + v.get("input").map_or(0, |i| t(&i.to_string()))
        }
        BlockKind::ToolResult => match v.get("content") {
            Some(Value::String(s)) => t(s),
            Some(Value::Array(items)) => items.iter().map(|i| block_tokens(enc, i)).sum(),
            _ => 0,
        },
        BlockKind::Text => t(v.get("text").and_then(Value::as_str).unwrap_or("")),
        _ => t(&v.to_string()),
    }
}

/// Messages above which BPE counting is spread over threads.
const PARALLEL_THRESHOLD: usize = 16;

/// BPE tokens of each `(index, message)`, on all cores for large batches.
pub fn bpe_counts(
    enc: Encoding,
    msgs: &[(usize, Arc<Message>)],
    p: &HeuristicParams,
) -> Vec<(usize, u64)> {
    let count = |(i, m): &(usize, Arc<Message>)| (*i, bpe_message_tokens(enc, m, p));
    if msgs.len() >= PARALLEL_THRESHOLD {
        msgs.par_iter().map(count).collect()
    } else {
        msgs.iter().map(count).collect()
    }
}

/// Heuristic tokens of tool schemas given as their JSON text (as LangChain does:
/// characters of `json.dumps` of each schema, rounded up once for all tools).
pub fn tools_heuristic_tokens<S: AsRef<str>>(tool_json: &[S], p: &HeuristicParams) -> f64 {
    if tool_json.is_empty() {
        return 0.0;
    }
    let chars: usize = tool_json.iter().map(|s| s.as_ref().chars().count()).sum();
    (chars as f64 / p.chars_per_token).ceil()
}

pub fn tools_tokens<S: AsRef<str>>(enc: Encoding, tool_json: &[S], p: &HeuristicParams) -> f64 {
    match enc {
        Encoding::Heuristic => tools_heuristic_tokens(tool_json, p),
        _ => tool_json
            .iter()
            .map(|s| bpe_text_tokens(enc, s.as_ref()) as f64)
            .sum(),
    }
}

/// Where the tokens go: per role and per tool name (tool results, by the name they
/// carry or the name of the call they answer).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub roles: Vec<&'static str>,
    pub tool_names: Vec<Option<String>>,
    pub per_role: std::collections::BTreeMap<String, f64>,
    pub per_tool: std::collections::BTreeMap<String, f64>,
}

pub fn breakdown<S: Borrow<PairShape>>(shapes: &[S], per_message: &[f64]) -> Breakdown {
    let mut out = Breakdown {
        roles: Vec::with_capacity(shapes.len()),
        tool_names: Vec::with_capacity(shapes.len()),
        ..Breakdown::default()
    };
    // Summed under borrowed names, owned once at the end: a long conversation has a
    // handful of roles and tools and thousands of messages. Roles are a few fixed
    // names, found by a short scan; names and call ids go through the fast hash.
    let mut per_role: Vec<(&'static str, f64)> = Vec::new();
    let mut per_tool: FastMap<&str, f64> = FastMap::default();
    let mut call_names: FastMap<&str, &str> = FastMap::default();
    for (shape, tokens) in shapes.iter().zip(per_message) {
        let shape: &PairShape = shape.borrow();
        for (id, name) in &shape.calls {
            call_names.insert(id, name);
        }
        // A user message of tool_result blocks (Anthropic's shape) is a tool result.
        let role = if shape.is_result {
            Role::Tool.type_name()
        } else {
            shape.role.map_or("unknown", Role::type_name)
        };
        out.roles.push(role);
        match per_role.iter_mut().find(|(r, _)| *r == role) {
            Some((_, sum)) => *sum += tokens,
            None => per_role.push((role, *tokens)),
        }
        let tool = shape.is_result.then(|| {
            shape
                .tool_name
                .as_deref()
                .or_else(|| {
                    shape
                        .results
                        .iter()
                        .find_map(|id| call_names.get(id.as_str()).copied())
                })
                .unwrap_or("unknown")
        });
        if let Some(t) = tool {
            *per_tool.entry(t).or_default() += tokens;
        }
        out.tool_names.push(tool.map(str::to_owned));
    }
    out.per_role = per_role
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    out.per_tool = per_tool
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    out
}

/// Cached counts of one message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedCounts {
    pub measure: Measure,
    /// The reported `(input, output)` usage; the outer `None` until it was read
    /// (a plain count does without it, and reading it costs dict lookups).
    usage: Option<Option<(u64, u64)>>,
    /// BPE counts per encoding, filled on first use: [o200k_base, cl100k_base];
    /// `NOT_COUNTED` until then. 32 bits (a message is never 4 billion tokens) keep
    /// the cache entries small.
    bpe: [u32; 2],
}

const NOT_COUNTED: u32 = u32::MAX;

impl Default for CachedCounts {
    fn default() -> Self {
        Self::counted(Measure::default(), None)
    }
}

impl CachedCounts {
    /// A message's measure and its usage (`None` when it was not read), before any
    /// BPE count.
    pub fn counted(measure: Measure, usage: Option<Option<(u64, u64)>>) -> Self {
        CachedCounts {
            measure,
            usage,
            bpe: [NOT_COUNTED; 2],
        }
    }

    /// The reported usage, `None` when the message reports none or it was not read.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage.flatten()
    }

    pub fn usage_read(&self) -> bool {
        self.usage.is_some()
    }

    fn slot(enc: Encoding) -> Option<usize> {
        match enc {
            Encoding::Heuristic => None,
            Encoding::O200kBase => Some(0),
            Encoding::Cl100kBase => Some(1),
        }
    }

    pub fn bpe(&self, enc: Encoding) -> Option<u64> {
        let n = self.bpe[Self::slot(enc)?];
        (n != NOT_COUNTED).then_some(u64::from(n))
    }

    pub fn set_bpe(&mut self, enc: Encoding, n: u64) {
        if let Some(i) = Self::slot(enc) {
            self.bpe[i] = u32::try_from(n)
                .unwrap_or(NOT_COUNTED - 1)
                .min(NOT_COUNTED - 1);
        }
    }

    pub fn tokens(&self, enc: Encoding, p: &HeuristicParams) -> f64 {
        match self.bpe(enc) {
            Some(n) => n as f64,
            None => self.measure.heuristic_tokens(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpe_counts_known_strings() {
        // Published cl100k_base example: "tiktoken is great!" is 6 tokens.
        assert_eq!(
            bpe_text_tokens(Encoding::Cl100kBase, "tiktoken is great!"),
            6
        );
        assert_eq!(bpe_text_tokens(Encoding::Cl100kBase, "hello world"), 2);
        assert_eq!(bpe_text_tokens(Encoding::O200kBase, "hello world"), 2);
        assert_eq!(bpe_text_tokens(Encoding::O200kBase, ""), 0);
    }

    proptest::proptest! {
        #[test]
        fn ceil_non_negative_is_ceil(
            x in proptest::prop_oneof![
                proptest::num::f64::ANY,
                proptest::strategy::Just(-0.0),
                0.0..10.0f64,
                4.5e15..4.6e15f64,
            ],
        ) {
            let want = x.ceil();
            let got = ceil_non_negative(x);
            proptest::prop_assert!(got == want || (got.is_nan() && want.is_nan()), "{x}: {got} vs {want}");
            proptest::prop_assert_eq!(got.is_sign_negative(), want.is_sign_negative());
        }
    }

    #[test]
    fn cached_bpe_counts_are_kept_per_encoding() {
        let mut c = CachedCounts::default();
        assert_eq!(c.bpe(Encoding::O200kBase), None);
        c.set_bpe(Encoding::O200kBase, 0);
        c.set_bpe(Encoding::Cl100kBase, 12_345);
        assert_eq!(c.bpe(Encoding::O200kBase), Some(0));
        assert_eq!(c.bpe(Encoding::Cl100kBase), Some(12_345));
        assert_eq!(c.bpe(Encoding::Heuristic), None);
        // Beyond 32 bits it saturates, and still reads as counted.
        c.set_bpe(Encoding::O200kBase, u64::MAX);
        assert_eq!(c.bpe(Encoding::O200kBase), Some(u64::from(u32::MAX - 1)));
    }
}

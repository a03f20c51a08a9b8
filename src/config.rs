//! The cheap passes' configuration, as the Python layer hands it over (already
//! validated and merged over the defaults there; see `python/fastcompact/config.py`).

use std::collections::BTreeSet;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::cutoff::{Clause, Size};
use crate::economics::{Pricing, PRESETS};
use crate::passes::tool_kinds;

/// The largest window a model may be said to have: sizes are kept as `f64`, exact
/// below 2^53, and no model comes near.
pub const MAX_WINDOW: u64 = 1 << 53;

/// A `(kind, value)` pair: `("messages", n)`, `("tokens", n)` or `("fraction", f)`.
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PairVisitor;
        impl<'de> Visitor<'de> for PairVisitor {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a (kind, value) pair")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Size, A::Error> {
                let kind: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let value: f64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Size::parse(&kind, value, "size").map_err(|e| de::Error::custom(e.reason))
            }
        }
        d.deserialize_seq(PairVisitor)
    }
}

/// Written as it is read: `(kind, value)`.
impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Size::Messages(n) => ("messages", n).serialize(s),
            Size::Tokens(n) => ("tokens", n).serialize(s),
            Size::Fraction(f) => ("fraction", f).serialize(s),
        }
    }
}

/// A trigger: one size (`[kind, value]`), or sizes that must all be reached
/// (`[[kind, value], ...]`).
impl<'de> Deserialize<'de> for Clause {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            One(Size),
            All(Vec<Size>),
        }
        match Given::deserialize(d) {
            Ok(Given::One(s)) => Ok(Clause(vec![s])),
            Ok(Given::All(sizes)) if !sizes.is_empty() => Ok(Clause(sizes)),
            _ => Err(de::Error::custom(
                "a trigger is a (kind, value) pair or a list of them that must all be reached",
            )),
        }
    }
}

/// The sizes a caller may leave out, as they are filled in: DeepAgents' defaults when
/// the model's window is known (fractions of it), fixed ones when it is not. The one
/// source of these numbers: the Python layer asks for them (`_core.defaults`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Defaults {
    /// When a summary is due, and what it keeps.
    pub trigger: Size,
    pub keep: Size,
    /// Argument truncation: when it starts, and the newest messages it leaves alone.
    pub truncate_trigger: Size,
    pub truncate_keep: Size,
    /// When observation clearing and read collapsing start.
    pub clearing_trigger: Size,
    pub collapse_trigger: Size,
    /// Tokens a batch of edits must save to be worth breaking the prompt cache for.
    pub min_batch_tokens: u64,
}

impl Defaults {
    pub fn for_window(window: Option<u64>) -> Self {
        match window {
            Some(w) => Defaults {
                trigger: Size::Fraction(0.85),
                keep: Size::Fraction(0.10),
                truncate_trigger: Size::Fraction(0.85),
                truncate_keep: Size::Fraction(0.10),
                clearing_trigger: Size::Fraction(0.5),
                collapse_trigger: Size::Fraction(0.6),
                min_batch_tokens: (w as f64 * 0.15) as u64,
            },
            None => Defaults {
                trigger: Size::Tokens(170_000),
                keep: Size::Messages(6),
                truncate_trigger: Size::Messages(20),
                truncate_keep: Size::Messages(20),
                clearing_trigger: Size::Tokens(100_000),
                collapse_trigger: Size::Tokens(120_000),
                min_batch_tokens: 30_000,
            },
        }
    }
}

/// Pass 1: over-long tool results keep a head and a tail.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct BudgetConfig {
    pub enabled: bool,
    pub per_tool_chars: usize,
    /// Over all results answering one AI message.
    pub per_message_chars: usize,
    /// Characters kept of a cut result (head and tail together).
    pub file_preview_chars: usize,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            enabled: true,
            per_tool_chars: 50_000,
            per_message_chars: 200_000,
            file_preview_chars: 5_000,
        }
    }
}

/// Pass 2: long string arguments of older tool calls are shortened.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct TruncateArgsConfig {
    /// `None`: never.
    pub trigger: Option<Size>,
    pub keep: Size,
    pub max_length: usize,
    /// Appended to a shortened argument; `{length}` is replaced by the original length.
    pub truncation_text: String,
    /// `false`: only `write_file` / `edit_file` arguments.
    pub truncate_all_tools: bool,
    /// The longest string a `write_file` / `edit_file` call keeps (its text is on disk).
    pub file_max_length: usize,
    /// Shorten only in batches that save at least this many tokens.
    pub min_batch_tokens: u64,
}

impl Default for TruncateArgsConfig {
    fn default() -> Self {
        let d = Defaults::for_window(None);
        TruncateArgsConfig {
            trigger: Some(d.truncate_trigger),
            keep: d.truncate_keep,
            max_length: 2_000,
            truncation_text:
                "... [shortened from {length} characters; recall(\"{id}/args\") returns it]".into(),
            truncate_all_tools: true,
            file_max_length: 200,
            min_batch_tokens: d.min_batch_tokens,
        }
    }
}

/// Pass 3: old results of listed tools become a one-line placeholder.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct ClearingConfig {
    pub enabled: bool,
    pub trigger: Size,
    pub keep_recent: usize,
    pub tools: BTreeSet<String>,
    pub exclude_tools: BTreeSet<String>,
    /// Clear only in batches that save at least this many tokens.
    pub clear_at_least: u64,
}

impl Default for ClearingConfig {
    fn default() -> Self {
        let d = Defaults::for_window(None);
        ClearingConfig {
            enabled: true,
            trigger: d.clearing_trigger,
            keep_recent: 3,
            tools: tool_kinds::tools_of(&tool_kinds::CLEARED),
            exclude_tools: BTreeSet::new(),
            clear_at_least: d.min_batch_tokens,
        }
    }
}

/// Pass 4a: a file read again makes its earlier reads point to the newer one.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct DedupeConfig {
    pub enabled: bool,
    pub tools: BTreeSet<String>,
    pub min_batch_tokens: u64,
}

impl Default for DedupeConfig {
    fn default() -> Self {
        DedupeConfig {
            enabled: true,
            tools: ["read_file"].into_iter().map(String::from).collect(),
            min_batch_tokens: Defaults::for_window(None).min_batch_tokens,
        }
    }
}

/// Pass 4b: runs of consecutive read/search calls collapse to a one-line badge.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct CollapseConfig {
    pub enabled: bool,
    pub trigger: Size,
    pub min_group_size: usize,
    pub collapse_tools: BTreeSet<String>,
    /// Only runs older than the newest this many messages collapse.
    pub keep_recent_messages: usize,
    pub min_batch_tokens: u64,
}

impl Default for CollapseConfig {
    fn default() -> Self {
        let d = Defaults::for_window(None);
        CollapseConfig {
            enabled: true,
            trigger: d.collapse_trigger,
            min_group_size: 2,
            collapse_tools: ["read_file", "grep", "glob", "web_search"]
                .into_iter()
                .map(String::from)
                .collect(),
            keep_recent_messages: 20,
            min_batch_tokens: d.min_batch_tokens,
        }
    }
}

/// The compacted conversation's memory (see `memory`): each layer's share of the
/// window, so that a session of any length fits it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct MemoryConfig {
    /// The ledger of what binds (the user's standing statements and the agent's pinned
    /// notes): it has the first claim on the memory's room, and is pressed to its key
    /// words and terms past this share, never dropped.
    pub ledger_share: f64,
    /// The newest user messages, verbatim.
    pub user_share: f64,
    /// The agent's newest steps, a line each.
    pub step_share: f64,
    /// Older requests in short.
    pub head_share: f64,
    /// A model's notes on the older requests.
    pub note_share: f64,
    /// The newest user messages a model summary leaves verbatim (at most
    /// `user_share`): the older ones go into its notes. Less than `user_share`, so the
    /// layer has room to grow again before the next summary; every token of it is read
    /// on every call (the session benchmark measured a fifth of the window as a
    /// summary at nearly every compaction on long sessions).
    pub fold_share: f64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            ledger_share: 0.05,
            user_share: 0.20,
            step_share: 0.01,
            head_share: 0.05,
            note_share: 0.10,
            fold_share: 0.05,
        }
    }
}

/// The window a budget assumes when the model's is unknown.
pub const ASSUMED_WINDOW: u64 = 200_000;

/// Widths a token, as the budgets assume when a conversation has not said (a width is
/// made so that about four are a token, in any script), and the bounds of what one may
/// say: English prose runs to about six, code to three.
pub const WIDTHS_PER_TOKEN: f64 = 4.0;
pub const WIDTHS_PER_TOKEN_BOUNDS: (f64, f64) = (2.0, 8.0);

impl MemoryConfig {
    /// The layers' budgets for a model of this window, in widths, where a token of the
    /// conversation takes `widths_per_token` (about four; see `memory::text::width`).
    pub fn budgets(&self, window: Option<u64>, widths_per_token: f64) -> crate::memory::Budgets {
        let (low, high) = WIDTHS_PER_TOKEN_BOUNDS;
        let per_token = if widths_per_token.is_finite() {
            widths_per_token.clamp(low, high)
        } else {
            WIDTHS_PER_TOKEN
        };
        let widths = window.unwrap_or(ASSUMED_WINDOW) as f64 * per_token;
        let of = |share: f64| (widths * share.clamp(0.0, 1.0)) as usize;
        crate::memory::Budgets {
            ledger: of(self.ledger_share),
            users: of(self.user_share),
            steps: of(self.step_share),
            heads: of(self.head_share),
            notes: of(self.note_share),
            folded_users: of(self.fold_share.min(self.user_share)),
            room: None,
            per_token,
        }
    }
}

/// Pass 5: after an idle gap longer than the provider's cache lifetime, old results
/// are cleared (the cache is cold anyway).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct MicrocompactConfig {
    pub enabled: bool,
    pub gap_threshold_minutes: f64,
    pub keep_recent: usize,
    pub compactable_tools: BTreeSet<String>,
    pub cleared_message: String,
}

impl Default for MicrocompactConfig {
    fn default() -> Self {
        MicrocompactConfig {
            enabled: true,
            gap_threshold_minutes: 60.0,
            keep_recent: 5,
            compactable_tools: tool_kinds::tools_of(&tool_kinds::CLEARED_AFTER_GAP),
            cleared_message:
                "[Cleared after an idle gap: {tool}({arg}); recall(\"{id}\") returns it.]".into(),
        }
    }
}

/// Everything `plan` needs.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct PlanConfig {
    /// When a summary is needed (any clause fires).
    pub trigger: Vec<Clause>,
    /// What a summary keeps.
    pub keep: Option<Size>,
    pub budget: BudgetConfig,
    pub truncate_args: TruncateArgsConfig,
    pub clearing: ClearingConfig,
    pub dedupe: DedupeConfig,
    pub collapse: CollapseConfig,
    pub microcompact: MicrocompactConfig,
    /// The prompt-cache prices batches are decided by (a preset's name); none: the
    /// fixed batch sizes above.
    #[serde(deserialize_with = "pricing_by_name")]
    pub pricing: Option<Pricing>,
}

fn pricing_by_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Pricing>, D::Error> {
    let name: Option<String> = Option::deserialize(d)?;
    match name {
        None => Ok(None),
        Some(n) => Pricing::preset(&n).map(Some).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown pricing {n:?}; expected one of {}",
                PRESETS.map(|(p, _)| p).join(", ")
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partial_config_fills_defaults() {
        let c: PlanConfig = serde_json::from_value(json!({
            "trigger": [["tokens", 1000]],
            "clearing": {"keep_recent": 2},
            "truncate_args": {"trigger": null},
        }))
        .unwrap_or_default();
        assert_eq!(c.trigger, vec![Clause(vec![Size::Tokens(1000)])]);
        assert_eq!(c.clearing.keep_recent, 2);
        assert_eq!(c.clearing.clear_at_least, 30_000);
        assert_eq!(c.truncate_args.trigger, None);
        assert_eq!(c.truncate_args.max_length, 2_000);
    }

    #[test]
    fn a_trigger_clause_needs_all_its_sizes() {
        let c: PlanConfig = serde_json::from_value(json!({
            "trigger": [[["tokens", 100], ["messages", 5]], ["fraction", 0.9]],
        }))
        .unwrap_or_default();
        assert_eq!(
            c.trigger,
            vec![
                Clause(vec![Size::Tokens(100), Size::Messages(5)]),
                Clause(vec![Size::Fraction(0.9)])
            ]
        );
        let fires = |n, t| crate::cutoff::any_clause_fires(&c.trigger, n, t, Some(1_000));
        assert_eq!(fires(4, 500.0), Ok(false));
        assert_eq!(fires(5, 500.0), Ok(true));
        assert_eq!(fires(1, 950.0), Ok(true));
        assert!(serde_json::from_value::<PlanConfig>(json!({"trigger": [[]]})).is_err());
    }

    #[test]
    fn bad_sizes_are_rejected() {
        let bad = serde_json::from_value::<PlanConfig>(json!({"trigger": [["bytes", 1]]}));
        assert!(bad.is_err());
        let bad = serde_json::from_value::<PlanConfig>(json!({"keep": ["fraction", 2.0]}));
        assert!(bad.is_err());
    }
}

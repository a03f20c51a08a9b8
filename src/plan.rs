//! The per-turn cascade: the cheap passes in order over the effective view, then
//! whether a summary is still needed and where it would cut.

use crate::config::PlanConfig;
use crate::cutoff::{find_cutoff, should_trigger, PairShape};
use crate::message::Message;
use crate::passes::{self, Change, Edit, Memos, Pass, Skeleton, View};
use crate::tokens::{HeuristicParams, Measure};

/// What one pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassStats {
    pub pass: Pass,
    pub tokens_before: f64,
    pub tokens_after: f64,
    pub edits: usize,
}

/// A turn's plan; its edits may borrow values from the memos (`'m`).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<'m> {
    pub edits: Vec<Edit<'m>>,
    pub tokens_before: f64,
    pub tokens_after: f64,
    pub passes: Vec<PassStats>,
    /// The summary trigger fires on the view after the passes.
    pub summary_needed: bool,
    /// Where a summary would cut (pair-safe), when one is needed and possible.
    pub summary_cutoff: Option<usize>,
}

/// The inputs of one turn's plan.
pub struct PlanInput<'a, 'm> {
    pub msgs: Vec<&'a Message>,
    /// Heuristic tokens of each message.
    pub tokens: Vec<f64>,
    /// Each message's measure, when the caller has them at hand (computed otherwise).
    pub measures: Option<&'a [Measure]>,
    /// What the passes scan of each message, when the caller keeps it.
    pub skeletons: Option<&'a [Skeleton]>,
    /// Tokens of the system prompt and tools.
    pub fixed: f64,
    pub max_input_tokens: Option<u64>,
    pub params: HeuristicParams,
    pub timestamps: Vec<Option<f64>>,
    pub now: Option<f64>,
    pub archive: Vec<Option<String>>,
    /// The messages' pair shapes, when the caller has them at hand (worked out from
    /// the messages otherwise, if a summary is needed).
    pub shapes: Option<Vec<&'a PairShape>>,
    /// What earlier turns worked out per message, when the caller keeps it.
    pub memos: Option<&'m Memos>,
}

impl Plan<'_> {
    /// The same plan, owning every value its edits hold.
    pub fn into_owned(self) -> Plan<'static> {
        Plan {
            edits: self.edits.into_iter().map(Edit::into_owned).collect(),
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            passes: self.passes,
            summary_needed: self.summary_needed,
            summary_cutoff: self.summary_cutoff,
        }
    }
}

pub fn plan<'m>(input: PlanInput<'_, 'm>, cfg: &PlanConfig) -> Plan<'m> {
    match input.memos {
        Some(memos) if memos.len() == input.msgs.len() => plan_with(input, memos, cfg),
        _ => {
            let fresh = Memos::new(input.msgs.len());
            plan_with(input, &fresh, cfg).into_owned()
        }
    }
}

/// The plan, with `memo` for what later turns may reuse (`input.memos` aside).
fn plan_with<'m>(input: PlanInput<'_, '_>, memo: &'m Memos, cfg: &PlanConfig) -> Plan<'m> {
    let n = input.msgs.len();
    let mut tokens = input.tokens;
    tokens.resize(n, 0.0);
    let mut timestamps = input.timestamps;
    // None at all is the same as none for every message (no gap can be found).
    if !timestamps.is_empty() {
        timestamps.resize(n, None);
    }
    let archive = input.archive;
    // Kept up to date edit by edit: summing every message after every pass would cost
    // more than some passes.
    let mut total = input.fixed + tokens.iter().sum::<f64>();
    let tokens_before = total;
    let worked_out: Vec<Measure>;
    let measures = match input.measures {
        Some(m) if m.len() == n => m,
        _ => {
            worked_out = input
                .msgs
                .iter()
                .map(|m| crate::tokens::measure(m))
                .collect();
            &worked_out
        }
    };
    let gap_template = cfg.microcompact.cleared_message.as_str();
    let computed: Vec<Skeleton>;
    let skeletons: &[Skeleton] = match input.skeletons {
        Some(s) if s.len() == n => s,
        _ => {
            computed = input.msgs.iter().map(|m| Skeleton::of(m)).collect();
            &computed
        }
    };
    let mut placeholders: Vec<bool> = input
        .msgs
        .iter()
        .zip(skeletons)
        .map(|(m, s)| {
            s.may_be_placeholder(gap_template) && passes::starts_as_placeholder(m, gap_template)
        })
        .collect();
    // Links the caller kept from earlier turns are reused; the rest are worked out.
    let (results, tool_names) = passes::tool_results(&input.msgs, skeletons);

    // Each pass's edits, joined once at the end (appending pass by pass would copy
    // the earlier ones again at every growth).
    let mut by_pass: Vec<Vec<Edit>> = Vec::with_capacity(Pass::ALL.len());
    let mut stats = Vec::new();
    for pass in Pass::ALL {
        let before = total;
        let new = {
            let v = View {
                msgs: &input.msgs,
                measures,
                skeletons,
                placeholders: &placeholders,
                tokens: &tokens,
                total: before,
                max_input_tokens: input.max_input_tokens,
                params: &input.params,
                timestamps: &timestamps,
                now: input.now,
                archive: &archive,
                results: &results,
                tool_names: &tool_names,
                memo,
            };
            match pass {
                Pass::Budget => passes::budget::run(&v, &cfg.budget),
                Pass::TruncateArgs => passes::truncate_args::run(&v, &cfg.truncate_args),
                Pass::Clearing => passes::clearing::run(&v, &cfg.clearing),
                Pass::Dedupe => passes::dedupe::run(&v, &cfg.dedupe),
                Pass::Collapse => passes::collapse::run(&v, &cfg.collapse),
                Pass::TimeGap => passes::time_gap::run(&v, &cfg.microcompact),
            }
        };
        for e in &new {
            if e.index < n {
                if let Change::Content(text) = &e.change {
                    // Every pass but the budget writes placeholders only.
                    placeholders[e.index] = match e.pass {
                        Pass::Budget => passes::is_placeholder(text, gap_template),
                        _ => true,
                    };
                    debug_assert!(
                        !placeholders[e.index] || passes::is_placeholder(text, gap_template)
                    );
                }
                total += e.tokens - tokens[e.index];
                tokens[e.index] = e.tokens;
            }
        }
        stats.push(PassStats {
            pass,
            tokens_before: before,
            tokens_after: total,
            edits: new.len(),
        });
        by_pass.push(new);
    }
    let mut edits = Vec::with_capacity(by_pass.iter().map(Vec::len).sum());
    for new in by_pass {
        edits.extend(new);
    }

    let tokens_after = total;
    let summary_needed = !cfg.trigger.is_empty()
        && should_trigger(&cfg.trigger, n, tokens_after, input.max_input_tokens).unwrap_or(false);
    let summary_cutoff = match (summary_needed, cfg.keep) {
        (true, Some(keep)) => {
            // Edits never change who calls what, so the raw messages' shapes hold.
            let cut = match &input.shapes {
                Some(shapes) if shapes.len() == n => {
                    find_cutoff(shapes, &tokens, keep, input.max_input_tokens)
                }
                _ => {
                    let computed: Vec<PairShape> =
                        input.msgs.iter().map(|m| PairShape::from(*m)).collect();
                    find_cutoff(&computed, &tokens, keep, input.max_input_tokens)
                }
            };
            cut.ok().filter(|&c| c > 0)
        }
        _ => None,
    };
    Plan {
        edits,
        tokens_before,
        tokens_after,
        passes: stats,
        summary_needed,
        summary_cutoff,
    }
}

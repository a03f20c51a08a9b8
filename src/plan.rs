//! The per-turn cascade: the cheap passes in order over the effective view, then
//! whether a summary is still needed and where it would cut.

use std::borrow::Cow;
use std::hash::Hasher;
use std::sync::Arc;

use crate::calibration::{anchored_total, Anchored, Calibration};
use crate::config::PlanConfig;
use crate::cutoff::{any_clause_fires, find_cutoff, Clause, Size};
use crate::economics::Batch;
use crate::message::{Message, Role};
use crate::passes::{
    self, Change, Edit, EditKeys, FastHasher, Memos, Pass, SettledRun, Skeleton, View,
};
use crate::tokens::{HeuristicParams, Measure};

/// What one pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassStats {
    pub pass: Pass,
    pub tokens_before: f64,
    pub tokens_after: f64,
    pub edits: usize,
}

/// A turn's plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub edits: Vec<Edit>,
    pub tokens_before: f64,
    pub tokens_after: f64,
    pub passes: Vec<PassStats>,
    /// The summary trigger fires on the view after the passes.
    pub summary_needed: bool,
    /// Where a summary would cut (pair-safe), when one is needed and possible.
    pub summary_cutoff: Option<usize>,
    /// The view's true size after the passes: anchored on provider usage, the rest
    /// estimated with the calibration the anchors give.
    pub true_tokens: f64,
    pub calibration: Calibration,
    /// The message whose usage anchored `true_tokens`.
    pub anchor: Option<usize>,
    /// Messages before this index are settled: batched edits among them are committed.
    pub settled: usize,
    /// A batch committed this turn; its first edit is at this index.
    pub batch_at: Option<usize>,
    /// The tool results whose call is in no earlier message (a provider refuses them).
    pub orphans: Vec<usize>,
    /// The user messages that answer several calls at once (Anthropic's shape after
    /// parallel calls): the passes reach their results only one a message.
    pub parallel: Vec<usize>,
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
    /// What earlier turns worked out per message, when the caller keeps it.
    pub memos: Option<&'m Memos>,
    /// Per message, the provider usage it reports (empty: none is known).
    pub usage: &'a [Option<(u64, u64)>],
    /// Usage before this index counted another view (before the last summary or batch).
    pub min_anchor: usize,
    /// How usage related to the estimate on an earlier view (the plain estimate when
    /// nothing is known).
    pub prior: Calibration,
    /// The usage counted the messages unedited (a history whose views this planner
    /// did not make, such as the first call on a conversation from elsewhere), not the
    /// view with this plan's edits.
    pub usage_of_unedited: bool,
    /// With a price model: messages before this index are settled (see `Plan::settled`).
    pub settled: Option<usize>,
    /// Model calls made before the view's first message (summarized away).
    pub calls_before: usize,
}

pub fn plan(input: PlanInput<'_, '_>, cfg: &PlanConfig) -> Plan {
    match input.memos {
        Some(memos) if memos.len() == input.msgs.len() => plan_with(input, memos, cfg),
        _ => {
            let fresh = Memos::new(input.msgs.len());
            plan_with(input, &fresh, cfg)
        }
    }
}

/// What the passes read that no pass changes, for every run of them in one plan.
struct Ctx<'a, 'm> {
    msgs: &'a [&'a Message],
    measures: &'a [Measure],
    skeletons: &'a [Skeleton],
    placeholders: &'a [bool],
    tokens: &'a [f64],
    fixed: f64,
    max_input_tokens: Option<u64>,
    params: &'a HeuristicParams,
    timestamps: &'a [Option<f64>],
    now: Option<f64>,
    archive: &'a [Option<String>],
    results: &'a [passes::ToolResult],
    tool_names: &'a [&'a str],
    memo: &'m Memos,
    gap_template: &'a str,
}

/// One run of the passes in order.
struct Passed {
    edits: Vec<Edit>,
    stats: Vec<PassStats>,
    tokens: Vec<f64>,
    total: f64,
}

/// The passes whose edits rewrite older messages, so commit only as batches; the
/// budget pass edits results as they arrive, and the time-gap pass edits what the
/// cache has already dropped.
pub fn batched(pass: Pass) -> bool {
    matches!(
        pass,
        Pass::TruncateArgs | Pass::Clearing | Pass::Dedupe | Pass::Collapse
    )
}

/// Run the passes over the first `upto` messages; with `gate`, a batched pass's edit
/// lands only if the gate holds it.
fn run_passes<'m>(
    ctx: &Ctx<'_, 'm>,
    upto: usize,
    cfg: &PlanConfig,
    gate: Option<&EditKeys>,
) -> Passed {
    let n = upto.min(ctx.msgs.len());
    let mut tokens = ctx.tokens[..n].to_vec();
    let mut placeholders = ctx.placeholders[..n].to_vec();
    let results_upto = ctx.results.partition_point(|r| r.index < n);
    let results = &ctx.results[..results_upto];
    let timestamps = &ctx.timestamps[..ctx.timestamps.len().min(n)];
    let archive = &ctx.archive[..ctx.archive.len().min(n)];
    // Kept up to date edit by edit: summing every message after every pass would cost
    // more than some passes.
    let mut total = ctx.fixed + tokens.iter().sum::<f64>();
    // Each pass's edits, joined once at the end (appending pass by pass would copy
    // the earlier ones again at every growth).
    let mut by_pass: Vec<Vec<Edit>> = Vec::with_capacity(Pass::ALL.len());
    let mut stats = Vec::new();
    for pass in Pass::ALL {
        let before = total;
        let mut new = {
            let v = View {
                msgs: &ctx.msgs[..n],
                measures: &ctx.measures[..n],
                skeletons: &ctx.skeletons[..n],
                placeholders: &placeholders,
                tokens: &tokens,
                total: before,
                max_input_tokens: ctx.max_input_tokens,
                params: ctx.params,
                timestamps,
                now: ctx.now,
                archive,
                results,
                tool_names: ctx.tool_names,
                memo: ctx.memo,
            };
            run_pass(pass, &v, cfg)
        };
        if let (Some(gate), true) = (gate, batched(pass)) {
            new.retain(|e| gate.contains(e.pass, e.index));
        }
        for e in new.iter().filter(|e| e.index < n) {
            if let Change::Content(text) = &e.change {
                placeholders[e.index] = writes_placeholder(e.pass, text, ctx.gap_template);
            }
            total += e.tokens - tokens[e.index];
            tokens[e.index] = e.tokens;
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
    Passed {
        edits,
        stats,
        tokens,
        total,
    }
}

/// One pass over the view, with its settings.
fn run_pass(pass: Pass, v: &View<'_, '_>, cfg: &PlanConfig) -> Vec<Edit> {
    match pass {
        Pass::Budget => passes::budget::run(v, &cfg.budget),
        Pass::TruncateArgs => passes::truncate_args::run(v, &cfg.truncate_args),
        Pass::Clearing => passes::clearing::run(v, &cfg.clearing),
        Pass::Dedupe => passes::dedupe::run(v, &cfg.dedupe),
        Pass::Collapse => passes::collapse::run(v, &cfg.collapse),
        Pass::TimeGap => passes::time_gap::run(v, &cfg.microcompact),
    }
}

/// Whether a pass's new content is a placeholder: every pass but the budget writes
/// placeholders only.
fn writes_placeholder(pass: Pass, text: &str, gap_template: &str) -> bool {
    let placeholder = match pass {
        Pass::Budget => passes::is_placeholder(text, gap_template),
        _ => true,
    };
    debug_assert!(!placeholder || passes::is_placeholder(text, gap_template));
    placeholder
}

/// The batched edits of a run, as the gate of later runs.
fn batched_keys(edits: &[Edit]) -> EditKeys {
    EditKeys::of(edits.iter().filter(|e| batched(e.pass)))
}

/// The batched edits of the passes over the first `upto` (settled) messages: kept in
/// the conversation's memos, so that the calls between two batches, which keep the
/// same prefix settled, do not run the passes over it again.
fn settled_edits(ctx: &Ctx<'_, '_>, upto: usize, cfg: &PlanConfig) -> Arc<SettledRun> {
    let key = settled_key(ctx, upto);
    if let Some(run) = ctx.memo.settled_run(upto, key, cfg) {
        return run;
    }
    let run = Arc::new(SettledRun {
        upto,
        key,
        config: cfg.clone(),
        edits: batched_keys(&run_passes(ctx, upto, cfg, None).edits),
    });
    ctx.memo.keep_settled_run(Arc::clone(&run));
    run
}

/// What a run of the passes over the first `upto` messages reads besides those
/// messages (whose changes drop the memo) and the settings (compared whole): the
/// fixed prefix, the window, the counting parameters, each message's tokens (they
/// follow the encoding) and where each is archived. Times are read by the time-gap
/// pass alone, whose edits are not batched.
fn settled_key(ctx: &Ctx<'_, '_>, upto: usize) -> u64 {
    let mut h = FastHasher::default();
    h.write_u64(upto as u64);
    h.write_u64(ctx.fixed.to_bits());
    h.write_u64(ctx.max_input_tokens.map_or(0, |w| w.wrapping_add(1)));
    h.write_u64(passes::params_key(ctx.params));
    for t in &ctx.tokens[..upto.min(ctx.tokens.len())] {
        h.write_u64(t.to_bits());
    }
    for a in &ctx.archive[..upto.min(ctx.archive.len())] {
        match a {
            Some(path) => {
                h.write_u8(1);
                h.write(path.as_bytes());
            }
            None => h.write_u8(0),
        }
    }
    h.finish()
}

/// With a price model the passes act on whatever they may: the price model, not a
/// trigger or a batch size, decides when their batches commit.
fn priced(cfg: &PlanConfig) -> PlanConfig {
    let mut c = cfg.clone();
    c.clearing.trigger = Size::Tokens(0);
    c.clearing.clear_at_least = 0;
    if c.truncate_args.trigger.is_some() {
        c.truncate_args.trigger = Some(Size::Messages(0));
    }
    c.truncate_args.min_batch_tokens = 0;
    c.dedupe.min_batch_tokens = 0;
    c.collapse.min_batch_tokens = 0;
    c
}

/// The plan, with `memo` for what later turns may reuse (`input.memos` aside).
fn plan_with(input: PlanInput<'_, '_>, memo: &Memos, cfg: &PlanConfig) -> Plan {
    let n = input.msgs.len();
    let tokens = padded(input.tokens, n, 0.0);
    // None at all is the same as none for every message (no gap can be found).
    let timestamps = match input.timestamps.is_empty() {
        true => input.timestamps,
        false => padded(input.timestamps, n, None),
    };
    let tokens_before = input.fixed + tokens.iter().sum::<f64>();
    // What the caller kept from earlier turns is reused; the rest is worked out.
    let measures = given_or(input.measures, n, || {
        input
            .msgs
            .iter()
            .map(|m| crate::tally::measure(m))
            .collect()
    });
    let skeletons = given_or(input.skeletons, n, || {
        input.msgs.iter().map(|m| Skeleton::of(m)).collect()
    });
    let skeletons: &[Skeleton] = &skeletons;
    let gap_template = cfg.microcompact.cleared_message.as_str();
    let placeholders = placeholders(&input.msgs, skeletons, gap_template);
    // Links the caller kept from earlier turns are reused; the rest are worked out.
    let (results, tool_names) = passes::tool_results(&input.msgs, skeletons);
    let ctx = Ctx {
        msgs: &input.msgs,
        measures: &measures,
        skeletons,
        placeholders: &placeholders,
        tokens: &tokens,
        fixed: input.fixed,
        max_input_tokens: input.max_input_tokens,
        params: &input.params,
        timestamps: &timestamps,
        now: input.now,
        archive: &input.archive,
        results: &results,
        tool_names: &tool_names,
        memo,
        gap_template,
    };
    let truth = Truth {
        fixed: input.fixed,
        usage: input.usage,
        min_anchor: input.min_anchor,
        prior: input.prior,
        unedited: input.usage_of_unedited.then_some(tokens.as_slice()),
    };
    // `barely`: the trigger pressed a batch that left the view just under it.
    let settled = input.settled.unwrap_or(0).min(n);
    let (passed, settled, committed_at, barely) =
        batched_run(&ctx, &truth, cfg, settled, input.calls_before);
    // A batch that rewrote messages before an anchor leaves the anchor counting
    // another view: only usage before its first edit still counts.
    let anchored = truth.of(&passed.tokens, committed_at.unwrap_or(n));
    let tokens_after = passed.total;
    let summary_needed =
        barely || summary_due(&cfg.trigger, n, anchored.total, input.max_input_tokens);
    let summary_cutoff = cfg
        .keep
        .filter(|_| summary_needed)
        .and_then(|keep| cutoff_to_keep(&ctx, &passed.tokens, &anchored, keep));
    Plan {
        edits: passed.edits,
        tokens_before,
        tokens_after,
        passes: passed.stats,
        summary_needed,
        summary_cutoff,
        true_tokens: anchored.total,
        calibration: anchored.calibration,
        anchor: anchored.anchor,
        settled,
        batch_at: committed_at,
        orphans: results
            .iter()
            .filter(|r| r.caller.is_none())
            .map(|r| r.index)
            .collect(),
        parallel: parallel_results(&input.msgs, skeletons),
    }
}

/// The user messages holding more than one tool result; a glance at each skeleton
/// rules out the rest.
fn parallel_results(msgs: &[&Message], skeletons: &[Skeleton]) -> Vec<usize> {
    let may = |s: &Skeleton| s.role == Role::Human && s.may_have_blocks();
    (skeletons.iter().zip(msgs).enumerate())
        .filter(|(_, (s, m))| may(s) && m.result_ids().len() > 1)
        .map(|(i, _)| i)
        .collect()
}

/// Which messages are a placeholder already (a cleared result stays cleared).
fn placeholders(msgs: &[&Message], skeletons: &[Skeleton], template: &str) -> Vec<bool> {
    msgs.iter()
        .zip(skeletons)
        .map(|(m, s)| s.may_be_placeholder(template) && passes::starts_as_placeholder(m, template))
        .collect()
}

/// `values` cut or filled with `fill` to one a message.
fn padded<T: Clone>(mut values: Vec<T>, n: usize, fill: T) -> Vec<T> {
    values.resize(n, fill);
    values
}

/// `given` when it has one entry a message, else what `make` works out.
fn given_or<T: Clone>(
    given: Option<&[T]>,
    n: usize,
    make: impl FnOnce() -> Vec<T>,
) -> Cow<'_, [T]> {
    match given {
        Some(found) if found.len() == n => Cow::Borrowed(found),
        _ => Cow::Owned(make()),
    }
}

/// The passes' run, how far their edits are settled, where a batch committed on this
/// call, and whether the trigger pressed a batch that left the view just under it. With
/// a price model a batch commits when the trigger presses it or it pays.
fn batched_run(
    ctx: &Ctx<'_, '_>,
    truth: &Truth<'_>,
    cfg: &PlanConfig,
    settled: usize,
    calls_before: usize,
) -> (Passed, usize, Option<usize>, bool) {
    let n = ctx.msgs.len();
    let Some(pricing) = cfg.pricing else {
        // Fixed batch sizes: every edit stands.
        return (run_passes(ctx, n, cfg, None), n, None, false);
    };
    let cfg = priced(cfg);
    // Nothing settled: no edit is kept.
    let run = (settled > 0).then(|| settled_edits(ctx, settled, &cfg));
    let none = EditKeys::default();
    let kept = run.as_ref().map_or(&none, |r| &r.edits);
    let full = run_passes(ctx, n, &cfg, None);
    let first_new = full
        .edits
        .iter()
        .filter(|e| batched(e.pass) && !kept.contains(e.pass, e.index))
        .map(|e| e.index)
        .min();
    let Some(p) = first_new else {
        return (full, settled, None, false);
    };
    let stay = run_passes(ctx, n, &cfg, Some(kept));
    let without = truth.of(&stay.tokens, n);
    let scale = without.calibration;
    let with = without.total - scale.ratio * (stay.total - full.total);
    let prefix = scale.apply(ctx.fixed + stay.tokens[..p].iter().sum::<f64>());
    let is_ai = |s: &Skeleton| s.role == crate::message::Role::Ai;
    let batch = Batch {
        size_without: without.total,
        size_with: with,
        prefix,
        calls_since: ctx.skeletons[settled..].iter().filter(|s| is_ai(s)).count(),
        calls_so_far: ctx.skeletons.iter().filter(|s| is_ai(s)).count() + calls_before,
    };
    let trigger = cfg.trigger.as_slice();
    let pressed = summary_due(trigger, n, without.total, ctx.max_input_tokens);
    let barely = pressed
        && summary_due(
            trigger,
            n,
            with / (1.0 - PASSES_HEADROOM),
            ctx.max_input_tokens,
        );
    if pressed || batch.worth_committing(&pricing) {
        (full, n, Some(p), barely)
    } else {
        (stay, settled, None, false)
    }
}

/// Where a summary cuts to keep `keep` of the view, its messages `tokens` in size as
/// the estimate counts them; `None` when no cut leaves something before it.
fn cutoff_to_keep(
    ctx: &Ctx<'_, '_>,
    tokens: &[f64],
    anchored: &Anchored,
    keep: Size,
) -> Option<usize> {
    // Keep is measured in true sizes, as the window is.
    let ratio = anchored.calibration.ratio;
    let window = ctx.max_input_tokens;
    let scaled: Vec<f64> = tokens.iter().map(|t| t * ratio).collect();
    // Edits never change who calls what, so the raw messages hold the pairs; they are
    // read in place (measuring each into a `PairShape` costs a warm call a cold count).
    let cut = find_cutoff(ctx.msgs, &scaled, keep, window);
    cut.ok().filter(|&c| c > 0)
}

/// With a price model, the share of the trigger the cheap passes must free when the
/// trigger presses them: a batch that leaves the view just under it has to be followed
/// by another on the next call, rewriting the newest results each time, and a summary
/// costs less than that.
const PASSES_HEADROOM: f64 = 0.2;

/// Whether a summary is due: any trigger clause fires. A fraction with no window known
/// never fires (there is nothing to take a fraction of).
pub fn summary_due(trigger: &[Clause], n: usize, tokens: f64, window: Option<u64>) -> bool {
    !trigger.is_empty() && any_clause_fires(trigger, n, tokens, window).unwrap_or(false)
}

/// What the true sizes are worked out from.
struct Truth<'a> {
    fixed: f64,
    usage: &'a [Option<(u64, u64)>],
    min_anchor: usize,
    prior: Calibration,
    /// The messages' estimates before any edit, when the usage counted them so (see
    /// `PlanInput::usage_of_unedited`).
    unedited: Option<&'a [f64]>,
}

impl Truth<'_> {
    /// The anchored size of a view with these per-message estimates, counting only
    /// usage reported before message `before`.
    fn of(&self, tokens: &[f64], before: usize) -> Anchored {
        let usage = &self.usage[..self.usage.len().min(before)];
        match self.unedited {
            // Calibrated on what the usage counted; the edits then save what they save,
            // at the ratio found.
            Some(unedited) if unedited.len() == tokens.len() => {
                let mut a =
                    anchored_total(self.fixed, unedited, usage, self.min_anchor, self.prior);
                let saved = unedited.iter().sum::<f64>() - tokens.iter().sum::<f64>();
                a.total = (a.total - a.calibration.ratio * saved).max(0.0).ceil();
                a
            }
            _ => anchored_total(self.fixed, tokens, usage, self.min_anchor, self.prior),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Block, Content};
    use serde_json::json;

    fn results(ids: &[&str]) -> Message {
        let block = |id: &str| Block::Other {
            kind: "tool_result".into(),
            value: json!({"type": "tool_result", "tool_use_id": id, "content": "out"}),
        };
        Message {
            role: Role::Human,
            content: Content::Blocks(ids.iter().map(|id| block(id)).collect()),
            ..Message::default()
        }
    }

    #[test]
    fn only_a_user_message_of_several_results_answers_in_parallel() {
        let text = Message::text(Role::Human, "hi");
        let (one, two) = (results(&["a"]), results(&["b", "c"]));
        let msgs = [&text, &one, &two];
        let skeletons: Vec<Skeleton> = msgs.iter().map(|m| Skeleton::of(m)).collect();
        assert_eq!(parallel_results(&msgs, &skeletons), vec![2]);
    }
}

//! What the schedule weighs a compaction against when it has not yet drafted one, and
//! what a fold of the memory is weighed against: the reads and rewrites paid for the
//! memory since its last fold.

use super::POLICY;
use crate::economics::{Compaction, Fold, Pricing};

/// A lower bound of the span's part of a compaction's price, before the first full
/// check of a cycle drafts one: the least of a digest (which keeps the span's `quoted`
/// user messages verbatim beside what stays) and, when a model may summarize, its
/// shortest reply; less the price of rewriting what stays alone (`kept_price`).
pub fn span_floor(
    p: &Pricing,
    size: f64,
    kept: f64,
    quoted: f64,
    kept_price: f64,
    grown_reads: f64,
    model_may_summarize: bool,
) -> f64 {
    let price = |size_with: f64, summary_output: f64| {
        Compaction {
            size_without: size,
            size_with,
            prefix: 0.0,
            summary_input: 0.0,
            summary_cached: 0.0,
            summary_output,
            grown_reads,
        }
        .price(p)
    };
    let mut least = price(kept + quoted, 0.0);
    if model_may_summarize {
        least = least.min(price(kept, POLICY.summary_tokens.0));
    }
    (least - kept_price).max(0.0)
}

/// What the memory has cost since its last fold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryCosts {
    /// Its size now, and its reads, call after call, over `calls` calls.
    pub tokens: f64,
    pub reads: f64,
    pub calls: u64,
    /// What the digests since wrote of it anew, and how many there were.
    pub rewrites: f64,
    pub digests: u64,
}

impl MemoryCosts {
    /// The fold weighed for this call: `extra` over the digest's price, the next input
    /// `smaller_by` than after the digest, leaving `left` tokens of memory beside what
    /// stays, with `horizon` calls to come. What was paid counts only beyond what the
    /// fold leaves.
    pub fn fold(&self, extra: f64, smaller_by: f64, left: f64, horizon: f64) -> Fold {
        let reads = self.tokens + self.reads;
        let calls = (self.calls + 1) as f64;
        Fold {
            extra,
            smaller_by,
            grown_reads: (reads - calls * left).max(0.0),
            grown_rewrites: (self.rewrites - self.digests as f64 * left).max(0.0),
            horizon,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::economics::PRESETS;
    use proptest::prelude::*;

    const ANTHROPIC: Pricing = PRESETS[0].1;

    #[test]
    fn the_floor_is_the_cheaper_of_a_digest_and_the_shortest_summary() {
        // Rewriting 1,000 quoted tokens costs 1,150; a 200-token reply costs 1,000.
        let with_model = span_floor(&ANTHROPIC, 50_000.0, 10_000.0, 1_000.0, 0.0, 0.0, true);
        let digest_only = span_floor(&ANTHROPIC, 50_000.0, 10_000.0, 1_000.0, 0.0, 0.0, false);
        let kept = 1.15 * 10_000.0;
        assert!((with_model - (kept + 1_000.0)).abs() < 1e-6);
        assert!((digest_only - (kept + 1_150.0)).abs() < 1e-6);
        assert_eq!(
            span_floor(&ANTHROPIC, 50_000.0, 10_000.0, 0.0, 1e9, 0.0, true),
            0.0
        );
    }

    #[test]
    fn what_the_memory_cost_counts_beyond_what_a_fold_leaves() {
        let costs = MemoryCosts {
            tokens: 1_000.0,
            reads: 9_000.0,
            calls: 9,
            rewrites: 3_000.0,
            digests: 2,
        };
        let fold = costs.fold(50.0, 400.0, 600.0, 30.0);
        assert_eq!(fold.grown_reads, 10_000.0 - 10.0 * 600.0);
        assert_eq!(fold.grown_rewrites, 3_000.0 - 2.0 * 600.0);
        assert_eq!(costs.fold(50.0, 400.0, 1e6, 30.0).grown_reads, 0.0);
    }

    proptest! {
        #[test]
        fn the_floor_never_exceeds_a_digests_price(size in 0.0f64..1e6, kept in 0.0f64..1e6, quoted in 0.0f64..1e5, kept_price in 0.0f64..1e6, model: bool) {
            let floor = span_floor(&ANTHROPIC, size, kept, quoted, kept_price, 0.0, model);
            let digest = Compaction { size_without: size, size_with: kept + quoted, prefix: 0.0, summary_input: 0.0, summary_cached: 0.0, summary_output: 0.0, grown_reads: 0.0 }.price(&ANTHROPIC);
            prop_assert!(floor >= 0.0 && floor <= (digest - kept_price).max(0.0));
        }
    }
}

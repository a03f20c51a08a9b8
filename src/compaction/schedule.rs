//! What the schedule weighs a compaction against when it has not yet drafted one, what
//! a fold of the memory is weighed against (the reads and rewrites paid for the memory
//! since its last fold), and which of a digest and a fold the session is better off with.

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

/// A compaction priced: the next input it leaves, its price, and whether it is due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Priced {
    pub next_input: f64,
    pub price: f64,
    pub due: bool,
}

/// What the session is better off with in place of the span: a model summary (or the
/// digest), whether that one is due, and the span's part of the cheaper price, the
/// next calls' lower bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub model: bool,
    pub due: bool,
    pub span_price: f64,
}

/// Of a digest and a model summary that folds the memory (either may be out), the one
/// the session is better off with: the only one there is, else the fold when it pays
/// over the session (`MemoryCosts::fold`, with `horizon` calls to come). `kept` is what
/// stays alone: its next input and price. `None` when neither is there.
pub fn choose(
    p: &Pricing,
    digest: Option<Priced>,
    fold: Option<Priced>,
    kept: (f64, f64),
    memory: &MemoryCosts,
    horizon: f64,
) -> Option<Choice> {
    let (kept_size, kept_price) = kept;
    let (model, cheapest) = match (digest, fold) {
        (None, None) => return None,
        (Some(d), None) => (false, d.price),
        (None, Some(f)) => (true, f.price),
        (Some(d), Some(f)) => {
            // The memory a fold leaves, beside what stays.
            let left = (f.next_input - kept_size).max(0.0);
            let fold = memory.fold(
                f.price - d.price,
                d.next_input - f.next_input,
                left,
                horizon,
            );
            (fold.pays(p), d.price.min(f.price))
        }
    };
    let chosen = if model { fold } else { digest }?;
    Some(Choice {
        model,
        due: chosen.due,
        span_price: (cheapest - kept_price).max(0.0),
    })
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

    #[test]
    fn the_only_summarizer_there_is_is_chosen_else_the_fold_when_it_pays() {
        let d = Priced {
            next_input: 20_000.0,
            price: 3_000.0,
            due: true,
        };
        let f = Priced {
            next_input: 12_000.0,
            price: 3_500.0,
            due: false,
        };
        let none = MemoryCosts::default();
        let only = choose(&ANTHROPIC, Some(d), None, (10_000.0, 1_000.0), &none, 50.0).unwrap();
        assert_eq!(
            (only.model, only.due, only.span_price),
            (false, true, 2_000.0)
        );
        assert!(
            choose(&ANTHROPIC, None, Some(f), (10_000.0, 1_000.0), &none, 50.0)
                .unwrap()
                .model
        );
        assert_eq!(
            choose(&ANTHROPIC, None, None, (0.0, 0.0), &none, 50.0),
            None
        );
        // Nothing paid for the memory yet: the digest; much paid, and a long session: the fold.
        assert!(
            !choose(
                &ANTHROPIC,
                Some(d),
                Some(f),
                (10_000.0, 1_000.0),
                &none,
                50.0
            )
            .unwrap()
            .model
        );
        let paid = MemoryCosts {
            tokens: 8_000.0,
            reads: 400_000.0,
            calls: 50,
            ..MemoryCosts::default()
        };
        let both = choose(
            &ANTHROPIC,
            Some(d),
            Some(f),
            (10_000.0, 1_000.0),
            &paid,
            50.0,
        )
        .unwrap();
        assert!(both.model && !both.due && both.span_price == 2_000.0);
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

//! What a call's input costs under a provider's prompt cache, and whether a batch of
//! edits pays for the cache rewrite it causes.
//!
//! A provider reads the prefix shared with the previous call from its cache and writes
//! the rest. A batch that rewrites older messages makes everything from its first
//! edited message on a write once, and makes every later call read less. It commits
//! when both hold:
//! - over the calls still to come (as many as the session has made so far, the best
//!   guess without other knowledge), its savings outweigh the rewrite;
//! - the reads already paid for the pending material since the last batch (it piled
//!   up about evenly, so half its size on each of those calls) outweigh the rewrite.
//!   That second rule is what batches: clearing one result per call would rewrite the
//!   newest results every call, which costs more than carrying the old ones a while.
//!
//! A compaction (a digest or a summary of the older span) is priced the same way: the
//! rewrite of what stays, the summary call's input as the provider bills it and its
//! output. It is due once the reads paid since the last compaction for what has grown
//! reach that price: with growth `g` tokens a call and price `D`, that is after about
//! `sqrt(D / (read * g / 2))` calls, the cycle that costs least.

/// Prices relative to the uncached input price.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pricing {
    /// A token read from the cache.
    pub read: f64,
    /// A token not in the cache (written to it, where writing costs extra).
    pub write: f64,
    /// A token of output, from the list prices of the providers' current models.
    pub output: f64,
}

/// The presets `CompactionConfig.pricing` names.
pub const PRESETS: [(&str, Pricing); 5] = [
    (
        "anthropic",
        Pricing {
            read: 0.1,
            write: 1.25,
            output: 5.0,
        },
    ),
    (
        "anthropic-1h",
        Pricing {
            read: 0.1,
            write: 2.0,
            output: 5.0,
        },
    ),
    (
        "openai",
        Pricing {
            read: 0.1,
            write: 1.0,
            output: 8.0,
        },
    ),
    (
        "gemini",
        Pricing {
            read: 0.25,
            write: 1.0,
            output: 8.0,
        },
    ),
    (
        "none",
        Pricing {
            read: 1.0,
            write: 1.0,
            output: 1.0,
        },
    ),
];

impl Pricing {
    /// The preset of this name.
    pub fn preset(name: &str) -> Option<Pricing> {
        PRESETS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
    }
}

/// A batch as the decision sees it; sizes are whole inputs (system and tools too).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Batch {
    /// The next input without the batch.
    pub size_without: f64,
    /// The next input with it.
    pub size_with: f64,
    /// Tokens before the batch's first edited message (still read from the cache).
    pub prefix: f64,
    /// Model calls since the last batch committed.
    pub calls_since: usize,
    /// Model calls the session has made.
    pub calls_so_far: usize,
}

impl Batch {
    /// What committing adds to the next call: the rewritten suffix is written instead
    /// of read (less what the batch itself removes).
    pub fn extra_now(&self, p: &Pricing) -> f64 {
        p.write * (self.size_with - self.prefix) - p.read * (self.size_without - self.prefix)
    }

    /// Whether committing now pays (see the module's comment).
    pub fn worth_committing(&self, p: &Pricing) -> bool {
        let saved = self.size_without - self.size_with;
        if saved <= 0.0 {
            return false;
        }
        let extra = self.extra_now(p);
        if extra <= 0.0 {
            return true;
        }
        let per_call = p.read * saved;
        let horizon = self.calls_so_far.max(1) as f64;
        let paid = self.calls_since as f64 / 2.0;
        per_call * horizon >= extra && per_call * paid >= extra
    }
}

/// A compaction as the decision sees it; sizes are whole inputs (system and tools too).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compaction {
    /// The next input without compacting.
    pub size_without: f64,
    /// The next input after it: the fixed prefix, the summary and what stays.
    pub size_with: f64,
    /// The fixed prefix both share (system prompt and tools), still read from the cache.
    pub prefix: f64,
    /// The summary call's input, and how much of it the provider reads from its cache
    /// (most of it when the call shares the agent's prefix); 0 for a digest.
    pub summary_input: f64,
    pub summary_cached: f64,
    /// The summary's output tokens; 0 for a digest.
    pub summary_output: f64,
    /// The tokens read, call after call, of what the view has grown by since the last
    /// compaction (summed over those calls): the reads a compaction stops paying.
    pub grown_reads: f64,
}

impl Compaction {
    /// What compacting costs: what stays is written anew instead of read, and the
    /// summary call is billed as the provider bills it.
    pub fn price(&self, p: &Pricing) -> f64 {
        let rewrite = (p.write - p.read) * (self.size_with - self.prefix).max(0.0);
        let cached = self.summary_cached.min(self.summary_input);
        let call = p.read * cached + p.write * (self.summary_input - cached);
        rewrite + call + p.output * self.summary_output
    }

    /// What compacting costs over the cycle it starts: its price, and the reads of what
    /// it leaves beyond the fixed prefix on each of `calls` later calls. Of a digest and
    /// a model summary, `auto` takes the one for which this is less: a digest costs no
    /// call but is larger.
    pub fn cost_over(&self, p: &Pricing, calls: f64) -> f64 {
        self.price(p) + p.read * (self.size_with - self.prefix).max(0.0) * calls.max(0.0)
    }

    /// The reads paid since the last compaction for what has grown.
    pub fn paid(&self, p: &Pricing) -> f64 {
        p.read * self.grown_reads
    }

    /// Whether compacting now pays: it makes the view smaller, and the reads paid
    /// since the last compaction for what has grown reach its price.
    pub fn due(&self, p: &Pricing) -> bool {
        self.size_with < self.size_without && self.paid(p) >= self.price(p)
    }
}

/// A model summary of the memory's older layers (a fold) instead of another digest, as
/// the session sees it: a digest costs no call, but the memory it leaves is larger;
/// every later call reads it and every later digest writes it anew, until a fold. A
/// fold pays once what was already paid for the memory beyond a fold's size, since
/// the last fold (its reads, and its rewrites by digests), reaches the fold's extra
/// price, and its saving over the calls to come (as many as the session has made so
/// far) does too: the same two rules as a batch's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fold {
    /// The fold's price over the digest's.
    pub extra: f64,
    /// How much smaller the next input is after the fold than after the digest.
    pub smaller_by: f64,
    /// The tokens read, call after call since the last fold, of what the memory held
    /// beyond the size a fold leaves; and those written anew by the digests since.
    pub grown_reads: f64,
    pub grown_rewrites: f64,
    /// The calls to come.
    pub horizon: f64,
}

impl Fold {
    pub fn pays(&self, p: &Pricing) -> bool {
        if self.extra <= 0.0 {
            return true;
        }
        let paid = p.read * self.grown_reads + (p.write - p.read) * self.grown_rewrites.max(0.0);
        paid >= self.extra && p.read * self.smaller_by.max(0.0) * self.horizon >= self.extra
    }
}

/// How many tokens of the newest requests a memory pays to keep verbatim in view. Every
/// token of them is read on every call, and written anew with the memory whenever a
/// compaction rewrites it (`rewrites_per_call`: how many calls, of one, do); the layer
/// grows by `growth` tokens a call until a fold (a model summary writing `fold_output`
/// tokens) brings it back down; a request no longer in view costs a search when it is
/// needed. The cheapest cycle between folds (see `Compaction`) lets the layer reach
/// `sqrt(2 D g / r)` for a fold's price D, growth g and a token's price a call r: a
/// chat's long messages keep many, an agent's short requests among bulky tool results
/// few.
pub fn verbatim_tokens(p: &Pricing, growth: f64, fold_output: f64, rewrites_per_call: f64) -> f64 {
    let fold = p.output * fold_output.max(0.0);
    let per_call = p.read + p.write * rewrites_per_call.clamp(0.0, 1.0);
    (2.0 * fold * growth.max(0.0) / per_call.max(f64::EPSILON)).sqrt()
}

/// Whether restoring a file read before a compaction (its text in the summary message)
/// pays. A restored file is written with the summary message and read on every call
/// until the next compaction, about as many as `cycle` calls (the last cycle's length);
/// a file left out costs, if the agent needs it again, one call more to read it, whose
/// result is written once and then read the same. So restoring spares that one call
/// only when the file is needed again, and costs its write and reads whenever it is
/// not: it pays for the request still under way (`in_progress`: its files are the work
/// at hand), not for a finished one, whose files the next request rarely reads again;
/// and only while its reads cost less than a re-read's write.
pub fn restoring_pays(p: &Pricing, cycle: f64, in_progress: bool) -> bool {
    in_progress && p.read * cycle.max(0.0) < p.write
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verbatim_layer_grows_with_the_requests_and_the_folds_price() {
        // An agent's short requests (10 tokens a call) against a chat's (150).
        let agent = verbatim_tokens(&ANTHROPIC, 10.0, 2_000.0, 0.0);
        let chat = verbatim_tokens(&ANTHROPIC, 150.0, 2_000.0, 0.0);
        assert!((agent - 2_000_000f64.sqrt()).abs() < 1e-6);
        assert!((chat / agent - 15f64.sqrt()).abs() < 1e-9);
        // A fold that writes four times as much keeps twice as many.
        let long_fold = verbatim_tokens(&ANTHROPIC, 10.0, 8_000.0, 0.0);
        assert!((long_fold / agent - 2.0).abs() < 1e-9);
        // Rewritten one call in ten, a token costs 0.1 + 1.25 / 10 a call: fewer stay.
        let rewritten = verbatim_tokens(&ANTHROPIC, 10.0, 2_000.0, 0.1);
        assert!((agent / rewritten - 2.25f64.sqrt()).abs() < 1e-9);
        // Without a cache a read costs what a write does: fewer stay.
        let none = Pricing::preset("none").unwrap_or(ANTHROPIC);
        assert!(verbatim_tokens(&none, 10.0, 2_000.0, 0.0) < agent);
        assert_eq!(verbatim_tokens(&ANTHROPIC, -1.0, 2_000.0, 0.0), 0.0);
    }

    #[test]
    fn restoring_pays_for_the_work_in_progress_over_short_cycles_only() {
        // Anthropic: a write is 12.5 reads.
        assert!(restoring_pays(&ANTHROPIC, 10.0, true));
        assert!(!restoring_pays(&ANTHROPIC, 13.0, true));
        // A finished request's files: never.
        assert!(!restoring_pays(&ANTHROPIC, 1.0, false));
        // Without a cache every read is a write: never.
        let none = Pricing::preset("none").unwrap_or(ANTHROPIC);
        assert!(!restoring_pays(&none, 1.0, true));
    }

    const ANTHROPIC: Pricing = PRESETS[0].1;

    fn batch(without: f64, with: f64, prefix: f64, since: usize, so_far: usize) -> Batch {
        Batch {
            size_without: without,
            size_with: with,
            prefix,
            calls_since: since,
            calls_so_far: so_far,
        }
    }

    /// The calls from one compaction to the next for a view that grows by `growth` a
    /// call from `base` (the size right after the last one), each compaction leaving
    /// `base` again.
    fn cycle(p: &Pricing, base: f64, prefix: f64, growth: f64, summary: (f64, f64, f64)) -> usize {
        let mut grown_reads = 0.0;
        for call in 1..=1_000 {
            let size = base + growth * call as f64;
            grown_reads += growth * call as f64;
            let c = Compaction {
                size_without: size,
                size_with: base,
                prefix,
                summary_input: summary.0,
                summary_cached: summary.1,
                summary_output: summary.2,
                grown_reads,
            };
            if c.due(p) {
                return call;
            }
        }
        usize::MAX
    }

    #[test]
    fn a_digest_is_due_after_the_cycle_that_costs_least() {
        // 3,000 tokens of system and tools, 2,000 that stay, 1,000 a call of growth:
        // D = 1.15 * 2,000 = 2,300; 0.1 * 1,000 * k(k+1)/2 >= 2,300 at k = 7
        // (sqrt(2,300 / 50) = 6.8).
        assert_eq!(
            cycle(&ANTHROPIC, 5_000.0, 3_000.0, 1_000.0, (0.0, 0.0, 0.0)),
            7
        );
        // Slower growth waits longer: sqrt(2,300 / 10) = 15.2.
        assert_eq!(
            cycle(&ANTHROPIC, 5_000.0, 3_000.0, 200.0, (0.0, 0.0, 0.0)),
            15
        );
        // An hour's cache costs more to write again: D = 1.9 * 2,000 = 3,800.
        let hour = Pricing::preset("anthropic-1h").unwrap_or(ANTHROPIC);
        assert_eq!(cycle(&hour, 5_000.0, 3_000.0, 1_000.0, (0.0, 0.0, 0.0)), 9);
    }

    #[test]
    fn a_model_summary_is_priced_by_its_call() {
        // A 40,000-token summary request sharing the agent's cache but for 1,000 tokens,
        // and a 1,500-token summary: D = 2,300 + 3,900 + 1,250 + 7,500 = 14,950.
        let c = Compaction {
            size_without: 45_000.0,
            size_with: 5_000.0,
            prefix: 3_000.0,
            summary_input: 40_000.0,
            summary_cached: 39_000.0,
            summary_output: 1_500.0,
            grown_reads: 0.0,
        };
        assert!((c.price(&ANTHROPIC) - 14_950.0).abs() < 1e-6);
        // The same request not sharing the cache is written whole: 50,000 + 2,300 + 7,500.
        let fresh = Compaction {
            summary_cached: 0.0,
            ..c
        };
        assert!((fresh.price(&ANTHROPIC) - 59_800.0).abs() < 1e-6);
        // Its cycle is longer than a digest's: sqrt(14,950 / 50) = 17.3.
        assert_eq!(
            cycle(
                &ANTHROPIC,
                5_000.0,
                3_000.0,
                1_000.0,
                (40_000.0, 39_000.0, 1_500.0)
            ),
            17
        );
    }

    #[test]
    fn without_a_cache_a_free_digest_is_due_at_once_and_a_growing_view_is_needed() {
        let none = Pricing::preset("none").unwrap_or(ANTHROPIC);
        assert_eq!(cycle(&none, 5_000.0, 3_000.0, 1_000.0, (0.0, 0.0, 0.0)), 1);
        // Nothing to gain, nothing due, whatever was paid.
        let flat = Compaction {
            size_without: 5_000.0,
            size_with: 5_000.0,
            prefix: 3_000.0,
            summary_input: 0.0,
            summary_cached: 0.0,
            summary_output: 0.0,
            grown_reads: 1e9,
        };
        assert!(!flat.due(&ANTHROPIC));
    }

    #[test]
    fn over_a_cycle_a_larger_digest_can_cost_more_than_a_summary_call() {
        // The digest leaves 6,000 tokens, a summary 1,500 (its call shares the cache).
        let digest = Compaction {
            size_without: 40_000.0,
            size_with: 9_000.0,
            prefix: 3_000.0,
            summary_input: 0.0,
            summary_cached: 0.0,
            summary_output: 0.0,
            grown_reads: 0.0,
        };
        let summary = Compaction {
            size_with: 4_500.0,
            summary_input: 40_300.0,
            summary_cached: 40_000.0,
            summary_output: 1_500.0,
            ..digest
        };
        // Digest: 1.15 * 6,000 = 6,900, plus 600 a call. Summary: 1,725 + 4,000 + 375
        // + 7,500 = 13,600, plus 150 a call: even at about 15 calls, the digest first.
        assert!((digest.cost_over(&ANTHROPIC, 10.0) - 12_900.0).abs() < 1e-6);
        assert!((summary.cost_over(&ANTHROPIC, 10.0) - 15_100.0).abs() < 1e-6);
        assert!(digest.cost_over(&ANTHROPIC, 30.0) > summary.cost_over(&ANTHROPIC, 30.0));
    }

    #[test]
    fn presets_are_found_by_name() {
        assert_eq!(
            Pricing::preset("none"),
            Some(Pricing {
                read: 1.0,
                write: 1.0,
                output: 1.0,
            })
        );
        assert_eq!(Pricing::preset("openai").map(|p| p.output), Some(8.0));
        assert_eq!(Pricing::preset("anthropic-1h").map(|p| p.write), Some(2.0));
        assert_eq!(Pricing::preset("bedrock"), None);
    }

    #[test]
    fn without_a_cache_any_saving_commits() {
        let none = Pricing::preset("none").unwrap_or(ANTHROPIC);
        assert!(batch(30_000.0, 29_000.0, 0.0, 0, 0).worth_committing(&none));
        assert!(!batch(30_000.0, 30_000.0, 0.0, 9, 9).worth_committing(&none));
    }

    #[test]
    fn a_cache_waits_until_the_reads_paid_outweigh_the_rewrite() {
        // 10,000 tokens to clear, the first edit 12,000 tokens from the end.
        let at = |since| batch(30_000.0, 20_000.0, 18_000.0, since, 100);
        // extra = 1.25 * 2,000 - 0.1 * 12,000 = 1,300; per call 1,000.
        assert_eq!(at(0).extra_now(&ANTHROPIC), 1_300.0);
        assert!(!at(2).worth_committing(&ANTHROPIC));
        assert!(at(3).worth_committing(&ANTHROPIC));
        // Near the start of a session the horizon is short.
        assert!(!batch(30_000.0, 20_000.0, 18_000.0, 3, 1).worth_committing(&ANTHROPIC));
    }

    #[test]
    fn a_batch_that_shrinks_the_suffix_enough_commits_at_once() {
        // Writing the short suffix costs less than reading the long one.
        assert!(batch(30_000.0, 6_000.0, 5_000.0, 0, 0).worth_committing(&ANTHROPIC));
    }

    #[test]
    fn a_fold_waits_for_the_reads_it_would_have_saved() {
        // A fold costs 10,000 more than a digest and leaves the input 4,000 smaller.
        let fold = |grown_reads: f64, horizon: f64| Fold {
            extra: 10_000.0,
            smaller_by: 4_000.0,
            grown_reads,
            grown_rewrites: 0.0,
            horizon,
        };
        // 0.1 * 99,000 < 10,000: not yet; 0.1 * 100,000 reaches it.
        assert!(!fold(99_000.0, 100.0).pays(&ANTHROPIC));
        assert!(fold(100_000.0, 100.0).pays(&ANTHROPIC));
        // Late in a session too short to come back the saving: 0.1 * 4,000 * 20 < 10,000.
        assert!(!fold(500_000.0, 20.0).pays(&ANTHROPIC));
        // Digests that wrote the larger memory anew paid for it too: 1.15 * 4,000 + 0.1 * 54,000.
        assert!(Fold {
            grown_rewrites: 4_000.0,
            ..fold(54_000.0, 100.0)
        }
        .pays(&ANTHROPIC));
        // A fold that costs no more pays at once.
        assert!(Fold {
            extra: -1.0,
            ..fold(0.0, 0.0)
        }
        .pays(&ANTHROPIC));
    }
}

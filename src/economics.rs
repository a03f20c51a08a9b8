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

/// Input prices relative to the uncached input price.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pricing {
    /// A token read from the cache.
    pub read: f64,
    /// A token not in the cache (written to it, where writing costs extra).
    pub write: f64,
}

/// The presets `CompactionConfig.pricing` names.
pub const PRESETS: [(&str, Pricing); 5] = [
    (
        "anthropic",
        Pricing {
            read: 0.1,
            write: 1.25,
        },
    ),
    (
        "anthropic-1h",
        Pricing {
            read: 0.1,
            write: 2.0,
        },
    ),
    (
        "openai",
        Pricing {
            read: 0.1,
            write: 1.0,
        },
    ),
    (
        "gemini",
        Pricing {
            read: 0.25,
            write: 1.0,
        },
    ),
    (
        "none",
        Pricing {
            read: 1.0,
            write: 1.0,
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn presets_are_found_by_name() {
        assert_eq!(
            Pricing::preset("none"),
            Some(Pricing {
                read: 1.0,
                write: 1.0
            })
        );
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
}

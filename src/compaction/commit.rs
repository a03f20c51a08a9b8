//! Whether a compaction commits, and the back-off and the summarizer's rest it leaves.
//! Under a trigger it commits when the view it leaves is
//! under the trigger with the margin to spare (a size in tokens judged with the margin,
//! a count of messages as it is: the summary is one message, whatever its size), or
//! when it brings a view that was over the window under it. A compaction the price
//! model scheduled, or a forced one when nothing stricter fits, commits whenever it
//! makes the view smaller.

use super::POLICY;

/// The view a compaction leaves, beside the view it replaces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proposal {
    /// The tokens and messages of the view it leaves.
    pub tokens: u64,
    pub messages: usize,
    /// The tokens and messages of the view before it.
    pub before: u64,
    pub messages_before: usize,
    pub window: Option<u64>,
    /// Scheduled by the price model, or forced with nothing stricter left to try.
    pub priced: bool,
    pub forced_loose: bool,
}

/// A proposal judged: whether it is under the trigger with the margin, and whether it
/// commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub under_trigger: bool,
    pub commits: bool,
}

fn with_margin(tokens: u64) -> f64 {
    tokens as f64 * (1.0 / (1.0 - POLICY.commit_margin))
}

/// Judge `p` against the trigger, which `fires(messages, tokens, window)` reads.
pub fn judge<E>(
    p: &Proposal,
    fires: impl Fn(usize, f64, Option<u64>) -> Result<bool, E>,
) -> Result<Verdict, E> {
    let under_trigger = !fires(p.messages, with_margin(p.tokens), p.window)?;
    let rescued = p.window.is_some_and(|w| p.tokens <= w && w < p.before);
    // A trigger in messages that the count alone brings under commits, even when the
    // summary is larger in tokens than the few messages it replaced.
    let before = p.before as f64;
    let by_count =
        fires(p.messages_before, before, p.window)? && !fires(p.messages, before, p.window)?;
    let smaller = p.tokens < p.before || (by_count && under_trigger);
    let commits = smaller && (under_trigger || rescued || p.priced || p.forced_loose);
    Ok(Verdict {
        under_trigger,
        commits,
    })
}

/// The largest view of `messages` messages, up to `window` tokens, that commits as
/// under the trigger (its margin kept); `None` when no size does (a trigger in messages
/// that the count alone reaches).
pub fn commit_size<E>(
    messages: usize,
    window: u64,
    fires: impl Fn(usize, f64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    let over = |tokens: u64| fires(messages, with_margin(tokens));
    if over(0)? {
        return Ok(None);
    }
    let (mut low, mut high) = (0, window);
    if !over(high)? {
        return Ok(Some(high));
    }
    while low + 1 < high {
        let mid = (low + high) / 2;
        if over(mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(Some(low))
}

/// The raw index a judged compaction leaves no new attempt before: none once it
/// committed with the view under the trigger (or was scheduled by the price model);
/// else `backoff_messages` past the `messages` the state holds, so that a view still over
/// the trigger is summarized again when the window needs it, not on every call.
pub fn backoff_after(v: &Verdict, priced: bool, messages: u64) -> Option<u64> {
    let lifted = v.commits && (v.under_trigger || priced);
    (!lifted).then_some(messages + POLICY.backoff_messages as u64)
}

/// Whether a compaction due by the trigger waits: the state holds fewer messages than
/// the back-off left.
pub fn backing_off(messages: u64, backoff_until: Option<u64>) -> bool {
    backoff_until.is_some_and(|until| messages < until)
}

/// The summarizer's failures in a row after a model summary that `failed` or not, and,
/// when they reach `max_failures`, the raw index it rests until (`cooldown` messages
/// past the `messages` the state holds): the count then starts again.
pub fn after_summary(
    failures: u64,
    failed: bool,
    max_failures: u64,
    cooldown: u64,
    messages: u64,
) -> (u64, Option<u64>) {
    let failures = if failed { failures + 1 } else { 0 };
    if failures >= max_failures {
        (0, Some(messages + cooldown))
    } else {
        (failures, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::convert::Infallible;

    fn tokens_over(limit: f64) -> impl Fn(usize, f64, Option<u64>) -> Result<bool, Infallible> {
        move |_, tokens, _| Ok(tokens >= limit)
    }

    fn proposal(tokens: u64, before: u64) -> Proposal {
        Proposal {
            tokens,
            messages: 5,
            before,
            messages_before: 50,
            window: Some(100_000),
            priced: false,
            forced_loose: false,
        }
    }

    #[test]
    fn under_the_trigger_with_the_margin_commits() {
        let fires = tokens_over(50_000.0);
        assert!(judge(&proposal(40_000, 60_000), &fires).unwrap().commits);
        // 46,000 is under the trigger, but not by the margin.
        let close = judge(&proposal(46_000, 60_000), &fires).unwrap();
        assert!(!close.under_trigger && !close.commits);
    }

    #[test]
    fn a_view_over_the_window_brought_under_it_commits_above_the_trigger() {
        let fires = tokens_over(50_000.0);
        let verdict = judge(&proposal(90_000, 120_000), &fires).unwrap();
        assert!(!verdict.under_trigger && verdict.commits);
    }

    #[test]
    fn a_priced_compaction_commits_when_smaller_and_never_when_larger() {
        let fires = tokens_over(50_000.0);
        let priced = |tokens, before| Proposal {
            priced: true,
            ..proposal(tokens, before)
        };
        assert!(judge(&priced(49_000, 50_000), &fires).unwrap().commits);
        assert!(!judge(&priced(51_000, 50_000), &fires).unwrap().commits);
    }

    #[test]
    fn a_message_trigger_the_count_brings_under_commits_though_larger() {
        let by_messages = |n: usize, _: f64, _: Option<u64>| Ok::<_, Infallible>(n >= 20);
        let verdict = judge(&proposal(3_000, 2_000), by_messages).unwrap();
        assert!(verdict.under_trigger && verdict.commits);
    }

    #[test]
    fn the_commit_size_is_the_largest_under_the_trigger_with_its_margin() {
        let fires = |_: usize, tokens: f64| Ok::<_, Infallible>(tokens >= 50_000.0);
        assert_eq!(commit_size(5, 100_000, fires).unwrap(), Some(44_999));
        assert_eq!(commit_size(5, 40_000, fires).unwrap(), Some(40_000));
        let by_count = |n: usize, _: f64| Ok::<_, Infallible>(n >= 5);
        assert_eq!(commit_size(5, 100_000, by_count).unwrap(), None);
    }

    #[test]
    fn a_compaction_left_over_the_trigger_backs_off_and_one_under_it_does_not() {
        let v = |under_trigger, commits| Verdict {
            under_trigger,
            commits,
        };
        assert_eq!(backoff_after(&v(true, true), false, 100), None);
        assert_eq!(backoff_after(&v(false, true), false, 100), Some(110));
        assert_eq!(backoff_after(&v(false, true), true, 100), None);
        assert_eq!(backoff_after(&v(true, false), false, 100), Some(110));
        assert!(
            backing_off(105, Some(110)) && !backing_off(110, Some(110)) && !backing_off(5, None)
        );
    }

    #[test]
    fn the_summarizer_rests_after_its_failures_in_a_row() {
        assert_eq!(after_summary(0, true, 3, 50, 200), (1, None));
        assert_eq!(after_summary(2, true, 3, 50, 200), (0, Some(250)));
        assert_eq!(after_summary(2, false, 3, 50, 200), (0, None));
    }

    proptest! {
        #[test]
        fn the_commit_size_is_the_edge_where_the_trigger_starts_to_fire(limit in 1.0f64..1e6, window in 1u64..1_000_000) {
            let fires = |_: usize, tokens: f64| Ok::<_, Infallible>(tokens >= limit);
            let size = commit_size(3, window, fires).unwrap().unwrap();
            prop_assert!(size <= window && !fires(3, with_margin(size)).unwrap());
            prop_assert!(size == window || fires(3, with_margin(size + 1)).unwrap());
        }

        #[test]
        fn nothing_larger_than_before_commits_on_tokens(tokens in 0u64..1_000_000, before in 0u64..1_000_000, priced: bool, forced: bool) {
            let p = Proposal { priced, forced_loose: forced, ..proposal(tokens, before) };
            let verdict = judge(&p, tokens_over(50_000.0)).unwrap();
            prop_assert!(!verdict.commits || tokens < before);
        }
    }
}

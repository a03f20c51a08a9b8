//! The compaction policy, given the sizes the caller measured: the constants it is
//! decided by, how large a model summary is expected to be and what its call costs,
//! the room a compaction's memory may take, when it commits (`commit.rs`) and what a
//! fold of the memory is weighed against (`schedule.rs`).
//!
//! The middleware measures (it holds the messages, the models and the backend) and
//! carries the decisions out; every number that decides is here.

pub mod commit;
pub mod schedule;

use serde::Serialize;

/// The constants of the policy, shown to Python by `_core.pass_defaults()["compaction"]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Policy {
    /// A model summary's expected length, for its price: this share of what it
    /// summarizes, within `summary_tokens`, and `request_line_tokens` for each request
    /// it lists in short.
    pub summary_share: f64,
    pub summary_tokens: (f64, f64),
    pub request_line_tokens: f64,
    /// The instruction after the agent's input in a summary request that shares its cache.
    pub in_place_tokens: f64,
    /// A compaction under a trigger commits only with the view this far below it.
    pub commit_margin: f64,
    /// After a compaction that could not commit, the new messages to wait for.
    pub backoff_messages: usize,
    /// The share of what the window leaves that the memory may fill: the rest is margin
    /// for what its measure in widths gets wrong.
    pub room_margin: f64,
    /// The lengths the newest tool results are clipped to, in turn, while the request
    /// is still over the window.
    pub clip_heads: [usize; 4],
    /// The messages sampled for a conversation's widths per token.
    pub sample_messages: usize,
    /// The words a summary's token holds, to ask a model for a length in words.
    pub words_per_token: f64,
    /// The share of a view's size no usage has counted yet (the messages since the
    /// anchor) that the estimate may be short by: a view that close to the window is
    /// treated as over it, rather than sent and refused.
    pub estimate_slack: f64,
}

pub const POLICY: Policy = Policy {
    summary_share: 0.10,
    summary_tokens: (200.0, 2_000.0),
    request_line_tokens: 25.0,
    in_place_tokens: 400.0,
    commit_margin: 0.10,
    backoff_messages: 10,
    room_margin: 0.75,
    clip_heads: [4_000, 2_000, 1_000, 500],
    sample_messages: 200,
    words_per_token: 0.75,
    estimate_slack: 0.05,
};

/// A model summary's call as it is priced: its input, the part of it the provider reads
/// from its cache, and its expected output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SummaryCall {
    pub input: f64,
    pub cached: f64,
    pub output: f64,
}

impl SummaryCall {
    /// The call that summarizes a span of `span` tokens listing `listed` requests. When
    /// it `shares` the agent's request, it sends the whole view (`size`), of which all
    /// but `uncached` is in the cache; otherwise the span alone, uncached.
    pub fn estimate(span: f64, listed: usize, size: f64, uncached: f64, shares: bool) -> Self {
        let (least, most) = POLICY.summary_tokens;
        let output = (span * POLICY.summary_share).max(least).min(most)
            + POLICY.request_line_tokens * listed as f64;
        SummaryCall {
            input: (if shares { size } else { span }) + POLICY.in_place_tokens,
            cached: if shares {
                (size - uncached).max(0.0)
            } else {
                0.0
            },
            output,
        }
    }
}

/// The room a compaction's memory may take, in widths: what the window (or the
/// trigger's commit size, `limit`) leaves beside the `fixed` tokens, at `per_token`
/// widths a token, with the margin kept.
pub fn memory_room(limit: i64, fixed: i64, per_token: f64) -> i64 {
    ((limit - fixed).max(0) as f64 * per_token * POLICY.room_margin) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_summary_is_a_tenth_of_its_span_within_bounds_and_a_line_a_request() {
        let call = SummaryCall::estimate(10_000.0, 4, 50_000.0, 3_000.0, true);
        assert_eq!(call.output, 1_000.0 + 100.0);
        assert_eq!(call.input, 50_400.0);
        assert_eq!(call.cached, 47_000.0);
        assert_eq!(
            SummaryCall::estimate(100.0, 0, 0.0, 0.0, false).output,
            200.0
        );
        assert_eq!(
            SummaryCall::estimate(1e9, 0, 0.0, 0.0, false).output,
            2_000.0
        );
        let apart = SummaryCall::estimate(10_000.0, 0, 50_000.0, 3_000.0, false);
        assert_eq!((apart.input, apart.cached), (10_400.0, 0.0));
    }

    #[test]
    fn the_memory_takes_three_quarters_of_the_room_left() {
        assert_eq!(memory_room(10_000, 2_000, 4.0), 24_000);
        assert_eq!(memory_room(1_000, 2_000, 4.0), 0);
    }

    proptest! {
        #[test]
        fn a_summary_call_is_never_negative_and_grows_with_its_span(
            span in 0.0f64..1e7, more in 0.0f64..1e6, listed in 0usize..500,
            size in 0.0f64..1e7, uncached in 0.0f64..1e7, shares: bool,
        ) {
            let a = SummaryCall::estimate(span, listed, size, uncached, shares);
            let b = SummaryCall::estimate(span + more, listed, size, uncached, shares);
            prop_assert!(a.output >= POLICY.summary_tokens.0 && a.cached >= 0.0 && a.cached <= a.input);
            prop_assert!(b.output >= a.output);
        }

        #[test]
        fn the_room_never_exceeds_what_is_left(limit in 0i64..1_000_000, fixed in 0i64..1_000_000, per_token in 0.5f64..8.0) {
            let room = memory_room(limit, fixed, per_token);
            prop_assert!(room >= 0 && room as f64 <= (limit - fixed).max(0) as f64 * per_token);
        }
    }
}

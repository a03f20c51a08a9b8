//! Usage anchoring: the sizes providers report for what they were sent, and the
//! calibration `usage = offset + ratio * estimate` that the messages after the newest
//! report are counted with.

/// How reported usage relates to the estimate: `usage = offset + ratio * estimate`.
/// The offset is what the caller did not pass (a system prompt, tool schemas, the
/// provider's own framing); the ratio is how the provider's tokenizer differs from
/// the estimate, which real tokenizers bound (see `MIN_RATIO`, `MAX_RATIO`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    pub offset: f64,
    pub ratio: f64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            offset: 0.0,
            ratio: 1.0,
        }
    }
}

/// The least and most a provider's tokens per estimated token can be: English under
/// o200k is a little under 1, code and JSON near 1.2, and Chinese or Japanese about a
/// token a character, 3 to 4 times the 4-characters-a-token estimate.
pub const MIN_RATIO: f64 = 0.5;
pub const MAX_RATIO: f64 = 4.0;

/// How much the prior ratio weighs against what the anchors measured, in estimated
/// tokens: a span of a few short messages says little (their framing and rounding
/// dominate it), a long one says nearly all.
const PRIOR_WEIGHT: f64 = 64.0;

impl Calibration {
    /// A calibration whose numbers can be trusted: a ratio within the tokenizers'
    /// bounds, a non-negative offset (anything else, from a corrupted state say, gives
    /// the plain estimate's).
    pub fn checked(offset: f64, ratio: f64) -> Self {
        let ratio = if ratio.is_finite() && ratio > 0.0 {
            ratio.clamp(MIN_RATIO, MAX_RATIO)
        } else {
            1.0
        };
        let offset = if offset.is_finite() && offset > 0.0 {
            offset
        } else {
            0.0
        };
        Calibration { offset, ratio }
    }

    /// The true size of an estimate.
    pub fn apply(&self, estimate: f64) -> f64 {
        self.offset + self.ratio * estimate
    }

    /// The calibration that makes `estimate` come out as `real`, keeping this ratio
    /// when it can: what the estimate misses is an offset, unless the estimate is the
    /// larger, when the ratio is what is off.
    fn fitted_at(&self, estimate: f64, real: f64) -> Self {
        let offset = real - self.ratio * estimate;
        if offset >= 0.0 {
            return Calibration {
                offset,
                ratio: self.ratio,
            };
        }
        let ratio = (real / estimate).clamp(MIN_RATIO, MAX_RATIO);
        Calibration {
            offset: (real - ratio * estimate).max(0.0),
            ratio,
        }
    }
}

/// A count anchored on provider usage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchored {
    pub total: f64,
    /// Index of the anchoring AI message, if one was used.
    pub anchor: Option<usize>,
    /// How usage relates to the estimate, as the anchors say (the prior without one).
    pub calibration: Calibration,
}

/// Total tokens of `fixed` (system prompt and tools) plus the messages, anchored on
/// the provider usage that messages at or after `min_anchor` report (usage before it
/// counted another view; the caller says so, never the distance from the estimate:
/// Chinese text, images and large system prompts are exactly where the estimate is
/// off).
///
/// An anchor's input plus output tokens are the true size of everything up to it. The
/// ratio is what the messages between two anchors really cost (the later input less
/// the earlier input and output) over their estimate: those are tool results and user
/// messages, the same kind as the messages after the newest anchor, which is what it
/// scales (an answer's own size is its output, and the heuristic counts its tool calls
/// otherwise than a provider does), weighed with the prior ratio where the span is
/// short, and bounded to what tokenizers differ by. What
/// is left at the newest anchor is an `offset`, the part of the request the caller
/// did not pass. Without any anchor the estimate takes `prior` (what an earlier view's
/// anchors found).
///
/// The count never falls when messages are only appended: it is the largest of the
/// counts each earlier prefix of the same messages would have had, which a newer
/// anchor that reports less than an over-scaled estimate cannot undo.
pub fn anchored_total(
    fixed: f64,
    per_message: &[f64],
    usage: &[Option<(u64, u64)>],
    min_anchor: usize,
    prior: Calibration,
) -> Anchored {
    let prior = Calibration::checked(prior.offset, prior.ratio);
    let mut estimate = fixed;
    let mut calibration = prior;
    let mut anchor = None;
    // The previous anchor's input plus output, and the estimate of what came since.
    let mut previous: Option<f64> = None;
    let mut since = 0.0;
    // What the messages between anchors cost, and their estimate.
    let (mut span_real, mut span_estimate) = (0.0, 0.0);
    // The count of the prefix read so far, and the most any shorter prefix had.
    let mut count = prior.apply(fixed);
    let mut most = count;
    for (i, &tokens) in per_message.iter().enumerate() {
        estimate += tokens;
        let reported = usage
            .get(i)
            .copied()
            .flatten()
            .filter(|&(input, output)| i >= min_anchor && input.saturating_add(output) > 0);
        match reported {
            Some((input, output)) if estimate > 0.0 => {
                let (input, output) = (input as f64, output as f64);
                if let Some(end) = previous {
                    span_real += input - end;
                    span_estimate += since;
                }
                let ratio = if previous.is_some() {
                    let weighed = span_real + PRIOR_WEIGHT * prior.ratio;
                    (weighed / (span_estimate + PRIOR_WEIGHT)).clamp(MIN_RATIO, MAX_RATIO)
                } else {
                    calibration.ratio
                };
                calibration = Calibration {
                    offset: calibration.offset,
                    ratio,
                }
                .fitted_at(estimate, input + output);
                anchor = Some(i);
                previous = Some(input + output);
                since = 0.0;
                count = input + output;
            }
            _ => {
                since += tokens;
                count += calibration.ratio * tokens;
            }
        }
        most = most.max(count);
    }
    Anchored {
        total: most.ceil(),
        anchor,
        calibration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchored(
        per: &[f64],
        usage: &[Option<(u64, u64)>],
        min: usize,
        prior: Calibration,
    ) -> Anchored {
        anchored_total(0.0, per, usage, min, prior)
    }

    #[test]
    fn one_anchor_takes_what_the_estimate_missed_as_an_offset() {
        let per = [10.0, 10.0, 10.0, 10.0];
        let usage = [None, Some((25, 5)), None, None];
        // Real 30 for an estimate of 20: 10 tokens the caller did not pass; the tail
        // counts as estimated.
        let a = anchored(&per, &usage, 0, Calibration::default());
        assert_eq!(a.anchor, Some(1));
        assert_eq!(a.total, 50.0);
        assert_eq!(
            a.calibration,
            Calibration {
                offset: 10.0,
                ratio: 1.0
            }
        );
        // An anchor before min_anchor is ignored.
        assert_eq!(
            anchored(&per, &usage, 2, Calibration::default()).anchor,
            None
        );
        // A system prompt the caller did not pass (6,700 tokens against a 100-token
        // estimate) is an offset: a large tool result after it counts as estimated,
        // not 68 times over.
        let big = [50.0, 50.0, 5_600.0];
        let reported = [None, Some((6_720, 116)), None];
        let b = anchored(&big, &reported, 0, Calibration::default());
        assert_eq!(b.total, 6_836.0 + 5_600.0);
    }

    #[test]
    fn two_anchors_fit_the_ratio_within_the_tokenizers_bounds() {
        // Chinese text: about three real tokens an estimated one, and 500 hidden. The
        // tool result between the answers cost 31,100 - 1,100; the second answer's 300
        // is its output.
        let per = [100.0, 100.0, 10_000.0, 100.0, 100.0];
        let usage = [None, Some((1_100, 0)), None, Some((31_100, 300)), None];
        let a = anchored(&per, &usage, 0, Calibration::default());
        let c = a.calibration;
        // A span this long outweighs the prior (1.0) nearly entirely.
        assert!((c.ratio - 3.0).abs() < 0.02, "{c:?}");
        assert!((c.offset + c.ratio * 10_300.0 - 31_400.0).abs() < 1e-6);
        assert_eq!(a.total, (31_400.0 + 100.0 * c.ratio).ceil());
        // A short span is weighed with the prior: 100 tokens that cost 300 say the
        // ratio is nearer 2.2 than 3.
        let short = [100.0; 5];
        let few = [None, Some((1_100, 0)), None, Some((1_400, 300)), None];
        let r = anchored(&short, &few, 0, Calibration::default())
            .calibration
            .ratio;
        assert!((r - 364.0 / 164.0).abs() < 1e-9);
        // A ratio beyond what tokenizers differ by is bounded.
        let wild = [None, Some((1_100, 0)), None, Some((91_100, 0)), None];
        assert_eq!(
            anchored(&per, &wild, 0, Calibration::default())
                .calibration
                .ratio,
            MAX_RATIO
        );
        // Without a valid anchor the prior calibration holds.
        let prior = Calibration {
            offset: 500.0,
            ratio: 3.0,
        };
        let c = anchored(&short, &few, 4, prior);
        assert_eq!((c.anchor, c.total, c.calibration), (None, 2_000.0, prior));
    }

    #[test]
    fn an_estimate_above_the_usage_lowers_the_ratio() {
        let per = [100.0, 100.0];
        let a = anchored(&per, &[None, Some((160, 0))], 0, Calibration::default());
        assert_eq!(
            a.calibration,
            Calibration {
                offset: 0.0,
                ratio: 0.8
            }
        );
        // Never below what tokenizers allow, nor a negative offset.
        let b = anchored(&per, &[None, Some((20, 0))], 0, Calibration::default());
        assert_eq!(
            b.calibration,
            Calibration {
                offset: 0.0,
                ratio: MIN_RATIO
            }
        );
    }

    #[test]
    fn appending_never_lowers_the_count() {
        // The first anchor says the estimate is half the truth (offset 0, ratio 2 from
        // the prior); the second reports less than that scaled estimate.
        let per = [100.0, 100.0, 1_000.0, 50.0];
        let usage = [None, Some((400, 0)), None, Some((1_500, 0))];
        let prior = Calibration {
            offset: 0.0,
            ratio: 2.0,
        };
        let counts: Vec<f64> = (1..=4)
            .map(|n| anchored_total(0.0, &per[..n], &usage[..n], 0, prior).total)
            .collect();
        assert_eq!(counts, vec![200.0, 400.0, 2_400.0, 2_400.0]);
    }

    #[test]
    fn a_corrupted_prior_is_the_plain_estimate() {
        for (offset, ratio) in [(f64::NAN, f64::INFINITY), (-5.0, -1.0), (0.0, 0.0)] {
            let c = anchored(&[10.0], &[None], 0, Calibration { offset, ratio });
            assert_eq!(c.total, 10.0);
        }
    }
}

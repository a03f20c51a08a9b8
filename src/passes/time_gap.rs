//! Pass 5, time-gap clearing: after an idle gap longer than the provider's prompt
//! cache lifetime, results of the listed tools from before the gap are cleared,
//! except the newest `keep_recent`. The cache is cold after such a gap anyway, so
//! rewriting older messages costs nothing.

use super::{keyed, main_arg, tool_flags, Edit, Pass, View};
use crate::config::MicrocompactConfig;

/// The configured placeholder with `{tool}`, `{arg}` and `{id}` (the call's id)
/// filled in.
pub fn placeholder(template: &str, tool: &str, arg: &str, id: &str) -> String {
    template
        .replace("{tool}", tool)
        .replace("{arg}", arg)
        .replace("{id}", id)
}

/// The index of the first message after the newest gap longer than `threshold`
/// seconds (the view's length when the gap is between the last message and `now`).
pub fn last_gap(timestamps: &[Option<f64>], now: Option<f64>, threshold: f64) -> Option<usize> {
    let mut previous: Option<f64> = None;
    let mut gap = None;
    for (i, t) in timestamps.iter().enumerate() {
        if let Some(t) = *t {
            if previous.is_some_and(|p| t - p > threshold) {
                gap = Some(i);
            }
            previous = Some(t);
        }
    }
    match (previous, now) {
        (Some(p), Some(now)) if now - p > threshold => Some(timestamps.len()),
        _ => gap,
    }
}

pub fn run(view: &View<'_, '_>, cfg: &MicrocompactConfig) -> Vec<Edit> {
    if !cfg.enabled {
        return Vec::new();
    }
    let Some(gap) = last_gap(view.timestamps, view.now, cfg.gap_threshold_minutes * 60.0) else {
        return Vec::new();
    };
    let listed = tool_flags(view, |t| cfg.compactable_tools.contains(t));
    let compactable: Vec<_> = view
        .results
        .iter()
        .zip(listed)
        .filter_map(|(r, listed)| listed.then_some(r))
        .collect();
    let kept_from = compactable.len().saturating_sub(cfg.keep_recent);
    compactable[..kept_from]
        .iter()
        .filter(|r| r.index < gap)
        .filter(|r| !view.is_placeholder(r.index))
        .filter_map(|r| {
            let new = keyed(placeholder(
                &cfg.cleared_message,
                view.tool(r),
                &main_arg(view.call(r)),
                view.call_id(r),
            ));
            let tokens = view.tokens_with_keyed(r.index, &new);
            // A placeholder longer than the result saves nothing.
            (tokens < view.tokens[r.index])
                .then(|| Edit::keyed(r.index, Pass::TimeGap, &new, tokens))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_newest_gap() {
        let ts = [Some(0.0), Some(10.0), None, Some(5_000.0), Some(5_010.0)];
        assert_eq!(last_gap(&ts, None, 3_600.0), Some(3));
        assert_eq!(last_gap(&ts, Some(5_020.0), 3_600.0), Some(3));
        assert_eq!(last_gap(&ts, Some(20_000.0), 3_600.0), Some(5));
        assert_eq!(last_gap(&ts[..2], None, 3_600.0), None);
        assert_eq!(last_gap(&[None, None], Some(1e9), 3_600.0), None);
    }
}

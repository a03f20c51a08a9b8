//! Pass 3, observation clearing: once the view is over the pass's trigger, results
//! of the listed tools older than the newest `keep_recent` become a one-line
//! placeholder naming the call, in batches worth `clear_at_least` tokens.

use super::{committed_prefix, keyed, main_arg, tool_flags, Edit, Pass, View, CLEARED};
use crate::config::ClearingConfig;

/// The placeholder for a cleared result of `tool` called with `arg`.
pub fn placeholder(tool: &str, arg: &str) -> String {
    format!("{CLEARED}{tool}({arg}). Call the tool again if you need this output.]")
}

pub fn run<'m>(view: &View<'_, 'm>, cfg: &ClearingConfig) -> Vec<Edit<'m>> {
    if !cfg.enabled || !view.reached(cfg.trigger) {
        return Vec::new();
    }
    let listed = tool_flags(view, |t| {
        cfg.tools.contains(t) && !cfg.exclude_tools.contains(t)
    });
    let eligible: Vec<_> = view
        .results
        .iter()
        .zip(listed)
        .filter_map(|(r, listed)| listed.then_some(r))
        .collect();
    let old = eligible.len().saturating_sub(cfg.keep_recent);
    let candidates: Vec<(Edit, f64)> = eligible[..old]
        .iter()
        .filter(|r| !view.is_placeholder(r.index))
        .map(|r| {
            let new = view.memo.cleared[r.index]
                .get_or_init(|| keyed(placeholder(view.tool(r), &main_arg(view.call(r)))));
            let tokens = view.tokens_with_keyed(r.index, new);
            let edit = Edit::kept(r.index, Pass::Clearing, new, tokens);
            (edit, view.tokens[r.index] - tokens)
        })
        // A placeholder longer than the result saves nothing.
        .filter(|c| c.1 > 0.0)
        .collect();
    let n = committed_prefix(candidates.iter().map(|c| c.1), cfg.clear_at_least as f64);
    candidates.into_iter().take(n).map(|c| c.0).collect()
}

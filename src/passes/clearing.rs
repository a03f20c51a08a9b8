//! Pass 3, observation clearing: once the view is over the pass's trigger, results
//! of the listed tools older than the newest `keep_recent` become a one-line
//! placeholder naming the call, in batches worth `clear_at_least` tokens.

use super::{
    keyed, main_arg, params_key, remembered, tool_flags, Batches, Edit, Pass, View, CLEARED,
};
use crate::config::ClearingConfig;

/// The placeholder for a cleared result of call `id`, to `tool` with `arg`.
pub fn placeholder(tool: &str, arg: &str, id: &str) -> String {
    format!("{CLEARED}{tool}({arg}); recall(\"{id}\") returns it.]")
}

pub fn run(view: &View<'_, '_>, cfg: &ClearingConfig) -> Vec<Edit> {
    if !cfg.enabled || !view.reached(cfg.trigger) {
        return Vec::new();
    }
    let listed = tool_flags(view, |t| {
        cfg.tools.contains(t) && !cfg.exclude_tools.contains(t)
    });
    let eligible = listed.iter().filter(|&&l| l).count();
    let old = eligible.saturating_sub(cfg.keep_recent);
    let mut batches = Batches::with_capacity(cfg.clear_at_least as f64, old);
    // A result's tokens with its placeholder, worked out on its first turn cleared.
    let counted_with = Some(params_key(view.params));
    let older = view
        .results
        .iter()
        .zip(listed)
        .filter(|(_, l)| *l)
        .take(old);
    for (r, _) in older {
        if view.is_placeholder(r.index) {
            continue;
        }
        let new = view.memo.at(r.index).cleared.get_or_init(|| {
            keyed(placeholder(
                view.tool(r),
                &main_arg(view.call(r)),
                view.call_id(r),
            ))
        });
        let tokens = *remembered(&view.memo.at(r.index).cleared_tokens, counted_with, || {
            view.tokens_with_keyed(r.index, new)
        });
        let saved = view.tokens[r.index] - tokens;
        // A placeholder longer than the result saves nothing.
        if saved > 0.0 {
            batches.push(Edit::keyed(r.index, Pass::Clearing, new, tokens));
            batches.keep(saved);
        }
    }
    batches.into_committed()
}

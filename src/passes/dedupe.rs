//! Pass 4a, read dedupe: when the same read (same tool, same arguments) happens
//! again, the earlier result is replaced by a pointer to the newer one. The newest
//! read of each file always stays.

use super::{keyed, main_arg, tool_flags, Batches, Edit, FastMap, Pass, View, SUPERSEDED};
use crate::config::DedupeConfig;

/// The placeholder for a read (call `id`) that was repeated later.
pub fn placeholder(tool: &str, arg: &str, id: &str) -> String {
    format!("{SUPERSEDED}{tool}({arg}) was read again later; recall(\"{id}\") returns this older result.]")
}

pub fn run(view: &View<'_, '_>, cfg: &DedupeConfig) -> Vec<Edit> {
    if !cfg.enabled {
        return Vec::new();
    }
    // Candidates in the order they became candidates: when the repeat arrived. That
    // order only ever grows at its end, which keeps the batches stable.
    let mut last: FastMap<(usize, u64), usize> = FastMap::default();
    let mut batches = Batches::new(cfg.min_batch_tokens as f64);
    let listed = tool_flags(view, |t| cfg.tools.contains(t));
    for (r, listed) in view.results.iter().zip(listed) {
        if !listed {
            continue;
        }
        if r.caller.is_none() || view.is_placeholder(r.index) {
            continue;
        }
        let read_key = &view.memo.at(r.index).read_key;
        let args = match read_key.get() {
            Some(args) => *args,
            None => {
                let Some(call) = view.call(r) else { continue };
                *read_key.get_or_init(|| call.args.key())
            }
        };
        if let Some(earlier) = last.insert((r.tool_id, args), r.index) {
            let new = view.memo.at(earlier).superseded.get_or_init(|| {
                let id = view.msgs[earlier].tool_call_id.as_deref().unwrap_or("");
                keyed(placeholder(view.tool(r), &main_arg(view.call(r)), id))
            });
            let tokens = view.tokens_with_keyed(earlier, new);
            let saved = view.tokens[earlier] - tokens;
            if saved <= 0.0 {
                continue;
            }
            batches.push(Edit::keyed(earlier, Pass::Dedupe, new, tokens));
            batches.keep(saved);
        }
    }
    batches.into_committed()
}

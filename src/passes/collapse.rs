//! Pass 4b, collapse: under token pressure, a run of consecutive read/search steps
//! (an AI message calling only such tools, then exactly its results) older than the
//! recent window has its results folded into a one-line note on the first result.

use super::{
    committed_prefix, keyed, main_arg, Edit, FastMap, Pass, View, COLLAPSED, COLLAPSED_MEMBER,
};
use crate::config::CollapseConfig;
use crate::message::Role;

/// Calls listed in a note before the rest is counted.
const LISTED: usize = 8;

/// The note that replaces the first result of a collapsed run.
pub fn note(calls: &[String]) -> String {
    let mut list = calls
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if calls.len() > LISTED {
        list.push_str(&format!(" and {} more", calls.len() - LISTED));
    }
    format!(
        "{COLLAPSED}{} read/search results: {list}. Call the tools again if you need their output.]",
        calls.len()
    )
}

/// The text that replaces the other results of a collapsed run.
pub fn member() -> String {
    format!("{COLLAPSED_MEMBER}an earlier result above.]")
}

/// A read/search step starting at `i`: the AI message and its results. Returns the
/// index after the step.
fn step_end(view: &View<'_>, i: usize, is_listed: &mut impl FnMut(&str) -> bool) -> Option<usize> {
    // The cheap structural checks first, on the skeletons: most messages fail one.
    let s = view.skeletons.get(i)?;
    if !s.calls_tools() {
        return None;
    }
    let end = i + 1 + s.calls;
    if view
        .skeletons
        .get(i + 1..end)?
        .iter()
        .any(|s| s.role != Role::Tool)
    {
        return None;
    }
    let m = view.msgs.get(i)?;
    let results = view.msgs.get(i + 1..end)?;
    if !m.tool_calls.iter().all(|c| is_listed(c.name.as_str())) {
        return None;
    }
    if let ([call], [result]) = (m.tool_calls.as_slice(), results) {
        let id = call.id.as_deref()?;
        return (result.tool_call_id.as_deref()? == id).then_some(end);
    }
    // Steps are short: sorted small vectors beat hash sets here.
    let mut ids: Vec<&str> = Vec::with_capacity(m.tool_calls.len());
    for c in &m.tool_calls {
        ids.push(c.id.as_deref()?);
    }
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    let mut answered: Vec<&str> = Vec::with_capacity(results.len());
    for r in results {
        answered.push(r.tool_call_id.as_deref()?);
    }
    answered.sort_unstable();
    (answered == ids).then_some(end)
}

pub fn run(view: &View<'_>, cfg: &CollapseConfig) -> Vec<Edit> {
    if !cfg.enabled || !view.reached(cfg.trigger) {
        return Vec::new();
    }
    let mut seen: FastMap<String, bool> = FastMap::default();
    let mut is_listed = |name: &str| match seen.get(name) {
        Some(&listed) => listed,
        None => {
            let listed = cfg.collapse_tools.contains(name);
            seen.insert(name.to_owned(), listed);
            listed
        }
    };
    let limit = view.msgs.len().saturating_sub(cfg.keep_recent_messages);
    // The call a result answers, named only for the runs that collapse.
    let name = |index: usize| {
        let at = view
            .results
            .binary_search_by_key(&index, |r| r.index)
            .ok()?;
        let r = &view.results[at];
        Some(format!("{}({})", r.tool, main_arg(r.call)))
    };
    let member_text = keyed(member());

    let mut candidates: Vec<(Vec<Edit>, f64)> = Vec::new();
    let mut i = 0;
    while i < view.msgs.len() {
        let mut members: Vec<usize> = Vec::new();
        while let Some(end) = step_end(view, i, &mut is_listed) {
            members.extend(i + 1..end);
            i = end;
        }
        if members.is_empty() {
            i += 1;
            continue;
        }
        // Only closed runs (a message follows) entirely before the recent window.
        let closed = i < view.msgs.len() && i <= limit;
        if members.len() < cfg.min_group_size || !closed {
            continue;
        }
        let open: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&r| !view.is_placeholder(r))
            .collect();
        let Some((&first, rest)) = open.split_first() else {
            continue;
        };
        let listed: Vec<String> = members.iter().filter_map(|&r| name(r)).collect();
        let mut texts = vec![(first, keyed(note(&listed)))];
        texts.extend(rest.iter().map(|&r| (r, member_text.clone())));
        let edits: Vec<Edit> = texts
            .into_iter()
            .map(|(index, (text, key))| {
                let tokens = view.tokens_with_text(index, &text);
                Edit::content(index, Pass::Collapse, text, key, tokens)
            })
            .collect();
        let saved: f64 = edits.iter().map(|e| view.tokens[e.index] - e.tokens).sum();
        if saved > 0.0 {
            candidates.push((edits, saved));
        }
    }
    let n = committed_prefix(candidates.iter().map(|c| c.1), cfg.min_batch_tokens as f64);
    candidates.into_iter().take(n).flat_map(|c| c.0).collect()
}

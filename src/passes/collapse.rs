//! Pass 4b, collapse: under token pressure, a run of consecutive read/search steps
//! (an AI message calling only such tools, then exactly its results) older than the
//! recent window has its results folded into a one-line note on the first result.

use super::{
    keyed, main_arg, remembered, Batches, Edit, FastHasher, Keyed, NameIds, Pass, ToolResult, View,
    COLLAPSED, COLLAPSED_MEMBER,
};
use crate::config::CollapseConfig;

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
        "{COLLAPSED}{} read/search results: {list}. recall(a call's id) returns its full result.]",
        calls.len()
    )
}

/// The text that replaces the other results of a collapsed run.
pub fn member() -> String {
    format!("{COLLAPSED_MEMBER}an earlier result above; recall(this call's id) returns it.]")
}

/// A read/search step starting at `i`: an AI message calling only listed tools, then
/// exactly one result for each of its calls. Returns the index after the step.
/// `at` is a position in `view.results` at or before the first result after `i`
/// (moved forward here: steps are looked for in order).
fn step_end(
    view: &View<'_, '_>,
    i: usize,
    at: &mut usize,
    is_listed: &mut impl FnMut(&ToolResult) -> bool,
) -> Option<usize> {
    // The cheap structural checks first, on the skeletons: most messages fail one.
    let s = view.skeletons.get(i)?;
    if !s.calls_tools() {
        return None;
    }
    let end = i + 1 + s.calls();
    // The results right after the message: as many as it has calls, and nothing else
    // between (results are in order, one per index).
    while view.results.get(*at).is_some_and(|r| r.index <= i) {
        *at += 1;
    }
    let results = view.results.get(*at..*at + s.calls())?;
    if results.first()?.index != i + 1 || results.last()?.index != end - 1 {
        return None;
    }
    // Each answers a call of this message (the links say which), of a listed tool.
    if !results.iter().all(|r| r.caller == Some(i) && is_listed(r)) {
        return None;
    }
    // ... and no call is answered twice, so every call is answered.
    all_distinct(results.iter().map(|r| r.position), s.calls()).then_some(end)
}

/// A key for the messages in `span` as cached (their serials); `None` when some
/// message is not from the cache.
fn run_key(view: &View<'_, '_>, span: std::ops::Range<usize>) -> Option<u64> {
    use std::hash::Hasher;
    let mut h = FastHasher::default();
    for s in view.skeletons.get(span)? {
        if s.serial == 0 {
            return None;
        }
        h.write_u64(s.serial);
    }
    Some(h.finish())
}

/// Whether `positions` are distinct and all below `n`.
fn all_distinct(positions: impl Iterator<Item = usize>, n: usize) -> bool {
    if n <= 64 {
        let mut seen = 0u64;
        for p in positions {
            if p >= n || seen & (1 << p) != 0 {
                return false;
            }
            seen |= 1 << p;
        }
        return true;
    }
    let mut seen = vec![false; n];
    for p in positions {
        match seen.get_mut(p) {
            Some(s @ false) => *s = true,
            _ => return false,
        }
    }
    true
}

pub fn run(view: &View<'_, '_>, cfg: &CollapseConfig) -> Vec<Edit> {
    if !cfg.enabled || !view.reached(cfg.trigger) {
        return Vec::new();
    }
    // Whether a result's call is of a listed tool, by the key of the call's name,
    // worked out once per name.
    let mut ids = NameIds::default();
    let mut listed: Vec<bool> = Vec::new();
    let mut is_listed = |r: &ToolResult| {
        let id = ids.id(r.call_key);
        if id == listed.len() {
            listed.push(
                view.call(r)
                    .is_some_and(|c| cfg.collapse_tools.contains(c.name.as_str())),
            );
        }
        listed[id]
    };
    let limit = view.msgs.len().saturating_sub(cfg.keep_recent_messages);
    // The call a result answers, named only for the runs that collapse.
    let name = |index: usize| {
        let at = view
            .results
            .binary_search_by_key(&index, |r| r.index)
            .ok()?;
        let r = &view.results[at];
        Some(format!("{}({})", view.tool(r), main_arg(view.call(r))))
    };
    // The same text for every member: borrowed, not shared, by each edit.
    static MEMBER: std::sync::LazyLock<Keyed> = std::sync::LazyLock::new(|| keyed(member()));

    let mut batches = Batches::new(cfg.min_batch_tokens as f64);
    let mut at = 0;
    let mut i = 0;
    // Reused from run to run.
    let (mut members, mut open): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    while i < view.msgs.len() {
        let start = i;
        members.clear();
        while let Some(end) = step_end(view, i, &mut at, &mut is_listed) {
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
        open.clear();
        open.extend(members.iter().copied().filter(|&r| !view.is_placeholder(r)));
        let Some((&first, rest)) = open.split_first() else {
            continue;
        };
        let make_note = || {
            let listed: Vec<String> = members.iter().filter_map(|&r| name(r)).collect();
            keyed(note(&listed))
        };
        // The note follows from the messages of the run alone: remembered on its first
        // result under the serials of those messages.
        let note = remembered(
            &view.memo.at(first).note,
            run_key(view, start..i),
            make_note,
        );
        let tokens = view.tokens_with_keyed(first, &note);
        batches.push(Edit::keyed(first, Pass::Collapse, &note, tokens));
        for &r in rest {
            let tokens = view.tokens_with_keyed(r, &MEMBER);
            batches.push(Edit::keyed(r, Pass::Collapse, &MEMBER, tokens));
        }
        keep_if_smaller(&mut batches, view);
    }
    batches.into_committed()
}

/// The run just pushed stays when it makes the view smaller.
fn keep_if_smaller(batches: &mut Batches, view: &View<'_, '_>) {
    let saved: f64 = batches
        .candidate()
        .iter()
        .map(|e| view.tokens[e.index] - e.tokens)
        .sum();
    if saved > 0.0 {
        batches.keep(saved);
    } else {
        batches.discard();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, Role, ToolCall};
    use crate::passes::ViewParts;
    use proptest::prelude::*;

    const LISTED: [&str; 2] = ["read_file", "grep"];

    /// The step rule spelled out with ids: every call has an id and a listed name,
    /// the ids are distinct, and the next messages are exactly one result per id.
    fn step_by_ids(msgs: &[Message], i: usize) -> Option<usize> {
        let m = msgs.get(i)?;
        if m.role != Role::Ai || m.tool_calls.is_empty() {
            return None;
        }
        let end = i + 1 + m.tool_calls.len();
        let results = msgs.get(i + 1..end)?;
        let mut ids = Vec::new();
        for c in &m.tool_calls {
            if !LISTED.contains(&c.name.as_str()) {
                return None;
            }
            ids.push(c.id.clone()?);
        }
        ids.sort();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let mut answered = Vec::new();
        for r in results {
            if r.role != Role::Tool {
                return None;
            }
            answered.push(r.tool_call_id.clone()?);
        }
        answered.sort();
        (answered == ids).then_some(end)
    }

    #[test]
    fn a_run_of_many_distinct_tools_collapses_whole() {
        // More distinct tool names than `NameIds` keeps in its table: the rest go in
        // its map.
        let tools: Vec<String> = (0..60).map(|k| format!("read_{k}")).collect();
        let mut msgs = Vec::new();
        for (k, tool) in tools.iter().enumerate() {
            let mut ai = Message::text(Role::Ai, "");
            ai.tool_calls.push(ToolCall {
                id: Some(format!("c{k}")),
                name: tool.clone(),
                args: serde_json::json!({"file_path": format!("f{k}.py")}).into(),
            });
            msgs.push(ai);
            let mut r = Message::text(Role::Tool, &"line of code\n".repeat(40));
            r.tool_call_id = Some(format!("c{k}"));
            msgs.push(r);
        }
        msgs.push(Message::text(Role::Human, "thanks"));
        msgs.push(Message::text(Role::Ai, "done"));
        let cfg = CollapseConfig {
            trigger: crate::cutoff::Size::Messages(1),
            keep_recent_messages: 1,
            min_batch_tokens: 0,
            collapse_tools: tools.iter().cloned().collect(),
            ..CollapseConfig::default()
        };
        let parts = ViewParts::new(&msgs);
        let edits = run(&parts.view(), &cfg);
        let indices: Vec<usize> = edits.iter().map(|e| e.index).collect();
        assert_eq!(indices, (0..60).map(|k| 2 * k + 1).collect::<Vec<_>>());
        // Unlisted past the short list: the run stops before the unlisted step.
        let mut fewer = cfg.clone();
        fewer.collapse_tools.remove("read_55");
        let edits = run(&parts.view(), &fewer);
        let indices: Vec<usize> = edits.iter().map(|e| e.index).collect();
        assert_eq!(
            indices,
            (0..55)
                .map(|k| 2 * k + 1)
                .chain([113, 115, 117, 119])
                .collect::<Vec<_>>()
        );
    }

    fn steps_by_links(msgs: &[Message]) -> Vec<Option<usize>> {
        let parts = ViewParts::new(msgs);
        let view = parts.view();
        let n = msgs.len();
        let mut is_listed = |r: &ToolResult| {
            view.call(r)
                .is_some_and(|c| LISTED.contains(&c.name.as_str()))
        };
        let mut at = 0;
        (0..n)
            .map(|i| step_end(&view, i, &mut at, &mut is_listed))
            .collect()
    }

    /// AI messages with one to three calls, results, and humans, over a few ids (some
    /// missing, some repeated) and tool names.
    fn message() -> impl Strategy<Value = Message> {
        let id = prop::option::weighted(0.9, prop::sample::select(vec!["a", "b", "c", "d"]));
        let name = prop::sample::select(vec!["read_file", "grep", "edit_file"]);
        prop_oneof![
            prop::collection::vec((id.clone(), name), 1..4).prop_map(|calls| {
                let mut m = Message::text(Role::Ai, "");
                m.tool_calls = calls
                    .into_iter()
                    .map(|(id, name)| ToolCall {
                        id: id.map(String::from),
                        name: name.into(),
                        args: serde_json::json!({}).into(),
                    })
                    .collect();
                m
            }),
            id.prop_map(|id| {
                let mut m = Message::text(Role::Tool, "out");
                m.tool_call_id = id.map(String::from);
                m
            }),
            Just(Message::text(Role::Human, "go")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn steps_found_by_links_are_the_steps_by_ids(
            msgs in prop::collection::vec(message(), 0..14)
        ) {
            let expected: Vec<_> = (0..msgs.len()).map(|i| step_by_ids(&msgs, i)).collect();
            prop_assert_eq!(steps_by_links(&msgs), expected);
        }
    }
}

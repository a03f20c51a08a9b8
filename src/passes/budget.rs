//! Pass 1, the tool-result budget: a result over `per_tool_chars` keeps a head and a
//! tail with a marker saying how much was cut and where the full text is; the results
//! answering one AI message are held to `per_message_chars` together.

use super::{keyed, Edit, Pass, View};
use crate::config::BudgetConfig;

/// In every marker, so that a cut result is recognised.
const CUT_MARK: &str = " characters cut from this result";

/// Where the full text of a cut result can be had: a saved file, or the raw message
/// (which `recall` returns by its call's id).
#[derive(Clone, Copy)]
pub enum FullText<'a> {
    SavedAt(&'a str),
    Recall(&'a str),
    Unknown,
}

/// The marker between the head and the tail of a cut result.
fn marker(cut: usize, full: FullText<'_>) -> String {
    match full {
        FullText::SavedAt(path) => {
            format!("\n\n[… {cut}{CUT_MARK}; the full output is saved at {path} …]\n\n")
        }
        FullText::Recall(id) => {
            format!("\n\n[… {cut}{CUT_MARK}; recall(\"{id}\") returns it in full …]\n\n")
        }
        FullText::Unknown => format!("\n\n[… {cut}{CUT_MARK} …]\n\n"),
    }
}

/// `text` cut to `keep` characters: two thirds from the start, one third from the end.
pub fn head_and_tail(text: &str, keep: usize, full: FullText<'_>) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_owned();
    }
    let head = keep * 2 / 3;
    let tail = keep - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(b, _)| b);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(b, _)| b);
    format!(
        "{}{}{}",
        &text[..head_end],
        marker(total - keep, full),
        &text[tail_start..]
    )
}

/// Whether no result is over `per_tool_chars` and no turn's results are over
/// `per_message_chars` together: the common case, told in one pass when the results
/// of each turn come together (the AI messages they answer in order); `false` when
/// unsure.
fn all_within(view: &View<'_, '_>, cfg: &BudgetConfig) -> bool {
    let (mut caller, mut total) = (None, 0usize);
    for r in view.results {
        let Some(chars) = view.skeletons[r.index].text_chars() else {
            continue;
        };
        if chars > cfg.per_tool_chars {
            return false;
        }
        match r.caller {
            // Without its call, a result is a turn of its own.
            None if chars > cfg.per_message_chars => return false,
            None => {}
            Some(c) if Some(c) == caller => total += chars,
            Some(c) if caller.is_some_and(|p| c < p) => return false,
            Some(c) => (caller, total) = (Some(c), chars),
        }
        if total > cfg.per_message_chars {
            return false;
        }
    }
    true
}

pub fn run(view: &View<'_, '_>, cfg: &BudgetConfig) -> Vec<Edit> {
    if !cfg.enabled || all_within(view, cfg) {
        return Vec::new();
    }
    cut_over_budget(view, cfg)
}

/// The budget worked out group by group.
fn cut_over_budget(view: &View<'_, '_>, cfg: &BudgetConfig) -> Vec<Edit> {
    // (group, index, characters kept so far), a group being the AI message the
    // results answer. Only lengths here: texts are read for the few results cut.
    let mut kept: Vec<(usize, usize, usize)> = Vec::with_capacity(view.results.len());
    let mut cut: Vec<(usize, usize)> = Vec::new();
    for r in view.results {
        let Some(chars) = view.skeletons[r.index].text_chars() else {
            continue;
        };
        let k = if chars > cfg.per_tool_chars {
            cut.push((r.index, cfg.file_preview_chars));
            cfg.file_preview_chars
        } else {
            chars
        };
        kept.push((r.caller.unwrap_or(usize::MAX - r.index), r.index, k));
    }
    // Results mostly follow their call, so this is nearly sorted already.
    kept.sort_unstable();
    for group in kept.chunk_by_mut(|a, b| a.0 == b.0) {
        let mut total: usize = group.iter().map(|r| r.2).sum();
        if total <= cfg.per_message_chars {
            continue;
        }
        // Cut the largest results of the turn until it fits.
        group.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
        for r in group.iter_mut() {
            if total <= cfg.per_message_chars || r.2 <= cfg.file_preview_chars {
                break;
            }
            total -= r.2 - cfg.file_preview_chars;
            r.2 = cfg.file_preview_chars;
            cut.push((r.1, cfg.file_preview_chars));
        }
    }
    cut.sort_unstable();
    cut.dedup_by_key(|c| c.0);
    cut.into_iter()
        .filter_map(|(index, keep)| {
            let text = view.text(index)?;
            // Never cut a placeholder, or a result this pass already cut.
            if view.is_placeholder(index) || text.contains(CUT_MARK) {
                return None;
            }
            let id = view
                .msgs
                .get(index)
                .and_then(|m| m.tool_call_id.as_deref())
                .filter(|id| !id.is_empty());
            let full = match (view.archive.get(index).and_then(Option::as_deref), id) {
                (Some(path), _) => FullText::SavedAt(path),
                (None, Some(id)) => FullText::Recall(id),
                (None, None) => FullText::Unknown,
            };
            let new = keyed(head_and_tail(text, keep, full));
            let tokens = view.tokens_with_keyed(index, &new);
            Some(Edit::keyed(index, Pass::Budget, &new, tokens))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, Role, ToolCall};
    use crate::passes::ViewParts;
    use proptest::prelude::*;

    /// AI messages with calls and their results, some of a turn's results at times
    /// late (after the next turn's) or without a call; lengths are what matter.
    fn conversation() -> impl Strategy<Value = Vec<Message>> {
        let turn = (1usize..4, proptest::collection::vec(0usize..120, 3), 0u8..4);
        proptest::collection::vec(turn, 0..12).prop_map(|turns| {
            let mut msgs = Vec::new();
            let mut late = Vec::new();
            for (t, (calls, lens, how)) in turns.into_iter().enumerate() {
                let mut ai = Message::text(Role::Ai, "");
                for c in 0..calls {
                    ai.tool_calls.push(ToolCall {
                        id: Some(format!("c{t}-{c}")),
                        name: "read_file".into(),
                        args: serde_json::json!({}).into(),
                    });
                }
                msgs.push(ai);
                let earlier = std::mem::take(&mut late);
                for c in 0..calls {
                    let mut r = Message::text(Role::Tool, &"x".repeat(lens[c % 3]));
                    r.tool_call_id = Some(match how {
                        0 => format!("missing{t}-{c}"),
                        _ => format!("c{t}-{c}"),
                    });
                    if how == 1 && c > 0 {
                        late.push(r);
                    } else {
                        msgs.push(r);
                    }
                }
                msgs.extend(earlier);
            }
            msgs.append(&mut late);
            msgs
        })
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        /// The early exit is taken only when working the budget out finds nothing.
        #[test]
        fn early_exit_only_when_nothing_is_cut(
            msgs in conversation(),
            per_tool in 1usize..150,
            per_message in 1usize..300,
        ) {
            let parts = ViewParts::new(&msgs);
            let view = parts.view();
            let cfg = BudgetConfig {
                per_tool_chars: per_tool,
                per_message_chars: per_message,
                file_preview_chars: 1,
                ..BudgetConfig::default()
            };
            if all_within(&view, &cfg) {
                prop_assert!(cut_over_budget(&view, &cfg).is_empty());
            }
        }
    }

    #[test]
    fn head_and_tail_keeps_both_ends() {
        let text: String = ('a'..='z').collect();
        assert_eq!(
            head_and_tail(&text, 9, FullText::Unknown),
            "abcdef\n\n[… 17 characters cut from this result …]\n\nxyz"
        );
        assert_eq!(head_and_tail("short", 9, FullText::Unknown), "short");
        assert!(head_and_tail(&text, 9, FullText::SavedAt("/h/1.md")).contains("saved at /h/1.md"));
        assert!(head_and_tail(&text, 9, FullText::Recall("c7"))
            .contains("; recall(\"c7\") returns it in full …]"));
    }
}

//! Pass 1, the tool-result budget: a result over `per_tool_chars` keeps a head and a
//! tail with a marker saying how much was cut and where the full text is; the results
//! answering one AI message are held to `per_message_chars` together.

use std::collections::BTreeMap;

use super::{is_placeholder, keyed, Edit, Pass, View};
use crate::config::BudgetConfig;
use crate::message::Content;

/// In every marker, so that a cut result is recognised.
const CUT_MARK: &str = " characters cut from this result";

/// The marker between the head and the tail of a cut result.
fn marker(cut: usize, archive: Option<&str>) -> String {
    match archive {
        Some(path) => format!("\n\n[… {cut}{CUT_MARK}; the full output is saved at {path} …]\n\n"),
        None => format!("\n\n[… {cut}{CUT_MARK} …]\n\n"),
    }
}

/// `text` cut to `keep` characters: two thirds from the start, one third from the end.
pub fn head_and_tail(text: &str, keep: usize, archive: Option<&str>) -> String {
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
        marker(total - keep, archive),
        &text[tail_start..]
    )
}

pub fn run(view: &View<'_>, cfg: &BudgetConfig, gap_template: &str) -> Vec<Edit> {
    if !cfg.enabled {
        return Vec::new();
    }
    // (index, characters kept so far), grouped by the AI message they answer. Only
    // lengths here: texts are read for the few results that get cut.
    let mut groups: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    let mut cut: BTreeMap<usize, usize> = BTreeMap::new();
    for r in view.results {
        let chars = match (&view.overrides[r.index], &view.msgs[r.index].content) {
            (Some(text), _) => text.chars().count(),
            (None, Content::Text(text)) => text.chars(),
            (None, Content::Blocks(_)) => continue,
        };
        let kept = if chars > cfg.per_tool_chars {
            cut.insert(r.index, cfg.file_preview_chars);
            cfg.file_preview_chars
        } else {
            chars
        };
        groups
            .entry(r.caller.unwrap_or(usize::MAX - r.index))
            .or_default()
            .push((r.index, kept));
    }
    for results in groups.values_mut() {
        // Cut the largest results of the turn until it fits.
        let mut total: usize = results.iter().map(|r| r.1).sum();
        results.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for r in results.iter_mut() {
            if total <= cfg.per_message_chars || r.1 <= cfg.file_preview_chars {
                break;
            }
            total -= r.1 - cfg.file_preview_chars;
            r.1 = cfg.file_preview_chars;
            cut.insert(r.0, cfg.file_preview_chars);
        }
    }
    cut.into_iter()
        .filter_map(|(index, keep)| {
            let text = view.text(index)?;
            // Never cut a placeholder, or a result this pass already cut.
            if is_placeholder(text, gap_template) || text.contains(CUT_MARK) {
                return None;
            }
            let archive = view.archive.get(index).and_then(Option::as_deref);
            let (new, key) = keyed(head_and_tail(text, keep, archive));
            let tokens = view.tokens_with_text(index, &new);
            Some(Edit::content(index, Pass::Budget, new, key, tokens))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_keeps_both_ends() {
        let text: String = ('a'..='z').collect();
        assert_eq!(
            head_and_tail(&text, 9, None),
            "abcdef\n\n[… 17 characters cut from this result …]\n\nxyz"
        );
        assert_eq!(head_and_tail("short", 9, None), "short");
        assert!(head_and_tail(&text, 9, Some("/h/1.md")).contains("saved at /h/1.md"));
    }
}

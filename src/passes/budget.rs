//! Pass 1, the tool-result budget: a result over `per_tool_chars` keeps a head and a
//! tail with a marker saying how much was cut and where the full text is; the results
//! answering one AI message are held to `per_message_chars` together.

use super::{keyed, Edit, Pass, View};
use crate::config::BudgetConfig;

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

pub fn run<'m>(view: &View<'_, 'm>, cfg: &BudgetConfig) -> Vec<Edit<'m>> {
    if !cfg.enabled {
        return Vec::new();
    }
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
            let archive = view.archive.get(index).and_then(Option::as_deref);
            let new = keyed(head_and_tail(text, keep, archive));
            let tokens = view.tokens_with_keyed(index, &new);
            Some(Edit::keyed(index, Pass::Budget, &new, tokens))
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

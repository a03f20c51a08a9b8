//! What a search shows of a message: the passage that matched best (not the first
//! place a word occurs), and the phrases a query quotes.

use std::collections::HashMap;

use super::analyze::Analyzer;
use super::arguments_of;
use crate::message::Message;
use crate::render::content_text;

/// A passage's length at most, in characters.
const PASSAGE_CHARS: usize = 240;

/// The phrases in double quotes in a query, case folded, spaces made single.
pub fn phrases(query: &str) -> Vec<String> {
    query
        .split('"')
        .skip(1)
        .step_by(2)
        .map(flat)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `text` on one line, whitespace runs as one space, case folded.
fn flat(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// What a search reads of a message: its text, then its calls' arguments.
fn readable(m: &Message) -> String {
    let text = content_text(m);
    let args = arguments_of(m);
    if args.is_empty() {
        text
    } else {
        format!("{text}\n{args}")
    }
}

/// Whether a message holds every one of `phrases`.
pub fn holds_all(m: &Message, phrases: &[String]) -> bool {
    let text = flat(&readable(m));
    phrases.iter().all(|p| text.contains(p.as_str()))
}

/// `text` in units no longer than [`PASSAGE_CHARS`]: its lines, a long line cut by words.
fn units(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        for word in line.split_whitespace() {
            let over = current.chars().count() + word.chars().count() + 1 > PASSAGE_CHARS;
            if over && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            // A word longer than a passage (a path, a base64 blob) is cut.
            current.extend(word.chars().take(PASSAGE_CHARS));
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// The passage of `m` whose terms weigh most (`rarities` of the query's terms; a
/// passage holding a quoted phrase counts it as the rarest): the run of its lines,
/// within [`PASSAGE_CHARS`], that holds the most of the query, lines joined by ` | `,
/// with marks where the message goes on before or after it.
pub fn best_passage(
    analyzer: &Analyzer,
    m: &Message,
    rarities: &HashMap<&str, f32>,
    phrases: &[String],
) -> String {
    let all = units(&readable(m));
    let top = rarities.values().copied().fold(1.0f32, f32::max);
    let mut terms = Vec::new();
    let found: Vec<Vec<&str>> = all
        .iter()
        .map(|u| {
            terms.clear();
            analyzer.terms(u, &mut terms);
            let mut held: Vec<&str> = rarities
                .keys()
                .copied()
                .filter(|t| terms.iter().any(|x| x == t))
                .collect();
            held.sort_unstable();
            held
        })
        .collect();
    let mut best = (0usize, 1usize, -1.0f32);
    for start in 0..all.len() {
        let mut end = start;
        let mut chars = 0;
        while end < all.len()
            && (end == start || chars + all[end].chars().count() + 3 <= PASSAGE_CHARS)
        {
            chars += all[end].chars().count() + 3;
            end += 1;
        }
        let mut held: Vec<&str> = found[start..end].iter().flatten().copied().collect();
        held.sort_unstable();
        held.dedup();
        let mut weight: f32 = held.iter().filter_map(|t| rarities.get(t)).sum();
        if !phrases.is_empty() {
            let text = all[start..end].join(" ").to_lowercase();
            weight += top * phrases.iter().filter(|p| text.contains(p.as_str())).count() as f32;
        }
        // At equal weight, the run that opens on a match: it reads from the point.
        if !found[start].is_empty() {
            weight += 1e-3;
        }
        if weight > best.2 {
            best = (start, end, weight);
        }
    }
    let (start, end, _) = best;
    if all.is_empty() {
        return String::new();
    }
    let before = if start > 0 { "… " } else { "" };
    let after = if end < all.len() { " …" } else { "" };
    format!("{before}{}{after}", all[start..end].join(" | "))
}

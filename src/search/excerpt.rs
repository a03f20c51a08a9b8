//! What a search shows of a message: the passage that matched best (not the first
//! place a word occurs), and the phrases a query quotes.

use std::collections::HashMap;

use super::analyze::Analyzer;
use super::arguments_of;
use crate::memory::text::{char_width, width};
use crate::message::Message;
use crate::render::content_text;

/// A passage's length at most, in widths (about 60 tokens in any script: 240 Latin
/// characters, 60 Chinese; see [`width`]).
const PASSAGE: usize = 240;

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

/// `text` in units no wider than [`PASSAGE`]: its lines, a long line cut between words,
/// a word wider than a passage (a run of Chinese, a path, a blob) in pieces.
fn units(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut used = 0;
        for word in line.split_whitespace() {
            let w = width(word);
            if used + w + 1 > PASSAGE && !current.is_empty() {
                out.push(std::mem::take(&mut current));
                used = 0;
            }
            if !current.is_empty() {
                current.push(' ');
                used += 1;
            }
            for c in word.chars() {
                if used + char_width(c) > PASSAGE {
                    out.push(std::mem::take(&mut current));
                    used = 0;
                }
                current.push(c);
                used += char_width(c);
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// How a message ends: its last [`PASSAGE`] widths or fewer, lines joined by ` | `,
/// starting at a word (text without spaces, as Chinese, at a character). Where an
/// answer concludes.
pub fn ending(m: &Message) -> String {
    let text = content_text(m);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let chars: Vec<char> = lines.join(" | ").chars().collect();
    let mut start = chars.len();
    let mut used = 0;
    while start > 0 && used + char_width(chars[start - 1]) <= PASSAGE {
        used += char_width(chars[start - 1]);
        start -= 1;
    }
    if start == 0 {
        return chars.iter().collect();
    }
    // Cut inside a word (of a script with spaces): start at the next one, if one
    // starts soon.
    let in_word = |c: char| c.is_alphanumeric() && char_width(c) < 4;
    if in_word(chars[start - 1]) && in_word(chars[start]) {
        let soon = chars[start..]
            .iter()
            .take(PASSAGE / 4)
            .position(|c| *c == ' ');
        if let Some(n) = soon {
            start += n + 1;
        }
    }
    let tail: String = chars[start..].iter().collect();
    format!(
        "… {}",
        tail.trim_start_matches(|c: char| !c.is_alphanumeric())
    )
}

/// The passage of `m` whose terms weigh most (`rarities` of the query's terms; a
/// passage holding a quoted phrase counts it as the rarest): the run of its lines,
/// within [`PASSAGE`], that holds the most of the query, lines joined by ` | `,
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
        let mut used = 0;
        while end < all.len() && (end == start || used + width(&all[end]) + 3 <= PASSAGE) {
            used += width(&all[end]) + 3;
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

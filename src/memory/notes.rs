//! A model's notes held to their budget where it hurts least. The notes come in
//! sections (the summary prompt asks for numbered ones; a caller's prompt may use
//! Markdown headings); the sections a model needs to carry on (what was asked, what is
//! pending, the current work, the next step) are kept whole while the others are cut
//! down, each to the same cap, and only what is still over cuts those too.

use crate::memory::text::{width, within};

/// What stands where a section was cut short.
const SECTION_CUT: &str = "[…]";

/// The sections the summary prompt asks for, in order (the prompt's text names them
/// so: this is their one source).
pub const SECTIONS: [&str; 10] = [
    "Primary request and intent",
    "Standing instructions and current values",
    "Key technical concepts",
    "Files and code",
    "Errors and fixes",
    "Problem solving",
    "User requests",
    "Pending tasks",
    "Current work",
    "Next step",
];

/// Words in the heading of a section the model needs to carry on (compared without
/// case): the request and its intent, what still holds, what is pending, the current
/// work. The summary prompt's sections name them so; DeepAgents' prompt's do too
/// ("SESSION INTENT").
pub const ESSENTIAL: [&str; 4] = ["intent", "standing instructions", "pending", "current work"];

/// Words in the heading of the sections that go last of all: what the user asked, and
/// the next step ("NEXT STEPS" in DeepAgents' prompt).
pub const LAST_TO_GO: [&str; 4] = [
    "user request",
    "user message",
    "next step",
    "what the user asked",
];

/// How long a section holds out when notes must shrink: the others are cut first, then
/// the essential ones, and the user's asks and the next step last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Other,
    Essential,
    Last,
}

/// A section: its text (heading included) and how long it holds out.
struct Section<'a> {
    text: &'a str,
    tier: Tier,
}

/// The number a line opens as a top-level numbered item ("3. ...", "**3. ...", "3) ..."),
/// if it does.
fn item_number(line: &str) -> Option<u32> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = line
        .trim_start_matches('#')
        .trim_start()
        .trim_start_matches("**");
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = rest[digits.len()..].chars().next();
    if digits.is_empty() || digits.len() > 2 || !matches!(after, Some('.') | Some(')')) {
        return None;
    }
    digits.parse().ok()
}

/// Whether a line heads one of [`SECTIONS`]: at the start of the line, its title after
/// any heading marks, bold marks and number.
fn names_a_section(line: &str) -> bool {
    if line.starts_with(char::is_whitespace) {
        return false;
    }
    let rest = line.trim_start_matches(['#', '*', ' ']);
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.trim_start_matches(['.', ')', '*', ' ']).to_lowercase();
    SECTIONS.iter().any(|t| rest.starts_with(&t.to_lowercase()))
}

/// Where the sections start: at the lines that name the prompt's sections; else at
/// numbered items that count up from 1 (a list nested in a section starts again from
/// 1); else at the Markdown headings of the level that occurs most often.
fn starts(notes: &str) -> Vec<usize> {
    let lines: Vec<(usize, &str)> = notes
        .split_inclusive('\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line))
        })
        .collect();
    let named: Vec<usize> = lines
        .iter()
        .filter(|(_, line)| names_a_section(line))
        .map(|&(at, _)| at)
        .collect();
    if named.len() >= 2 {
        return named;
    }
    let mut numbered = Vec::new();
    let mut next = 1;
    for &(at, line) in &lines {
        if item_number(line) == Some(next) {
            numbered.push(at);
            next += 1;
        }
    }
    if numbered.len() >= 2 {
        return numbered;
    }
    let level = |line: &str| {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        (1..=6)
            .contains(&hashes)
            .then_some(hashes)
            .filter(|&h| line[h..].starts_with(' '))
    };
    let mut counts = [0usize; 7];
    for &(_, line) in &lines {
        if let Some(h) = level(line) {
            counts[h] += 1;
        }
    }
    let top = (1..=6).max_by_key(|&h| (counts[h], std::cmp::Reverse(h)));
    match top {
        Some(h) if counts[h] >= 2 => lines
            .iter()
            .filter(|(_, line)| level(line) == Some(h))
            .map(|&(at, _)| at)
            .collect(),
        _ => Vec::new(),
    }
}

/// `notes` in sections: the text before the first heading (kept as essential: it is
/// usually a line), then each section, of its [`Tier`] by the words of its heading.
fn sections(notes: &str) -> Vec<Section<'_>> {
    let starts = starts(notes);
    let mut bounds: Vec<usize> = Vec::with_capacity(starts.len() + 2);
    bounds.push(0);
    bounds.extend(starts.iter().copied().filter(|&s| s > 0));
    bounds.push(notes.len());
    bounds
        .windows(2)
        .map(|w| {
            let text = &notes[w[0]..w[1]];
            let heading = text.lines().next().unwrap_or("").to_lowercase();
            let is_preamble = w[0] == 0 && starts.first() != Some(&0);
            let tier = if LAST_TO_GO.iter().any(|e| heading.contains(e)) {
                Tier::Last
            } else if is_preamble || ESSENTIAL.iter().any(|e| heading.contains(e)) {
                Tier::Essential
            } else {
                Tier::Other
            };
            Section { text, tier }
        })
        .filter(|s| !s.text.trim().is_empty())
        .collect()
}

/// The largest cap such that the sections, each cut to it (those under it whole), fit
/// `room` widths in all.
fn cap_for(widths: &[usize], room: usize) -> usize {
    let (mut low, mut high) = (0usize, widths.iter().copied().max().unwrap_or(0));
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if widths.iter().map(|&w| w.min(mid)).sum::<usize>() <= room {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    low
}

/// A section within `cap` widths: whole, or its head (cut at a line break) and a mark.
fn cut_section(text: &str, cap: usize) -> String {
    if width(text) <= cap {
        return text.trim_end().to_owned();
    }
    let heading = text.lines().next().unwrap_or("");
    let kept = within(text, cap, SECTION_CUT);
    if kept.trim() == SECTION_CUT {
        // Not even the heading fits the cap: keep it, so the reader sees what was cut.
        format!("{}\n{SECTION_CUT}", heading.trim_end())
    } else {
        kept
    }
}

/// `notes` within `budget` widths, cut where it hurts least: the sections a model
/// needs least shrink first to a common cap (down to their headings), then the
/// essential ones (see [`ESSENTIAL`]), and the user's asks and the next step (see
/// [`LAST_TO_GO`]) only when they alone are over. Ends with `note` (which says where
/// the whole notes are) when anything was cut. Unsectioned notes are cut from the end.
/// Returns the notes and whether they were cut.
pub fn fit(notes: &str, budget: usize, note: &str) -> (String, bool) {
    if width(notes) <= budget {
        return (notes.to_owned(), false);
    }
    let parts = sections(notes);
    if parts.len() < 2 {
        return (within(notes, budget, note), true);
    }
    // Each section is joined by a line break; the note takes its own line.
    let room = budget.saturating_sub(width(note) + 1 + parts.len());
    let widths: Vec<usize> = parts.iter().map(|s| width(s.text.trim_end())).collect();
    let heading =
        |s: &Section<'_>| width(s.text.lines().next().unwrap_or("")) + width(SECTION_CUT) + 1;
    // The tier that is cut: those above it stay whole, those below keep their headings.
    let whole_above = |tier: Tier| -> usize {
        let whole: usize = parts
            .iter()
            .zip(&widths)
            .filter(|(s, _)| s.tier > tier)
            .map(|(_, w)| w)
            .sum();
        whole
            + parts
                .iter()
                .filter(|s| s.tier < tier)
                .map(heading)
                .sum::<usize>()
    };
    let cut_tier = [Tier::Other, Tier::Essential]
        .into_iter()
        .find(|&t| whole_above(t) <= room)
        .unwrap_or(Tier::Last);
    let cut: Vec<usize> = parts
        .iter()
        .zip(&widths)
        .filter(|(s, _)| s.tier == cut_tier)
        .map(|(_, &w)| w)
        .collect();
    let cap = cap_for(&cut, room.saturating_sub(whole_above(cut_tier)));
    let mut out: Vec<String> = parts
        .iter()
        .map(|s| {
            let cap = match s.tier.cmp(&cut_tier) {
                std::cmp::Ordering::Greater => usize::MAX,
                std::cmp::Ordering::Equal => cap,
                std::cmp::Ordering::Less => 0,
            };
            cut_section(s.text, cap)
        })
        .collect();
    out.push(note.to_owned());
    let text = out.join("\n");
    // The marks and headings are measured loosely: the budget is the bound.
    if width(&text) <= budget {
        (text, true)
    } else {
        (within(&text, budget, note), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nine(long: usize) -> String {
        SECTIONS
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let body = if *t == "Files and code" {
                    "- a file line\n".repeat(long)
                } else {
                    format!("- the {t} body\n")
                };
                format!("{}. {t}:\n{body}", i + 1)
            })
            .collect()
    }

    #[test]
    fn a_long_middle_section_is_cut_and_the_last_ones_stay() {
        let notes = nine(200);
        let (out, cut) = fit(&notes, 900, "(whole notes in n.md)");
        assert!(cut);
        assert!(width(&out) <= 900, "{}", width(&out));
        for kept in [
            "1. Primary request and intent:\n- the Primary request and intent body",
            "2. Standing instructions and current values:\n- the Standing instructions and current values body",
            "8. Pending tasks:\n- the Pending tasks body",
            "9. Current work:\n- the Current work body",
            "10. Next step:\n- the Next step body",
        ] {
            assert!(out.contains(kept), "{kept} missing from\n{out}");
        }
        // The long section keeps its heading and a head, marked as cut.
        assert!(out.contains("4. Files and code:\n- a file line\n"));
        assert!(out.contains(SECTION_CUT));
        // The short sections beside it stay whole.
        assert!(out.contains("5. Errors and fixes:\n- the Errors and fixes body"));
        assert!(out.ends_with("(whole notes in n.md)"));
    }

    #[test]
    fn notes_within_their_budget_are_untouched() {
        let notes = nine(3);
        assert_eq!(fit(&notes, 10_000, "x"), (notes, false));
    }

    #[test]
    fn a_nested_list_does_not_split_a_section() {
        let notes = "1. Primary request and intent:\n1. sub one\n2. sub two\n**2. Key technical concepts**\nRust\n";
        let parts = sections(notes);
        let texts: Vec<&str> = parts.iter().map(|s| s.text).collect();
        assert_eq!(
            texts,
            vec![
                "1. Primary request and intent:\n1. sub one\n2. sub two\n",
                "**2. Key technical concepts**\nRust\n"
            ]
        );
        // Numbered sections of another prompt: a nested list starts again from 1.
        let other = "1. Goal:\n1. sub one\n3. sub three\n2. Files:\nfile\n";
        let texts: Vec<&str> = sections(other).iter().map(|s| s.text).collect();
        assert_eq!(
            texts,
            vec!["1. Goal:\n1. sub one\n3. sub three\n", "2. Files:\nfile\n"]
        );
    }

    #[test]
    fn markdown_headings_are_sections_too() {
        let notes = format!(
            "## SESSION INTENT\nbuild it\n## ARTIFACTS\n{}## NEXT STEPS\nship it\n",
            "artifact line\n".repeat(100)
        );
        let (out, cut) = fit(&notes, 400, "(rest in n.md)");
        assert!(cut && width(&out) <= 400);
        assert!(out.contains("## SESSION INTENT\nbuild it"));
        assert!(out.contains("## NEXT STEPS\nship it"));
        assert!(out.contains("## ARTIFACTS\nartifact line"));
    }

    #[test]
    fn unsectioned_notes_are_cut_from_the_end() {
        let notes = "word ".repeat(100);
        let (out, cut) = fit(&notes, 60, "(more)");
        assert!(cut && width(&out) <= 60 && out.ends_with("(more)"));
    }

    #[test]
    fn the_users_asks_and_the_next_step_go_last() {
        let notes = format!(
            "1. Primary request and intent:\n{}2. Files and code:\nfile\n3. User requests:\n{}4. Next step:\nship R9\n",
            "intent line\n".repeat(30),
            (1..=40).map(|n| format!("- R{n}: rule Q{n}\n")).collect::<String>(),
        );
        // Room for the asks whole: the intent is cut to its heading before any ask goes.
        let (out, cut) = fit(&notes, width(&notes) - 200, "(more)");
        assert!(cut, "{out}");
        assert!(
            out.contains("- R1: rule Q1\n") && out.contains("- R40: rule Q40\n"),
            "{out}"
        );
        assert!(out.contains("4. Next step:\nship R9"), "{out}");
        assert!(
            out.contains("1. Primary request and intent:\nintent line\n"),
            "{out}"
        );
        // Too little room even for the asks: they are cut too, and say so.
        let (out, cut) = fit(&notes, 300, "(more)");
        assert!(cut && width(&out) <= 300, "{}", width(&out));
        assert!(
            out.contains("3. User requests:\n- R1: rule Q1\n") && out.contains(SECTION_CUT),
            "{out}"
        );
    }

    #[test]
    fn when_the_essential_sections_are_over_they_are_cut_too() {
        let notes = format!(
            "1. Primary request and intent:\n{}2. Files and code:\nfile\n3. Current work:\n{}",
            "ask line\n".repeat(100),
            "work line\n".repeat(100)
        );
        let (out, cut) = fit(&notes, 500, "(more)");
        assert!(cut && width(&out) <= 500, "{}", width(&out));
        assert!(out.contains("1. Primary request and intent:\nask line"));
        assert!(out.contains("2. Files and code:"));
        assert!(out.contains("3. Current work:\nwork line"));
    }

    proptest! {
        #[test]
        fn fitted_notes_keep_their_budget(
            long in 0usize..400,
            budget in 0usize..3_000,
        ) {
            let (out, cut) = fit(&nine(long), budget, "(more in n.md)");
            prop_assert!(width(&out) <= budget.max(width("(more in n.md)")));
            prop_assert_eq!(cut, width(&nine(long)) > budget);
        }
    }
}

//! The memory read back from its text (see [`render`](crate::memory::render)): what a
//! conversation that opens with one of our summaries carries into its next compaction
//! when the state that kept the memory is gone (a saved transcript compacted again, a
//! thread whose state was lost). Its ledger, requests in short, runs, verbatim requests,
//! notes and archive files come back as they were shown, so five compactions in a row
//! lose nothing from view that one kept.

use crate::memory::heads::{key_terms, stage};
use crate::memory::ledger::{self, cues::statements, cues::Kind};
use crate::memory::render::{
    ARCHIVE_HEADING, CONTINUED, HEADS_HEADING, LEDGER_HEADING, NOTES_HEADING, PINS_HEADING,
    REQUESTS_HEADING,
};
use crate::memory::{Head, Memory, Range, Request};

/// How every memory's text opens, whatever its version.
pub const OPENING: &str = "What came before, kept in layers";

/// The sections of a memory's text, by their heading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Intro,
    Ledger,
    Pins,
    Notes,
    Heads,
    Requests,
    Archive,
}

fn section_of(line: &str) -> Option<Section> {
    // What was added to a layer after the memory's base goes on that layer.
    let line = line.strip_suffix(CONTINUED).unwrap_or(line);
    Some(match line {
        LEDGER_HEADING => Section::Ledger,
        PINS_HEADING => Section::Pins,
        NOTES_HEADING => Section::Notes,
        HEADS_HEADING => Section::Heads,
        ARCHIVE_HEADING => Section::Archive,
        _ if line.starts_with(REQUESTS_HEADING) && line.contains("verbatim") => Section::Requests,
        _ => return None,
    })
}

/// The memory a text of ours shows, or `None` when the text is not a memory's.
pub fn parse(text: &str) -> Option<Memory> {
    if !text.trim_start().starts_with(OPENING) {
        return None;
    }
    let mut parts: Vec<(Section, Vec<&str>)> = vec![(Section::Intro, Vec::new())];
    for line in text.lines() {
        match section_of(line.trim_end()) {
            Some(s) => parts.push((s, Vec::new())),
            None => {
                if let Some((_, lines)) = parts.last_mut() {
                    lines.push(line);
                }
            }
        }
    }
    let mut m = Memory::default();
    for (section, lines) in parts {
        match section {
            Section::Intro => {}
            Section::Ledger | Section::Pins => {
                for l in &lines {
                    m.ledger.extend(entries(l));
                }
            }
            Section::Notes => notes(&mut m, &lines),
            Section::Heads => {
                for l in lines.iter().filter(|l| l.starts_with("- ")) {
                    in_short(&mut m, l);
                }
            }
            Section::Requests => m.requests = verbatim(&lines),
            Section::Archive => m.files = archive_files(&lines.join(" ")),
        }
    }
    // What the verbatim requests state is in view in their text, not on the ledger's
    // lines: read again, in order, it is in the ledger as it was.
    let stated: Vec<(u32, String)> = m
        .requests
        .iter()
        .filter_map(|r| Some((r.number, r.text.clone()?)))
        .collect();
    for (number, text) in stated {
        ledger::take_in(&mut m.ledger, number, None, &text);
    }
    Some(m)
}

/// The entries of a ledger line: one alone (see [`entry`]), or those merged on it
/// (`- topic: R1 a, b; R2 c`); none for the line that counts hidden ones (they are in
/// the archive).
fn entries(line: &str) -> Vec<ledger::Entry> {
    let Some(body) = line.strip_prefix("- ") else {
        return Vec::new();
    };
    let counted = body.starts_with("[R")
        && body
            .split_once(']')
            .is_some_and(|(tag, _)| tag.contains('-'));
    if counted {
        return Vec::new();
    }
    let merged = body
        .split_once(": ")
        .filter(|(topic, members)| !topic.starts_with('[') && starts_tagged(members));
    match merged {
        Some((topic, members)) => members
            .split("; ")
            .filter_map(|m| {
                let (tag, words) = m.split_once(' ').unwrap_or((m, ""));
                entry(&format!("- [{tag}] {words}"))
            })
            .map(|mut e| {
                // The topic says what kind of statement it is; a member read back a
                // second time opens with it already, and taking it again would push a
                // subject word out of the line at each reading.
                if !e.text.starts_with(topic) {
                    e.text = format!("{topic}: {}", e.text);
                }
                e
            })
            .collect(),
        None => entry(line).into_iter().collect(),
    }
}

/// Whether a text opens with an entry's tag (`R12 `, `P3 `).
fn starts_tagged(text: &str) -> bool {
    let Some(rest) = text.strip_prefix(['R', 'P']) else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (rest.len() == digits || rest[digits..].starts_with([' ', ';']))
}

/// A ledger line: `- [R12] words`, `- [P3] words` (a pinned note) or `- words`.
fn entry(line: &str) -> Option<ledger::Entry> {
    let rest = line.strip_prefix("- ")?.trim();
    let (tag, words) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((tag, words)) => (Some(tag), words),
        None => (None, rest),
    };
    let number = tag
        .and_then(|t| t.strip_prefix('R')?.parse().ok())
        .unwrap_or(0);
    let pin = tag.and_then(|t| t.strip_prefix('P')?.parse().ok());
    let kind = match pin {
        Some(_) => Kind::Pin,
        None => statements(words).first().map_or(Kind::Rule, |s| s.kind),
    };
    Some(ledger::Entry {
        number,
        id: None,
        kind,
        text: words.to_owned(),
        pressed: ledger::press::WHOLE,
        pin,
    })
}

fn notes(m: &mut Memory, lines: &[&str]) {
    let text = lines.join("\n").trim().to_owned();
    let cut = "(Cut here for space: the whole notes are in ";
    if let Some(at) = text.rfind(cut) {
        let file = text[at + cut.len()..].trim_end().trim_end_matches(".)");
        m.notes_file = Some(file.to_owned()).filter(|f| !f.is_empty());
    }
    m.notes = Some(text).filter(|t| !t.is_empty());
}

/// `R12` as 12.
fn number(text: &str) -> Option<u32> {
    text.trim().strip_prefix('R')?.parse().ok()
}

/// A run's numbers, as [`render`](crate::memory::render) names them.
fn run_numbers(text: &str) -> Option<(u32, u32)> {
    match text {
        "the steps before R1" => return Some((0, 0)),
        "R1 and the steps before it" => return Some((0, 1)),
        _ => {}
    }
    if let Some(rest) = text.strip_suffix(" and the steps before them") {
        let (_, last) = rest.split_once('-')?;
        return Some((0, number(last)?));
    }
    match text.split_once('-') {
        Some((a, b)) => Some((number(a)?, number(b)?)),
        None => number(text).map(|n| (n, n)),
    }
}

/// A line's archive file at its end (`(1.md)`, or `(in 1.md to 7.md)` for a run),
/// and what comes before it.
fn file_at_end(line: &str) -> (&str, Option<&str>) {
    if let Some(open) = line
        .strip_suffix(')')
        .and_then(|l| l.rfind(" (").map(|at| (l, at)))
    {
        let (l, at) = open;
        let inside = &l[at + 2..];
        if !inside.contains(' ') || inside.starts_with("in ") {
            return (&l[..at], Some(inside));
        }
    }
    (line, None)
}

/// A line of the requests in short: a run, a request alone on its line, or requests
/// on one subject sharing a line.
fn in_short(m: &mut Memory, line: &str) {
    let Some(body) = line.strip_prefix("- ") else {
        return;
    };
    let (before, file) = file_at_end(body);
    if let Some((numbers, about)) = before.split_once(": ") {
        let run = file.filter(|f| f.starts_with("in ")).map(|f| &f[3..]);
        if let (Some((first, last)), true) =
            (run_numbers(numbers), run.is_some() || numbers.contains('-'))
        {
            let (a, b) = run.map_or((None, None), |f| match f.split_once(" to ") {
                Some((a, b)) => (Some(a), Some(b)),
                None => (Some(f), Some(f)),
            });
            m.ranges.push(Range {
                first,
                last,
                first_file: a.map(str::to_owned),
                last_file: b.map(str::to_owned),
                subjects: about.split(", ").map(str::to_owned).collect(),
            });
            return;
        }
        let alone = match numbers {
            "Before R1" => Some(0),
            n => number(n),
        };
        if let Some(n) = alone {
            m.heads.push(head_alone(n, about, file));
            return;
        }
    }
    // Requests on one subject: `- subject…: R1 a, b; R2 c`.
    let Some((about, members)) = body.split_once("…: ") else {
        return;
    };
    for member in members.split("; ") {
        let (n, rest) = member.split_once(' ').unwrap_or((member, ""));
        let Some(n) = number(n) else { continue };
        // A member shows its terms, or (with none) a few of its words.
        let parts: Vec<&str> = rest.split(", ").filter(|p| !p.is_empty()).collect();
        let (text, keys) = if parts.is_empty() {
            // All it said is what the line's opening names (in the ledger above).
            (about.to_owned(), Vec::new())
        } else if parts.iter().all(|p| !p.contains(' ')) {
            (
                about.to_owned(),
                parts.iter().map(|p| (*p).to_owned()).collect(),
            )
        } else {
            (rest.to_owned(), Vec::new())
        };
        m.heads.push(Head {
            number: n,
            text,
            keys,
            shortened: stage::MERGED,
            ..Head::default()
        });
    }
}

/// `opening [terms] → answer` of a request alone on its line.
fn head_alone(number: u32, shown: &str, file: Option<&str>) -> Head {
    let (opening, answer) = match shown.split_once(" → ") {
        Some((o, a)) => (o, Some(a.to_owned())),
        None => (shown, None),
    };
    let (opening, beside) = match opening.strip_suffix(']').and_then(|o| o.rsplit_once(" [")) {
        Some((o, terms)) => (o, terms.split(", ").map(str::to_owned).collect()),
        None => (opening, Vec::new()),
    };
    let mut keys = key_terms(opening);
    for t in beside {
        if !keys.contains(&t) {
            keys.push(t);
        }
    }
    let shortened = match (&answer, file) {
        (_, None) => stage::SHORT,
        (None, Some(_)) => stage::NO_ANSWER,
        (Some(_), Some(_)) => stage::WHOLE,
    };
    Head {
        number,
        text: opening.to_owned(),
        keys,
        answer,
        file: file.map(str::to_owned),
        shortened,
        ..Head::default()
    }
}

/// Whether a line of a verbatim request's block is one of its steps (or the line that
/// counts those left out).
fn is_step(line: &str) -> bool {
    let left_out = line.starts_with('(') && line.contains(" step") && line.ends_with(')');
    let step = line.starts_with("- ")
        && (line.starts_with("- Agent: ")
            || line.starts_with("- User: ")
            || line.starts_with("- result of ")
            || line.contains(" → ")
            || (line.ends_with("\")") && line.contains(" recall(\"")));
    left_out || step
}

/// The verbatim requests: a block a request, its text, then its steps.
fn verbatim(lines: &[&str]) -> Vec<Request> {
    let mut out: Vec<(Request, Vec<&str>)> = Vec::new();
    for line in lines {
        if let Some(heading) = line.strip_prefix("### ") {
            let heading = heading.trim_end();
            let (n, continued) = match heading {
                "Before R1" => (Some(0), true),
                h => match h.strip_suffix(" (continued)") {
                    Some(h) => (number(h), true),
                    None => (number(h), false),
                },
            };
            if let Some(n) = n {
                let r = Request {
                    number: n,
                    text: (!continued).then(String::new),
                    ..Request::default()
                };
                out.push((r, Vec::new()));
                continue;
            }
        }
        if let Some((_, block)) = out.last_mut() {
            block.push(line);
        }
    }
    out.into_iter()
        .map(|(mut r, block)| {
            // The steps are the lines after the text from where every line is a step.
            let mut start = block.len();
            while start > 0 && is_step(block[start - 1]) {
                start -= 1;
            }
            if r.text.is_none() {
                start = 0;
            }
            let text_lines = &block[..start];
            if r.text.is_some() {
                let mut end = text_lines.len();
                while end > 0 && text_lines[end - 1].trim().is_empty() {
                    end -= 1;
                }
                r.text = Some(text_lines[..end].join("\n"));
            }
            for l in &block[start..] {
                if let Some(count) = left_out(l) {
                    r.left_out = count.0;
                    r.file = count.1;
                } else if !l.trim().is_empty() {
                    r.steps.push((*l).to_owned());
                }
            }
            r
        })
        .collect()
}

/// `(3 steps in 4.md)`: how many steps were left out, and where.
fn left_out(line: &str) -> Option<(u32, Option<String>)> {
    let inner = line.strip_prefix('(')?.strip_suffix(')')?;
    let (n, rest) = inner.split_once(' ')?;
    let n = n.parse().ok()?;
    let file = rest.split_once(" in ").map(|(_, f)| f.to_owned());
    Some((n, file))
}

/// The archive files the archive line names, oldest first, with their folder.
fn archive_files(line: &str) -> Vec<String> {
    let Some((_, listed)) = line.split_once("oldest first: ") else {
        return Vec::new();
    };
    let listed = listed
        .split(". Each request names")
        .next()
        .unwrap_or(listed);
    let listed = listed.trim_end().trim_end_matches('.');
    // One folder: "saved under D, one file a compaction, oldest first: RUNS" (tersely
    // "Saved under D, oldest first: RUNS"); several: "oldest first: under D, RUNS; then
    // under E, RUNS".
    let (before, _) = line.split_once("oldest first: ").unwrap_or((line, ""));
    let single = before
        .split_once("aved under ")
        .and_then(|(_, rest)| rest.split_once(", "))
        .map(|(dir, _)| dir.to_owned());
    if before.trim_end().ends_with("Saved,") {
        // Tersely, the files of several folders by their whole paths.
        return listed.split(", ").map(str::to_owned).collect();
    }
    let groups: Vec<(String, &str)> = match single {
        Some(dir) => vec![(dir, listed)],
        None if before.contains("aved beside this conversation, ") => {
            vec![(String::new(), listed)]
        }
        None => listed
            .split("; then ")
            .filter_map(|g| {
                let g = g.strip_prefix("under ").map_or_else(
                    || {
                        g.strip_prefix("beside this conversation, ")
                            .map(|r| ("", r))
                    },
                    |r| r.split_once(", "),
                )?;
                Some((g.0.to_owned(), g.1))
            })
            .collect(),
    };
    let mut out = Vec::new();
    for (dir, runs) in groups {
        for run in runs.split(", ") {
            let numbered = run.split_once(" to ").and_then(|(a, b)| {
                let a: u64 = a.strip_suffix(".md")?.parse().ok()?;
                let b: u64 = b.strip_suffix(".md")?.parse().ok()?;
                (a <= b && b - a < 100_000).then_some((a, b))
            });
            match numbered {
                Some((a, b)) => out.extend((a..=b).map(|n| format!("{dir}{n}.md"))),
                None => out.push(format!("{dir}{run}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;

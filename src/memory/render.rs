//! The memory as the text a model reads: its layers oldest first, every request under
//! its number, and where everything left out can be found.

use std::fmt::Write;

use crate::memory::base::{self, Lines};
use crate::memory::{Memory, Range, Request};

/// How the memory tells the agent to get things back: by `recall` (when it has the
/// tool), and from the archive files (when there are some).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ways {
    pub recall: bool,
}

pub const INTRO: &str = "What came before, kept in layers: what the user said that still \
holds, the oldest requests in short, then the newer ones verbatim, numbered in order, each \
followed by the steps the agent took for it.";
pub const RECALL_HINT: &str = "recall(\"<id>\") returns any message or step named here in \
full, recall(\"R<n>\") request n as the user wrote it; recall(query=\"a few words\") \
searches everything said and done in this session.";
pub const LEDGER_HEADING: &str = "## What still holds, in the user's words";
pub const PINS_HEADING: &str = "## Notes you pinned";
pub const NOTES_HEADING: &str = "## Notes on the earlier work";
pub const HEADS_HEADING: &str = "## Earlier requests, in short";
pub const REQUESTS_HEADING: &str = "## Requests";
pub const ARCHIVE_HEADING: &str = "## Archive";
/// After a layer's heading, the lines added to it since the memory's base (see
/// [`base`]), shown after the base.
pub const CONTINUED: &str = " (continued)";

/// The file's name without its folder.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The folder of a path, with its slash.
fn folder(path: &str) -> &str {
    path.rfind('/').map_or("", |at| &path[..=at])
}

/// `line` without its recall notes, when the agent has no `recall`.
fn shown(line: &str, ways: Ways) -> String {
    if ways.recall {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(" recall(\"") {
        let after = &rest[at + 9..];
        let Some(end) = after.find("\")") else {
            break;
        };
        out.push_str(&rest[..at]);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Requests `first` to `last` by number; number 0 stands for the steps before the
/// first request (a conversation that did not open with one).
fn numbers(first: u32, last: u32) -> String {
    match (first, last) {
        (0, 0) => "the steps before R1".to_owned(),
        (0, 1) => "R1 and the steps before it".to_owned(),
        (0, l) => format!("R1-R{l} and the steps before them"),
        (f, l) if f == l => format!("R{f}"),
        (f, l) => format!("R{f}-R{l}"),
    }
}

pub(super) fn range_line(r: &Range) -> String {
    let numbers = numbers(r.first, r.last);
    let files = match (&r.first_file, &r.last_file) {
        (Some(a), Some(b)) if a != b => format!(" (in {} to {})", base(a), base(b)),
        (Some(a), _) | (None, Some(a)) => format!(" (in {})", base(a)),
        (None, None) => String::new(),
    };
    let about = if r.subjects.is_empty() {
        "requests in short".to_owned()
    } else {
        r.subjects.join(", ")
    };
    format!("- {numbers}: {about}{files}")
}

fn request_block(out: &mut String, r: &Request, ways: Ways) {
    match &r.text {
        Some(t) => {
            let _ = writeln!(out, "### R{}", r.number);
            out.push_str(t.trim_end_matches('\n'));
            out.push('\n');
        }
        None if r.number == 0 => out.push_str("### Before R1\n"),
        None => {
            let _ = writeln!(out, "### R{} (continued)", r.number);
        }
    }
    if r.left_out > 0 {
        let steps = if r.left_out == 1 { "step" } else { "steps" };
        let file = r
            .file
            .as_deref()
            .map(|f| format!(" in {}", base(f)))
            .unwrap_or_default();
        let _ = writeln!(out, "({} {steps}{file})", r.left_out);
    }
    for s in &r.steps {
        out.push_str(&shown(s, ways));
        out.push('\n');
    }
}

/// The archive files as few words as they allow: runs of numbered files as "a to b".
pub fn file_runs(files: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64, &str)> = None;
    let flush = |run: &mut Option<(u64, u64, &str)>, parts: &mut Vec<String>| {
        if let Some((a, b, _)) = run.take() {
            parts.push(if a == b {
                format!("{a}.md")
            } else {
                format!("{a}.md to {b}.md")
            });
        }
    };
    for f in files {
        let number = base(f)
            .strip_suffix(".md")
            .and_then(|s| s.parse::<u64>().ok());
        match (number, run) {
            (Some(n), Some((a, b, dir))) if n == b + 1 && dir == folder(f) => {
                run = Some((a, n, dir));
            }
            (Some(n), _) => {
                flush(&mut run, &mut parts);
                run = Some((n, n, folder(f)));
            }
            (None, _) => {
                flush(&mut run, &mut parts);
                parts.push(base(f).to_owned());
            }
        }
    }
    flush(&mut run, &mut parts);
    parts.join(", ")
}

/// How a memory pressed to the least it can be opens (see [`Memory::terse`]).
pub const TERSE_INTRO: &str = "What came before, kept in layers.";

/// The memory's text.
pub fn render(m: &Memory, ways: Ways) -> String {
    render_parts(m, ways).concat()
}

/// A layer's heading and lines, when it has some.
fn section<'a>(
    out: &mut String,
    heading: &str,
    lines: impl IntoIterator<Item = &'a str>,
    ways: Ways,
) {
    let mut lines = lines.into_iter().peekable();
    if lines.peek().is_none() {
        return;
    }
    let _ = write!(out, "\n{heading}\n");
    for line in lines {
        out.push_str(&shown(line, ways));
        out.push('\n');
    }
}

/// The memory's text in parts, the steadiest first, so that a compaction that leaves
/// the opening parts as they were leaves the prefix a provider caches as it was: the
/// base (the opening, then the ledger and the requests in short as an earlier
/// compaction left them; see [`base`]); what was added to them since, and the notes;
/// each verbatim request, oldest first (a compaction that folds none only adds
/// requests after them); the archive. Empty parts are left out.
pub fn render_parts(m: &Memory, ways: Ways) -> Vec<String> {
    let mut opening = String::from(if m.terse { TERSE_INTRO } else { INTRO });
    if ways.recall && !m.terse {
        opening.push(' ');
        opening.push_str(RECALL_HINT);
    }
    opening.push('\n');
    let lines = Lines::of(m);
    let split = base::split(m, &lines);
    let layers = [
        (LEDGER_HEADING, &split.said),
        (PINS_HEADING, &split.pins),
        (HEADS_HEADING, &split.heads),
    ];
    for (heading, (kept, _)) in layers {
        section(&mut opening, heading, kept.iter().copied(), ways);
    }
    let mut added = String::new();
    for (heading, (_, new)) in layers {
        section(
            &mut added,
            &format!("{heading}{CONTINUED}"),
            new.iter().copied(),
            ways,
        );
    }
    if let Some(notes) = m.notes.as_deref().filter(|n| !n.trim().is_empty()) {
        let _ = write!(added, "\n{NOTES_HEADING}\n{}\n", notes.trim_end());
    }
    let mut parts = vec![opening, added];
    for (i, r) in m.requests.iter().enumerate() {
        let mut block = String::new();
        if i == 0 {
            let from = match r.number {
                0 => "from the start".to_owned(),
                n => format!("from R{n}"),
            };
            let _ = write!(
                block,
                "\n{REQUESTS_HEADING} {from}, verbatim, each followed by the agent's steps\n"
            );
        }
        request_block(&mut block, r, ways);
        parts.push(block);
    }
    if !m.files.is_empty() {
        let line = if m.terse {
            terse_archive_line(&m.files)
        } else {
            archive_line(&m.files)
        };
        parts.push(format!("\n{ARCHIVE_HEADING}\n{line}\n"));
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// Where a folder's files are: under it, or (a path without a folder) beside the
/// conversation.
fn place(dir: &str) -> String {
    if dir.is_empty() {
        "beside this conversation".to_owned()
    } else {
        format!("under {dir}")
    }
}

/// The archive files in the fewest words: one folder's runs (the files of other
/// folders by their whole paths).
fn terse_archive_line(files: &[String]) -> String {
    let dir = folder(&files[0]);
    if files.iter().all(|f| folder(f) == dir) {
        let place = place(dir);
        return format!("Saved {place}, oldest first: {}.", file_runs(files));
    }
    format!("Saved, oldest first: {}.", files.join(", "))
}

/// Where the archive files are, oldest first: in one folder, or (when an earlier
/// summarizer wrote elsewhere) folder by folder.
fn archive_line(files: &[String]) -> String {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for f in files {
        match groups.last_mut() {
            Some((dir, group)) if *dir == folder(f) => group.push(f.clone()),
            _ => groups.push((folder(f), vec![f.clone()])),
        }
    }
    if let [(dir, group)] = groups.as_slice() {
        return format!(
            "Every compacted message is saved {}, one file a compaction, oldest \
             first: {}. Each request names its file; read it, or grep the folder, for a \
             detail.",
            place(dir),
            file_runs(group)
        );
    }
    let places: Vec<String> = groups
        .iter()
        .map(|(dir, group)| format!("{}, {}", place(dir), file_runs(group)))
        .collect();
    format!(
        "Every compacted message is saved, oldest first: {}. Each request names its \
         file; read it, or grep the folders, for a detail.",
        places.join("; then ")
    )
}

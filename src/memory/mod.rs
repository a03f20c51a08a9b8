//! The memory of a compacted conversation, in layers, each within its budget, so that a
//! session of any length fits its window:
//! - requests verbatim, numbered and in order, each followed by the agent's steps for
//!   it (the newest steps within their own budget, the newest requests within theirs);
//! - the oldest layer: a model's notes on the older requests (they keep each request
//!   in short), or, folded without a model, the requests in short (their head and the
//!   head of their answer, with the recall ids that return them in full); beyond either,
//!   runs of them named by number and archive file.
//!
//! Nothing leaves without a way back: every line names an id `recall` returns, every
//! request its archive file. The memory lives in the graph state as plain data (see
//! [`Memory`]) and is rendered as the summary message's text ([`render`]).

pub mod render;
pub mod requests;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::message::Message;
use text::{head, width, within};

/// The heads an older request keeps of its text and of its answer, in widths.
const REQUEST_HEAD: usize = 60;
const ANSWER_HEAD: usize = 60;
/// What a verbatim request takes beside its text: its heading, and the line saying how
/// many of its steps were left out.
pub const REQUEST_OVERHEAD: usize = 30;

/// A request and what the agent did for it. `text` is `None` for the steps that carry
/// on a request an earlier compaction took.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub number: u32,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub steps: Vec<String>,
    /// Steps given up for space (the archive file has them).
    #[serde(default)]
    pub left_out: u32,
    /// The archive file of the compaction that took it.
    #[serde(default)]
    pub file: Option<String>,
}

/// A request in short.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub number: u32,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub text: String,
    /// The head of the agent's last answer to it, with its recall id.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
}

/// A run of requests named only by their numbers and archive files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub first: u32,
    pub last: u32,
    #[serde(default)]
    pub first_file: Option<String>,
    #[serde(default)]
    pub last_file: Option<String>,
}

/// The layered memory; see the module's documentation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// A model's notes on the requests in short (or an earlier summary not made here).
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub ranges: Vec<Range>,
    #[serde(default)]
    pub heads: Vec<Head>,
    #[serde(default)]
    pub requests: Vec<Request>,
    /// Every archive file written so far, oldest first.
    #[serde(default)]
    pub files: Vec<String>,
}

/// Each layer's budget, in widths (see [`text::width`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// The verbatim requests' texts.
    pub users: usize,
    /// Their steps' lines.
    pub steps: usize,
    /// The requests in short.
    pub heads: usize,
    /// A model's notes.
    pub notes: usize,
}

impl Budgets {
    /// These budgets scaled down to fit `room` widths in all.
    pub fn within(self, room: usize) -> Budgets {
        let total = self.users + self.steps + self.heads + self.notes;
        if total <= room || total == 0 {
            return self;
        }
        let scale = |b: usize| (b as u128 * room as u128 / total as u128) as usize;
        Budgets {
            users: scale(self.users),
            steps: scale(self.steps),
            heads: scale(self.heads),
            notes: scale(self.notes),
        }
    }
}

const NOTES_CUT: &str = "(The notes go on in the archive; they were cut here for space.)";

impl Memory {
    /// The memory an earlier summary stands for when it came without one (made by
    /// another summarizer): its text as the notes.
    pub fn from_summary(text: &str) -> Memory {
        Memory {
            notes: Some(text.trim_end().to_owned()).filter(|t| !t.is_empty()),
            ..Memory::default()
        }
    }

    /// The number the next request takes.
    pub fn next_number(&self) -> u32 {
        let last = self
            .requests
            .last()
            .map(|r| r.number)
            .or_else(|| self.heads.last().map(|h| h.number))
            .or_else(|| self.ranges.last().map(|r| r.last));
        last.map_or(1, |n| n + 1)
    }

    /// Take in a span of messages, its requests numbered from `first_number`, archived
    /// in `file`.
    pub fn remember(&mut self, msgs: &[&Message], first_number: u32, file: Option<&str>) {
        let span = requests::split(msgs, first_number);
        if !span.continued.is_empty() {
            match self.requests.last_mut() {
                Some(r) => r.steps.extend(span.continued),
                None => {
                    let number = self.next_number().saturating_sub(1).max(1);
                    self.requests.push(Request {
                        number,
                        steps: span.continued,
                        file: file.map(str::to_owned),
                        ..Request::default()
                    });
                }
            }
        }
        for mut r in span.requests {
            r.file = file.map(str::to_owned);
            self.requests.push(r);
        }
        if let Some(f) = file {
            if self.files.last().map(String::as_str) != Some(f) {
                self.files.push(f.to_owned());
            }
        }
    }

    /// How many of the verbatim requests must go, oldest first, for the rest to fit
    /// `budget` widths (the newest is kept when it alone fits).
    pub fn overflow(&self, budget: usize) -> usize {
        let mut used = 0;
        for (i, r) in self.requests.iter().enumerate().rev() {
            used += r.text.as_deref().map_or(0, width) + REQUEST_OVERHEAD;
            if used > budget {
                return i + 1;
            }
        }
        0
    }

    /// Hold every layer to its budget: the oldest steps give way first, then the
    /// oldest verbatim requests go into short, then the oldest requests in short into
    /// runs. Returns how many requests went into short.
    pub fn fit(&mut self, b: &Budgets) -> usize {
        self.fit_steps(b.steps);
        let folded = self.overflow(b.users);
        self.fold(folded);
        self.fit_heads(b.heads);
        if let Some(notes) = &self.notes {
            self.notes = Some(within(notes, b.notes, NOTES_CUT));
        }
        folded
    }

    /// A model's summary of all of it: `notes` (which keep every request in short)
    /// in place of the earlier notes, and every request, verbatim or in short, into the
    /// runs that name it by number and archive file; then held to `b`.
    pub fn fold_all(&mut self, notes: &str, b: &Budgets) {
        self.fold(self.requests.len());
        self.fit_heads(0);
        self.notes = Some(notes.trim().to_owned()).filter(|n| !n.is_empty());
        self.fit(b);
    }

    /// The newest steps within `budget`; older ones are counted as left out.
    fn fit_steps(&mut self, budget: usize) {
        let mut used = 0;
        for r in self.requests.iter_mut().rev() {
            // The steps from `first_kept` on stay.
            let mut first_kept = r.steps.len();
            while first_kept > 0 {
                let n = width(&r.steps[first_kept - 1]) + 1;
                if used + n > budget {
                    break;
                }
                used += n;
                first_kept -= 1;
            }
            if first_kept > 0 {
                r.left_out += first_kept as u32;
                r.steps.drain(..first_kept);
                // Older requests keep none: the budget is spent newest first.
                used = budget;
            }
        }
    }

    /// The oldest `n` verbatim requests into short.
    fn fold(&mut self, n: usize) {
        for r in self.requests.drain(..n.min(self.requests.len())) {
            let answer = r
                .steps
                .iter()
                .rev()
                .find(|s| s.starts_with("- Agent: "))
                .map(|s| head(s.trim_start_matches("- "), ANSWER_HEAD + 40).0);
            let text = match &r.text {
                Some(t) => head(t, REQUEST_HEAD).0,
                None => "(the steps that carried it on)".to_owned(),
            };
            match self.heads.last_mut() {
                // The steps that carried on a request already in short add nothing new.
                Some(h) if h.number == r.number && r.text.is_none() => {
                    if answer.is_some() {
                        h.answer = answer;
                    }
                }
                _ => self.heads.push(Head {
                    number: r.number,
                    id: r.id,
                    text,
                    answer,
                    file: r.file,
                }),
            }
        }
    }

    /// The newest requests in short within `budget`; older ones join the runs.
    fn fit_heads(&mut self, budget: usize) {
        let mut used = 0;
        let mut keep_from = self.heads.len();
        for (i, h) in self.heads.iter().enumerate().rev() {
            let n = width(&render::head_line(h)) + 1;
            if used + n > budget {
                break;
            }
            used += n;
            keep_from = i;
        }
        for h in self.heads.drain(..keep_from) {
            match self.ranges.last_mut() {
                Some(r) if r.last + 1 >= h.number => {
                    r.last = r.last.max(h.number);
                    if h.file.is_some() {
                        r.last_file = h.file;
                    }
                }
                _ => self.ranges.push(Range {
                    first: h.number,
                    last: h.number,
                    first_file: h.file.clone(),
                    last_file: h.file,
                }),
            }
        }
    }
}

/// `notes` with every verbatim copy of a request's text (one of `texts`, with its
/// number, at least `min_chars` long) replaced by the request's number: the requests
/// stand in the memory by number, so notes that quote them would only repeat them.
pub fn notes_without_quotes(notes: &str, texts: &[(u32, String)], min_chars: usize) -> String {
    let mut out = notes.to_owned();
    let mut sorted: Vec<&(u32, String)> = texts
        .iter()
        .filter(|(_, t)| t.trim().chars().count() >= min_chars)
        .collect();
    // Longer texts first, so a text that holds a shorter one is replaced whole.
    sorted.sort_by_key(|(_, t)| std::cmp::Reverse(t.len()));
    for (n, t) in sorted {
        let t = t.trim();
        if out.contains(t) {
            out = out.replace(t, &format!("(request R{n})"));
        }
    }
    out
}

#[cfg(test)]
mod tests;

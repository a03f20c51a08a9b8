//! The memory of a compacted conversation, in layers, each within its budget, so that a
//! session of any length fits its window:
//! - first, the ledger of what binds (see [`ledger`]): the user's rules, limits,
//!   preferences, facts and goal, the latest of each, in their words, and the agent's
//!   pinned notes; the last thing to shrink, and never folded;
//! - requests verbatim, numbered and in order, each followed by the agent's steps for
//!   it (the newest steps within their own budget, the newest requests within theirs);
//! - the oldest layer: a model's notes on the older requests, and every request the
//!   notes do not name in short (see [`heads`]): its opening words and every name,
//!   number, path and code it holds, under the number `recall("R<n>")` returns it by.
//!
//! Nothing leaves without a way back: every line names an id `recall` returns, every
//! request its archive file. The memory lives in the graph state as plain data (see
//! [`Memory`]) and is rendered as the summary message's text ([`render`]).

pub mod base;
mod binding;
pub mod heads;
pub mod ledger;
pub mod notes;
pub mod parse;
pub mod render;
pub mod requests;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::message::{Message, Role};
use crate::render::content_text;
use text::{head, width};
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

/// A request in short (see [`heads`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub number: u32,
    #[serde(default)]
    pub id: Option<String>,
    /// Its opening words.
    #[serde(default)]
    pub text: String,
    /// Every name, number, path and code it holds (see [`heads::key_terms`]).
    #[serde(default)]
    pub keys: Vec<String>,
    /// The head of the agent's last answer to it, with its recall id.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    /// How far it was shortened for space (see [`heads::stage`]).
    #[serde(default)]
    pub shortened: u8,
    /// A model's notes name it: they stand for it in view.
    #[serde(default)]
    pub in_notes: bool,
}

/// A run of requests named only by their numbers and archive files: what an earlier
/// summary made elsewhere replaced (its words are in its text), or, past
/// [`HEADS_CEILING`] times the heads' budget, the oldest requests in short.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub first: u32,
    pub last: u32,
    #[serde(default)]
    pub first_file: Option<String>,
    #[serde(default)]
    pub last_file: Option<String>,
    /// What its requests were about (their subjects, first seen first): a run is never
    /// a bare range of numbers.
    #[serde(default)]
    pub subjects: Vec<String>,
}

/// The layered memory; see the module's documentation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// What binds later work, oldest first (see [`ledger`]).
    #[serde(default)]
    pub ledger: Vec<ledger::Entry>,
    /// A model's notes on the requests in short (or an earlier summary not made here).
    #[serde(default)]
    pub notes: Option<String>,
    /// The file that holds the notes whole, once they were cut for space.
    #[serde(default)]
    pub notes_file: Option<String>,
    #[serde(default)]
    pub ranges: Vec<Range>,
    #[serde(default)]
    pub heads: Vec<Head>,
    #[serde(default)]
    pub requests: Vec<Request>,
    /// Every archive file written so far, oldest first.
    #[serde(default)]
    pub files: Vec<String>,
    /// Shown in the fewest words (no reading guide, the archive in a line): the room
    /// left nothing more to give.
    #[serde(default)]
    pub terse: bool,
    /// The lines shown first, as an earlier compaction left them (see [`base`]).
    #[serde(default)]
    pub base: Option<base::Base>,
}

/// Each layer's budget, in widths (see [`text::width`]), and the room the whole memory
/// must fit (`None`: no window known), where a token of the conversation takes
/// `per_token` widths.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budgets {
    /// The ledger's: it has the first claim on the room.
    pub ledger: usize,
    /// The verbatim requests' texts.
    pub users: usize,
    /// Their steps' lines.
    pub steps: usize,
    /// The requests in short.
    pub heads: usize,
    /// A model's notes.
    pub notes: usize,
    /// The verbatim requests a model summary leaves (the older ones fold beside it).
    pub folded_users: usize,
    /// What the whole memory's text must fit, in widths.
    pub room: Option<usize>,
    /// Widths a token (0: the assumed [`crate::config::WIDTHS_PER_TOKEN`]).
    pub per_token: f64,
}

impl Budgets {
    /// These budgets with the whole memory held to `room` widths, the layers after the
    /// ledger scaled down to fit what the ledger leaves of it (see [`Budgets::after`]).
    pub fn within(self, room: usize) -> Budgets {
        Budgets {
            room: Some(room),
            ..self
        }
        .after(0)
    }

    /// The layers' budgets once the ledger takes `ledger` widths of the room: scaled
    /// down, when they would not fit beside it, to what is left.
    pub fn after(self, ledger: usize) -> Budgets {
        let Some(room) = self.room else {
            return self;
        };
        let left = room.saturating_sub(ledger);
        let total = self.users + self.steps + self.heads + self.notes;
        if total <= left || total == 0 {
            return self;
        }
        let scale = |b: usize| (b as u128 * left as u128 / total as u128) as usize;
        Budgets {
            users: scale(self.users),
            steps: scale(self.steps),
            heads: scale(self.heads),
            notes: scale(self.notes),
            folded_users: scale(self.folded_users),
            ..self
        }
    }
}

/// How many times their budget the requests in short may take, their terms kept, before
/// the oldest give way to runs: a session of any length still fits its window.
pub const HEADS_CEILING: usize = 4;

/// The subjects a run names (the first it took in), and those it keeps when the room
/// leaves it no more.
const RUN_SUBJECTS: usize = 8;
const RUN_SUBJECTS_AT_LEAST: usize = 4;

/// What the run of requests an earlier summary (made elsewhere) replaced is about.
pub const EARLIER_SUBJECT: &str = "what the notes above say";

/// What ends notes cut for space when no archive file holds them whole.
const NOTES_CUT: &str = "(Cut here for space.)";

/// A model's notes may quote a request; quoting one this short says nothing it repeats.
pub const QUOTE_MIN_CHARS: usize = 24;

/// What ends notes cut for space whose whole text is in `file`.
fn notes_cut_in(file: &str) -> String {
    format!("(Cut here for space: the whole notes are in {file}.)")
}

/// What holding the memory to its budgets did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fitted {
    /// How many requests left the verbatim layer.
    pub folded: usize,
    /// Notes cut for space that no file holds whole yet: the caller writes them to the
    /// notes file it named (now the memory's `notes_file`, which the cut names).
    pub to_save: Option<String>,
}

impl Memory {
    /// The memory an earlier summary stands for when it came without one (made by
    /// another summarizer, DeepAgents' say): its text as the notes, and the `before`
    /// requests it replaced as a run in `file`, the archive it wrote them to.
    pub fn from_summary(text: &str, file: Option<&str>, before: u32) -> Memory {
        let file = file.filter(|f| !f.is_empty()).map(str::to_owned);
        let ranges = if before > 0 {
            vec![Range {
                first: 1,
                last: before,
                first_file: file.clone(),
                last_file: file.clone(),
                subjects: vec![EARLIER_SUBJECT.to_owned()],
            }]
        } else {
            Vec::new()
        };
        // What it says still binds is in the ledger, as a user's statements are.
        let mut ledger = Vec::new();
        ledger::take_in(&mut ledger, 0, None, text);
        Memory {
            ledger,
            notes: Some(text.trim_end().to_owned()).filter(|t| !t.is_empty()),
            ranges,
            files: file.into_iter().collect(),
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
    /// in `file`: its requests and steps, and into the ledger what they state that binds
    /// and what the agent pinned.
    pub fn remember(&mut self, msgs: &[&Message], first_number: u32, file: Option<&str>) {
        let span = requests::split(msgs, first_number);
        if !span.continued.is_empty() {
            match self.requests.last_mut() {
                Some(r) => r.steps.extend(span.continued),
                None => {
                    // The request they carry on is in short or in a run; with none
                    // before them at all, they stand before R1 (number 0).
                    let number = self.next_number().saturating_sub(1);
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
        // Read once its requests are in: a statement replaced within the span leaves
        // its request's text too.
        self.read_ledger(msgs, first_number, true);
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
    /// oldest verbatim requests go into short, and the requests in short shorten (see
    /// [`heads::shorten`]); notes over theirs are cut where it hurts least (see
    /// [`notes::fit`]), and the requests they no longer name show in short again.
    /// `notes_file` is where notes cut here are to be saved whole.
    pub fn fit(&mut self, b: &Budgets, notes_file: Option<&str>) -> Fitted {
        let b = self.fit_ledger(b);
        self.fit_steps(b.steps);
        let folded = self.overflow(b.users);
        self.fold(folded);
        // The statements of the requests that left the verbatim layer show now.
        self.fit_ledger(&b);
        let to_save = self.fit_notes(b.notes, notes_file);
        self.mark_named();
        self.fit_heads(b.heads, HEADS_CEILING);
        self.fit_room(&b, notes_file, Fitted { folded, to_save })
    }

    /// The whole memory's text held to the room, when held to the layers' budgets it is
    /// still over (the requests in short keep their terms whatever their budget): the
    /// layers give way, a halving at a time, the requests in short to runs named by
    /// their subjects; then the ledger presses to its terms; the runs go last.
    fn fit_room(&mut self, b: &Budgets, notes_file: Option<&str>, mut done: Fitted) -> Fitted {
        self.terse = false;
        let Some(room) = b.room else {
            return done;
        };
        let per_token = b.per_token;
        let over = |m: &Memory| {
            ledger::cost(&render::render(m, render::Ways { recall: true }), per_token) > room
        };
        let mut share = 1;
        while over(self) && share <= 1 << 10 {
            share *= 2;
            self.fit_steps(b.steps / share);
            let n = self.overflow(b.users / share);
            self.fold(n);
            done.folded += n;
            if let Some(t) = self.fit_notes(b.notes / share, notes_file) {
                done.to_save = Some(t);
            }
            self.mark_named();
            self.fit_heads(b.heads / share, 1);
        }
        if over(self) {
            self.press_ledger(0, ledger::press::MERGED, per_token);
        }
        if over(self) {
            self.one_run();
        }
        self.terse = over(self);
        // The last resort, so that a call is never over the window because of the
        // memory: the oldest statements hide behind a line that counts and names them.
        let mut budget = ledger::shown_width(&self.ledger_shown());
        while over(self) && budget > 0 {
            budget /= 2;
            self.press_ledger(budget, ledger::press::HIDDEN, per_token);
        }
        done
    }

    /// The runs of requests in short as one, its subjects cut to the first few.
    fn one_run(&mut self) {
        let (Some(first), Some(last)) = (self.ranges.first(), self.ranges.last()) else {
            return;
        };
        let mut run = Range {
            first: first.first,
            last: last.last,
            first_file: first.first_file.clone(),
            last_file: last.last_file.clone(),
            subjects: Vec::new(),
        };
        for s in self.ranges.iter().flat_map(|r| &r.subjects) {
            if run.subjects.len() < RUN_SUBJECTS_AT_LEAST && !run.subjects.contains(s) {
                run.subjects.push(s.clone());
            }
        }
        self.ranges = vec![run];
    }

    /// A model's summary of all of it: `notes` in place of the earlier notes. The newest
    /// requests stay verbatim within `b.folded_users`, and the notes do not repeat them
    /// (a quote of one becomes its number, which stands in view); every older request
    /// the notes do not name by all its terms stays in short beside them (a summary
    /// never makes the user's words disappear). Then all of it is held to `b`.
    pub fn fold_all(&mut self, notes: &str, b: &Budgets, notes_file: Option<&str>) -> Fitted {
        let b = self.fit_ledger(b);
        self.fit_steps(b.steps);
        let folded = self.overflow(b.folded_users.min(b.users));
        self.fold(folded);
        self.fit_ledger(&b);
        let verbatim: Vec<(u32, String)> = self
            .requests
            .iter()
            .filter_map(|r| r.text.clone().map(|t| (r.number, t)))
            .collect();
        let notes = notes_without_quotes(notes, &verbatim, QUOTE_MIN_CHARS);
        self.notes = Some(notes.trim().to_owned()).filter(|n| !n.is_empty());
        self.notes_file = None;
        let to_save = self.fit_notes(b.notes, notes_file);
        self.mark_named();
        // The statements the notes name show there: the ledger shows the rest.
        self.fit_ledger(&b);
        self.fit_heads(b.heads, HEADS_CEILING);
        self.fit_room(&b, notes_file, Fitted { folded, to_save })
    }

    /// Which requests in short the notes, as they now stand in view, name.
    fn mark_named(&mut self) {
        let notes = self.notes.as_deref().unwrap_or("");
        for h in &mut self.heads {
            h.in_notes = !notes.is_empty() && heads::named_in(h, notes);
        }
    }

    /// The notes within `budget`, cut where it hurts least; the cut names the file that
    /// holds them whole: the one that took them at an earlier cut, else `notes_file`,
    /// which must then take them (returned).
    fn fit_notes(&mut self, budget: usize, notes_file: Option<&str>) -> Option<String> {
        let notes = self.notes.take()?;
        if width(&notes) <= budget {
            self.notes = Some(notes);
            return None;
        }
        // Cut before, the notes end with the line naming their file: cut again, they
        // name it once.
        let notes = match &self.notes_file {
            Some(f) => notes
                .trim_end()
                .strip_suffix(&notes_cut_in(f))
                .map_or(notes.clone(), |n| n.trim_end().to_owned()),
            None => notes,
        };
        let file = self
            .notes_file
            .clone()
            .or_else(|| notes_file.map(str::to_owned));
        let note = file.as_deref().map_or(NOTES_CUT.to_owned(), notes_cut_in);
        let (fitted, _) = notes::fit(&notes, budget, &note);
        self.notes = Some(fitted).filter(|n| !n.trim().is_empty());
        if self.notes_file.is_some() || file.is_none() {
            return None;
        }
        self.notes_file = file;
        Some(notes)
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
                .map(|s| head(s.trim_start_matches("- "), heads::ANSWER).0);
            match self.heads.last_mut() {
                // The steps that carried on a request already in short add nothing new.
                Some(h) if h.number == r.number && r.text.is_none() => {
                    if answer.is_some() {
                        h.answer = answer;
                    }
                }
                _ => {
                    // What its ledger entries show it need not show again, nor what a later
                    // statement replaced (a mark stands there).
                    let beside = r
                        .text
                        .as_deref()
                        .map(|t| ledger::beside_ledger(&self.ledger, r.number, t));
                    let opening = beside.as_ref().map(|(o, _)| o.as_str());
                    let (text, keys) = heads::of_request(r.number, opening);
                    let keys = match &beside {
                        Some((_, said)) => heads::key_terms(&ledger::without_marks(said)),
                        None => keys,
                    };
                    // A request that opens with what the ledger shows is in view there,
                    // under its number: it needs no line in short (see `supersede`).
                    if text == ledger::STATED_ABOVE && keys.is_empty() {
                        continue;
                    }
                    self.heads.push(Head {
                        number: r.number,
                        id: r.id,
                        text,
                        keys,
                        answer,
                        file: r.file,
                        ..Head::default()
                    });
                }
            }
        }
    }

    /// The requests in short within `budget`, shortened as they must be (their terms
    /// kept); only past `ceiling` times it do the oldest join the runs.
    fn fit_heads(&mut self, budget: usize, ceiling: usize) {
        let used = heads::shorten(&mut self.heads, budget);
        let ceiling = budget.saturating_mul(ceiling);
        let mut gone = 0;
        if used > ceiling {
            // A twentieth at a time: this is a session far past its window's measure.
            let step = (self.heads.len() / 20).max(1);
            while gone < self.heads.len() && heads::shown_width(&self.heads[gone..]) > ceiling {
                gone = (gone + step).min(self.heads.len());
            }
        }
        if gone == 0 {
            return;
        }
        for h in self.heads.drain(..gone) {
            // What it was about: its first plain words, else (all terms) its opening.
            let about = Some(heads::subject(&h.text))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| head(&h.text, heads::SHORT_OPENING).0);
            match self.ranges.last_mut() {
                Some(r) if r.last + 1 >= h.number => {
                    r.last = r.last.max(h.number);
                    if h.file.is_some() {
                        r.last_file = h.file;
                    }
                    if !about.is_empty()
                        && !r.subjects.contains(&about)
                        && r.subjects.len() < RUN_SUBJECTS
                    {
                        r.subjects.push(about);
                    }
                }
                _ => self.ranges.push(Range {
                    first: h.number,
                    last: h.number,
                    first_file: h.file.clone(),
                    last_file: h.file,
                    subjects: (!about.is_empty()).then_some(about).into_iter().collect(),
                }),
            }
        }
    }
}

/// An earlier summary that came without a memory (made by another summarizer): its
/// text, and the archive file it names.
#[derive(Clone, Copy, Debug)]
pub struct Earlier<'a> {
    pub text: &'a str,
    pub file: Option<&'a str>,
}

/// Where a compaction's span goes: the archive file of its messages, and the file that
/// takes notes cut for space whole.
#[derive(Clone, Copy, Debug, Default)]
pub struct Files<'a> {
    pub archive: Option<&'a str>,
    pub notes: Option<&'a str>,
}

/// What a compaction takes into the memory: the messages leaving the view (their
/// requests numbered from `first_number`), and those that stay (`kept`), whose newer
/// statements replace what the ledger held.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub msgs: &'a [&'a Message],
    pub first_number: u32,
    pub kept: &'a [&'a Message],
}

/// The memory a compaction leaves: `previous` (else what `earlier` stands for) with the
/// `span` taken in, archived in `files.archive`; then held to `b`, or, with a model's
/// `notes` on all of it, folded beside them (see [`Memory::fold_all`]).
pub fn after_compaction(
    previous: Option<Memory>,
    earlier: Option<Earlier<'_>>,
    span: Span<'_>,
    files: Files<'_>,
    b: &Budgets,
    notes: Option<&str>,
) -> (Memory, Fitted) {
    let mut memory = taken_in(previous, earlier, span, files.archive);
    let fitted = match notes {
        Some(n) => memory.fold_all(n, b, files.notes),
        None => memory.fit(b, files.notes),
    };
    memory.settle_base();
    (memory, fitted)
}

/// The digest and the fold (beside notes not yet written) of one span, as
/// [`after_compaction`] makes each, with the span taken in once: what a price check
/// weighs against each other.
pub fn digest_and_fold(
    previous: Option<Memory>,
    earlier: Option<Earlier<'_>>,
    span: Span<'_>,
    files: Files<'_>,
    b: &Budgets,
) -> ((Memory, Fitted), (Memory, Fitted)) {
    let mut digest = taken_in(previous, earlier, span, files.archive);
    let mut fold = digest.clone();
    let fitted = digest.fit(b, files.notes);
    let folded = fold.fold_all("", b, files.notes);
    digest.settle_base();
    fold.settle_base();
    ((digest, fitted), (fold, folded))
}

/// `previous` (else the memory an earlier summary's text stands for) with `span`
/// taken in, before it is held to its budgets.
fn taken_in(
    previous: Option<Memory>,
    earlier: Option<Earlier<'_>>,
    span: Span<'_>,
    archive: Option<&str>,
) -> Memory {
    let mut first = span.first_number;
    let mut memory = match (previous, earlier) {
        (Some(m), _) => m,
        // Our own summary whose state is gone is read back, and its numbering goes on;
        // another summarizer's stands for the requests before the span, the ones it
        // replaced.
        (None, Some(e)) => match parse::parse(e.text) {
            Some(m) => {
                first = m.next_number().max(first);
                m
            }
            None => Memory::from_summary(e.text, e.file, first.saturating_sub(1)),
        },
        (None, None) => Memory::default(),
    };
    memory.remember(span.msgs, first, archive);
    memory.superseded_by(span.kept);
    memory
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

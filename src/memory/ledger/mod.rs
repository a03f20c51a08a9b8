//! The ledger of what binds: the statements of the user's that bind later work (rules,
//! limits, preferences, facts of their world, the goal and where it stands; see
//! [`cues`]), and the notes the agent pinned itself. It has the first claim on the
//! memory's room and is the last thing to shrink: each entry in the user's own words,
//! pressed to its key words and then to its terms only when the room demands it, and
//! never folded. A later statement about the same thing replaces an earlier one (it says
//! it does: "from now on", "instead"; or it gives the same subject a new value: "the
//! region is ..."); the one replaced leaves the view and stays in the archive.

pub mod cues;

use std::collections::HashSet;

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

use crate::memory::heads::key_terms;
use crate::memory::text::{head, width};
use crate::search::analyze::stemmable;
use cues::{found, is_cjk, is_value_word, statements, words_of, Group, Kind, STOP_WORDS};

/// One statement that binds, or a pinned note.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The request it was stated in (0: an earlier summary's, or unknown).
    pub number: u32,
    #[serde(default)]
    pub id: Option<String>,
    pub kind: Kind,
    /// In the user's words (or the agent's, for a pinned note).
    pub text: String,
    /// How far it is pressed for room (see [`press`]).
    #[serde(default)]
    pub pressed: u8,
    /// The pin's number (`P3`), for a note the agent pinned.
    #[serde(default)]
    pub pin: Option<u32>,
}

/// How far an entry is pressed for room; each stage but the last keeps every term of
/// the one before.
pub mod press {
    /// As stated (a very long statement keeps its head and every term).
    pub const WHOLE: u8 = 0;
    /// Its words without the little ones, cut to a line, its terms kept.
    pub const KEY_WORDS: u8 = 1;
    /// Its first key words and its terms.
    pub const TERMS: u8 = 2;
    /// Its number and terms on one line with the entries beside it on its subject.
    pub const MERGED: u8 = 3;
    /// Counted on a line with the others hidden, named by their subjects: only when
    /// the window leaves the memory no room for even their terms.
    pub const HIDDEN: u8 = 4;
}

/// The widths an entry keeps at each stage before its terms.
const WIDTHS: [usize; 3] = [400, 120, 32];

/// The tool the agent pins its notes with, and how its results read (one source, for
/// the tool that writes them and the memory that reads them).
pub const PIN_TOOL: &str = "pin";
const PINNED: &str = "Pinned P";
const UNPINNED: &str = "Unpinned P";

/// What the pin tool answers when it pins `note` as number `n`.
pub fn pinned_result(n: u32, note: &str) -> String {
    format!("{PINNED}{n}: {}", note.trim())
}

/// What the pin tool answers when it unpins number `n`.
pub fn unpinned_result(n: u32) -> String {
    format!("{UNPINNED}{n}.")
}

/// A pin tool's result read: the number it pinned and its note, or the number it
/// unpinned (no note).
pub fn pin_change(result: &str) -> Option<(u32, Option<String>)> {
    if let Some(rest) = result.strip_prefix(PINNED) {
        let (n, note) = rest.split_once(": ")?;
        return Some((n.parse().ok()?, Some(note.trim().to_owned())));
    }
    let rest = result.strip_prefix(UNPINNED)?;
    Some((rest.strip_suffix('.')?.parse().ok()?, None))
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: std::sync::OnceLock<Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// What a statement is about, for telling whether a later one replaces it: its words
/// (stemmed) but the little ones, the numbers and the words that only say it binds or
/// changes ("never", "from now on"), and its Chinese as pairs of characters.
fn subject(text: &str) -> HashSet<String> {
    let mut out: HashSet<String> = subject_order(text)
        .iter()
        .map(|w| match stemmable(w) {
            true => stemmer().stem(w).into_owned(),
            false => w.clone(),
        })
        .collect();
    out.extend(cjk_pairs(text));
    out
}

/// The pairs of neighbouring CJK characters of `text`.
fn cjk_pairs(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .windows(2)
        .filter(|w| is_cjk(w[0]) && is_cjk(w[1]))
        .map(|w| w.iter().collect())
        .collect()
}

/// How much two subjects share: a word counts one, a pair of characters a half.
fn shared(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    a.intersection(b)
        .map(|w| if w.chars().any(is_cjk) { 0.5 } else { 1.0 })
        .sum()
}

/// What a statement that gives a value names before its verb ("our region is ...",
/// "区域是 ..."): the subject of its first part, if it has one.
fn assigned(text: &str) -> Option<HashSet<String>> {
    let lower = text.to_lowercase();
    let at = [" is ", " are ", "是", "为"]
        .iter()
        .filter_map(|v| lower.find(v))
        .min()?;
    let named = subject(&lower[..at]);
    (!named.is_empty()).then_some(named)
}

/// The entry a new statement replaces, if any: the same words again; an entry of its
/// kind that it says it updates and shares most of its subject with; or one of its kind
/// whose subject it gives a new value.
fn replaced(entries: &[Entry], text: &str, kind: Kind, update: bool) -> Option<usize> {
    // The same words again: compared by their letters and digits, in any script.
    let flat = |t: &str| -> String {
        t.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let said = flat(text);
    if let Some(i) = entries
        .iter()
        .rposition(|e| e.pin.is_none() && !said.is_empty() && flat(&e.text) == said)
    {
        return Some(i);
    }
    let same_kind = || {
        entries
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.pin.is_none() && e.kind == kind)
    };
    if update {
        let about = subject(text);
        let best = same_kind()
            .map(|(i, e)| (shared(&subject(&e.text), &about), i))
            .filter(|(score, _)| *score >= 1.0)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((_, i)) = best {
            return Some(i);
        }
    }
    let named = assigned(text)?;
    entries.iter().rposition(|e| {
        e.pin.is_none() && e.kind == kind && assigned(&e.text).as_ref() == Some(&named)
    })
}

/// Take in what a user's message `text` (request `number`, message id `id`) states:
/// each statement that binds, replacing the entry it supersedes. Returns the entries
/// replaced.
pub fn take_in(entries: &mut Vec<Entry>, number: u32, id: Option<&str>, text: &str) -> Vec<Entry> {
    let mut gone = Vec::new();
    for s in statements(text) {
        if let Some(i) = replaced(entries, &s.text, s.kind, s.update) {
            gone.push(entries.remove(i));
        }
        entries.push(Entry {
            number,
            id: id.map(str::to_owned),
            kind: s.kind,
            text: s.text,
            pressed: press::WHOLE,
            pin: None,
        });
    }
    gone
}

/// Drop the entries that the statements of a message still in view replace (the newer
/// words are in view; the older must not stand beside them). Returns those dropped.
pub fn superseded_by(entries: &mut Vec<Entry>, text: &str) -> Vec<Entry> {
    let mut gone = Vec::new();
    for s in statements(text) {
        if let Some(i) = replaced(entries, &s.text, s.kind, s.update) {
            gone.push(entries.remove(i));
        }
    }
    gone
}

/// What stands in a request's text, in short or verbatim, where a statement a later
/// one replaced was (`by`: the request that replaced it, 0 when not numbered yet). Its
/// words say nothing that binds, so it is never read as a statement again.
pub fn superseded_mark(by: u32) -> String {
    match by {
        0 => "(superseded: see below)".to_owned(),
        n => format!("(superseded: see R{n})"),
    }
}

/// A pin tool's result taken in: the note pinned (under request `number`), or the pin
/// it names let go. `keep_new`: a pin is added (false: only unpins apply, for results
/// still in view).
pub fn pin_result(entries: &mut Vec<Entry>, number: u32, result: &str, keep_new: bool) {
    let Some((n, note)) = pin_change(result) else {
        return;
    };
    entries.retain(|e| e.pin != Some(n));
    if let (Some(note), true) = (note, keep_new) {
        entries.push(Entry {
            number,
            id: None,
            kind: Kind::Pin,
            text: note,
            pressed: press::WHOLE,
            pin: Some(n),
        });
    }
}

/// An entry's words as shown at its stage: whole (its head, when very long), or without
/// the little words, cut; its terms beside whatever was cut.
pub fn shown(e: &Entry) -> String {
    let stage = usize::from(e.pressed.min(press::TERMS));
    let text = if stage == 0 {
        e.text.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        key_words(&e.text)
    };
    let (mut out, _) = head(&text, WIDTHS[stage]);
    let terms: Vec<String> = key_terms(&e.text)
        .into_iter()
        .filter(|t| !out.contains(t.as_str()))
        .collect();
    if !terms.is_empty() {
        out.push_str(" [");
        out.push_str(&terms.join(", "));
        out.push(']');
    }
    out
}

/// A statement's key words: its clauses that bind or name something (a cue word or a
/// term), without the little words.
fn key_words(text: &str) -> String {
    let clauses: Vec<&str> = text
        .split_inclusive([',', ';', ':', '，', '；', '：'])
        .filter(|c| {
            let words = words_of(c);
            !found(c, &words).groups.is_empty() || !key_terms(c).is_empty()
        })
        .collect();
    let kept = if clauses.is_empty() {
        vec![text]
    } else {
        clauses
    };
    kept.iter()
        .flat_map(|c| c.split_whitespace())
        .filter(|w| {
            let bare = words_of(w);
            bare.len() != 1 || !STOP_WORDS.contains(&bare[0].as_str())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An entry's line in view: its request's number (or its pin's), then its words.
pub fn line(e: &Entry) -> String {
    match (e.pin, e.number) {
        (Some(p), _) => format!("- [P{p}] {}", shown(e)),
        (None, 0) => format!("- {}", shown(e)),
        (None, n) => format!("- [R{n}] {}", shown(e)),
    }
}

/// What an entry's merged line is named by: what it binds.
fn topic(e: &Entry) -> &'static str {
    match e.kind {
        Kind::Rule => "rules",
        Kind::Limit => "limits",
        Kind::Preference => "preferences",
        Kind::Fact => "facts",
        Kind::Goal => "goal",
        Kind::Pin => "pinned",
    }
}

/// What a merged entry adds to its line: its number, the first words of what it is
/// about, and its terms (a number without the word before it).
fn member(e: &Entry) -> String {
    let mut terms: Vec<String> = Vec::new();
    for t in key_terms(&e.text) {
        let bare = t.rsplit_once(' ').map_or(t.clone(), |(_, n)| n.to_owned());
        if !terms.contains(&bare) {
            terms.push(bare);
        }
    }
    let tag = match e.pin {
        Some(p) => format!("P{p}"),
        None => format!("R{}", e.number),
    };
    let about = about_words(&e.text);
    match (about.is_empty(), terms.is_empty()) {
        (true, true) => format!("{tag} {}", head(&e.text, MERGED_WIDTHS).0),
        (true, false) => format!("{tag} {}", terms.join(", ")),
        (false, true) => format!("{tag} {about}"),
        (false, false) => format!("{tag} {about} {}", terms.join(", ")),
    }
}

/// The first few words of what a statement is about: not the little words, the words
/// that only say it binds or changes ("never", "from now on"), its numbers or terms.
fn about_words(text: &str) -> String {
    let terms = key_terms(text);
    let subject = subject_order(text);
    subject
        .into_iter()
        .filter(|w| !terms.iter().any(|t| t.to_lowercase().contains(w.as_str())))
        .take(MERGED_WORDS)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of [`subject`] in the order the statement says them, unstemmed.
fn subject_order(text: &str) -> Vec<String> {
    let words = words_of(text);
    let cues = found(text, &words);
    let saying: HashSet<usize> = cues
        .cue_words
        .iter()
        .filter(|(_, g)| {
            matches!(
                g,
                Group::Update | Group::Binds(Kind::Rule) | Group::BindsWithValue(Kind::Rule)
            )
        })
        .map(|(i, _)| *i)
        .collect();
    words
        .into_iter()
        .enumerate()
        .filter(|(i, w)| {
            !saying.contains(i) && !STOP_WORDS.contains(&w.as_str()) && !is_value_word(w)
        })
        .map(|(_, w)| w)
        .collect()
}

/// The words a merged entry keeps of what it is about, and the widths of its words when
/// it has neither those nor terms.
const MERGED_WORDS: usize = 3;
const MERGED_WIDTHS: usize = 24;

/// The lines the entries take in view, in order: each alone at its stage, merged ones
/// sharing a line with their neighbours on one topic, hidden ones counted on one line
/// named by their topics.
pub fn lines(entries: &[Entry]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut group: Option<String> = None;
    let mut hidden: Vec<&Entry> = Vec::new();
    for e in entries {
        if e.pressed >= press::HIDDEN {
            hidden.push(e);
            continue;
        }
        if !hidden.is_empty() {
            out.push(hidden_line(&hidden));
            hidden.clear();
            group = None;
        }
        if e.pressed < press::MERGED {
            group = None;
            out.push(line(e));
            continue;
        }
        let t = topic(e).to_owned();
        match (&group, out.last_mut()) {
            (Some(g), Some(last)) if *g == t => {
                last.push_str("; ");
                last.push_str(&member(e));
            }
            _ => {
                out.push(format!("- {t}: {}", member(e)));
                group = Some(t);
            }
        }
    }
    if !hidden.is_empty() {
        out.push(hidden_line(&hidden));
    }
    out
}

/// The line that counts hidden entries: their requests, how many, their topics.
fn hidden_line(hidden: &[&Entry]) -> String {
    let first = hidden.iter().map(|e| e.number).min().unwrap_or(0);
    let last = hidden.iter().map(|e| e.number).max().unwrap_or(0);
    let mut topics: Vec<String> = Vec::new();
    for e in hidden {
        let t = topic(e).to_owned();
        if !topics.contains(&t) {
            topics.push(t);
        }
    }
    format!(
        "- [R{first}-R{last}] {} more, in the archive and found by recall: {}",
        hidden.len(),
        topics.join(", ")
    )
}

/// The widths the entries take in view, a line break after each.
pub fn shown_width(entries: &[Entry]) -> usize {
    lines(entries).iter().map(|l| width(l) + 1).sum()
}

/// What else in the memory states an entry: the requests kept verbatim (their text is
/// in view), and a model's notes.
pub struct Beside<'a> {
    pub verbatim: HashSet<u32>,
    pub notes: &'a str,
}

/// Whether an entry shows in the ledger beside what else states it: a pinned note
/// always does; a statement does unless its request is kept verbatim, or the notes name
/// every term of it (without terms, its words).
pub fn shown_beside(e: &Entry, beside: &Beside<'_>) -> bool {
    if e.pin.is_some() {
        return true;
    }
    if beside.verbatim.contains(&e.number) {
        return false;
    }
    if beside.notes.is_empty() {
        return true;
    }
    let terms = key_terms(&e.text);
    let named = if terms.is_empty() {
        let said = e.text.trim().trim_end_matches(['.', '!', '。', '！']);
        beside.notes.to_lowercase().contains(&said.to_lowercase())
    } else {
        terms.iter().all(|t| beside.notes.contains(t.as_str()))
    };
    !named
}

/// What a text costs of a budget in widths: its width, or what its tokens take at
/// `per_token` widths a token when they run denser (codes, numbers and marks run two or
/// three characters a token where prose runs four or more).
pub fn cost(text: &str, per_token: f64) -> usize {
    let widths = width(text);
    if widths == 0 {
        return 0;
    }
    let per_token = if per_token > 0.0 {
        per_token
    } else {
        crate::config::WIDTHS_PER_TOKEN
    };
    let tokens = crate::tokens::bpe_text_tokens(crate::tokens::Encoding::O200kBase, text);
    widths.max((tokens as f64 * per_token).ceil() as usize)
}

/// What the entries cost in view (see [`cost`]), a line break after each.
pub fn shown_cost(entries: &[Entry], per_token: f64) -> usize {
    lines(entries).iter().map(|l| cost(l, per_token) + 1).sum()
}

/// The entries pressed as they must be to fit `budget` widths (what they cost, see
/// [`cost`], at `per_token` widths a token), a stage at a time up to `last` (at most
/// [`press::MERGED`] but where the window leaves no other way), the oldest first;
/// returns what they then cost (over the budget when even `last` is).
pub fn fit(entries: &mut [Entry], budget: usize, last: u8, per_token: f64) -> usize {
    let mut total = shown_cost(entries, per_token);
    for stage in [press::KEY_WORDS, press::TERMS, press::MERGED, press::HIDDEN] {
        if stage > last {
            break;
        }
        // Merging and hiding change their neighbours' lines: pressed a twentieth at a
        // time, and measured whole.
        let whole_lines = stage >= press::MERGED;
        let step = if whole_lines {
            (entries.len() / 20).max(1)
        } else {
            1
        };
        let mut at = 0;
        while at < entries.len() {
            if total <= budget {
                return total;
            }
            let end = (at + step).min(entries.len());
            if !whole_lines {
                let e = &mut entries[at];
                if e.pressed < stage {
                    let before = cost(&line(e), per_token);
                    e.pressed = stage;
                    total = (total + cost(&line(e), per_token)).saturating_sub(before);
                }
            } else {
                for e in &mut entries[at..end] {
                    e.pressed = e.pressed.max(stage);
                }
                total = shown_cost(entries, per_token);
            }
            at = end;
        }
    }
    total
}

/// A request's text as its head in short shows it beside the ledger, and the text its
/// terms come from: each statement of it the ledger shows taken out (the head need not
/// repeat it), each a later one replaced marked as such (its value must leave the
/// view); a request that opens with a statement the ledger shows opens as
/// [`STATED_ABOVE`] (the ledger line names it by its number, in its words).
pub fn beside_ledger(entries: &[Entry], number: u32, text: &str) -> (String, String) {
    let mut rest = text.to_owned();
    let mut taken = false;
    let mut opens_stated = false;
    for s in statements(text) {
        let standing = entries
            .iter()
            .any(|e| e.number == number && e.pin.is_none() && e.text == s.text);
        if standing {
            opens_stated |= !taken && text.trim_start().starts_with(s.text.as_str());
            taken = true;
        }
        let with = if standing {
            String::new()
        } else {
            superseded_mark(0)
        };
        rest = rest.replacen(&s.text, &with, 1);
    }
    let rest = if taken { rest.trim().to_owned() } else { rest };
    if opens_stated || (taken && !rest.chars().any(char::is_alphanumeric)) {
        (STATED_ABOVE.to_owned(), rest)
    } else {
        (rest.clone(), rest)
    }
}

/// What a request in short shows when all it said stands in the ledger above.
pub const STATED_ABOVE: &str = "stated above";

/// A text without the marks of replaced statements (their `R<n>` is no term of its own).
pub fn without_marks(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(at) = out.find("(superseded: see ") {
        let end = out[at..].find(')').map_or(out.len(), |e| at + e + 1);
        out.replace_range(at..end, "");
    }
    out
}

/// A few words of what a statement was about, without its values (a head whose
/// statement a later one replaced shows these, not the old value).
pub fn gist(text: &str) -> String {
    let words = words_of(text);
    let cues = found(text, &words);
    let saying: HashSet<usize> = cues
        .cue_words
        .iter()
        .filter(|(_, g)| *g == Group::Update)
        .map(|(i, _)| *i)
        .collect();
    let kept: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            !saying.contains(i) && !STOP_WORDS.contains(&w.as_str()) && !is_value_word(w)
        })
        .map(|(_, w)| w.as_str())
        .take(GIST_WORDS)
        .collect();
    kept.join(" ")
}

/// The words a replaced statement's head keeps.
const GIST_WORDS: usize = 4;

#[cfg(test)]
mod tests;

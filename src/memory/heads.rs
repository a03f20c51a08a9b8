//! Requests in short: what an older request keeps in view once its text leaves the
//! verbatim layer. The least a request may shrink to is its opening words and every
//! name, number, path and code it holds ([`key_terms`]), under its number: a model cannot
//! search for a rule it does not know it was given. When the heads outgrow their budget
//! they give up, oldest first, the head of their answer, then most of their opening words
//! and their archive file, and then consecutive requests on one subject share a line that
//! still names each request's terms. Never a bare range of numbers.

use crate::memory::ledger::STATED_ABOVE;
use crate::memory::text::{head, width};
use crate::memory::Head;

/// The opening words a request keeps in short, in widths; once shortened for space.
pub const OPENING: usize = 60;
pub const SHORT_OPENING: usize = 24;
/// The head of the agent's answer a request keeps in short, in widths.
pub const ANSWER: usize = 100;
/// The longest term kept whole (a longer run is a blob, not a name).
const TERM_MAX_CHARS: usize = 64;
/// The words of a request's opening that say what it is about, for merging.
const SUBJECT_WORDS: usize = 2;

/// How far a head was shortened for space; each stage keeps what the one before kept
/// of the request's own terms.
pub mod stage {
    /// As made: opening, terms, answer, file.
    pub const WHOLE: u8 = 0;
    /// Without the head of its answer.
    pub const NO_ANSWER: u8 = 1;
    /// Its opening cut to a few words, without its file.
    pub const SHORT: u8 = 2;
    /// On one line with the requests beside it that share its subject.
    pub const MERGED: u8 = 3;
}

/// Whether a character is a CJK ideograph or kana (a word of its own to a reader; never
/// part of a term).
fn is_cjk(c: char) -> bool {
    c >= '\u{2E80}'
}

/// Whether a character may be part of a term: letters and digits of alphabetic scripts,
/// and the joints of paths, identifiers and codes.
fn in_term(c: char) -> bool {
    (c.is_alphanumeric() && !is_cjk(c))
        || matches!(c, '_' | '.' | '/' | '-' | ':' | '@' | '#' | '+' | '%' | '=')
}

/// A run of term characters with the punctuation that closes a sentence trimmed off.
fn trimmed(run: &str) -> &str {
    run.trim_matches(|c: char| matches!(c, '.' | ':' | '-' | '/' | '=' | '+'))
}

/// Whether `run` is a name, a number, a path or a code (not an ordinary word): it holds a
/// digit or an inner joint (`a/b`, `x.py`, `snake_case`, `a-b`), is in capitals (`API`),
/// has a capital inside (`camelCase`), or is a capitalized word that does not open a
/// sentence (`Postgres`).
fn is_term(run: &str, opens_sentence: bool) -> bool {
    let chars: Vec<char> = run.chars().collect();
    if chars.is_empty() || chars.len() > TERM_MAX_CHARS {
        return false;
    }
    if chars.iter().any(char::is_ascii_digit) {
        return true;
    }
    if chars.iter().any(|c| !c.is_alphanumeric()) {
        return chars.iter().filter(|c| c.is_alphanumeric()).count() >= 2;
    }
    let capitals = chars.iter().filter(|c| c.is_uppercase()).count();
    if chars.len() >= 2 && capitals == chars.len() {
        return true;
    }
    if chars[1..].iter().any(|c| c.is_uppercase()) && chars.iter().any(|c| c.is_lowercase()) {
        return true;
    }
    chars.len() >= 2 && capitals == 1 && chars[0].is_uppercase() && !opens_sentence
}

/// Every name, number, path and code `text` holds, once each, in order: a bare number
/// keeps the word before it (`port 8080`, `step 3`), and a span in backticks is kept
/// whole when it is short.
///
/// ```
/// use fastcompact::memory::heads::key_terms;
/// assert_eq!(
///     key_terms("Move the DB to Postgres on port 5432, see `conf/db.toml` and src/app.py."),
///     ["DB", "Postgres", "port 5432", "conf/db.toml", "src/app.py"],
/// );
/// ```
pub fn key_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |term: String, out: &mut Vec<String>| {
        if !term.is_empty() && !out.contains(&term) {
            out.push(term);
        }
    };
    let mut in_code: Option<usize> = None;
    // The last plain word and where it ended, for a number that follows it.
    let mut word_before: Option<(&str, usize)> = None;
    // Whether the next word opens a sentence.
    let mut opening = true;
    let mut at = 0;
    while at < text.len() {
        let Some(c) = text[at..].chars().next() else {
            break;
        };
        if c == '`' {
            match in_code.take() {
                Some(start) => {
                    let span = text[start..at].trim();
                    if !span.is_empty() && span.chars().count() <= TERM_MAX_CHARS {
                        push(span.to_owned(), &mut out);
                    }
                }
                None => in_code = Some(at + 1),
            }
            at += 1;
            continue;
        }
        if in_code.is_some() || !in_term(c) {
            if matches!(c, '.' | '!' | '?' | '[' | ']' | ':' | '\n') || "。！？：".contains(c) {
                opening = true;
            }
            if !c.is_whitespace() {
                word_before = None;
            }
            at += c.len_utf8();
            continue;
        }
        let start = at;
        while let Some(c) = text[at..].chars().next().filter(|&c| in_term(c)) {
            at += c.len_utf8();
        }
        let raw = &text[start..at];
        let run = trimmed(raw);
        let ends_sentence = raw.ends_with(['.', ':']);
        if run.is_empty() {
            opening |= ends_sentence;
            continue;
        }
        if is_term(run, opening) {
            let number = run
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '%'));
            let term = match word_before {
                Some((word, end)) if number && text[end..start].trim().is_empty() => {
                    format!("{word} {run}")
                }
                _ => run.to_owned(),
            };
            push(term, &mut out);
            word_before = None;
        } else {
            // A short word before a number ("the", "of") says nothing of it.
            let says = run.chars().count() >= 4 && run.chars().all(char::is_alphabetic);
            word_before = says.then_some((run, at));
        }
        opening = ends_sentence;
    }
    out
}

/// The words a request's opening is about, for telling which consecutive requests share
/// a subject: its first plain words (no tag in brackets, no term), in lower case.
pub fn subject(opening: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        // A capital opens a request: it makes no name here.
        if !word.is_empty() && !is_term(word, true) && word.chars().any(char::is_alphabetic) {
            words.push(word.to_lowercase());
        }
        word.clear();
    };
    for c in opening.chars() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            // A CJK word is its first few characters.
            c if is_cjk(c) && c.is_alphabetic() => {
                if word.chars().count() < 4 {
                    word.push(c);
                }
                continue;
            }
            c if in_term(c) => {
                word.push(c);
                continue;
            }
            _ => {}
        }
        flush(&mut word, &mut words);
        if words.len() >= SUBJECT_WORDS {
            break;
        }
    }
    flush(&mut word, &mut words);
    words.truncate(SUBJECT_WORDS);
    words.join(" ")
}

/// A head made from a request's text (`None` for the steps that carried one on).
pub fn of_request(number: u32, text: Option<&str>) -> (String, Vec<String>) {
    match text {
        Some(t) => (head(t, OPENING).0, key_terms(t)),
        None if number == 0 => ("(steps before any request)".to_owned(), Vec::new()),
        None => ("(the steps that carried it on)".to_owned(), Vec::new()),
    }
}

/// The terms of `h` its shown opening does not already hold.
fn terms_beside(h: &Head, opening: &str) -> Vec<String> {
    h.keys
        .iter()
        .filter(|k| !opening.contains(k.as_str()))
        .cloned()
        .collect()
}

/// The opening `h` shows at its stage.
fn opening_shown(h: &Head) -> String {
    if h.shortened >= stage::SHORT {
        head(&h.text, SHORT_OPENING).0
    } else {
        h.text.clone()
    }
}

/// The base name of an archive file.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A head alone on its line: its number, opening, the terms beside it, and (until they
/// were given up for space) its answer's head and archive file.
pub fn line(h: &Head) -> String {
    let opening = opening_shown(h);
    let mut out = match h.number {
        0 => format!("- Before R1: {opening}"),
        n => format!("- R{n}: {opening}"),
    };
    let terms = terms_beside(h, &opening);
    if !terms.is_empty() {
        out.push_str(" [");
        out.push_str(&terms.join(", "));
        out.push(']');
    }
    if h.shortened < stage::NO_ANSWER {
        if let Some(a) = &h.answer {
            out.push_str(" → ");
            out.push_str(a);
        }
    }
    if h.shortened < stage::SHORT {
        if let Some(f) = &h.file {
            out.push_str(" (");
            out.push_str(base(f));
            out.push(')');
        }
    }
    out
}

/// What a merged head adds to its line: its number and terms, a number without the
/// word before it (the line's opening says what they are about); a request with none
/// keeps a few of its words.
fn member(h: &Head) -> String {
    if h.keys.is_empty() && h.text == STATED_ABOVE {
        // The line's opening says it.
        return format!("R{}", h.number);
    }
    if h.keys.is_empty() {
        return format!("R{} {}", h.number, head(&h.text, SHORT_OPENING).0);
    }
    let mut terms: Vec<&str> = Vec::with_capacity(h.keys.len());
    for k in &h.keys {
        let bare = k.rsplit_once(' ').map_or(k.as_str(), |(_, n)| n);
        if !terms.contains(&bare) {
            terms.push(bare);
        }
    }
    format!("R{} {}", h.number, terms.join(", "))
}

/// The opening of a merged line, before its members.
fn group_start(h: &Head) -> String {
    format!("- {}…: ", subject(&h.text))
}

/// The lines the heads take in view, oldest first: those a model's notes name are not
/// shown; merged heads share a line with the consecutive ones on their subject.
pub fn lines(heads: &[Head]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut group: Option<String> = None;
    for h in heads.iter().filter(|h| !h.in_notes) {
        if h.shortened < stage::MERGED {
            group = None;
            out.push(line(h));
            continue;
        }
        let s = subject(&h.text);
        match (&group, out.last_mut()) {
            (Some(g), Some(last)) if *g == s => {
                last.push_str("; ");
                last.push_str(&member(h));
            }
            _ => {
                out.push(group_start(h) + &member(h));
                group = Some(s);
            }
        }
    }
    out
}

/// The widths the heads take in view, a line break after each line.
pub fn shown_width(heads: &[Head]) -> usize {
    lines(heads).iter().map(|l| width(l) + 1).sum()
}

/// The heads shortened, oldest first and one stage at a time, until they fit `budget`
/// widths or have nothing more to give; returns the widths they then take. Their terms
/// stay whatever it costs.
pub fn shorten(heads: &mut [Head], budget: usize) -> usize {
    let mut total = shown_width(heads);
    for to in [stage::NO_ANSWER, stage::SHORT] {
        for h in heads.iter_mut().filter(|h| !h.in_notes) {
            if total <= budget {
                return total;
            }
            if h.shortened >= to {
                continue;
            }
            let before = width(&line(h));
            h.shortened = to;
            total = (total + width(&line(h))).saturating_sub(before);
        }
    }
    // Merging: a head joins the line of the one before it when they share a subject.
    let mut previous: Option<(u8, String)> = None;
    for h in heads.iter_mut().filter(|h| !h.in_notes) {
        if total <= budget {
            break;
        }
        let s = subject(&h.text);
        if h.shortened < stage::MERGED {
            let alone = width(&line(h)) + 1;
            let joins = matches!(&previous, Some((stage::MERGED, p)) if *p == s);
            let added = width(&member(h)) + if joins { 2 } else { width(&group_start(h)) + 1 };
            h.shortened = stage::MERGED;
            total = (total + added).saturating_sub(alone);
        }
        previous = Some((h.shortened, s));
    }
    shown_width(heads)
}

/// Whether `notes` name a request in short: every term of it, or (with none) its
/// opening words.
pub fn named_in(h: &Head, notes: &str) -> bool {
    if h.keys.is_empty() {
        let opening = head(&h.text, SHORT_OPENING).0;
        let opening = opening.trim_end_matches('…').trim();
        return !opening.is_empty() && notes.to_lowercase().contains(&opening.to_lowercase());
    }
    h.keys.iter().all(|k| notes.contains(k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(number: u32, text: &str) -> Head {
        Head {
            number,
            text: head(text, OPENING).0,
            keys: key_terms(text),
            answer: Some(format!("Agent: done {number}")),
            file: Some(format!("/h/{number}.md")),
            ..Head::default()
        }
    }

    #[test]
    fn terms_are_names_numbers_paths_and_codes() {
        assert_eq!(
            key_terms("[step 12] Add feature 12: follow mod4.py, rule Q48213, then cache index."),
            ["step 12", "feature 12", "mod4.py", "Q48213"]
        );
        assert_eq!(
            key_terms("Never log tokens. Ask Alice about getUser and HTTP_PROXY."),
            ["Alice", "getUser", "HTTP_PROXY"]
        );
        assert_eq!(
            key_terms("[步骤 3] 请实现功能 3。规则 K7-225，配置 db.toml。"),
            ["3", "K7-225", "db.toml"]
        );
        assert_eq!(
            key_terms("Use `retry=3` and the 2.5% cap; see https://x.org/a"),
            ["retry=3", "2.5%", "https://x.org/a"]
        );
        assert!(key_terms("just some plain words here").is_empty());
    }

    #[test]
    fn the_subject_is_the_first_plain_words() {
        assert_eq!(
            subject("[step 12] Add feature 12: follow mod4.py"),
            "add feature"
        );
        assert_eq!(
            subject("[步骤 3] 请实现功能 3。缓存索引"),
            "请实现功 缓存索引"
        );
        assert_eq!(subject("Q1 Q2"), "");
    }

    #[test]
    fn a_head_shows_its_terms_beside_its_opening() {
        let long = format!(
            "[step 9] Add feature 9: {} rule Q777 applies",
            "word ".repeat(20)
        );
        let mut x = h(10, &long);
        assert_eq!(
            line(&x),
            "- R10: [step 9] Add feature 9: word word word word word word word w… [Q777] → Agent: done 10 (10.md)"
        );
        x.shortened = stage::SHORT;
        assert_eq!(line(&x), "- R10: [step 9] Add feature 9:… [Q777]");
    }

    #[test]
    fn heads_shorten_then_merge_and_keep_every_term() {
        let mut heads: Vec<Head> = (1..=40)
            .map(|n| {
                h(
                    n,
                    &format!(
                        "[step {n}] Add feature {n}: follow mod{}.py, rule Q{}, then more words",
                        n % 8,
                        1000 + n
                    ),
                )
            })
            .collect();
        let whole = shown_width(&heads);
        let used = shorten(&mut heads, whole / 2);
        assert!(used <= whole / 2, "{used} of {}", whole / 2);
        let text = lines(&heads).join("\n");
        for n in 1..=40 {
            assert!(
                text.contains(&format!("R{n} ")) || text.contains(&format!("R{n}:")),
                "R{n} in\n{text}"
            );
            assert!(
                text.contains(&format!("Q{}", 1000 + n)),
                "Q{} in\n{text}",
                1000 + n
            );
            assert!(text.contains(&format!("mod{}.py", n % 8)));
        }
        // The oldest merged first; the newest still stand alone.
        assert!(
            text.starts_with("- add feature…: R1 1, mod1.py, Q1001; R2 "),
            "{text}"
        );
        assert!(text.contains("\n- R40: [step 40] Add feature 40"), "{text}");
        // Nothing left to give: the terms stay, over the budget.
        let used = shorten(&mut heads, 0);
        assert!(used > 0 && lines(&heads).join("\n").contains("Q1040"));
    }

    #[test]
    fn notes_name_a_head_by_all_its_terms() {
        let x = h(3, "Move the cache to Redis, key prefix K-88");
        assert!(named_in(&x, "R3: moved to Redis with K-88."));
        assert!(!named_in(&x, "R3: moved to Redis."));
        let plain = h(4, "please make it faster");
        assert!(named_in(&plain, "The user asked: Please make it faster."));
    }

    proptest::proptest! {
        #[test]
        fn shortening_never_drops_a_term(
            texts in proptest::collection::vec("[A-Za-z0-9 ./_-]{0,80}", 1..40),
            budget in 0usize..3_000,
        ) {
            let mut heads: Vec<Head> = texts.iter().enumerate().map(|(i, t)| h(i as u32 + 1, t)).collect();
            shorten(&mut heads, budget);
            let text = lines(&heads).join("\n");
            for h in &heads {
                // Merged, a number keeps itself, not the word before it.
                for k in &h.keys {
                    let kept = k.rsplit_once(' ').map_or(k.as_str(), |(_, n)| n);
                    proptest::prop_assert!(text.contains(kept), "{} missing", k);
                }
                let n = h.number;
                let named = text.contains(&format!("R{n}:")) || text.contains(&format!("R{n} "));
                proptest::prop_assert!(named, "R{} missing", n);
            }
        }
    }
}

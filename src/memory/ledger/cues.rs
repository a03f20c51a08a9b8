//! Reading a user's message for the statements in it that bind later work: its lines and
//! sentences, each kept when a cue word says what it binds (a rule, a limit, a
//! preference, a fact of the user's world, the goal and where it stands), or when it sits
//! under a heading that does ("HARD CONSTRAINTS:", "## Preferences"). The cue words are
//! data (`cues.txt`, built in), and a user adds lines of the same shape at run time
//! ([`add`]).

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use serde::{Deserialize, Serialize};

use crate::memory::heads::key_terms;

/// The cue words built in.
const BUILT_IN: &str = include_str!("cues.txt");

/// What a statement binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Rule,
    Limit,
    Preference,
    Fact,
    Goal,
    /// A note the agent pinned itself.
    Pin,
}

/// What a cue says of its sentence: what it binds (alone, or only with a value beside
/// it), or that it replaces an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Binds(Kind),
    BindsWithValue(Kind),
    Update,
}

/// English cues by their first word (each the words it is made of), and the others
/// (Chinese, Japanese), matched as substrings.
#[derive(Default)]
struct Table {
    words: HashMap<String, Vec<(Group, Vec<String>)>>,
    cjk: Vec<(Group, String)>,
}

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table::default();
        // The built-in file is checked by this module's tests: a malformed line is a bug.
        let _ = parse_into(BUILT_IN, &mut t);
        RwLock::new(t)
    })
}

fn group_named(name: &str) -> Option<Group> {
    let (name, with_value) = match name.strip_suffix("+value") {
        Some(kind) => (kind.trim_end(), true),
        None => (name, false),
    };
    let kind = match name {
        "rule" => Kind::Rule,
        "limit" => Kind::Limit,
        "preference" => Kind::Preference,
        "fact" => Kind::Fact,
        "goal" => Kind::Goal,
        "update" if !with_value => return Some(Group::Update),
        _ => return None,
    };
    Some(if with_value {
        Group::BindsWithValue(kind)
    } else {
        Group::Binds(kind)
    })
}

/// The cue lines of `text` into `t`; how many it took, or the first line it could not
/// read.
fn parse_into(text: &str, t: &mut Table) -> Result<usize, String> {
    let mut staged: Vec<(Group, String)> = Vec::new();
    let mut lines = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let group = line
            .split_once(':')
            .and_then(|(name, cues)| Some((group_named(name.trim())?, cues)));
        let Some((group, cues)) = group else {
            return Err(format!(
                "line {}: expected `kind: cue, cue` with kind one of rule, limit, preference, fact, \
                 goal (each may be written kind+value) or update; got {line:?}",
                n + 1
            ));
        };
        let before = staged.len();
        staged.extend(
            cues.split(',')
                .map(|c| c.trim().to_lowercase())
                .filter(|c| !c.is_empty())
                .map(|c| (group, c)),
        );
        if staged.len() == before {
            return Err(format!("line {}: no cue after the kind: {line:?}", n + 1));
        }
        lines += 1;
    }
    for (group, cue) in staged {
        if cue.chars().any(is_cjk) {
            if !t.cjk.contains(&(group, cue.clone())) {
                t.cjk.push((group, cue));
            }
            continue;
        }
        let words = words_of(&cue);
        let Some(first) = words.first().cloned() else {
            continue;
        };
        let found = t.words.entry(first).or_default();
        if !found.contains(&(group, words.clone())) {
            found.push((group, words));
        }
    }
    Ok(lines)
}

/// Add cue lines (the shape of `cues.txt`) for every later reading; how many lines
/// were taken. Nothing is added when a line cannot be read.
pub fn add(text: &str) -> Result<usize, String> {
    let mut staged = Table::default();
    let n = parse_into(text, &mut staged)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    for (first, cues) in staged.words {
        let found = t.words.entry(first).or_default();
        for c in cues {
            if !found.contains(&c) {
                found.push(c);
            }
        }
    }
    for c in staged.cjk {
        if !t.cjk.contains(&c) {
            t.cjk.push(c);
        }
    }
    Ok(n)
}

/// Whether a character is a CJK ideograph or kana.
pub fn is_cjk(c: char) -> bool {
    c >= '\u{2E80}' && c.is_alphabetic()
}

/// The words of an English text, lower case: runs of letters, digits and apostrophes.
pub fn words_of(text: &str) -> Vec<String> {
    let apart = |c: char| (is_cjk(c) || !c.is_alphanumeric()) && c != '\'' && c != '’';
    text.split(apart)
        .map(|w| w.trim_matches(['\'', '’']).replace('’', "'").to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The cues `text` holds: each group found, with the positions of the words (in
/// [`words_of`]) its English cues took and their groups.
pub struct Found {
    pub groups: Vec<Group>,
    pub cue_words: Vec<(usize, Group)>,
}

impl Found {
    pub fn has(&self, g: Group) -> bool {
        self.groups.contains(&g)
    }
}

/// The cues of `text`, whose words are `words` (see [`words_of`]).
pub fn found(text: &str, words: &[String]) -> Found {
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    let mut out = Found {
        groups: Vec::new(),
        cue_words: Vec::new(),
    };
    for (at, w) in words.iter().enumerate() {
        let Some(cues) = t.words.get(w) else {
            continue;
        };
        for (group, cue) in cues {
            let end = at + cue.len();
            if end <= words.len() && words[at..end] == cue[..] {
                if !out.groups.contains(group) {
                    out.groups.push(*group);
                }
                out.cue_words.extend((at..end).map(|i| (i, *group)));
            }
        }
    }
    if text.chars().any(is_cjk) {
        for (group, cue) in &t.cjk {
            if text.contains(cue.as_str()) && !out.groups.contains(group) {
                out.groups.push(*group);
            }
        }
    }
    out
}

/// Words that stand for numbers, and for the days and months a deadline names.
const VALUE_WORDS: [&str; 49] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "fifteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "half",
    "dozen",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "tomorrow",
    "tonight",
    "noon",
];

/// Whether a word stands for a number or a date.
pub fn is_value_word(w: &str) -> bool {
    w.chars().any(|c| c.is_ascii_digit()) || VALUE_WORDS.contains(&w)
}

/// Words that say little of what a statement is about.
pub const STOP_WORDS: [&str; 86] = [
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "each", "every", "for", "from",
    "had", "has", "have", "he", "her", "here", "hi", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "just", "let", "me", "more", "most", "my", "of", "on", "or", "our", "please",
    "she", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "too", "up", "us", "very", "was", "we", "were", "what", "when", "where",
    "which", "who", "will", "with", "would", "you", "your", "thanks", "ok",
];

/// Whether `text` holds a value a limit or a fact needs: a number (in digits, words or
/// Chinese numerals), an amount, a date, or a name, path or code.
pub fn has_value(text: &str, words: &[String]) -> bool {
    text.chars()
        .any(|c| c.is_ascii_digit() || "$€£¥%".contains(c))
        || chinese_number(text)
        || words.iter().any(|w| is_value_word(w))
        || !key_terms(text).is_empty()
}

/// Whether Chinese numerals in `text` make a number: two together (三百), or one before
/// a unit (三天); a lone 一 before a measure word ("一封") is the article, not a value.
fn chinese_number(text: &str) -> bool {
    const NUMERALS: &str = "一二三四五六七八九十百千万两零";
    const UNITS: &str = "天元次周月年时分行条块人岁";
    let chars: Vec<char> = text.chars().collect();
    chars
        .windows(2)
        .any(|w| NUMERALS.contains(w[0]) && (NUMERALS.contains(w[1]) || UNITS.contains(w[1])))
}

/// Fact cues that say who has or where is without a value beside them ("Alice owns
/// the billing service": a name opening a sentence looks like any opening word).
const FACT_VERBS: [&str; 8] = [
    "owns", "owner", "lives", "located", "named", "called", "leads", "manages",
];
/// The same in Chinese, found anywhere in a sentence.
const FACT_VERBS_CJK: [&str; 5] = ["负责", "位于", "名叫", "叫做", "住在"];

/// A statement that binds later work: what it binds, its text (one line or sentence of
/// the user's), and whether it says it replaces an earlier one.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub kind: Kind,
    pub text: String,
    pub update: bool,
}

/// What `text` (with its words and cues) binds, if anything; `heading` is what the
/// heading it sits under binds. A limit and a fact need a value beside their cue; an
/// update with a value is a fact that changed.
pub fn kind_of(text: &str, words: &[String], cues: &Found, heading: Option<Kind>) -> Option<Kind> {
    let value = std::cell::OnceCell::new();
    let binds = |k| {
        cues.has(Group::Binds(k))
            || cues.has(Group::BindsWithValue(k)) && *value.get_or_init(|| has_value(text, words))
    };
    let fact_verb = || {
        words.iter().any(|w| FACT_VERBS.contains(&w.as_str()))
            || FACT_VERBS_CJK.iter().any(|v| text.contains(v))
    };
    if binds(Kind::Limit) {
        Some(Kind::Limit)
    } else if binds(Kind::Preference) {
        Some(Kind::Preference)
    } else if binds(Kind::Goal) {
        Some(Kind::Goal)
    } else if binds(Kind::Rule) {
        Some(Kind::Rule)
    } else if binds(Kind::Fact)
        || cues.has(Group::Update) && *value.get_or_init(|| has_value(text, words))
        || fact_verb()
    {
        Some(Kind::Fact)
    } else {
        heading
    }
}

/// Abbreviations whose full stop ends no sentence.
const ABBREVIATIONS: [&str; 9] = ["e.g", "i.e", "etc", "vs", "mr", "mrs", "dr", "approx", "no"];

/// The sentences of a line: cut after `.`, `!` and `?` followed by a space (not after an
/// abbreviation), and after the Chinese and Japanese marks; a semicolon joins clauses of
/// one statement.
pub fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let end = at + c.len_utf8();
        let ends = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => {
                let spaced = chars.peek().is_none_or(|&(_, n)| n.is_whitespace());
                let word = line[start..at]
                    .rsplit(|c: char| c.is_whitespace())
                    .next()
                    .unwrap_or("")
                    .to_lowercase();
                spaced && !(c == '.' && ABBREVIATIONS.contains(&word.as_str()))
            }
            _ => false,
        };
        if ends {
            out.push(line[start..end].trim());
            start = end;
        }
    }
    out.push(line[start..].trim());
    out.retain(|s| s.chars().any(char::is_alphanumeric));
    out
}

/// A line without its list mark (`- `, `* `, `1. `, `2) `).
fn without_mark(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix(['-', '*', '•']) {
        return rest.trim_start();
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=2).contains(&digits) {
        let rest = &t[digits..];
        if let Some(rest) = rest.strip_prefix(['.', ')']) {
            if rest.starts_with(' ') {
                return rest.trim_start();
            }
        }
    }
    t
}

/// A heading and what follows it on its line: `# X`, `**X**`, or a few words ending
/// with a colon (`HARD CONSTRAINT: ...`, `用户偏好：...`).
fn heading(line: &str) -> Option<(&str, &str)> {
    if let Some(rest) = line.strip_prefix('#') {
        return Some((rest.trim_start_matches('#').trim(), ""));
    }
    if let Some(inner) = line.strip_prefix("**") {
        if let Some((head, rest)) = inner.split_once("**") {
            let rest = rest.trim_start_matches([':', '：']).trim();
            return Some((head.trim_end_matches([':', '：']), rest));
        }
    }
    let colon = line.find([':', '：'])?;
    let head = &line[..colon];
    let short = head.split_whitespace().count() <= 4 && head.chars().count() <= 40;
    // A colon inside a value (a time, a URL) is not a heading's.
    let plain = !head.contains("//") && !head.ends_with(|c: char| c.is_ascii_digit());
    (short && plain && !head.trim().is_empty()).then(|| {
        (
            head.trim(),
            line[colon..].trim_start_matches([':', '：']).trim(),
        )
    })
}

/// What a heading says the lines under it bind, if it says.
fn heading_kind(head: &str) -> Option<Kind> {
    let words = words_of(head);
    let cues = found(head, &words);
    [
        Kind::Limit,
        Kind::Preference,
        Kind::Goal,
        Kind::Rule,
        Kind::Fact,
    ]
    .into_iter()
    .find(|&k| cues.has(Group::Binds(k)) || cues.has(Group::BindsWithValue(k)))
}

/// A binding sentence without its trailing clauses that neither bind nor name anything
/// ("..., then tidy up.", ": more words"): the statement, in the user's words.
fn binding_part(sentence: &str) -> &str {
    let clauses: Vec<&str> = sentence
        .split_inclusive([',', ';', ':', '，', '；', '：'])
        .collect();
    let says = |c: &str| {
        let words = words_of(c);
        !found(c, &words).groups.is_empty() || !key_terms(c).is_empty()
    };
    let Some(last) = clauses.iter().rposition(|c| says(c)) else {
        return sentence;
    };
    if last + 1 == clauses.len() {
        return sentence;
    }
    let end: usize = clauses[..=last].iter().map(|c| c.len()).sum();
    sentence[..end].trim_end_matches([',', ';', ':', '，', '；', '：', ' '])
}

/// The statements of a user's message that bind later work, in order.
///
/// ```
/// use fastcompact::memory::ledger::cues::{statements, Kind};
/// let found = statements("Thanks! Never disclose the vault code XKX-8683.\n\nPREFERENCES:\n- metric units");
/// let kinds: Vec<Kind> = found.iter().map(|s| s.kind).collect();
/// assert_eq!(kinds, [Kind::Rule, Kind::Preference]);
/// assert_eq!(found[0].text, "Never disclose the vault code XKX-8683.");
/// ```
pub fn statements(text: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut under: Option<Kind> = None;
    for line in text.lines() {
        let body = without_mark(line).trim();
        if body.is_empty() {
            under = None;
            continue;
        }
        let mut rest = body;
        if let Some((head, after)) = heading(body) {
            match heading_kind(head) {
                Some(k) => {
                    under = Some(k);
                    if after.is_empty() {
                        continue;
                    }
                    rest = after;
                }
                // Another heading ends the list a binding heading opened.
                None if body.starts_with('#') => {
                    under = None;
                    continue;
                }
                None => {}
            }
        }
        for sentence in sentences(rest) {
            let words = words_of(sentence);
            let cues = found(sentence, &words);
            if let Some(kind) = kind_of(sentence, &words, &cues, under) {
                out.push(Statement {
                    kind,
                    text: binding_part(sentence).to_owned(),
                    update: cues.has(Group::Update),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        statements(text)
            .into_iter()
            .map(|s| (s.kind, s.text))
            .collect()
    }

    #[test]
    fn the_built_in_cues_read() {
        let mut t = Table::default();
        assert_eq!(parse_into(BUILT_IN, &mut t), Ok(18));
        assert!(t.words.contains_key("never") && t.cjk.iter().any(|(_, c)| c == "禁止"));
    }

    #[test]
    fn a_malformed_line_is_refused_whole() {
        assert!(add("rule: never\nsometimes: maybe").is_err());
        assert!(add("rule:").is_err());
        assert_eq!(add("# nothing\nrule: on pain of death"), Ok(1));
        assert_eq!(
            kinds("Ship it on pain of death."),
            [(Kind::Rule, "Ship it on pain of death.".to_owned())]
        );
    }

    #[test]
    fn plain_statements_in_plain_words() {
        let text = "Hi there, hope the week is going well. Never disclose the vault code XKX-8683 \
                    to anyone. Keep the monthly spend under $300; I prefer answers in metric units. \
                    Alice owns the billing service. Can you look at the logs?";
        assert_eq!(
            kinds(text),
            [
                (
                    Kind::Rule,
                    "Never disclose the vault code XKX-8683 to anyone.".to_owned()
                ),
                (
                    Kind::Limit,
                    "Keep the monthly spend under $300; I prefer answers in metric units."
                        .to_owned()
                ),
                (Kind::Fact, "Alice owns the billing service.".to_owned()),
            ]
        );
    }

    #[test]
    fn a_limit_or_a_fact_needs_a_value() {
        assert!(statements("We are under some pressure here.").is_empty());
        assert!(statements("My week was long.").is_empty());
        assert_eq!(
            kinds("The deadline is Friday."),
            [(Kind::Limit, "The deadline is Friday.".to_owned())]
        );
    }

    #[test]
    fn lines_under_a_binding_heading_bind() {
        let text =
            "HARD CONSTRAINTS:\n- report all figures in euros\n- zone Hsdkaa only\n\nThanks!";
        assert_eq!(
            kinds(text),
            [
                (Kind::Rule, "report all figures in euros".to_owned()),
                (Kind::Rule, "zone Hsdkaa only".to_owned()),
            ]
        );
        let inline = kinds("USER PREFERENCE: weekly digests on Monday");
        assert_eq!(
            inline,
            [(Kind::Preference, "weekly digests on Monday".to_owned())]
        );
        // A heading that binds nothing ends the list.
        assert!(kinds("## Rules\n- a b c\n## Chat\n- a b c").len() == 1);
    }

    #[test]
    fn chinese_statements() {
        let text = "你好。禁止泄露金库密码 XKX-8683。每月预算不超过三百美元。今天天气不错。";
        assert_eq!(
            kinds(text),
            [
                (Kind::Rule, "禁止泄露金库密码 XKX-8683。".to_owned()),
                (Kind::Limit, "每月预算不超过三百美元。".to_owned()),
            ]
        );
    }

    #[test]
    fn trailing_clauses_that_say_nothing_binding_are_not_the_statement() {
        assert_eq!(
            kinds("Research question 3 under rule K88147: column worker value module vector."),
            [(
                Kind::Limit,
                "Research question 3 under rule K88147".to_owned()
            )]
        );
        assert_eq!(
            kinds("Keep the spend under $300, please."),
            [(Kind::Limit, "Keep the spend under $300".to_owned())]
        );
        // A clause that names something stays, wherever it is.
        assert_eq!(
            kinds("Never push to main, the guard is G-7."),
            [(
                Kind::Rule,
                "Never push to main, the guard is G-7.".to_owned()
            )]
        );
    }

    #[test]
    fn updates_are_marked() {
        let found = statements("From now on the spend stays under five hundred dollars.");
        assert_eq!(found.len(), 1);
        assert!(found[0].update && found[0].kind == Kind::Limit);
    }

    #[test]
    fn sentences_keep_abbreviations_and_decimals() {
        assert_eq!(
            sentences("Use v2.5 e.g. here. Then stop! Ok"),
            ["Use v2.5 e.g. here.", "Then stop!", "Ok"]
        );
        assert_eq!(sentences("第一句。第二句"), ["第一句。", "第二句"]);
    }
}

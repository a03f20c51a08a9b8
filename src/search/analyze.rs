//! Text into search terms, as agents' conversations hold it: Unicode words, case
//! folded and stemmed (Snowball); identifiers and codes kept whole and split into their
//! parts (`_ . / - :` and camelCase); numbers whole; Chinese and Japanese as single
//! characters and bigrams, so a query written without spaces still matches. In
//! English, words of one family share a root beyond what Snowball joins (`allergic` and
//! `allergy`, `migration` and `migrate`, `logging` and `logger`), and a query's short
//! forms find their long ones (see [`super::forms`]).

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// The Snowball languages a search stems for, by name.
pub const LANGUAGES: [(&str, Algorithm); 18] = [
    ("arabic", Algorithm::Arabic),
    ("danish", Algorithm::Danish),
    ("dutch", Algorithm::Dutch),
    ("english", Algorithm::English),
    ("finnish", Algorithm::Finnish),
    ("french", Algorithm::French),
    ("german", Algorithm::German),
    ("greek", Algorithm::Greek),
    ("hungarian", Algorithm::Hungarian),
    ("italian", Algorithm::Italian),
    ("norwegian", Algorithm::Norwegian),
    ("portuguese", Algorithm::Portuguese),
    ("romanian", Algorithm::Romanian),
    ("russian", Algorithm::Russian),
    ("spanish", Algorithm::Spanish),
    ("swedish", Algorithm::Swedish),
    ("tamil", Algorithm::Tamil),
    ("turkish", Algorithm::Turkish),
];

/// English words too common to tell messages apart; a query's words in its own words
/// ("the port of the database") carry them.
const STOPWORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "for", "from", "how", "i", "in",
    "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "we", "what", "when",
    "where", "which", "who", "with", "you",
];

/// The endings an English stem may still carry that its family's other words do not
/// (`allergic`/`allergi`, `migrat`, `logger`), and the least a root keeps.
const ENGLISH_ENDINGS: [&str; 4] = ["ic", "i", "er", "at"];
const ROOT_MIN_CHARS: usize = 4;

/// An English stem to its family's root: one ending of [`ENGLISH_ENDINGS`] off, then a
/// doubled last consonant made single (`logg` to `log`).
fn english_root(stem: String) -> String {
    let Some(cut) = ENGLISH_ENDINGS
        .iter()
        .find(|e| stem.ends_with(*e) && stem.chars().count() >= ROOT_MIN_CHARS + e.len())
    else {
        return stem;
    };
    let mut root = stem[..stem.len() - cut.len()].to_owned();
    let mut last = root.chars().rev();
    if let (Some(a), Some(b)) = (last.next(), last.next()) {
        if a == b && !"aeiouls".contains(a) && a.is_ascii_alphabetic() {
            root.pop();
        }
    }
    root
}

/// A query's terms in groups: each word's terms, and the terms of its other forms as
/// alternatives of the same group (a message holding any of them holds the group).
pub type Groups = Vec<Vec<String>>;

/// Turns text into terms for one language's stemmer.
pub struct Analyzer {
    stemmer: &'static Stemmer,
    english: bool,
}

fn stemmer(algorithm: Algorithm) -> &'static Stemmer {
    static STEMMERS: OnceLock<Vec<Stemmer>> = OnceLock::new();
    let all = STEMMERS.get_or_init(|| LANGUAGES.iter().map(|(_, a)| Stemmer::create(*a)).collect());
    let at = LANGUAGES
        .iter()
        .position(|(_, a)| *a == algorithm)
        .unwrap_or(3);
    &all[at]
}

/// Whether a character is written without spaces between words (Chinese, Japanese).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0x20000..=0x2FA1F) // extensions B on
}

/// The longest word the stemmer is given, in bytes.
const STEMMED_BYTES: usize = 64;

/// Whether a word is short enough to stem: a longer one is a run of letters, kept
/// whole (the stemmer's time grows with the square of a word's length).
pub(crate) fn stemmable(word: &str) -> bool {
    word.len() <= STEMMED_BYTES
}

/// Where an identifier splits: at `_ . / - : @ #`, and where camelCase turns.
fn parts(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in word.split(['_', '.', '/', '-', ':', '@', '#', '\'', '’']) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for w in 1..chars.len() {
            let (at, c) = chars[w];
            let prev = chars[w - 1].1;
            let next = chars.get(w + 1).map(|x| x.1);
            let turn = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase));
            if turn {
                out.push(&piece[start..at]);
                start = at;
            }
        }
        out.push(&piece[start..]);
    }
    out.retain(|p| !p.is_empty());
    out
}

impl Analyzer {
    /// An analyzer for a language of [`LANGUAGES`]; `None` for a name not there.
    pub fn for_language(name: &str) -> Option<Analyzer> {
        let name = name.trim().to_lowercase();
        let (_, algorithm) = LANGUAGES.iter().find(|(n, _)| *n == name)?;
        Some(Analyzer {
            stemmer: stemmer(*algorithm),
            english: name == "english",
        })
    }

    /// A word (a part of an identifier, say) as a term: case folded, stemmed when it
    /// is letters; `None` for a stopword.
    fn word_term(&self, word: &str) -> Option<String> {
        let lower = word.to_lowercase();
        if self.english && STOPWORDS.contains(&lower.as_str()) {
            return None;
        }
        if stemmable(&lower) && lower.chars().all(char::is_alphabetic) {
            let stem = self.stemmer.stem(&lower).into_owned();
            return Some(if self.english {
                english_root(stem)
            } else {
                stem
            });
        }
        Some(lower)
    }

    /// The terms of `text`, in order, pushed onto `out` (a term may come more than once:
    /// its count is its frequency).
    pub fn terms(&self, text: &str, out: &mut Vec<String>) {
        self.collect(text, Singles::Always, out);
    }

    /// The terms a query asks for: as [`Analyzer::terms`], but a run of Chinese or
    /// Japanese by its pairs of characters alone (its single characters only when it
    /// is one): the pairs say what it means, and single characters common to every
    /// message would outweigh a rare number or name beside them.
    pub fn query_terms(&self, text: &str, out: &mut Vec<String>) {
        self.collect(text, Singles::Alone, out);
    }

    /// The terms a query asks for (see [`Analyzer::query_terms`]) in groups: each term
    /// with the terms of its word's other forms (see [`super::forms`]) beside it.
    pub fn query_groups(&self, text: &str) -> Groups {
        let mut groups: Groups = Vec::new();
        for chunk in text.split_whitespace() {
            let mut terms = Vec::new();
            self.collect(chunk, Singles::Alone, &mut terms);
            let words: Vec<String> = chunk.unicode_words().map(str::to_lowercase).collect();
            for term in terms {
                let mut group = vec![term];
                for word in &words {
                    let own = self.word_term(word);
                    if own.as_deref() != Some(group[0].as_str()) && word != &group[0] {
                        continue;
                    }
                    for other in super::forms::others(word) {
                        let mut alt = Vec::new();
                        self.collect(&other, Singles::Alone, &mut alt);
                        group.extend(
                            alt.into_iter()
                                .filter(|a| !group.contains(a))
                                .collect::<Vec<_>>(),
                        );
                    }
                }
                if !groups.iter().any(|g| g[0] == group[0]) {
                    groups.push(group);
                }
            }
        }
        groups
    }

    fn collect(&self, text: &str, singles: Singles, out: &mut Vec<String>) {
        for chunk in text.split_whitespace() {
            let core = chunk.trim_matches(|c: char| !c.is_alphanumeric());
            if core.is_empty() {
                continue;
            }
            // A code or identifier, whole: `INV-88213`, `src/main.rs`, `host:5433`.
            let joined = core.contains(['_', '.', '/', '-', ':', '@', '#']);
            if joined
                && core
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|p| !p.is_empty())
                    .count()
                    > 1
            {
                out.push(core.to_lowercase());
            }
            self.words(core, singles, out);
        }
    }

    fn words(&self, core: &str, singles: Singles, out: &mut Vec<String>) {
        let mut cjk = String::new();
        for word in core.unicode_words() {
            if word.chars().any(is_cjk) {
                cjk.push_str(word);
                continue;
            }
            grams(&cjk, singles, out);
            cjk.clear();
            let split = parts(word);
            if split.len() > 1 {
                out.push(word.to_lowercase());
            }
            out.extend(split.iter().filter_map(|p| self.word_term(p)));
        }
        grams(&cjk, singles, out);
    }
}

/// Which single characters of a run of Chinese or Japanese are terms.
#[derive(Clone, Copy, PartialEq)]
enum Singles {
    Always,
    /// Only a run of one.
    Alone,
}

/// A run of Chinese or Japanese: each character, and each pair of neighbours.
fn grams(run: &str, singles: Singles, out: &mut Vec<String>) {
    let chars: Vec<char> = run.chars().filter(|c| is_cjk(*c)).collect();
    for (i, c) in chars.iter().enumerate() {
        if singles == Singles::Always || chars.len() == 1 {
            out.push(c.to_string());
        }
        if let Some(next) = chars.get(i + 1) {
            out.push([*c, *next].iter().collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Analyzer::for_language("english")
            .expect("english is a language")
            .terms(text, &mut out);
        out
    }

    #[test]
    fn words_are_folded_and_stemmed_and_stopwords_left_out() {
        assert_eq!(
            terms("The Staging databases are RUNNING."),
            vec!["stage", "databas", "run"]
        );
    }

    #[test]
    fn a_run_of_letters_longer_than_any_word_is_kept_whole_not_stemmed() {
        let run = "Y".repeat(65);
        assert_eq!(
            terms(&format!("{run} flies")),
            vec![run.to_lowercase(), "fli".into()]
        );
        // As long as a word may be, it is stemmed.
        let word = format!("{}ing", "a".repeat(61));
        assert_eq!(terms(&word), vec!["a".repeat(61)]);
    }

    #[test]
    fn a_words_family_shares_its_root() {
        for family in [
            ["allergic", "allergy", "allergies"],
            ["migration", "migrate", "migrating"],
            ["logging", "logger", "logged"],
        ] {
            let roots: Vec<Vec<String>> = family.iter().map(|w| terms(w)).collect();
            assert!(
                roots.iter().all(|r| *r == roots[0]),
                "{family:?}: {roots:?}"
            );
        }
        // Short words keep their stems: "user" is no "us".
        assert_eq!(terms("user order"), vec!["user", "order"]);
    }

    #[test]
    fn a_query_word_takes_its_other_forms_beside_it() {
        let english = Analyzer::for_language("english").expect("english is a language");
        assert_eq!(
            english.query_groups("the db port"),
            vec![
                vec!["db".to_owned(), "dbs".to_owned(), "databas".to_owned()],
                vec!["port".to_owned()]
            ]
        );
        let groups = english.query_groups("Kubernetes");
        assert!(groups[0].contains(&"k8s".to_owned()), "{groups:?}");
    }

    #[test]
    fn codes_and_identifiers_stay_whole_and_split_into_parts() {
        let t = terms("Invoice INV-88213 for getUserById in src/main_app.rs on port 6543");
        for want in [
            "inv-88213",
            "inv",
            "88213",
            "getuserbyid",
            "get",
            "user",
            "id",
            "src/main_app.rs",
            "main_app.rs",
            "main",
            "app",
            "rs",
            "6543",
            "port",
        ] {
            assert!(t.contains(&want.to_owned()), "{want} missing from {t:?}");
        }
    }

    #[test]
    fn chinese_is_characters_and_bigrams() {
        assert_eq!(
            terms("服务器位置"),
            vec!["服", "服务", "务", "务器", "器", "器位", "位", "位置", "置"]
        );
        // A query asks for the pairs, and for a character only when it stands alone.
        let mut asked = Vec::new();
        let english = Analyzer::for_language("english").expect("english is a language");
        english.query_terms("服务器位置 在 7", &mut asked);
        assert_eq!(asked, vec!["服务", "务器", "器位", "位置", "在", "7"]);
        // Mixed with Latin text, each run on its own.
        let t = terms("数据中心 in Frankfurt");
        assert!(t.contains(&"数据".to_owned()) && t.contains(&"frankfurt".to_owned()));
    }

    #[test]
    fn camel_case_with_acronyms_splits_where_a_reader_would() {
        assert_eq!(parts("HTTPServerError"), vec!["HTTP", "Server", "Error"]);
        assert_eq!(parts("parse_config.toml"), vec!["parse", "config", "toml"]);
    }

    #[test]
    fn every_snowball_language_has_an_analyzer() {
        for (name, _) in LANGUAGES {
            assert!(Analyzer::for_language(name).is_some(), "{name}");
        }
        assert!(Analyzer::for_language("klingon").is_none());
        let mut out = Vec::new();
        if let Some(a) = Analyzer::for_language("german") {
            a.terms("Datenbanken", &mut out);
        }
        assert_eq!(out, vec!["datenbank"]);
    }
}

//! Text into search terms, as agents' conversations hold it: Unicode words, case
//! folded and stemmed (Snowball); identifiers and codes kept whole and split into their
//! parts (`_ . / - :` and camelCase); numbers whole; Chinese and Japanese as single
//! characters and bigrams, so a query written without spaces still matches.

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
        if lower.chars().all(char::is_alphabetic) {
            return Some(self.stemmer.stem(&lower).into_owned());
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

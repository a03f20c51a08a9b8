//! Measuring and shortening the memory's text. Budgets are in widths: about what a
//! text costs in tokens, times four, whatever its script.

/// A character's width: Latin letters run about four to a token, CJK characters about
/// one, the rest about two.
pub fn char_width(c: char) -> usize {
    if c.is_ascii() {
        1
    } else if c >= '\u{2E80}' {
        4
    } else {
        2
    }
}

/// A text's width (see [`char_width`]).
pub fn width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// `text` on one line, whitespace runs as one space, cut to `max` widths with an
/// ellipsis; and whether it was cut.
pub fn head(text: &str, max: usize) -> (String, bool) {
    let mut h = Head::new(max);
    // Over: the rest of the text cannot change the head.
    let _ = std::fmt::Write::write_str(&mut h, text);
    h.finish()
}

/// [`head`] of what is written to it, made as the text comes: it stops reading once
/// the head is over its widths (a long result or a file's whole text in a call's
/// arguments is never flattened in full, nor serialized past its head).
pub struct Head {
    out: String,
    used: usize,
    max: usize,
    /// Whitespace seen since the last character kept, after the first.
    space: bool,
    over: bool,
}

impl Head {
    pub fn new(max: usize) -> Self {
        Head {
            out: String::new(),
            used: 0,
            max,
            space: false,
            over: false,
        }
    }

    fn keep(&mut self, c: char) {
        self.used += char_width(c);
        if self.used > self.max {
            self.over = true;
        } else {
            self.out.push(c);
        }
    }

    /// The head, and whether the text was cut.
    pub fn finish(self) -> (String, bool) {
        if self.over {
            (format!("{}…", self.out.trim_end()), true)
        } else {
            (self.out, false)
        }
    }
}

impl std::fmt::Write for Head {
    /// An error once the head is over: a writer (a serializer) stops there.
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for c in s.chars() {
            if self.over {
                return Err(std::fmt::Error);
            }
            if c.is_whitespace() {
                self.space = !self.out.is_empty();
                continue;
            }
            if self.space {
                self.space = false;
                self.keep(' ');
                if self.over {
                    return Err(std::fmt::Error);
                }
            }
            self.keep(c);
        }
        if self.over {
            Err(std::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// `text` within `max` widths: whole, or cut at the last line break (else the last
/// space) that fits, followed by `note`, all within `max`.
pub fn within(text: &str, max: usize, note: &str) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    let room = max.saturating_sub(width(note) + 2);
    let mut used = 0;
    let mut end = 0;
    for (at, c) in text.char_indices() {
        used += char_width(c);
        if used > room {
            break;
        }
        end = at + c.len_utf8();
    }
    let kept = &text[..end];
    let cut = kept
        .rfind('\n')
        .or_else(|| kept.rfind(' '))
        .filter(|&at| at > 0)
        .unwrap_or(end);
    let kept = kept[..cut].trim_end();
    if kept.is_empty() {
        note.to_owned()
    } else {
        format!("{kept}\n{note}")
    }
}

/// The recall note that ends a line, for an id (nothing without one).
pub fn recall_note(id: Option<&str>) -> String {
    match id {
        Some(id) if !id.is_empty() => format!(" recall(\"{id}\")"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_count_cjk_as_a_token_a_character() {
        assert_eq!(width("ab缓存"), 10);
        assert_eq!(width("é"), 2);
    }

    /// What `head` is: the text flattened whole, then cut.
    fn head_of_flat(text: &str, max: usize) -> (String, bool) {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut used = 0;
        for (at, c) in flat.char_indices() {
            used += char_width(c);
            if used > max {
                return (format!("{}…", flat[..at].trim_end()), true);
            }
        }
        (flat, false)
    }

    proptest::proptest! {
        #[test]
        fn a_head_made_as_text_comes_is_the_flattened_texts(
            parts in proptest::collection::vec("\\PC{0,12}|[ a\\n\\té缓\u{3000}]{0,12}", 0..6),
            max in 0usize..40,
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(head(&text, max), head_of_flat(&text, max));
            // Written in pieces, as a serializer writes.
            let mut h = Head::new(max);
            for p in &parts {
                if std::fmt::Write::write_str(&mut h, p).is_err() {
                    break;
                }
            }
            proptest::prop_assert_eq!(h.finish(), head_of_flat(&text, max));
        }
    }

    #[test]
    fn heads_flatten_and_cut_with_an_ellipsis() {
        assert_eq!(head("a  b\nc", 10), ("a b c".to_owned(), false));
        assert_eq!(head("one two three", 7), ("one two…".to_owned(), true));
        assert_eq!(head("缓存索引", 8), ("缓存…".to_owned(), true));
    }

    #[test]
    fn within_cuts_at_a_line_break_and_says_so() {
        let text = "first line\nsecond line\nthird line";
        assert_eq!(within(text, 100, "(cut)"), text);
        assert_eq!(within(text, 30, "(cut)"), "first line\nsecond line\n(cut)");
        assert!(width(&within(text, 30, "(cut)")) <= 30);
        assert_eq!(within("abcdef", 3, "(cut)"), "(cut)");
    }
}

//! The memory's base: the ledger and requests in short as a compaction left them, shown
//! first and unchanged until something in them changes. A later compaction adds what is
//! new after it instead of writing it anew, so the provider reads the base from its
//! prompt cache (a changed line would end the prefix it can read there).
//!
//! The base holds the fingerprints of its lines, not the lines: what is shown is always
//! the memory as it stands, the base only says which of its lines come first.

use serde::{Deserialize, Serialize};

use crate::memory::text::width;
use crate::memory::{heads, ledger, render, Memory};

/// The lines of a memory's base, by fingerprint (see [`fingerprint`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    #[serde(default)]
    pub said: Vec<u32>,
    #[serde(default)]
    pub pins: Vec<u32>,
    /// The runs and requests in short, in order.
    #[serde(default)]
    pub heads: Vec<u32>,
    /// Shown in the fewest words (the opening differs).
    #[serde(default)]
    pub terse: bool,
}

/// A compaction writes the base anew once what was added after it is this share of it:
/// rewriting the additions at every compaction then costs more than one rewrite of all.
const ADDED_SHARE_TO_REBASE: f64 = 0.5;

/// A line's fingerprint: FNV-1a, the same in every process that reads the state.
pub fn fingerprint(line: &str) -> u32 {
    line.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The lines of the layers a base may hold, as the memory stands.
pub struct Lines {
    pub said: Vec<String>,
    pub pins: Vec<String>,
    /// The runs, then the requests in short (with their recall notes).
    pub heads: Vec<String>,
}

impl Lines {
    pub fn of(m: &Memory) -> Lines {
        let (pins, said): (Vec<_>, Vec<_>) =
            m.ledger_shown().into_iter().partition(|e| e.pin.is_some());
        let mut heads_lines: Vec<String> = m.ranges.iter().map(render::range_line).collect();
        heads_lines.extend(heads::lines(&m.heads));
        Lines {
            said: ledger::lines(&said),
            pins: ledger::lines(&pins),
            heads: heads_lines,
        }
    }
}

/// Each layer's lines parted into those of the base and those added after it.
pub struct Split<'a> {
    pub said: (Vec<&'a str>, Vec<&'a str>),
    pub pins: (Vec<&'a str>, Vec<&'a str>),
    pub heads: (Vec<&'a str>, Vec<&'a str>),
}

impl Split<'_> {
    fn widths(parts: &[&[&str]]) -> usize {
        parts
            .iter()
            .flat_map(|p| p.iter())
            .map(|l| width(l) + 1)
            .sum()
    }

    fn base_width(&self) -> usize {
        Split::widths(&[&self.said.0, &self.pins.0, &self.heads.0])
    }

    fn added_width(&self) -> usize {
        Split::widths(&[&self.said.1, &self.pins.1, &self.heads.1])
    }
}

/// The ledger's lines parted by `base`: those it holds, in its order, and the rest;
/// `None` when one of its lines is gone or they stand in another order.
fn part_set<'a>(lines: &'a [String], base: &[u32]) -> Option<(Vec<&'a str>, Vec<&'a str>)> {
    let (kept, added): (Vec<&str>, Vec<&str>) = lines
        .iter()
        .map(String::as_str)
        .partition(|l| base.contains(&fingerprint(l)));
    let same = kept.len() == base.len() && kept.iter().zip(base).all(|(l, f)| fingerprint(l) == *f);
    same.then_some((kept, added))
}

/// The requests in short parted by `base`: its lines must open them, in its order.
fn part_prefix<'a>(lines: &'a [String], base: &[u32]) -> Option<(Vec<&'a str>, Vec<&'a str>)> {
    let opens =
        lines.len() >= base.len() && lines.iter().zip(base).all(|(l, f)| fingerprint(l) == *f);
    opens.then(|| {
        let (kept, added) = lines.split_at(base.len());
        (
            kept.iter().map(String::as_str).collect(),
            added.iter().map(String::as_str).collect(),
        )
    })
}

/// The lines parted by the memory's base, while its lines stand as they were.
fn parted<'a>(m: &Memory, lines: &'a Lines) -> Option<Split<'a>> {
    let b = m.base.as_ref().filter(|b| b.terse == m.terse)?;
    Some(Split {
        said: part_set(&lines.said, &b.said)?,
        pins: part_set(&lines.pins, &b.pins)?,
        heads: part_prefix(&lines.heads, &b.heads)?,
    })
}

/// The lines parted by the memory's base; every line in the base when there is none,
/// or when it no longer stands as it was.
pub fn split<'a>(m: &Memory, lines: &'a Lines) -> Split<'a> {
    parted(m, lines).unwrap_or_else(|| {
        let all = |ls: &'a [String]| (ls.iter().map(String::as_str).collect(), Vec::new());
        Split {
            said: all(&lines.said),
            pins: all(&lines.pins),
            heads: all(&lines.heads),
        }
    })
}

impl Memory {
    /// The base as this memory leaves it: as it was while its lines stand and what was
    /// added after it stays small beside it, else every line of it as it now stands.
    pub fn settle_base(&mut self) {
        let lines = Lines::of(self);
        let holds = parted(self, &lines).is_some_and(|s| {
            s.added_width() as f64 <= ADDED_SHARE_TO_REBASE * s.base_width() as f64
        });
        if holds {
            return;
        }
        let prints = |ls: &[String]| ls.iter().map(|l| fingerprint(l)).collect();
        self.base = Some(Base {
            said: prints(&lines.said),
            pins: prints(&lines.pins),
            heads: prints(&lines.heads),
            terse: self.terse,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::render::{render, render_parts, Ways, CONTINUED};
    use crate::memory::{parse, Budgets};
    use crate::message::{Message, Role};

    const ALL_IN_SHORT: Budgets = Budgets {
        ledger: 100_000,
        room: None,
        per_token: 4.0,
        users: 0,
        steps: 100_000,
        heads: 100_000,
        notes: 100_000,
        folded_users: 0,
    };

    fn said(m: &mut Memory, first: u32, texts: &[&str], budgets: &Budgets) {
        let msgs: Vec<Message> = texts
            .iter()
            .map(|t| Message::text(Role::Human, t))
            .collect();
        let refs: Vec<&Message> = msgs.iter().collect();
        m.remember(&refs, first, None);
        m.fit(budgets, None);
        m.settle_base();
    }

    const RULES: [&str; 4] = [
        "Our region is eu-west-1 for every deployment we make.",
        "Always reply in English, even when the logs are in German.",
        "Never push to the main branch without a review from Dana.",
        "Keep the monthly spend under $300 across all the accounts.",
    ];

    #[test]
    fn a_compaction_adds_after_the_base_and_leaves_it_as_it_was() {
        let mut m = Memory::default();
        said(&mut m, 1, &RULES, &ALL_IN_SHORT);
        let before = render_parts(&m, Ways { recall: true });
        said(
            &mut m,
            5,
            &["Always use UTC for every timestamp."],
            &ALL_IN_SHORT,
        );
        let after = render_parts(&m, Ways { recall: true });
        assert_eq!(after[0], before[0]);
        assert!(
            after[1].contains(&format!("{}{CONTINUED}", render::LEDGER_HEADING)),
            "{after:?}"
        );
        assert!(after[1].contains("- [R5] Always use UTC for every timestamp."));
        // Read back from its text, the memory holds the same statements.
        let back = parse::parse(&render(&m, Ways { recall: true })).expect("ours");
        let numbers = |m: &Memory| {
            m.ledger_shown()
                .iter()
                .map(|e| e.number)
                .collect::<Vec<_>>()
        };
        assert_eq!(numbers(&back), numbers(&m));
    }

    #[test]
    fn a_replaced_statement_of_the_base_writes_it_anew() {
        let mut m = Memory::default();
        said(&mut m, 1, &RULES, &ALL_IN_SHORT);
        let before = render_parts(&m, Ways { recall: true });
        said(
            &mut m,
            5,
            &["Our region is ap-south-9 from now on."],
            &ALL_IN_SHORT,
        );
        let after = render_parts(&m, Ways { recall: true });
        let text = after.concat();
        assert_ne!(after[0], before[0]);
        assert!(
            !text.contains("eu-west-1") && !text.contains(CONTINUED),
            "{text}"
        );
        assert!(after[0].contains("ap-south-9"), "{text}");
    }

    #[test]
    fn additions_as_large_as_half_the_base_write_it_anew() {
        let mut m = Memory::default();
        said(&mut m, 1, &RULES[..1], &ALL_IN_SHORT);
        said(&mut m, 2, &RULES[1..], &ALL_IN_SHORT);
        let text = render(&m, Ways { recall: true });
        assert!(!text.contains(CONTINUED), "{text}");
        assert_eq!(m.base.as_ref().map(|b| b.said.len()), Some(4));
    }

    #[test]
    fn requests_kept_verbatim_stay_as_they_were_and_new_ones_follow() {
        let wide = Budgets {
            users: 100_000,
            folded_users: 100_000,
            ..ALL_IN_SHORT
        };
        let mut m = Memory::default();
        said(&mut m, 1, &["list the root", "read the config"], &wide);
        m.files.push("/h/1.md".into());
        let before = render_parts(&m, Ways { recall: true });
        said(&mut m, 3, &["now fix the parser"], &wide);
        m.files.push("/h/2.md".into());
        let after = render_parts(&m, Ways { recall: true });
        // All but the archive, the last part, open the new memory as they were.
        let unchanged = before.len() - 1;
        assert_eq!(after[..unchanged], before[..unchanged]);
        assert!(after[unchanged].contains("### R3\nnow fix the parser"));
    }
}

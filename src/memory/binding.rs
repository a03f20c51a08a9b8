//! The memory's ledger of what binds, kept with the rest of it: what the messages of a
//! span state or replace taken in, and the ledger pressed to its share of the room.

use super::*;

impl Memory {
    /// The ledger with what `msgs` state (their requests numbered from
    /// `first_number`) and the agent pinned among them; with `keep_new` false, only
    /// what they replace or unpin leaves it (they are still in view).
    pub(super) fn read_ledger(&mut self, msgs: &[&Message], first_number: u32, keep_new: bool) {
        let mut number = first_number;
        for m in msgs {
            let text = content_text(m);
            if m.role == Role::Human && !m.is_tool_result() && requests::says_something(&text) {
                let gone = if keep_new {
                    ledger::take_in(&mut self.ledger, number, m.id.as_deref(), &text)
                } else {
                    ledger::superseded_by(&mut self.ledger, &text)
                };
                for e in gone {
                    self.supersede(&e, if keep_new { number } else { 0 });
                }
                number += 1;
            } else if m.role == Role::Tool && m.name.as_deref() == Some(ledger::PIN_TOOL) {
                let current = number.saturating_sub(1);
                ledger::pin_result(&mut self.ledger, current, &text, keep_new);
            }
        }
    }

    /// A replaced statement out of the rest of the memory too: out of its request's text
    /// while that is verbatim (a mark naming what replaced it in its place), and its
    /// terms out of its request in short.
    pub(super) fn supersede(&mut self, e: &ledger::Entry, by: u32) {
        for r in self.requests.iter_mut().filter(|r| r.number == e.number) {
            if let Some(t) = r.text.as_mut().filter(|t| t.contains(&e.text)) {
                *t = t.replacen(&e.text, &ledger::superseded_mark(by), 1);
            }
        }
        let terms = heads::key_terms(&e.text);
        // A request that was in view only on the ledger's line stays in view in short.
        let in_short = self.heads.iter().any(|h| h.number == e.number)
            || self.requests.iter().any(|r| r.number == e.number)
            || self
                .ranges
                .iter()
                .any(|r| (r.first..=r.last).contains(&e.number))
            || self
                .ledger
                .iter()
                .any(|l| l.number == e.number && l.pin.is_none());
        if !in_short && e.number > 0 {
            let at = self.heads.partition_point(|h| h.number < e.number);
            self.heads.insert(
                at,
                Head {
                    number: e.number,
                    id: e.id.clone(),
                    text: format!("{} {}", ledger::superseded_mark(by), ledger::gist(&e.text)),
                    ..Head::default()
                },
            );
            return;
        }
        for h in self.heads.iter_mut().filter(|h| h.number == e.number) {
            h.keys.retain(|k| !terms.contains(k));
            let opening = h.text.trim_end_matches('…').trim();
            let shows = terms.iter().any(|t| h.text.contains(t.as_str()))
                || (!opening.is_empty() && e.text.contains(opening));
            if shows {
                h.text = format!("{} {}", ledger::superseded_mark(by), ledger::gist(&e.text));
            }
        }
    }

    /// What the messages that stay in view (`kept`) replace or unpin leaves the ledger,
    /// so no value they changed stands beside them.
    pub fn superseded_by(&mut self, kept: &[&Message]) {
        self.read_ledger(kept, self.next_number(), false);
    }

    /// The ledger pressed (from whole) to fit its budget within the room; the other
    /// layers' budgets in what it leaves.
    pub(super) fn fit_ledger(&mut self, b: &Budgets) -> Budgets {
        // Past its share, the oldest entries go to their key words, then their terms,
        // then onto one line a kind: a ledger that keeps every word of three hundred
        // rules costs every call what it holds (8% on the long coding session's bill).
        let share = b.room.map_or(b.ledger, |r| b.ledger.min(r));
        let used = self.press_ledger(share, ledger::press::MERGED, b.per_token);
        b.after(used)
    }

    /// The ledger's shown entries pressed (from whole) to fit `budget` widths, up to
    /// stage `last`; the widths they then take.
    pub(super) fn press_ledger(&mut self, budget: usize, last: u8, per_token: f64) -> usize {
        let shows: Vec<bool> = {
            let beside = self.beside();
            self.ledger
                .iter()
                .map(|e| ledger::shown_beside(e, &beside))
                .collect()
        };
        let mut shown: Vec<ledger::Entry> = Vec::new();
        for (e, &show) in self.ledger.iter_mut().zip(&shows) {
            e.pressed = ledger::press::WHOLE;
            if show {
                shown.push(e.clone());
            }
        }
        let used = ledger::fit(&mut shown, budget, last, per_token);
        let mut pressed = shown.into_iter();
        for (e, _) in self.ledger.iter_mut().zip(&shows).filter(|(_, &show)| show) {
            if let Some(p) = pressed.next() {
                e.pressed = p.pressed;
            }
        }
        used
    }

    /// What else in the memory states a ledger entry (see [`ledger::Beside`]).
    pub(super) fn beside(&self) -> ledger::Beside<'_> {
        ledger::Beside {
            verbatim: self
                .requests
                .iter()
                .filter(|r| r.text.is_some())
                .map(|r| r.number)
                .collect(),
            notes: self.notes.as_deref().unwrap_or(""),
        }
    }

    /// The ledger entries shown: the pinned notes, and the statements nothing else in
    /// the memory states (see [`ledger::shown_beside`]).
    pub fn ledger_shown(&self) -> Vec<ledger::Entry> {
        let beside = self.beside();
        self.ledger
            .iter()
            .filter(|e| ledger::shown_beside(e, &beside))
            .cloned()
            .collect()
    }
}

//! Where to cut a conversation: keep policies, trigger evaluation, tool-pair-safe
//! boundaries, and the index math between the effective view and raw state.

use crate::message::{Block, InputError, Message, Role};
use crate::passes::FastMap;

/// What the pair invariant needs to know of a message, small enough to cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairShape {
    pub role: Option<Role>,
    /// `(id, tool name)` of each call the message makes.
    pub calls: Vec<(String, String)>,
    pub results: Vec<String>,
    pub is_result: bool,
    pub thinking: bool,
    /// The tool name a result message carries itself, if any.
    pub tool_name: Option<String>,
}

impl PairShape {
    /// What the shape takes on the heap beyond its own size.
    pub fn heap_bytes(&self) -> usize {
        let calls: usize = self
            .calls
            .iter()
            .map(|(id, name)| id.capacity() + name.capacity())
            .sum();
        let results: usize = self.results.iter().map(String::capacity).sum();
        self.calls.capacity() * std::mem::size_of::<(String, String)>()
            + calls
            + self.results.capacity() * std::mem::size_of::<String>()
            + results
            + self.tool_name.as_ref().map_or(0, String::capacity)
    }

    /// What identifies the message apart from its content, which an edit rewrites:
    /// its role, the calls it makes and the results it answers (never 0, which means
    /// "unknown"). An edit carries its message's, so that applying it to another
    /// list, or to this one shifted, is caught instead of rewriting the wrong message.
    pub fn identity(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same in every process, so pickled edits check.
        let mut h = std::hash::DefaultHasher::new();
        (
            self.role.map(Role::type_name),
            self.is_result,
            &self.calls,
            &self.results,
        )
            .hash(&mut h);
        (h.finish() >> 1).max(1)
    }
}

/// A size of context: `("messages", n)`, `("tokens", n)` or `("fraction", f)` of the
/// model's `max_input_tokens`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Size {
    Messages(u64),
    Tokens(u64),
    Fraction(f64),
}

impl Size {
    /// Parse and validate one `(kind, value)` pair; `field` names it in errors.
    pub fn parse(kind: &str, value: f64, field: &str) -> Result<Size, InputError> {
        let bad = |reason: String| Err(InputError::new(None, field, reason));
        if !value.is_finite() {
            return bad(format!("value must be a finite number, got {value}"));
        }
        match kind {
            "fraction" if value > 0.0 && value <= 1.0 => Ok(Size::Fraction(value)),
            "fraction" => bad(format!("fraction must be in (0, 1], got {value}")),
            "messages" | "tokens" if value < 1.0 || value.fract() != 0.0 => bad(format!(
                "{kind} must be a whole number greater than 0, got {value}"
            )),
            "messages" => Ok(Size::Messages(value as u64)),
            "tokens" => Ok(Size::Tokens(value as u64)),
            other => bad(format!(
                "unknown kind '{other}'; expected 'messages', 'tokens' or 'fraction'"
            )),
        }
    }

    /// The token amount this size stands for; `None` for message counts.
    pub fn tokens(self, max_input_tokens: Option<u64>) -> Result<Option<u64>, InputError> {
        match self {
            Size::Messages(_) => Ok(None),
            Size::Tokens(t) => Ok(Some(t)),
            Size::Fraction(f) => match max_input_tokens {
                Some(max) => Ok(Some(((max as f64 * f) as u64).max(1))),
                None => Err(InputError::new(
                    None,
                    "max_input_tokens",
                    "a ('fraction', f) size needs max_input_tokens (from the model profile or given)",
                )),
            },
        }
    }
}

impl Size {
    /// Whether a conversation of `n_messages` and `total_tokens` has reached this size:
    /// a message count at `n_messages >= n`, a token or fraction size at
    /// `total_tokens >= threshold`.
    pub fn reached(
        self,
        n_messages: usize,
        total_tokens: f64,
        max_input_tokens: Option<u64>,
    ) -> Result<bool, InputError> {
        Ok(match self {
            Size::Messages(n) => n_messages as u64 >= n,
            _ => match self.tokens(max_input_tokens)? {
                Some(threshold) => total_tokens >= threshold as f64,
                None => false,
            },
        })
    }
}

/// Sizes that must all be reached together (a trigger given as a dict, such as
/// `{"tokens": 100_000, "messages": 50}`); a plain trigger is a clause of one.
#[derive(Clone, Debug, PartialEq)]
pub struct Clause(pub Vec<Size>);

/// True when any clause fires: every size in it is reached.
pub fn any_clause_fires(
    clauses: &[Clause],
    n_messages: usize,
    total_tokens: f64,
    max_input_tokens: Option<u64>,
) -> Result<bool, InputError> {
    for c in clauses {
        let mut all = !c.0.is_empty();
        for s in &c.0 {
            all &= s.reached(n_messages, total_tokens, max_input_tokens)?;
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What a pair-safe cut needs to know of a message: a `PairShape`, or the message
/// itself (read in place, without measuring it or copying its ids).
pub trait Paired {
    fn pair_role(&self) -> Option<Role>;
    /// Whether the message carries tool results (a cut must not keep it first).
    fn answers(&self) -> bool;
    fn has_thinking(&self) -> bool;
    /// The ids of the calls the message makes.
    fn made_call_ids(&self) -> impl Iterator<Item = &str>;
    /// The ids of the calls the message answers.
    fn answered_ids(&self) -> impl Iterator<Item = &str>;
}

impl Paired for PairShape {
    fn pair_role(&self) -> Option<Role> {
        self.role
    }
    fn answers(&self) -> bool {
        self.is_result
    }
    fn has_thinking(&self) -> bool {
        self.thinking
    }
    fn made_call_ids(&self) -> impl Iterator<Item = &str> {
        self.calls.iter().map(|(id, _)| id.as_str())
    }
    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        self.results.iter().map(String::as_str)
    }
}

/// As `PairShape::from` reads the message (the tests hold the two alike).
impl Paired for Message {
    fn pair_role(&self) -> Option<Role> {
        Some(self.role)
    }
    fn answers(&self) -> bool {
        self.is_tool_result()
    }
    fn has_thinking(&self) -> bool {
        self.blocks()
            .iter()
            .any(|b| matches!(b, Block::Other { .. }) && b.is_thinking())
    }
    fn made_call_ids(&self) -> impl Iterator<Item = &str> {
        Message::made_call_ids(self)
    }
    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        Message::answered_ids(self)
    }
}

impl<T: Paired + ?Sized> Paired for &T {
    fn pair_role(&self) -> Option<Role> {
        (**self).pair_role()
    }
    fn answers(&self) -> bool {
        (**self).answers()
    }
    fn has_thinking(&self) -> bool {
        (**self).has_thinking()
    }
    fn made_call_ids(&self) -> impl Iterator<Item = &str> {
        (**self).made_call_ids()
    }
    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        (**self).answered_ids()
    }
}

/// `safe[c]` tells whether cutting before message `c` (summarize `msgs[..c]`, keep
/// `msgs[c..]`) keeps every tool pair whole, for `c` in `0..=len`.
///
/// A cut is unsafe when it falls between a tool call and any result answering it
/// (parallel calls and interleavings included), when the kept part would start with a
/// tool result, or when it separates two consecutive AI messages of which one carries
/// thinking blocks (the reasoning belongs to its turn).
pub fn safe_cut_points<P: Paired>(msgs: &[P]) -> Vec<bool> {
    let n = msgs.len();
    let mut crossing = vec![0i64; n + 2];
    // Call ids come from the conversation, not from someone choosing collisions.
    let mut last_call: FastMap<&str, usize> = FastMap::default();
    last_call.reserve(n / 2);
    for (j, m) in msgs.iter().enumerate() {
        for id in m.answered_ids() {
            if let Some(&i) = last_call.get(id) {
                if i < j {
                    // Cuts at i+1 ..= j separate the call at i from the result at j.
                    crossing[i + 1] += 1;
                    crossing[j + 1] -= 1;
                }
            }
        }
        for id in m.made_call_ids() {
            last_call.insert(id, j);
        }
    }
    let mut safe = vec![true; n + 1];
    let mut open = 0i64;
    for (c, ok) in safe.iter_mut().enumerate().skip(1) {
        open += crossing[c];
        let (before, at) = (&msgs[c - 1], msgs.get(c));
        let starts_with_result = at.is_some_and(Paired::answers);
        let splits_thinking = at.is_some_and(|m| {
            before.pair_role() == Some(Role::Ai)
                && m.pair_role() == Some(Role::Ai)
                && (before.has_thinking() || m.has_thinking())
        });
        *ok = open == 0 && !starts_with_result && !splits_thinking;
    }
    safe
}

/// Move `target` to a pair-safe cut: the nearest safe cut at or before it (keeping
/// more), or failing that the nearest after it that still keeps one message; 0 when
/// there is none.
pub fn nearest_safe_cut(safe: &[bool], target: usize) -> usize {
    let n = safe.len().saturating_sub(1);
    let target = target.min(n);
    if let Some(c) = (1..=target).rev().find(|&c| safe[c]) {
        return c;
    }
    (target + 1..n).find(|&c| safe[c]).unwrap_or(0)
}

/// The pair-safe cutoff for a keep policy: messages before it are summarized, the
/// rest kept. 0 means there is nothing to summarize.
pub fn find_cutoff<P: Paired>(
    msgs: &[P],
    per_message_tokens: &[f64],
    keep: Size,
    max_input_tokens: Option<u64>,
) -> Result<usize, InputError> {
    let n = msgs.len();
    let target = match keep {
        Size::Messages(k) => {
            if n as u64 <= k {
                return Ok(0);
            }
            n - k as usize
        }
        _ => {
            let budget = keep.tokens(max_input_tokens)?.unwrap_or(1) as f64;
            if per_message_tokens.iter().sum::<f64>() <= budget || n <= 1 {
                return Ok(0);
            }
            // Earliest start whose suffix fits the budget, keeping at least one message.
            let mut suffix = 0.0;
            let mut start = n;
            for (i, t) in per_message_tokens.iter().enumerate().rev() {
                if suffix + t > budget {
                    break;
                }
                suffix += t;
                start = i;
            }
            start.min(n - 1)
        }
    };
    Ok(nearest_safe_cut(&safe_cut_points(msgs), target))
}

/// The raw-state cutoff for a cut at `effective_cutoff` of the effective view.
///
/// With a prior compaction the effective view is `[summary, *raw[prior_cutoff:]]`, so
/// effective index `i >= 1` is raw index `prior_cutoff + i - 1`.
pub fn state_cutoff(prior_cutoff: Option<u64>, effective_cutoff: u64) -> Result<u64, InputError> {
    match prior_cutoff {
        None => Ok(effective_cutoff),
        Some(_) if effective_cutoff == 0 => Err(InputError::new(
            None,
            "effective_cutoff",
            "must be at least 1 after a prior compaction (index 0 is the summary)",
        )),
        Some(prior) => Ok(prior + effective_cutoff - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::message::ToolCall;
    use serde_json::json;

    fn ai(ids: &[&str]) -> Message {
        let mut m = Message::text(Role::Ai, "");
        m.tool_calls = ids
            .iter()
            .map(|id| ToolCall {
                id: Some((*id).into()),
                name: "t".into(),
                args: json!({}).into(),
            })
            .collect();
        m
    }

    fn tool(id: &str) -> Message {
        let mut m = Message::text(Role::Tool, "r");
        m.tool_call_id = Some(id.into());
        m
    }

    fn human() -> Message {
        Message::text(Role::Human, "q")
    }

    #[test]
    fn interleaved_calls_are_never_split() {
        // H, AI(x), AI(y), T(x), T(y), H
        let msgs = [
            human(),
            ai(&["x"]),
            ai(&["y"]),
            tool("x"),
            tool("y"),
            human(),
        ];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        let safe = safe_cut_points(&refs);
        assert_eq!(safe, vec![true, true, false, false, false, true, true]);
    }

    #[test]
    fn parallel_calls_stay_with_their_results() {
        let msgs = [
            human(),
            ai(&["a", "b"]),
            tool("a"),
            tool("b"),
            human(),
            ai(&[]),
        ];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        // Keep 3 would start at T(b): move back to the AI message.
        assert_eq!(
            find_cutoff(&refs, &[1.0; 6], Size::Messages(3), None),
            Ok(1)
        );
        assert_eq!(
            find_cutoff(&refs, &[1.0; 6], Size::Messages(2), None),
            Ok(4)
        );
        assert_eq!(
            find_cutoff(&refs, &[1.0; 6], Size::Messages(6), None),
            Ok(0)
        );
    }

    #[test]
    fn orphan_result_never_starts_the_tail() {
        let msgs = [human(), tool("gone"), human()];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        assert_eq!(safe_cut_points(&refs), vec![true, false, true, true]);
        // Keeping 2 would start at the orphan: summarize it too.
        assert_eq!(
            find_cutoff(&refs, &[1.0; 3], Size::Messages(2), None),
            Ok(2)
        );
    }

    #[test]
    fn falls_forward_when_nothing_before_is_safe() {
        // The whole prefix is one tool loop: the only safe cut is after it.
        let msgs = [ai(&["a"]), tool("a"), human()];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        assert_eq!(
            find_cutoff(&refs, &[1.0; 3], Size::Messages(2), None),
            Ok(2)
        );
    }

    #[test]
    fn token_keep_takes_the_longest_suffix_in_budget() {
        let msgs = [human(), human(), human(), human()];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        let per = [10.0, 10.0, 10.0, 10.0];
        assert_eq!(find_cutoff(&refs, &per, Size::Tokens(25), None), Ok(2));
        assert_eq!(find_cutoff(&refs, &per, Size::Tokens(40), None), Ok(0));
        // Budget smaller than the last message: still keep one.
        assert_eq!(find_cutoff(&refs, &per, Size::Tokens(5), None), Ok(3));
        assert_eq!(
            find_cutoff(&refs, &per, Size::Fraction(0.25), Some(100)),
            Ok(2)
        );
        assert!(find_cutoff(&refs, &per, Size::Fraction(0.25), None).is_err());
    }

    #[test]
    fn thinking_turns_stay_together() {
        let mut thinking = Message::text(Role::Ai, "");
        thinking.content = crate::message::Content::Blocks(vec![crate::message::Block::Other {
            kind: "thinking".into(),
            value: json!({"type": "thinking", "thinking": "hmm", "signature": "s"}),
        }]);
        let msgs = [human(), thinking, Message::text(Role::Ai, "answer")];
        let refs: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        assert_eq!(safe_cut_points(&refs), vec![true, true, false, true]);
    }

    #[test]
    fn triggers_fire_on_any() {
        let one = |s: Size| Clause(vec![s]);
        let t = [one(Size::Tokens(100)), one(Size::Messages(50))];
        assert_eq!(any_clause_fires(&t, 10, 99.0, None), Ok(false));
        assert_eq!(any_clause_fires(&t, 10, 100.0, None), Ok(true));
        assert_eq!(any_clause_fires(&t, 50, 0.0, None), Ok(true));
        let half = [one(Size::Fraction(0.5))];
        assert_eq!(any_clause_fires(&half, 1, 50.0, Some(100)), Ok(true));
        assert!(any_clause_fires(&half, 1, 50.0, None).is_err());
    }

    #[test]
    fn sizes_are_validated() {
        assert!(Size::parse("fraction", 1.5, "keep").is_err());
        assert!(Size::parse("messages", 0.0, "keep").is_err());
        assert!(Size::parse("messages", 2.5, "keep").is_err());
        assert!(Size::parse("bytes", 1.0, "trigger").is_err());
        assert_eq!(Size::parse("tokens", 10.0, "keep"), Ok(Size::Tokens(10)));
    }

    #[test]
    fn state_cutoff_chains() {
        assert_eq!(state_cutoff(None, 5), Ok(5));
        assert_eq!(state_cutoff(Some(5), 4), Ok(8));
        assert!(state_cutoff(Some(5), 0).is_err());
    }
}

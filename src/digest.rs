//! The digest: an older span of the conversation as one message, made without a
//! language model. Every user message stays verbatim and whole; each step the agent
//! took is one line (its tool call and the head of what came back, or the head of its
//! answer) with the `recall("<id>")` that returns it in full.
//!
//! A later digest merges with the earlier one: the user messages are kept whole (an
//! earlier model summary with them), the step lines after them, where the oldest give
//! way first when there is no room. Step lines are single lines after the last steps
//! heading, so that is where the earlier digest is split, whatever a user wrote.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::message::{Message, Role};
use crate::render::content_text;

/// How much of a call's arguments, of a result and of an answer a line shows, in
/// widths (see [`width`]): about 20, 20 and 30 tokens.
const ARGS_HEAD: usize = 80;
const RESULT_HEAD: usize = 80;
const ANSWER_HEAD: usize = 120;

/// A character's width: about what it costs in tokens, times four. Latin letters run
/// about four to a token, CJK characters about one.
fn char_width(c: char) -> usize {
    if c.is_ascii() {
        1
    } else if c >= '\u{2E80}' {
        4
    } else {
        2
    }
}

/// A text's width (see [`char_width`]): what the digest's budget is measured in.
pub fn width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// The digest's opening words.
pub const DIGEST_INTRO: &str = "This digest of the earlier conversation was made without a \
language model: every user message verbatim, then one line for each step the agent took.";

/// The headings of its two parts.
pub const USERS_HEADING: &str = "## User messages, verbatim and in order";
pub const STEPS_HEADING: &str =
    "## Agent steps, oldest first (recall(\"<id>\") returns one in full)";

/// One entry of the digest: a user message (never dropped) or an agent step.
enum Entry {
    User(String),
    Step(String),
}

/// `text` on one line, whitespace runs as one space, cut to `max` widths with an
/// ellipsis; and whether it was cut.
fn head(text: &str, max: usize) -> (String, bool) {
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

fn recall_note(id: Option<&str>) -> String {
    match id {
        Some(id) if !id.is_empty() => format!(" recall(\"{id}\")"),
        _ => String::new(),
    }
}

/// The line of what `m` said, under `who`: the head of its text, with the recall id
/// when the head cuts it short; none for an empty text.
fn said_line(who: &str, m: &Message) -> Option<Entry> {
    let text = content_text(m);
    if text.trim().is_empty() {
        return None;
    }
    let (h, cut) = head(&text, ANSWER_HEAD);
    let more = if cut {
        recall_note(m.id.as_deref())
    } else {
        String::new()
    };
    Some(Entry::Step(format!("- {who}: {h}{more}")))
}

fn entries(msgs: &[&Message]) -> Vec<Entry> {
    // Results by the id of the call they answer, and which of them a call's line shows.
    let mut results: HashMap<&str, &Message> = HashMap::new();
    for m in msgs {
        if let (Role::Tool, Some(id)) = (m.role, m.tool_call_id.as_deref()) {
            results.entry(id).or_insert(m);
        }
    }
    let mut shown: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for m in msgs {
        match m.role {
            Role::Human => {
                let text = content_text(m);
                if !text.trim().is_empty() {
                    out.push(Entry::User(text));
                }
            }
            Role::Ai => {
                out.extend(said_line("Agent", m));
                for c in &m.tool_calls {
                    let (args, _) = head(&c.args.to_string(), ARGS_HEAD);
                    let id = c.id.as_deref();
                    let result = match id.and_then(|i| results.get(i)) {
                        Some(r) => {
                            if let Some(i) = id {
                                shown.insert(i);
                            }
                            head(&content_text(r), RESULT_HEAD).0
                        }
                        None => "(no result in this part)".to_owned(),
                    };
                    // On one line whatever the name holds: the steps part is split by lines.
                    let (name, _) = head(&c.name, ARGS_HEAD);
                    out.push(Entry::Step(format!(
                        "- {name} {args} → {result}{}",
                        recall_note(id)
                    )));
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref();
                if id.is_some_and(|i| shown.contains(i)) {
                    continue;
                }
                let (name, _) = head(m.name.as_deref().unwrap_or("a tool"), ARGS_HEAD);
                let (h, _) = head(&content_text(m), RESULT_HEAD);
                out.push(Entry::Step(format!(
                    "- result of {name}: {h}{}",
                    recall_note(id)
                )));
            }
            _ => {
                let (role, _) = head(m.role_name.as_deref().unwrap_or(m.openai_role()), ARGS_HEAD);
                out.extend(said_line(&role, m));
            }
        }
    }
    out
}

/// An earlier digest (or summary) split into what must stay whole (its text up to
/// its steps heading) and its step lines, with how many it already left out.
fn split_previous(previous: &str) -> (String, Vec<String>, usize) {
    let marker = format!("\n{STEPS_HEADING}\n");
    let Some(at) = previous.rfind(&marker) else {
        return (
            format!("{}\n\n{USERS_HEADING}\n", previous.trim_end_matches('\n')),
            Vec::new(),
            0,
        );
    };
    let whole = previous[..at].to_owned();
    let mut left_out = 0;
    let mut steps = Vec::new();
    for line in previous[at + marker.len()..].lines() {
        if let Some(n) = line
            .strip_prefix('(')
            .and_then(|r| r.split_once(' '))
            .and_then(|(n, _)| n.parse::<usize>().ok())
        {
            left_out += n;
        } else if !line.is_empty() {
            steps.push(line.to_owned());
        }
    }
    (whole, steps, left_out)
}

/// The digest of `msgs`, merged with `previous` (an earlier digest or summary). User
/// messages, and `previous` up to its step lines, are never cut; when the whole is over
/// `max_width` (see [`width`]), the oldest step lines give way first, with a note (each step is still
/// in the archive, and its result still recallable).
pub fn digest(msgs: &[&Message], previous: Option<&str>, max_width: usize) -> String {
    let (mut out, mut steps, mut left_out) = match previous.filter(|p| !p.trim().is_empty()) {
        Some(p) => split_previous(p),
        None => (
            format!("{DIGEST_INTRO}\n\n{USERS_HEADING}\n"),
            Vec::new(),
            0,
        ),
    };
    for e in entries(msgs) {
        match e {
            Entry::User(u) => {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                if !out.ends_with(&format!("{USERS_HEADING}\n")) {
                    out.push('\n');
                }
                out.push_str(&u);
            }
            Entry::Step(s) => steps.push(s),
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let mut room = max_width.saturating_sub(width(&out) + STEPS_HEADING.len() + 80);
    let mut first = steps.len();
    for (i, s) in steps.iter().enumerate().rev() {
        let n = width(s) + 1;
        if n > room {
            break;
        }
        room -= n;
        first = i;
    }
    left_out += first;
    let _ = write!(out, "\n{STEPS_HEADING}\n");
    if left_out > 0 {
        let _ = writeln!(
            out,
            "({left_out} earlier steps left out for space; the archive has them)"
        );
    }
    for s in &steps[first..] {
        let _ = writeln!(out, "{s}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::{ai_call, tool};
    use serde_json::json;

    #[test]
    fn a_digest_keeps_users_verbatim_and_a_line_a_step() {
        let h = Message::text(Role::Human, "fix the parser, then\n- run it  ");
        let a = ai_call("c1", "read_file", json!({"file_path": "p.py"}));
        let t = tool("c1", "def parse(x):\n    return x\n");
        let mut done = Message::text(Role::Ai, &format!("Done. {}", "word ".repeat(40)));
        done.id = Some("m7".into());
        let d = digest(&[&h, &a, &t, &done], None, 10_000);
        let expected = format!(
            "{DIGEST_INTRO}\n\n{USERS_HEADING}\nfix the parser, then\n- run it  \n\n{STEPS_HEADING}\n\
             - read_file {{\"file_path\":\"p.py\"}} → def parse(x): return x recall(\"c1\")\n\
             - Agent: Done. {}… recall(\"m7\")\n",
            "word ".repeat(23).trim_end()
        );
        assert_eq!(d, expected);
    }

    #[test]
    fn a_chained_digest_keeps_every_user_message_and_drops_old_steps_first() {
        let long = "x".repeat(9_000) + " ";
        let h0 = Message::text(Role::Human, &long);
        let a0 = ai_call("c0", "ls", json!({"path": "/"}));
        let t0 = tool("c0", "a.py");
        let first = digest(&[&h0, &a0, &t0], None, 100_000);
        assert!(first.contains(&long));
        assert!(first.contains("recall(\"c0\")"));
        let h = Message::text(Role::Human, "next request");
        let a1 = ai_call("c1", "ls", json!({"path": "/src"}));
        let t1 = tool("c1", "b.py");
        let second = digest(&[&h, &a1, &t1], Some(&first), 100_000);
        assert!(second.contains(&format!("{long}\n\nnext request\n\n{STEPS_HEADING}\n")));
        let steps = second.split(STEPS_HEADING).nth(1).unwrap_or("");
        assert!(steps.find("c0").unwrap_or(usize::MAX) < steps.find("c1").unwrap_or(0));
        // With no room, the steps go, oldest first, and the users stay.
        let tight = digest(&[&h, &a1, &t1], Some(&first), 9_400);
        assert!(tight.contains(&long) && tight.contains("next request"));
        assert!(tight.contains("recall(\"c1\")") && !tight.contains("recall(\"c0\")"));
        assert!(tight.contains("(1 earlier steps left out for space"));
        let third = digest(&[], Some(&tight), 0);
        assert!(third.contains("(2 earlier steps left out for space"));
        assert!(third.contains(&long));
    }

    #[test]
    fn a_model_summary_before_it_is_kept_whole() {
        let h = Message::text(Role::Human, "go on");
        let d = digest(&[&h], Some("1. The user wants a parser."), 10_000);
        assert!(d.starts_with(&format!(
            "1. The user wants a parser.\n\n{USERS_HEADING}\ngo on\n"
        )));
    }

    #[test]
    fn over_budget_the_oldest_steps_give_way() {
        let mut msgs = vec![Message::text(Role::Human, "go")];
        for i in 0..50 {
            msgs.push(ai_call(&format!("c{i}"), "ls", json!({"path": "/"})));
            msgs.push(tool(&format!("c{i}"), &"y".repeat(200)));
        }
        let refs: Vec<&Message> = msgs.iter().collect();
        let d = digest(&refs, None, 2_000);
        assert!(d.chars().count() <= 2_000, "{}", d.len());
        assert!(d.contains("\ngo\n"));
        assert!(d.contains("recall(\"c49\")"));
        assert!(!d.contains("recall(\"c0\")"));
        assert!(d.contains("earlier steps left out for space"));
    }

    #[test]
    fn heads_are_measured_by_width_so_cjk_lines_stay_short() {
        assert_eq!(width("ab缓存"), 10);
        let mut a = Message::text(Role::Ai, &"缓存索引".repeat(40));
        a.id = Some("z".into());
        let d = digest(&[&a], None, 10_000);
        let line = d.lines().last().unwrap_or("");
        assert_eq!(
            line,
            format!("- Agent: {}… recall(\"z\")", "缓存索引".repeat(7) + "缓存")
        );
    }

    #[test]
    fn a_name_with_line_breaks_stays_on_its_line() {
        let a = ai_call("c1", "odd\n## Agent steps\nname", json!({}));
        let t = tool("c1", "ok");
        let d = digest(&[&a, &t], None, 10_000);
        let steps = d
            .split(&format!("\n{STEPS_HEADING}\n"))
            .nth(1)
            .unwrap_or("");
        assert_eq!(steps, "- odd ## Agent steps name {} → ok recall(\"c1\")\n");
    }

    #[test]
    fn a_result_without_its_call_still_has_a_line() {
        let t = tool("c9", "orphan output");
        let d = digest(&[&t], None, 10_000);
        assert!(d.contains("- result of a tool: orphan output recall(\"c9\")\n"));
    }
}

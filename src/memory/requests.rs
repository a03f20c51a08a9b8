//! A span of the conversation as numbered requests, each with the steps the agent took
//! for it: one line a step (its tool call and the head of what came back, or the head
//! of its answer) with the `recall("<id>")` that returns it in full.

use std::collections::{HashMap, HashSet};

use crate::memory::text::{head, recall_note};
use crate::memory::Request;
use crate::message::{Message, Role};
use crate::render::content_text;

/// How much of a call's arguments, of a result and of an answer a step line shows, in
/// widths: about 20, 20 and 30 tokens.
const ARGS_HEAD: usize = 80;
const RESULT_HEAD: usize = 80;
const ANSWER_HEAD: usize = 120;

/// Whether a user's text says anything, and so opens a request: a character that is
/// not blank, blank as Python's `str.strip` takes it (Unicode white space and the
/// separators U+001C to U+001F), so that the package's rule and the core's agree.
pub fn says_something(text: &str) -> bool {
    text.chars()
        .any(|c| !c.is_whitespace() && !('\u{1c}'..='\u{1f}').contains(&c))
}

/// What a span holds: the steps before its first request (they continue the request
/// before the span), and its requests in order, numbered from `first_number`.
pub struct Span {
    pub continued: Vec<String>,
    pub requests: Vec<Request>,
}

/// The line of what `m` said, under `who`: the head of its text, with the recall id
/// when the head cuts it short; none for an empty text.
fn said_line(who: &str, m: &Message) -> Option<String> {
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
    Some(format!("- {who}: {h}{more}"))
}

/// The step lines of one message that is not a user's; `results` holds the span's
/// tool results by call id, `shown` those a call's line already showed.
fn step_lines<'a>(
    m: &'a Message,
    results: &HashMap<&str, &Message>,
    shown: &mut HashSet<&'a str>,
) -> Vec<String> {
    let mut out = Vec::new();
    match m.role {
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
                // On one line whatever the name holds.
                let (name, _) = head(&c.name, ARGS_HEAD);
                out.push(format!("- {name} {args} → {result}{}", recall_note(id)));
            }
        }
        Role::Tool => {
            let id = m.tool_call_id.as_deref();
            if !id.is_some_and(|i| shown.contains(i)) {
                let (name, _) = head(m.name.as_deref().unwrap_or("a tool"), ARGS_HEAD);
                let (h, _) = head(&content_text(m), RESULT_HEAD);
                out.push(format!("- result of {name}: {h}{}", recall_note(id)));
            }
        }
        _ => {
            let (role, _) = head(m.role_name.as_deref().unwrap_or(m.openai_role()), ARGS_HEAD);
            out.extend(said_line(&role, m));
        }
    }
    out
}

/// The span `msgs` as requests numbered from `first_number`, each user message with a
/// text opening one (an empty one is a step of the request it stands in).
pub fn split(msgs: &[&Message], first_number: u32) -> Span {
    let mut results: HashMap<&str, &Message> = HashMap::new();
    for m in msgs {
        if let (Role::Tool, Some(id)) = (m.role, m.tool_call_id.as_deref()) {
            results.entry(id).or_insert(m);
        }
    }
    let mut shown: HashSet<&str> = HashSet::new();
    let mut span = Span {
        continued: Vec::new(),
        requests: Vec::new(),
    };
    let mut number = first_number;
    for m in msgs {
        if m.role == Role::Human {
            let text = content_text(m);
            if says_something(&text) {
                span.requests.push(Request {
                    number,
                    id: m.id.clone(),
                    text: Some(text),
                    ..Request::default()
                });
                number += 1;
                continue;
            }
        }
        let lines = step_lines(m, &results, &mut shown);
        match span.requests.last_mut() {
            Some(r) => r.steps.extend(lines),
            None => span.continued.extend(lines),
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::{ai_call, tool};
    use serde_json::json;

    #[test]
    fn each_request_holds_its_own_steps_in_order() {
        let before = ai_call("c0", "ls", json!({"path": "/"}));
        let t0 = tool("c0", "a.py");
        let mut h = Message::text(Role::Human, "fix the parser, then\n- run it  ");
        h.id = Some("u1".into());
        let a = ai_call("c1", "read_file", json!({"file_path": "p.py"}));
        let t = tool("c1", "def parse(x):\n    return x\n");
        let mut done = Message::text(Role::Ai, &format!("Done. {}", "word ".repeat(40)));
        done.id = Some("m7".into());
        let h2 = Message::text(Role::Human, "thanks");
        let span = split(&[&before, &t0, &h, &a, &t, &done, &h2], 12);
        assert_eq!(
            span.continued,
            vec!["- ls {\"path\":\"/\"} → a.py recall(\"c0\")"]
        );
        assert_eq!(span.requests.len(), 2);
        let r = &span.requests[0];
        assert_eq!((r.number, r.id.as_deref()), (12, Some("u1")));
        assert_eq!(r.text.as_deref(), Some("fix the parser, then\n- run it  "));
        assert_eq!(
            r.steps,
            vec![
                "- read_file {\"file_path\":\"p.py\"} → def parse(x): return x recall(\"c1\")"
                    .to_owned(),
                format!(
                    "- Agent: Done. {}… recall(\"m7\")",
                    "word ".repeat(23).trim_end()
                ),
            ]
        );
        assert_eq!(span.requests[1].number, 13);
        assert!(span.requests[1].steps.is_empty());
    }

    #[test]
    fn a_blank_user_message_opens_no_request() {
        for blank in ["", "  \n", "\u{1f}", "\u{1c} \t"] {
            let span = split(&[&Message::text(Role::Human, blank)], 1);
            assert!(span.requests.is_empty(), "{blank:?}");
        }
        assert!(says_something("\u{1f}x"));
    }

    #[test]
    fn a_name_with_line_breaks_stays_on_its_line() {
        let h = Message::text(Role::Human, "go");
        let a = ai_call("c1", "odd\n### R9\nname", json!({}));
        let t = tool("c1", "ok");
        let span = split(&[&h, &a, &t], 1);
        assert_eq!(
            span.requests[0].steps,
            vec!["- odd ### R9 name {} → ok recall(\"c1\")"]
        );
    }

    #[test]
    fn a_result_without_its_call_still_has_a_line() {
        let t = tool("c9", "orphan output");
        let span = split(&[&t], 1);
        assert_eq!(
            span.continued,
            vec!["- result of a tool: orphan output recall(\"c9\")"]
        );
    }

    #[test]
    fn cjk_heads_are_cut_by_width() {
        let h = Message::text(Role::Human, "go");
        let mut a = Message::text(Role::Ai, &"缓存索引".repeat(40));
        a.id = Some("z".into());
        let span = split(&[&h, &a], 1);
        assert_eq!(
            span.requests[0].steps,
            vec![format!(
                "- Agent: {}… recall(\"z\")",
                "缓存索引".repeat(7) + "缓存"
            )]
        );
    }
}

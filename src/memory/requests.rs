//! A span of the conversation as numbered requests, each with the steps the agent took
//! for it: one line a step (its tool call and the head of what came back, or the head
//! of its answer) with the `recall("<id>")` that returns it in full.

use std::collections::{HashMap, HashSet};

use crate::memory::text::{head, recall_note, Head};
use crate::memory::Request;
use serde_json::Value;

use crate::message::{Block, BlockKind, Content, Message, Role};
use crate::render::{content_text, result_text};

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
    let text = said_text(m);
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

/// What a message said in words: its text, without the calls and results its blocks
/// carry in Anthropic's shape (those have lines of their own).
fn said_text(m: &Message) -> String {
    match &m.content {
        Content::Blocks(blocks) if blocks.iter().any(is_call_or_result) => {
            let words: Vec<Block> = blocks
                .iter()
                .filter(|b| !is_call_or_result(b))
                .cloned()
                .collect();
            content_text(&Message {
                content: Content::Blocks(words),
                ..Message::default()
            })
        }
        _ => content_text(m),
    }
}

fn is_call_or_result(b: &Block) -> bool {
    matches!(b.kind_of(), BlockKind::ToolUse | BlockKind::ToolResult)
}

/// A call a message makes, in whichever shape: its id, tool and arguments.
struct Call<'a> {
    id: Option<&'a str>,
    name: &'a str,
    args: &'a Value,
}

/// The calls of an AI message: its tool calls, else its `tool_use` blocks.
fn calls_of(m: &Message) -> Vec<Call<'_>> {
    if !m.tool_calls.is_empty() {
        return m
            .tool_calls
            .iter()
            .map(|c| Call {
                id: c.id.as_deref(),
                name: &c.name,
                args: c.args.whole().unwrap_or(&Value::Null),
            })
            .collect();
    }
    blocks(m)
        .iter()
        .filter_map(|b| match b {
            Block::Other { value, .. } if b.kind_of() == BlockKind::ToolUse => Some(Call {
                id: b.tool_use_id(),
                name: value
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("a tool"),
                args: value.get("input").unwrap_or(&Value::Null),
            }),
            _ => None,
        })
        .collect()
}

/// The results a message carries, by the id of the call each answers, with the head
/// of their text: a tool message's, or the `tool_result` blocks of a user message.
fn results_of(m: &Message) -> Vec<(&str, String)> {
    if let (Role::Tool, Some(id)) = (m.role, m.tool_call_id.as_deref()) {
        return vec![(id, head(&content_text(m), RESULT_HEAD).0)];
    }
    blocks(m)
        .iter()
        .filter_map(|b| {
            let id = b.tool_result_id()?;
            let text = match b {
                Block::Other { value, .. } => {
                    value.get("content").map_or(String::new(), result_text)
                }
                _ => String::new(),
            };
            Some((id, head(&text, RESULT_HEAD).0))
        })
        .collect()
}

fn blocks(m: &Message) -> &[Block] {
    match &m.content {
        Content::Blocks(b) => b,
        Content::Text(_) => &[],
    }
}

/// The step lines of one message that is not a user's request; `results` holds the
/// heads of the span's tool results by call id, `names` the tools called by id, and
/// `shown` the results a call's line already showed.
fn step_lines<'a>(
    m: &'a Message,
    results: &HashMap<&str, String>,
    names: &HashMap<&str, &str>,
    shown: &mut HashSet<&'a str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let carried = results_of(m);
    match m.role {
        Role::Ai => {
            out.extend(said_line("Agent", m));
            for c in calls_of(m) {
                // Serialized only as far as its head: arguments can hold a whole file.
                let mut args = Head::new(ARGS_HEAD);
                let _ = std::fmt::Write::write_fmt(&mut args, format_args!("{}", c.args));
                let (args, _) = args.finish();
                let result = match c.id.and_then(|i| results.get(i)) {
                    Some(r) => {
                        if let Some(i) = c.id {
                            shown.insert(i);
                        }
                        r.clone()
                    }
                    None => "(no result in this part)".to_owned(),
                };
                // On one line whatever the name holds.
                let (name, _) = head(c.name, ARGS_HEAD);
                out.push(format!("- {name} {args} → {result}{}", recall_note(c.id)));
            }
        }
        Role::Tool if carried.is_empty() => {
            // A result that names no call: a line all the same.
            let (name, _) = head(m.name.as_deref().unwrap_or("a tool"), ARGS_HEAD);
            let (h, _) = head(&content_text(m), RESULT_HEAD);
            out.push(format!("- result of {name}: {h}"));
        }
        _ if !carried.is_empty() => {
            for (id, text) in carried {
                if shown.contains(id) {
                    continue;
                }
                let tool = m.name.as_deref().or_else(|| names.get(id).copied());
                let (name, _) = head(tool.unwrap_or("a tool"), ARGS_HEAD);
                out.push(format!(
                    "- result of {name}: {text}{}",
                    recall_note(Some(id))
                ));
            }
            if m.role != Role::Tool {
                out.extend(said_line("User", m));
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
/// text opening one (an empty one is a step of the request it stands in, and so is
/// one that carries tool results, as Anthropic's shape sends them).
pub fn split(msgs: &[&Message], first_number: u32) -> Span {
    let mut results: HashMap<&str, String> = HashMap::new();
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in msgs {
        for (id, text) in results_of(m) {
            results.entry(id).or_insert(text);
        }
        if m.role == Role::Ai {
            for c in calls_of(m) {
                if let Some(id) = c.id {
                    names.entry(id).or_insert(c.name);
                }
            }
        }
    }
    let mut shown: HashSet<&str> = HashSet::new();
    let mut span = Span {
        continued: Vec::new(),
        requests: Vec::new(),
    };
    let mut number = first_number;
    for m in msgs {
        if m.role == Role::Human && !m.is_tool_result() {
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
        let lines = step_lines(m, &results, &names, &mut shown);
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
    use crate::message::ToolCall;
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

    fn blocks_of(role: Role, blocks: Vec<Value>) -> Message {
        let content = blocks
            .into_iter()
            .map(|v| Block::Other {
                kind: v["type"].as_str().unwrap_or("").to_owned(),
                value: v,
            })
            .collect();
        Message {
            role,
            content: Content::Blocks(content),
            ..Message::default()
        }
    }

    #[test]
    fn anthropics_shape_numbers_and_steps_as_langchains() {
        // LangChain's (and OpenAI's) shape.
        let h = Message::text(Role::Human, "read both");
        let a = {
            let mut a = ai_call("c1", "read_file", json!({"file_path": "p.py"}));
            a.tool_calls.push(ToolCall {
                id: Some("c2".into()),
                name: "read_file".into(),
                args: json!({"file_path": "q.py"}).into(),
            });
            a
        };
        let (t1, t2) = (tool("c1", "def p(): pass"), tool("c2", "def q(): pass"));
        let done = Message::text(Role::Ai, "Both read.");
        let lc = split(&[&h, &a, &t1, &t2, &done], 1);
        // Anthropic's: tool_use blocks in the answer, tool_result blocks in a user message.
        let calls = blocks_of(
            Role::Ai,
            vec![
                json!({"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "p.py"}}),
                json!({"type": "tool_use", "id": "c2", "name": "read_file", "input": {"file_path": "q.py"}}),
            ],
        );
        let results = blocks_of(
            Role::Human,
            vec![
                json!({"type": "tool_result", "tool_use_id": "c1", "content": "def p(): pass"}),
                json!({"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "def q(): pass"}]}),
            ],
        );
        let an = split(&[&h, &calls, &results, &done], 1);
        assert_eq!(
            an.requests.len(),
            1,
            "a user message of results opens no request"
        );
        assert_eq!(an.requests[0].steps, lc.requests[0].steps);
        assert_eq!(
            an.requests[0].steps[0],
            "- read_file {\"file_path\":\"p.py\"} → def p(): pass recall(\"c1\")"
        );
        // Results whose calls are out of the span still get their lines, with the tool's name.
        let alone = split(&[&calls, &results], 1);
        let late = split(&[&results], 1);
        assert_eq!(alone.continued.len(), 2);
        assert_eq!(
            late.continued,
            vec![
                "- result of a tool: def p(): pass recall(\"c1\")",
                "- result of a tool: def q(): pass recall(\"c2\")"
            ]
        );
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

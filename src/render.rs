//! Text made from a conversation: the transcript the summarizer reads and the archive
//! keeps, and the extractive summary used when no summarizer can be called.

use std::fmt::Write;

use serde_json::Value;

use crate::message::{thinking_text, Block, BlockKind, Content, Message, Role};
use crate::passes::shorten;

/// A task from the agent's todo list: its text and status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    pub status: String,
}

fn role_title(m: &Message) -> String {
    match m.role {
        Role::System => "System".into(),
        Role::Human => "Human".into(),
        Role::Ai => "AI".into(),
        Role::Tool => match (&m.name, &m.tool_call_id) {
            (Some(name), Some(id)) => format!("Tool result: {name} (call {id})"),
            (Some(name), None) => format!("Tool result: {name}"),
            (None, Some(id)) => format!("Tool result (call {id})"),
            (None, None) => "Tool result".into(),
        },
        Role::Function => format!("Function result: {}", m.name.as_deref().unwrap_or("")),
        Role::Other => m.role_name.clone().unwrap_or_else(|| "Other".into()),
    }
}

/// The readable text of a message's content; non-text blocks become short tags,
/// tool-use blocks are left to the tool calls (they carry the same arguments).
pub fn content_text(m: &Message) -> String {
    match &m.content {
        Content::Text(t) => t.as_str().to_owned(),
        Content::Blocks(blocks) => {
            let mut parts: Vec<String> = Vec::new();
            for b in blocks {
                match b {
                    Block::Text(t) => parts.push(t.as_str().to_owned()),
                    Block::Image => parts.push("[image]".into()),
                    Block::Document => parts.push("[document]".into()),
                    Block::Other { kind, value } => match BlockKind::parse(kind) {
                        BlockKind::ToolUse | BlockKind::FunctionCall
                            if !m.tool_calls.is_empty() => {}
                        BlockKind::Thinking | BlockKind::Reasoning => {
                            let text = thinking_text(value).unwrap_or("");
                            if !text.is_empty() {
                                parts.push(format!("[thinking] {text}"));
                            }
                        }
                        BlockKind::RedactedThinking => {}
                        BlockKind::ToolResult => {
                            let inner = value.get("content").map_or(String::new(), |c| match c {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            });
                            parts.push(format!("[tool result] {inner}"));
                        }
                        _ => parts.push(value.to_string()),
                    },
                }
            }
            parts.join("\n")
        }
    }
}

/// The conversation as Markdown: one section per message, numbered from `first`,
/// tool calls with their arguments as JSON.
pub fn transcript(msgs: &[&Message], first: usize) -> String {
    let mut out = String::new();
    for (i, m) in msgs.iter().enumerate() {
        let _ = writeln!(out, "### [{}] {}", first + i, role_title(m));
        let text = content_text(m);
        if !text.is_empty() {
            out.push_str(&text);
            out.push('\n');
        }
        for c in &m.tool_calls {
            let _ = writeln!(
                out,
                "-> call {}{}: {}",
                c.name,
                c.id.as_deref()
                    .map(|id| format!(" ({id})"))
                    .unwrap_or_default(),
                c.args
            );
        }
        out.push('\n');
    }
    out
}

/// The path a tool call works on, if it names one.
fn call_path(args: &Value) -> Option<&str> {
    ["file_path", "path", "file"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
}

fn looks_like_error(text: &str) -> bool {
    let head: String = text
        .trim_start()
        .chars()
        .take(200)
        .collect::<String>()
        .to_lowercase();
    head.starts_with("error")
        || head.starts_with("exception")
        || head.contains("traceback (most recent call last)")
        || head.contains("command failed")
        || head.contains("exit code 1")
}

/// Keeps lines within a character budget, newest last; says how many were left out.
fn bounded(items: Vec<String>, budget: usize) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for item in items.iter().rev() {
        let n = item.chars().count();
        if used + n > budget && !kept.is_empty() {
            break;
        }
        used += n;
        kept.push(item.clone());
    }
    let left_out = items.len() - kept.len();
    kept.reverse();
    if left_out > 0 {
        kept.insert(
            0,
            format!("({left_out} earlier entries left out for space)"),
        );
    }
    kept
}

/// An extractive summary, made without a language model: the user messages verbatim
/// (over `max_chars`, the oldest give way first, never the newest), the files
/// touched, the errors seen, the pending tasks and the last assistant text.
pub fn fallback_summary(
    msgs: &[&Message],
    previous_summary: Option<&str>,
    todos: &[Todo],
    max_chars: usize,
) -> String {
    let mut users: Vec<String> = Vec::new();
    // (path, what was done to it), in order of first touch.
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut last_ai: Option<String> = None;
    let mut calls: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for m in msgs {
        match m.role {
            Role::Human => {
                let text = content_text(m);
                if !text.trim().is_empty() {
                    users.push(text);
                }
            }
            Role::Ai => {
                let text = content_text(m);
                if !text.trim().is_empty() {
                    last_ai = Some(text);
                }
                for c in &m.tool_calls {
                    if let Some(id) = c.id.as_deref() {
                        calls.insert(id, c.name.as_str());
                    }
                    let Some(path) = call_path(&c.args) else {
                        continue;
                    };
                    let action = match c.name.as_str() {
                        "read_file" => "read",
                        "write_file" => "written",
                        "edit_file" => "edited",
                        other => other,
                    }
                    .to_owned();
                    match files.iter_mut().find(|(p, _)| p == path) {
                        Some((_, actions)) if !actions.contains(&action) => actions.push(action),
                        Some(_) => {}
                        None => files.push((path.to_owned(), vec![action])),
                    }
                }
            }
            Role::Tool => {
                let text = content_text(m);
                if looks_like_error(&text) {
                    let tool = m
                        .name
                        .as_deref()
                        .or_else(|| {
                            m.tool_call_id
                                .as_deref()
                                .and_then(|id| calls.get(id).copied())
                        })
                        .unwrap_or("tool");
                    errors.push(format!("{tool}: {}", shorten(text.trim(), 300)));
                }
            }
            _ => {}
        }
    }

    // Shares of the budget: user messages matter most.
    let budget = max_chars.max(1_000);
    let mut out = String::from(
        "This summary was put together from the conversation itself, without a language model. \
         It lists what the user asked, the files touched, errors seen, pending tasks and where \
         the work stood.\n",
    );
    if let Some(prev) = previous_summary.filter(|p| !p.trim().is_empty()) {
        let _ = write!(
            out,
            "\n## Earlier summary\n{}\n",
            shorten_block(prev, budget / 4)
        );
    }
    out.push_str("\n## User messages (verbatim)\n");
    if users.is_empty() {
        out.push_str("(none in this part of the conversation)\n");
    }
    for u in bounded(users, budget / 2) {
        let _ = writeln!(out, "- {u}");
    }
    if !files.is_empty() {
        out.push_str("\n## Files touched\n");
        let lines = files
            .into_iter()
            .map(|(p, a)| format!("{p} ({})", a.join(", ")))
            .collect();
        for f in bounded(lines, budget / 8) {
            let _ = writeln!(out, "- {f}");
        }
    }
    if !errors.is_empty() {
        out.push_str("\n## Errors seen\n");
        for e in bounded(errors, budget / 8) {
            let _ = writeln!(out, "- {e}");
        }
    }
    let pending: Vec<&Todo> = todos.iter().filter(|t| t.status != "completed").collect();
    if !pending.is_empty() {
        out.push_str("\n## Pending tasks\n");
        for t in pending {
            let _ = writeln!(out, "- [{}] {}", t.status, t.content);
        }
    }
    if let Some(ai) = last_ai {
        let _ = write!(
            out,
            "\n## Last assistant message\n{}\n",
            shorten_block(&ai, budget / 8)
        );
    }
    out
}

/// At most `max` characters of a multi-line text, cut with a note.
fn shorten_block(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [cut for space]", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    fn ai_call(id: &str, name: &str, args: Value) -> Message {
        let mut m = Message::text(Role::Ai, "");
        m.tool_calls.push(ToolCall {
            id: Some(id.into()),
            name: name.into(),
            args,
        });
        m
    }

    fn tool(id: &str, text: &str) -> Message {
        let mut m = Message::text(Role::Tool, text);
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn transcript_numbers_messages_and_shows_calls() {
        let h = Message::text(Role::Human, "fix it");
        let a = ai_call("c1", "read_file", json!({"file_path": "a.py"}));
        let t = tool("c1", "print(1)");
        let text = transcript(&[&h, &a, &t], 4);
        assert_eq!(
            text,
            "### [4] Human\nfix it\n\n### [5] AI\n-> call read_file (c1): {\"file_path\":\"a.py\"}\n\n\
             ### [6] Tool result (call c1)\nprint(1)\n\n"
        );
    }

    #[test]
    fn fallback_keeps_users_files_errors_todos_and_last_ai() {
        let h = Message::text(Role::Human, "please fix the parser");
        let a = ai_call("c1", "edit_file", json!({"file_path": "p.py", "old": "x"}));
        let t = tool("c1", "Error: string not found");
        let r = ai_call("c2", "read_file", json!({"file_path": "p.py"}));
        let last = Message::text(Role::Ai, "I will retry with the right string.");
        let todos = [
            Todo {
                content: "fix parser".into(),
                status: "in_progress".into(),
            },
            Todo {
                content: "write notes".into(),
                status: "completed".into(),
            },
        ];
        let s = fallback_summary(
            &[&h, &a, &t, &r, &last],
            Some("Earlier: set up repo."),
            &todos,
            20_000,
        );
        assert!(s.contains("## Earlier summary\nEarlier: set up repo."));
        assert!(s.contains("## User messages (verbatim)\n- please fix the parser\n"));
        assert!(s.contains("## Files touched\n- p.py (edited, read)\n"));
        assert!(s.contains("## Errors seen\n- edit_file: Error: string not found\n"));
        assert!(s.contains("## Pending tasks\n- [in_progress] fix parser\n"));
        assert!(!s.contains("write notes"));
        assert!(s.contains("## Last assistant message\nI will retry with the right string.\n"));
    }

    #[test]
    fn fallback_stays_within_budget_and_keeps_newest_user_message() {
        let many: Vec<Message> = (0..500)
            .map(|i| Message::text(Role::Human, &format!("request {i} {}", "x".repeat(100))))
            .collect();
        let refs: Vec<&Message> = many.iter().collect();
        let s = fallback_summary(&refs, None, &[], 10_000);
        assert!(s.chars().count() < 12_000, "{}", s.len());
        assert!(s.contains("request 499 "));
        assert!(s.contains("earlier entries left out for space"));
    }
}

//! Text made from a conversation: the transcript the summarizer reads and the archive
//! keeps (the memory's text, made without a summarizer, is `memory/render.rs`).

use std::fmt::Write;

use serde_json::Value;

use crate::message::{thinking_text, Block, BlockKind, Content, Message, Role};

fn role_title(m: &Message) -> String {
    match m.role {
        Role::System => "System".into(),
        // Anthropic's answer to parallel calls: their results in one user message.
        Role::Human if m.answering_role() == Role::Tool => {
            format!("Tool results (calls {})", m.result_ids().join(", "))
        }
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
    if let Some(inner) = m.result_block_content() {
        return result_text(inner);
    }
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
                            let inner = value.get("content").map_or(String::new(), result_text);
                            match value.get("tool_use_id").and_then(Value::as_str) {
                                Some(id) => parts.push(format!("[tool result {id}] {inner}")),
                                None => parts.push(format!("[tool result] {inner}")),
                            }
                        }
                        _ => parts.push(value.to_string()),
                    },
                }
            }
            parts.join("\n")
        }
    }
}

/// The text a `tool_result` block holds: a string, or its parts' texts.
pub fn result_text(inner: &Value) -> String {
    match inner {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    /// An AI message with one tool call (shared with the digest's tests).
    pub(crate) fn ai_call(id: &str, name: &str, args: Value) -> Message {
        let mut m = Message::text(Role::Ai, "");
        m.tool_calls.push(ToolCall {
            id: Some(id.into()),
            name: name.into(),
            args: args.into(),
        });
        m
    }

    /// A tool result for the call `id`.
    pub(crate) fn tool(id: &str, text: &str) -> Message {
        let mut m = Message::text(Role::Tool, text);
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn a_user_message_of_parallel_results_is_titled_and_shown_as_tool_results() {
        let block = |id: &str, content: Value| Block::Other {
            kind: "tool_result".into(),
            value: json!({"type": "tool_result", "tool_use_id": id, "content": content}),
        };
        let results = Message {
            role: Role::Human,
            content: Content::Blocks(vec![
                block("a", json!("out a")),
                block("b", json!([{"type": "text", "text": "out b"}])),
            ]),
            ..Message::default()
        };
        assert_eq!(
            transcript(&[&results], 7),
            "### [7] Tool results (calls a, b)\n[tool result a] out a\n[tool result b] out b\n\n"
        );
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
}

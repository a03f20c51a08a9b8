//! The texts the passes write in place of what they clear, and how they are
//! recognised; the argument that names a call in them.

use serde_json::Value;

use crate::message::{Args, Content, Message, ToolCall};

/// The argument that best names what a call did, shortened: the path, pattern,
/// command, query or URL, else the first string argument.
pub fn main_arg(call: Option<&ToolCall>) -> String {
    match call.map(|c| &c.args) {
        Some(Args::Whole(v)) => main_arg_of(v),
        Some(Args::Facts(f)) => f.main.to_string(),
        None => String::new(),
    }
}

/// `main_arg` of arguments held whole.
pub fn main_arg_of(args: &Value) -> String {
    const KEYS: [&str; 8] = [
        "file_path",
        "path",
        "pattern",
        "command",
        "query",
        "url",
        "glob",
        "file",
    ];
    let Value::Object(args) = args else {
        return String::new();
    };
    let found = KEYS
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .or_else(|| args.values().find_map(Value::as_str))
        .unwrap_or("");
    shorten(found, 80)
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None if line.len() < s.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}

/// Placeholders the passes write, recognised so that no pass edits them again.
pub const CLEARED: &str = "[Cleared to save context: ";
pub const SUPERSEDED: &str = "[Superseded: ";
pub const COLLAPSED: &str = "[Collapsed ";
pub const COLLAPSED_MEMBER: &str = "[Collapsed into the note on ";

/// Whether a message as it came holds a placeholder (an earlier turn's view fed
/// back, say). Most texts are ruled out by their first byte alone.
pub fn starts_as_placeholder(m: &Message, gap_template: &str) -> bool {
    match &m.content {
        Content::Text(t) => {
            (t.may_start_with("[") || t.may_start_with(gap_template))
                && is_placeholder(t.as_str(), gap_template)
        }
        Content::Blocks(_) => m
            .result_text()
            .is_some_and(|t| is_placeholder(t, gap_template)),
    }
}

/// Whether a text is one of the passes' placeholders. `gap_template` is the
/// configurable time-gap placeholder.
pub fn is_placeholder(text: &str, gap_template: &str) -> bool {
    let gap_prefix = gap_template.split('{').next().unwrap_or(gap_template);
    // All fixed placeholders open with a bracket: most texts are ruled out at once.
    (text.starts_with('[')
        && [CLEARED, SUPERSEDED, COLLAPSED, COLLAPSED_MEMBER]
            .iter()
            .any(|p| text.starts_with(p)))
        || (!gap_prefix.is_empty() && text.starts_with(gap_prefix))
}

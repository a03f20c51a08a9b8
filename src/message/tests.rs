//! The message model's own rules.
use super::*;
use serde_json::json;

fn result_in_block(content: Value) -> Message {
    let block = json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": content});
    Message {
        role: Role::Tool,
        tool_call_id: Some("toolu_1".into()),
        content: Content::Blocks(vec![Block::Other {
            kind: "tool_result".into(),
            value: block,
        }]),
        result_in_block: true,
        ..Message::default()
    }
}

#[test]
fn a_result_in_a_block_is_read_and_replaced_inside_it() {
    let mut m = result_in_block(json!("long output"));
    assert_eq!(m.result_text(), Some("long output"));
    m.replace_text("[cleared]");
    assert_eq!(m.result_text(), Some("[cleared]"));
    assert_eq!(m.result_ids(), vec!["toolu_1"]);
    // A result whose content is blocks has no text to read, but is replaced alike.
    let mut m = result_in_block(json!([{"type": "text", "text": "a"}]));
    assert_eq!(m.result_text(), None);
    m.replace_text("[cleared]");
    assert_eq!(m.result_text(), Some("[cleared]"));
    // Anything else is replaced whole.
    let mut m = Message::text(Role::Tool, "out");
    m.replace_text("[cleared]");
    assert_eq!(m.content, Content::Text(Text::from("[cleared]")));
}

#[test]
fn new_arguments_reach_the_calls_block_too() {
    let mut m = Message {
        role: Role::Ai,
        content: Content::Blocks(vec![Block::Other {
            kind: "tool_use".into(),
            value: json!({"type": "tool_use", "id": "t1", "name": "w", "input": {"a": "long"}}),
        }]),
        tool_calls: vec![ToolCall {
            id: Some("t1".into()),
            name: "w".into(),
            args: json!({"a": "long"}).into(),
        }],
        ..Message::default()
    };
    m.set_call_args(0, &json!({"a": "short"}));
    m.set_call_args(5, &json!({"a": "nowhere"}));
    assert_eq!(m.tool_calls[0].args, json!({"a": "short"}).into());
    match &m.content {
        Content::Blocks(b) => assert!(
            matches!(&b[0], Block::Other { value, .. } if value["input"] == json!({"a": "short"}))
        ),
        Content::Text(_) => panic!("the content stays blocks"),
    }
}

#[test]
fn block_kinds_are_parsed_in_one_place() {
    let kinds = [
        ("text", BlockKind::Text),
        ("image", BlockKind::Image),
        ("image_url", BlockKind::Image),
        ("input_image", BlockKind::Image),
        ("document", BlockKind::Document),
        ("file", BlockKind::Document),
        ("input_file", BlockKind::Document),
        ("tool_use", BlockKind::ToolUse),
        ("function_call", BlockKind::FunctionCall),
        ("tool_result", BlockKind::ToolResult),
        ("thinking", BlockKind::Thinking),
        ("redacted_thinking", BlockKind::RedactedThinking),
        ("reasoning", BlockKind::Reasoning),
        ("server_tool_use", BlockKind::Other),
    ];
    for (name, kind) in kinds {
        assert_eq!(BlockKind::parse(name), kind, "{name}");
        let block = Block::Other {
            kind: name.into(),
            value: json!({"type": name}),
        };
        assert_eq!(
            block.is_thinking(),
            name.contains("thinking") || name == "reasoning"
        );
    }
    assert_eq!(thinking_text(&json!({"reasoning": "why"})), Some("why"));
    assert_eq!(thinking_text(&json!({"thinking": "how"})), Some("how"));
    assert_eq!(thinking_text(&json!({"data": "x"})), None);
}

#[test]
fn text_knows_code_points() {
    let t = Text::from("héllo ✓");
    assert_eq!(t.chars(), 7);
    assert_eq!(t.as_str(), "héllo ✓");
}

#[test]
fn call_and_result_ids_cover_blocks_once() {
    let mut ai = Message::text(Role::Ai, "");
    ai.tool_calls.push(ToolCall {
        id: Some("a".into()),
        name: "read_file".into(),
        args: json!({}).into(),
    });
    ai.content = Content::Blocks(vec![
        Block::Other {
            kind: "tool_use".into(),
            value: json!({"type": "tool_use", "id": "a", "name": "read_file", "input": {}}),
        },
        Block::Other {
            kind: "tool_use".into(),
            value: json!({"type": "tool_use", "id": "b", "name": "ls", "input": {}}),
        },
    ]);
    assert_eq!(ai.call_ids(), vec!["a", "b"]);

    let mut user = Message::text(Role::Human, "");
    user.content = Content::Blocks(vec![Block::Other {
        kind: "tool_result".into(),
        value: json!({"type": "tool_result", "tool_use_id": "b", "content": "x"}),
    }]);
    assert_eq!(user.result_ids(), vec!["b"]);
    assert!(user.is_tool_result());
}

#[test]
fn usage_variants_treat_missing_as_zero() {
    let anthropic = json!({"usage": {"input_tokens": 10, "cache_read_input_tokens": 90,
        "cache_creation_input_tokens": null, "output_tokens": 5}});
    assert_eq!(
        Usage::from_response_metadata(&anthropic),
        Some(Usage {
            input: 100,
            output: 5
        })
    );
    let openai = json!({"token_usage": {"prompt_tokens": 7, "completion_tokens": 3}});
    assert_eq!(
        Usage::from_response_metadata(&openai).map(Usage::total),
        Some(10)
    );
    let gemini = json!({"usage_metadata": {"prompt_token_count": 4, "candidates_token_count": 1}});
    assert_eq!(
        Usage::from_response_metadata(&gemini).map(Usage::total),
        Some(5)
    );
    assert_eq!(Usage::from_response_metadata(&json!({})), None);
    let zero = json!({"usage": {"input_tokens": 0, "output_tokens": 0}});
    assert_eq!(Usage::from_response_metadata(&zero), None);
}

#[test]
fn iso_dates_parse_to_epoch_seconds() {
    assert_eq!(parse_iso8601("1970-01-01T00:00:00Z"), Some(0.0));
    assert_eq!(parse_iso8601("2025-01-15T10:00:00Z"), Some(1_736_935_200.0));
    assert_eq!(
        parse_iso8601("2025-01-15 12:00:00+02:00"),
        Some(1_736_935_200.0)
    );
    assert_eq!(
        parse_iso8601("2025-01-15T10:00:00.5"),
        Some(1_736_935_200.5)
    );
    assert_eq!(parse_iso8601("2024-02-29T00:00:00Z"), Some(1_709_164_800.0));
    assert_eq!(parse_iso8601("yesterday"), None);
    assert_eq!(parse_iso8601("2025-13-01T00:00:00Z"), None);
    assert_eq!(parse_iso8601("2025-01-15"), None);
}

#[test]
fn input_error_names_index_and_field() {
    let e = InputError::new(None, "tool_calls", "expected a list").at(3);
    assert_eq!(
        e.to_string(),
        "message 3: field 'tool_calls': expected a list"
    );
}

//! The counting and pairing rules, applied to a message part by part. The Python
//! scanner feeds the parts straight from Python objects; `measure` and
//! `PairShape::from` feed those of a converted message. Either way the rules are
//! these, so a count or a pair shape does not depend on which reader saw the message.
//!
//! The content (text, media, other blocks) comes first: whether it is a list decides
//! whether the tool calls count. The rest may come in any order before `finish`.

use crate::cutoff::PairShape;
use crate::message::{openai_role, Block, BlockKind, Content, Message, Role};
use crate::pyrepr;
use crate::tokens::{CachedCounts, Measure};

/// A message's measure and pair shape, as its parts are fed in.
pub struct Tally {
    role: Role,
    /// Characters of everything but the name: content, tool calls, call id, role.
    body: usize,
    images: u32,
    documents: u32,
    list_content: bool,
    is_result: bool,
    pairs: Option<Pairs>,
}

/// The ids a pair shape is made of, kept apart by where they came from so that the
/// shape lists them in one order whatever order the reader met them in.
#[derive(Default)]
struct Pairs {
    calls: Vec<(String, String)>,
    block_calls: Vec<(String, String)>,
    answers: Option<String>,
    block_results: Vec<String>,
    thinking: bool,
}

impl Tally {
    /// A tally of a message in `role` (with its own role name, if any). The pair shape
    /// is worked out only when `want_shape`: collecting ids costs allocations that a
    /// count does without.
    pub fn new(role: Role, role_name: Option<&str>, want_shape: bool) -> Self {
        Tally {
            role,
            body: openai_role(role, role_name).chars().count(),
            images: 0,
            documents: 0,
            list_content: false,
            is_result: role == Role::Tool,
            pairs: want_shape.then(Pairs::default),
        }
    }

    /// Whether the pair shape is wanted: readers fetch ids only then.
    pub fn wants_shape(&self) -> bool {
        self.pairs.is_some()
    }

    /// Text of the content, or of one text block.
    pub fn text(&mut self, chars: usize) {
        self.body += chars;
    }

    /// The content is a list of blocks (which then hold any tool calls themselves).
    pub fn list(&mut self) {
        self.list_content = true;
    }

    /// Media cost a fixed amount each, never their bytes.
    pub fn image(&mut self) {
        self.images += 1;
    }

    pub fn document(&mut self) {
        self.documents += 1;
    }

    /// A block of any other kind, counted by the length of its Python `repr`.
    pub fn block(&mut self, kind: BlockKind, repr_chars: usize) {
        self.body += repr_chars;
        self.is_result |= kind == BlockKind::ToolResult;
        if let Some(p) = &mut self.pairs {
            p.thinking |= kind.is_thinking();
        }
    }

    /// A `tool_use` block's call id and tool name. Only an assistant makes calls.
    pub fn block_call(&mut self, id: String, name: String) {
        if let (Some(p), Role::Ai) = (&mut self.pairs, self.role) {
            p.block_calls.push((id, name));
        }
    }

    /// The call a `tool_result` block answers.
    pub fn block_result(&mut self, id: String) {
        if let Some(p) = &mut self.pairs {
            p.block_results.push(id);
        }
    }

    /// Whether the tool calls' `repr` counts: it does beside string content only, as
    /// list content already holds the calls as blocks.
    pub fn counts_calls(&self) -> bool {
        self.role == Role::Ai && !self.list_content
    }

    /// The `repr` of a non-empty list of tool calls.
    pub fn calls_repr(&mut self, chars: usize) {
        if self.counts_calls() {
            self.body += chars;
        }
    }

    /// One of the message's tool calls, by id and tool name.
    pub fn call(&mut self, id: String, name: String) {
        if let (Some(p), Role::Ai) = (&mut self.pairs, self.role) {
            p.calls.push((id, name));
        }
    }

    /// The id of the call a tool message answers, `chars` long.
    pub fn answers(&mut self, chars: usize, id: Option<String>) {
        if self.role != Role::Tool {
            return;
        }
        self.body += chars;
        if let Some(p) = &mut self.pairs {
            p.answers = id;
        }
    }

    /// Whether the finish needs the name's text: a result carries its tool's name.
    pub fn wants_tool_name(&self) -> bool {
        self.is_result && self.wants_shape()
    }

    /// The measure and (if wanted) the pair shape, given the name's length and, when
    /// `wants_tool_name`, its text.
    pub fn finish(self, name_chars: usize, name: Option<String>) -> (Measure, Option<PairShape>) {
        let measure = Measure::new(self.body, name_chars, self.images, self.documents);
        let shape = self.pairs.map(|p| {
            let mut calls: Vec<(String, String)> = Vec::new();
            for (id, name) in p.calls.into_iter().chain(p.block_calls) {
                if !calls.iter().any(|(seen, _)| *seen == id) {
                    calls.push((id, name));
                }
            }
            let mut results: Vec<String> = Vec::new();
            for id in p.answers.into_iter().chain(p.block_results) {
                if !results.contains(&id) {
                    results.push(id);
                }
            }
            PairShape {
                role: Some(self.role),
                calls,
                results,
                is_result: self.is_result,
                thinking: p.thinking,
                tool_name: name.filter(|n| self.is_result && !n.is_empty()),
            }
        });
        (measure, shape)
    }

    /// The measure and (if `want_shape`) pair shape of a converted message.
    pub fn of(m: &Message, want_shape: bool) -> (Measure, Option<PairShape>) {
        let mut t = Tally::new(m.role, m.role_name.as_deref(), want_shape);
        match &m.content {
            Content::Text(text) => t.text(text.chars()),
            Content::Blocks(blocks) => {
                t.list();
                for b in blocks {
                    match b {
                        Block::Text(text) => t.text(text.chars()),
                        Block::Image => t.image(),
                        Block::Document => t.document(),
                        Block::Other { value, .. } => {
                            t.block(b.kind_of(), pyrepr::py_repr_len(value));
                            if !t.wants_shape() {
                                continue;
                            }
                            if let Some(id) = b.tool_use_id() {
                                let name = value.get("name").and_then(|n| n.as_str());
                                t.block_call(id.to_owned(), name.unwrap_or("").to_owned());
                            }
                            if let Some(id) = b.tool_result_id() {
                                t.block_result(id.to_owned());
                            }
                        }
                    }
                }
            }
        }
        if !m.tool_calls.is_empty() && t.counts_calls() {
            t.calls_repr(pyrepr::tool_calls_repr_len(&m.tool_calls));
        }
        if t.wants_shape() {
            for c in &m.tool_calls {
                if let Some(id) = &c.id {
                    t.call(id.clone(), c.name.clone());
                }
            }
        }
        let id = m.tool_call_id.as_deref();
        // A result in a block counts as the user's message it came as: no id of its own.
        let id_chars = match (id, m.result_in_block) {
            (Some(s), false) => s.chars().count(),
            _ => 0,
        };
        t.answers(id_chars, id.filter(|_| want_shape).map(str::to_owned));
        let name = m.name.as_deref().unwrap_or("");
        let tool_name = t.wants_tool_name().then(|| name.to_owned());
        t.finish(name.chars().count(), tool_name)
    }
}

/// Measure a message the way `count_tokens_approximately` does: content characters
/// (text blocks by their text, other blocks by the length of their Python `repr`),
/// the `repr` of the tool calls when the content is a string, the tool call id, the
/// OpenAI role, and the name.
pub fn measure(m: &Message) -> Measure {
    Tally::of(m, false).0
}

impl From<&Message> for PairShape {
    fn from(m: &Message) -> Self {
        Tally::of(m, true).1.unwrap_or_default()
    }
}

impl CachedCounts {
    /// The counts of a converted message, with the usage it reports.
    pub fn of(m: &Message) -> Self {
        Self::counted(measure(m), Some(m.usage.map(|u| (u.input, u.output))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Text, ToolCall};
    use crate::tokens::HeuristicParams;
    use serde_json::json;

    #[test]
    fn a_result_in_a_block_counts_as_the_users_message_it_came_as() {
        let block = Block::Other {
            kind: "tool_result".into(),
            value: json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "out"}),
        };
        let user = Message {
            content: Content::Blocks(vec![block]),
            ..Message::default()
        };
        let result = Message {
            role: Role::Tool,
            tool_call_id: Some("toolu_1".into()),
            result_in_block: true,
            ..user.clone()
        };
        assert_eq!(measure(&result), measure(&user));
        let shape = Tally::of(&result, true).1.expect("asked for");
        assert_eq!(
            (shape.results, shape.is_result),
            (vec!["toolu_1".to_owned()], true)
        );
    }

    #[test]
    fn heuristic_matches_langchain_formula() {
        // count_tokens_approximately([HumanMessage("hello world")]) == ceil((11 + 4) / 4) + 3 == 7
        let m = Message::text(Role::Human, "hello world");
        assert_eq!(
            measure(&m).heuristic_tokens(&HeuristicParams::default()),
            7.0
        );
        let mut tool = Message::text(Role::Tool, "ok");
        tool.tool_call_id = Some("call_1".into());
        tool.name = Some("ls".into());
        // 2 + 6 + 4 ("tool") + 2 ("ls") = 14 chars -> 4 tokens + 3
        assert_eq!(
            measure(&tool).heuristic_tokens(&HeuristicParams::default()),
            7.0
        );
        let no_name = HeuristicParams {
            count_name: false,
            ..HeuristicParams::default()
        };
        assert_eq!(measure(&tool).heuristic_tokens(&no_name), 6.0);
    }

    #[test]
    fn media_blocks_cost_fixed_amounts() {
        let mut m = Message::text(Role::Human, "");
        m.content = Content::Blocks(vec![
            Block::Text(Text::from("abcd")),
            Block::Image,
            Block::Document,
        ]);
        let p = HeuristicParams::default();
        // ceil((4 + 4) / 4) + 3 + 85 + 1500
        assert_eq!(measure(&m).heuristic_tokens(&p), 2.0 + 3.0 + 85.0 + 1500.0);
    }

    fn other(value: serde_json::Value) -> Block {
        let kind = value["type"].as_str().unwrap_or("").to_owned();
        Block::Other { value, kind }
    }

    #[test]
    fn calls_beside_string_content_count_by_their_repr() {
        let mut m = Message::text(Role::Ai, "ok");
        m.tool_calls = vec![ToolCall {
            id: Some("c1".into()),
            name: "ls".into(),
            args: json!({}).into(),
        }];
        let (measure, shape) = Tally::of(&m, true);
        // "ok" + "assistant" + repr of [{'name': 'ls', 'args': {}, 'id': 'c1', 'type': 'tool_call'}]
        let repr = "[{'name': 'ls', 'args': {}, 'id': 'c1', 'type': 'tool_call'}]";
        assert_eq!(measure.chars, (2 + 9 + repr.len()) as u64);
        let shape = shape.expect("asked for");
        assert_eq!(shape.calls, vec![("c1".to_owned(), "ls".to_owned())]);
        assert!(!shape.is_result);
    }

    #[test]
    fn list_content_holds_its_calls_as_blocks() {
        let mut m = Message::text(Role::Ai, "");
        m.content = Content::Blocks(vec![
            Block::Text(Text::from("hi")),
            other(json!({"type": "tool_use", "id": "c2", "name": "grep", "input": {}})),
            other(json!({"type": "tool_use", "id": "c1", "name": "ls", "input": {}})),
            other(json!({"type": "thinking", "thinking": "x"})),
        ]);
        m.tool_calls = vec![ToolCall {
            id: Some("c1".into()),
            name: "ls".into(),
            args: json!({}).into(),
        }];
        let (measure, shape) = Tally::of(&m, true);
        let blocks: usize = m.blocks()[1..]
            .iter()
            .map(|b| match b {
                Block::Other { value, .. } => pyrepr::py_repr_len(value),
                _ => 0,
            })
            .sum();
        assert_eq!(measure.chars, (2 + blocks + 9) as u64);
        let shape = shape.expect("asked for");
        // The tool calls first, then the blocks' calls not already among them.
        assert_eq!(
            shape.calls,
            vec![
                ("c1".to_owned(), "ls".to_owned()),
                ("c2".to_owned(), "grep".to_owned())
            ]
        );
        assert!(shape.thinking);
    }

    #[test]
    fn a_result_lists_its_call_first_and_carries_its_tool_name() {
        let mut m = Message::text(Role::Tool, "");
        m.content = Content::Blocks(vec![
            other(json!({"type": "tool_result", "tool_use_id": "b"})),
            other(json!({"type": "tool_result", "tool_use_id": "a"})),
        ]);
        m.tool_call_id = Some("a".into());
        m.name = Some("ls".into());
        let (measure, shape) = Tally::of(&m, true);
        let shape = shape.expect("asked for");
        assert_eq!(shape.results, vec!["a".to_owned(), "b".to_owned()]);
        assert!(shape.is_result);
        assert_eq!(shape.tool_name.as_deref(), Some("ls"));
        assert_eq!(measure.chars - measure.chars_without_name, 2);
    }

    #[test]
    fn parts_fed_in_any_reader_order_give_one_shape() {
        // A reader that meets the blocks before the call id gets the same shape.
        let mut t = Tally::new(Role::Tool, None, true);
        t.list();
        t.block(BlockKind::ToolResult, 10);
        t.block_result("b".into());
        t.answers(1, Some("a".into()));
        let (_, shape) = t.finish(0, Some(String::new()));
        let shape = shape.expect("asked for");
        assert_eq!(shape.results, vec!["a".to_owned(), "b".to_owned()]);
        // An empty name is no name.
        assert_eq!(shape.tool_name, None);
    }

    #[test]
    fn only_an_assistant_makes_calls() {
        let mut t = Tally::new(Role::Human, None, true);
        t.block(BlockKind::ToolUse, 5);
        t.block_call("c".into(), "ls".into());
        t.call("d".into(), "ls".into());
        let (measure, shape) = t.finish(0, None);
        assert_eq!(shape.expect("asked for").calls, Vec::new());
        assert_eq!(measure.chars, (5 + "user".len()) as u64);
        assert!(!Tally::new(Role::Human, None, false).counts_calls());
    }

    #[test]
    fn a_system_message_counts_its_own_role_name() {
        let t = Tally::new(Role::System, Some("developer"), false);
        assert_eq!(t.finish(0, None).0.chars, "developer".len() as u64);
        let t = Tally::new(Role::Human, Some("developer"), false);
        assert_eq!(t.finish(0, None).0.chars, "user".len() as u64);
    }
}

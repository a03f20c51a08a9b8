//! Property tests of the core without Python: cutoffs never break a tool pair.

use fastcompact::cutoff::{find_cutoff, safe_cut_points, state_cutoff, PairShape, Size};
use fastcompact::message::{Block, Content, Message, Role, ToolCall};
use proptest::prelude::*;
use serde_json::json;

/// A step of a generated conversation.
#[derive(Clone, Debug)]
enum Step {
    Human,
    /// An AI message making this many calls.
    Ai(usize),
    /// Answer the pending call at this position (modulo the number pending).
    Result(usize),
    /// An AI message in Anthropic's shape: this many `tool_use` blocks, after a
    /// thinking block when asked.
    AiBlocks(usize, bool),
    /// A user message of `tool_result` blocks answering up to this many pending calls.
    Results(usize),
}

fn block(value: serde_json::Value) -> Block {
    let kind = value["type"].as_str().unwrap_or("").to_owned();
    Block::Other { kind, value }
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            Just(Step::Human),
            (0usize..4).prop_map(Step::Ai),
            (0usize..8).prop_map(Step::Result),
            (0usize..3, any::<bool>()).prop_map(|(k, t)| Step::AiBlocks(k, t)),
            (1usize..3).prop_map(Step::Results),
        ],
        1..60,
    )
}

/// Build a complete conversation: every call answered, results possibly interleaved
/// with later calls (AI(x), AI(y), T(x), T(y)).
fn build(steps: &[Step]) -> Vec<Message> {
    let mut out = vec![Message::text(Role::Human, "start")];
    let mut pending: Vec<String> = Vec::new();
    let mut n = 0;
    for s in steps {
        match s {
            Step::Human if pending.is_empty() => out.push(Message::text(Role::Human, "q")),
            Step::Result(i) if !pending.is_empty() => {
                let id = pending.remove(i % pending.len());
                let mut m = Message::text(Role::Tool, "r");
                m.tool_call_id = Some(id);
                out.push(m);
            }
            Step::Ai(k) => {
                let mut m = Message::text(Role::Ai, "");
                for _ in 0..*k {
                    n += 1;
                    let id = format!("c{n}");
                    pending.push(id.clone());
                    m.tool_calls.push(ToolCall {
                        id: Some(id),
                        name: "t".into(),
                        args: json!({}).into(),
                    });
                }
                out.push(m);
            }
            Step::AiBlocks(k, thinking) => {
                let mut blocks = Vec::new();
                if *thinking {
                    blocks.push(block(json!({"type": "thinking", "thinking": "hmm"})));
                }
                for _ in 0..*k {
                    n += 1;
                    let id = format!("c{n}");
                    pending.push(id.clone());
                    blocks.push(block(
                        json!({"type": "tool_use", "id": id, "name": "t", "input": {}}),
                    ));
                }
                out.push(Message {
                    role: Role::Ai,
                    content: Content::Blocks(blocks),
                    ..Message::default()
                });
            }
            Step::Results(k) if !pending.is_empty() => {
                let answered: Vec<String> = pending.drain(..(*k).min(pending.len())).collect();
                let blocks = answered
                    .iter()
                    .map(|id| {
                        block(json!({"type": "tool_result", "tool_use_id": id, "content": "r"}))
                    })
                    .collect();
                out.push(Message {
                    role: Role::Human,
                    content: Content::Blocks(blocks),
                    ..Message::default()
                });
            }
            _ => out.push(Message::text(Role::Ai, "thinking out loud")),
        }
    }
    for id in pending {
        let mut m = Message::text(Role::Tool, "late");
        m.tool_call_id = Some(id);
        out.push(m);
    }
    out
}

/// Oracle: the kept tail has every result's call and every call's results, and does
/// not start with a result.
fn tail_is_whole(msgs: &[Message], cut: usize) -> bool {
    if cut == 0 {
        return true;
    }
    let tail = &msgs[cut..];
    if tail.first().is_some_and(Message::is_tool_result) {
        return false;
    }
    let calls: Vec<&str> = tail.iter().flat_map(Message::call_ids).collect();
    let results: Vec<&str> = tail.iter().flat_map(Message::result_ids).collect();
    results.iter().all(|r| calls.contains(r)) && calls.iter().all(|c| results.contains(c))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn a_message_read_in_place_cuts_as_its_pair_shape(
        steps in steps(),
        orphans in prop::collection::vec((0usize..80, any::<bool>()), 0..4),
    ) {
        let mut msgs = build(&steps);
        // Results whose call is nowhere (a cut must not keep one first either).
        for (at, in_block) in orphans {
            let orphan = match in_block {
                true => Message {
                    role: Role::Human,
                    content: Content::Blocks(vec![block(
                        json!({"type": "tool_result", "tool_use_id": "gone", "content": "r"}),
                    )]),
                    ..Message::default()
                },
                false => {
                    let mut m = Message::text(Role::Tool, "r");
                    m.tool_call_id = Some("gone".into());
                    m
                }
            };
            msgs.insert(at % (msgs.len() + 1), orphan);
        }
        let shapes: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        prop_assert_eq!(safe_cut_points(&msgs), safe_cut_points(&shapes));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn message_keep_is_pair_safe(steps in steps(), keep in 1u64..40) {
        let msgs = build(&steps);
        let shapes: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        let per = vec![1.0; msgs.len()];
        let cut = find_cutoff(&shapes, &per, Size::Messages(keep), None).unwrap_or(usize::MAX);
        prop_assert!(cut < msgs.len().max(1));
        prop_assert!(tail_is_whole(&msgs, cut), "cut {} of {:?}", cut, shapes);
    }

    #[test]
    fn token_keep_is_pair_safe(steps in steps(), budget in 1u64..50, sizes in prop::collection::vec(1.0f64..9.0, 200)) {
        let msgs = build(&steps);
        let shapes: Vec<PairShape> = msgs.iter().map(PairShape::from).collect();
        let per: Vec<f64> = sizes.iter().copied().cycle().take(msgs.len()).collect();
        let cut = find_cutoff(&shapes, &per, Size::Tokens(budget), None).unwrap_or(usize::MAX);
        prop_assert!(cut < msgs.len().max(1));
        prop_assert!(tail_is_whole(&msgs, cut));
    }

    #[test]
    fn state_cutoff_round_trips(cuts in prop::collection::vec(1u64..20, 1..10)) {
        // raw index of effective index i after prior cutoff p is p + i - 1.
        let mut prior: Option<u64> = None;
        for c in cuts {
            let next = state_cutoff(prior, c).unwrap_or(0);
            match prior {
                None => prop_assert_eq!(next, c),
                Some(p) => prop_assert_eq!(next, p + c - 1),
            }
            prior = Some(next);
        }
    }
}

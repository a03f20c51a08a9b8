use super::*;
use crate::render::tests::{ai_call, tool};
use proptest::prelude::*;
use serde_json::json;

fn index(msgs: &[Message]) -> Index {
    let mut ix = Index::new("english").expect("english");
    for m in msgs {
        ix.add(m);
    }
    ix
}

fn find(msgs: &[Message], text: &str, limit: usize) -> Found {
    let refs: Vec<&Message> = msgs.iter().collect();
    index(msgs).search(
        &refs,
        &Query {
            text: text.into(),
            limit,
            filters: Filters::default(),
        },
    )
}

fn said(role: Role, text: &str) -> Message {
    Message::text(role, text)
}

/// A session whose messages share their words: each request asks about a module, each
/// answer reports on it; one answer holds the fact.
fn session() -> Vec<Message> {
    let mut out = Vec::new();
    for i in 0..40 {
        out.push(said(
            Role::Human,
            &format!("Please check the database settings of module {i}."),
        ));
        out.push(ai_call(
            &format!("c{i}"),
            "read_file",
            json!({"file_path": format!("/etc/m{i}.conf")}),
        ));
        out.push(tool(
            &format!("c{i}"),
            &format!("[database]\nhost = db{i}.internal\nport = {}", 7000 + i),
        ));
        out.push(said(
            Role::Ai,
            &format!("Module {i} talks to its database on db{i}.internal."),
        ));
    }
    out[22] = tool(
        "c5",
        "[database]\nhost = staging-db.internal\nport = 5433\n# the staging database",
    );
    out
}

#[test]
fn a_fact_is_found_by_words_it_does_not_all_hold() {
    let msgs = session();
    // "number" is in no message; the staging port is at 22.
    let found = find(&msgs, "port number of the staging database", 3);
    assert_eq!(found.hits.first().map(|h| h.index), Some(22), "{found:?}");
    assert!(
        found.hits[0].excerpt.contains("staging-db.internal")
            || found.hits[0].excerpt.contains("5433")
    );
    // A code is found whole.
    let found = find(&msgs, "7031", 3);
    assert_eq!(found.hits.first().map(|h| h.index), Some(31 * 4 + 2));
}

#[test]
fn the_excerpt_is_the_best_passage_not_the_first_hit() {
    let text = format!(
        "The database was mentioned first here.\n{}\nThe staging database listens on port 5433 behind the proxy.\n{}",
        "filler line about nothing\n".repeat(20),
        "more filler\n".repeat(40)
    );
    let msgs = vec![said(Role::Ai, &text)];
    let found = find(&msgs, "staging database port", 1);
    let excerpt = &found.hits[0].excerpt;
    assert!(
        excerpt.starts_with("… The staging database listens on port 5433"),
        "{excerpt}"
    );
    assert!(excerpt.ends_with(" …"));
}

#[test]
fn recalls_own_calls_and_results_are_never_found() {
    let mut msgs = vec![said(Role::Human, "What is the staging port?")];
    msgs.push(ai_call("r1", RECALL_TOOL, json!({"query": "staging port"})));
    let mut result = tool("r1", "1 match: the staging port is 5433");
    result.name = Some(RECALL_TOOL.into());
    msgs.push(result);
    let found = find(&msgs, "staging port", 5);
    assert_eq!(
        found.hits.iter().map(|h| h.index).collect::<Vec<_>>(),
        vec![0]
    );
    assert_eq!(found.matched, 1);
}

#[test]
fn a_quoted_phrase_must_be_held_as_it_is() {
    let msgs = vec![
        said(Role::Ai, "the port of staging is 5433"),
        said(Role::Ai, "staging port: 5433"),
    ];
    let found = find(&msgs, "\"staging port\" 5433", 5);
    assert_eq!(
        found.hits.iter().map(|h| h.index).collect::<Vec<_>>(),
        vec![1]
    );
    // A phrase of symbols only is read in every message.
    let msgs = vec![said(Role::Ai, "a -> b"), said(Role::Ai, "a => b")];
    let found = find(&msgs, "\"=>\"", 5);
    assert_eq!(
        found.hits.iter().map(|h| h.index).collect::<Vec<_>>(),
        vec![1]
    );
}

#[test]
fn filters_narrow_by_role_tool_and_request() {
    let msgs = session();
    let refs: Vec<&Message> = msgs.iter().collect();
    let ix = index(&msgs);
    let q = |filters: Filters| Query {
        text: "database".into(),
        limit: 100,
        filters,
    };
    let by_tool = ix.search(
        &refs,
        &q(Filters {
            tool: Some("read_file".into()),
            ..Filters::default()
        }),
    );
    assert!(
        by_tool.matched >= 40
            && by_tool
                .hits
                .iter()
                .all(|h| msgs[h.index].role == Role::Tool)
    );
    let by_role = ix.search(
        &refs,
        &q(Filters {
            role: Some(Role::Human),
            ..Filters::default()
        }),
    );
    assert_eq!(by_role.matched, 40);
    let by_request = ix.search(
        &refs,
        &q(Filters {
            requests: Some((3, 4)),
            ..Filters::default()
        }),
    );
    // A request's hit shows the answer that closed it beside it.
    let mut at: Vec<usize> = by_request
        .hits
        .iter()
        .flat_map(|h| [Some(h.index), h.answer.as_ref().map(|a| a.0)])
        .flatten()
        .collect();
    at.sort_unstable();
    // Requests 3 and 4 are messages 8 to 15; their calls name no database.
    assert_eq!(at, vec![8, 10, 11, 12, 14, 15]);
    assert_eq!(ix.docs()[8].request, 3);
    assert_eq!(ix.docs()[9].tool.as_deref(), Some("read_file"));
}

#[test]
fn a_result_is_found_by_its_calls_arguments() {
    let msgs = vec![
        ai_call(
            "c1",
            "read_file",
            json!({"file_path": "/srv/billing/invoice_export.py"}),
        ),
        tool("c1", "def run():\n    pass"),
    ];
    let found = find(&msgs, "invoice export", 5);
    assert_eq!(found.hits.first().map(|h| h.index), Some(1), "{found:?}");
}

#[test]
fn chinese_is_found_without_spaces() {
    let mut msgs: Vec<Message> = (0..20)
        .map(|i| said(Role::Ai, &format!("服务器{i}号运行正常，数据已备份。")))
        .collect();
    msgs.push(said(Role::Ai, "主服务器位于法兰克福数据中心，机柜编号七。"));
    let found = find(&msgs, "服务器 数据中心 位置", 3);
    assert_eq!(found.hits.first().map(|h| h.index), Some(20), "{found:?}");
}

#[test]
fn bytes_grow_with_the_messages() {
    let small = index(&session()[..8]).bytes();
    let large = index(&session()).bytes();
    assert!(small > 0 && large > small);
}

/// Words no other message of a session holds, for the property below.
fn rare_words(n: usize, seed: u64) -> Vec<String> {
    const SYLLABLES: [&str; 12] = [
        "ka", "lo", "mi", "ru", "te", "zo", "vi", "pa", "ne", "su", "do", "ga",
    ];
    (0..n)
        .map(|i| {
            let mut x = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add((i as u64).wrapping_mul(1442695040888963407));
            (0..4)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    SYLLABLES[(x >> 33) as usize % SYLLABLES.len()]
                })
                .collect()
        })
        .collect()
}

proptest! {
    /// Any message is among the best three for a query of three of its rarest words,
    /// unless other messages hold all three too.
    #[test]
    fn a_message_is_found_by_three_of_its_rarest_words(
        n in 5usize..80,
        target in 0usize..80,
        seed in 0u64..1_000_000,
        chinese in any::<bool>(),
    ) {
        let target = target % n;
        let words = rare_words(n * 3, seed);
        let msgs: Vec<Message> = (0..n)
            .map(|i| {
                let own = if chinese {
                    // Three two-character words of its own among shared ones.
                    let own: Vec<String> = (0..3)
                        .map(|k| {
                            let c = char::from_u32(0x4E00 + ((seed as u32).wrapping_add((i * 3 + k) as u32 * 7) % 20_000)).unwrap_or('中');
                            let d = char::from_u32(0x4E00 + ((seed as u32).wrapping_mul(3).wrapping_add((i * 3 + k) as u32 * 11) % 20_000)).unwrap_or('文');
                            format!("{c}{d}")
                        })
                        .collect();
                    format!("服务器数据 {} 运行正常 {} 备份 {}", own[0], own[1], own[2])
                } else {
                    format!(
                        "the module database settings {} were checked {} and the port {} answered",
                        words[i * 3], words[i * 3 + 1], words[i * 3 + 2]
                    )
                };
                said(if i % 2 == 0 { Role::Human } else { Role::Ai }, &own)
            })
            .collect();
        let refs: Vec<&Message> = msgs.iter().collect();
        let ix = index(&msgs);
        let text = content_text(&msgs[target]);
        let own: Vec<&str> = text.split_whitespace().filter(|w| {
            msgs.iter().enumerate().filter(|(j, m)| *j != target && content_text(m).contains(*w)).count() == 0
        }).collect();
        prop_assume!(own.len() >= 3);
        let query = own[..3].join(" ");
        let found = ix.search(&refs, &Query { text: query.clone(), limit: 3, filters: Filters::default() });
        prop_assert!(found.hits.iter().any(|h| h.index == target), "{query}: {found:?}");
    }

    /// An index grown over several calls finds what one built at once finds.
    #[test]
    fn an_index_grown_in_parts_equals_one_built_at_once(split in 0usize..160, query in 0usize..40) {
        let msgs = session();
        let split = split.min(msgs.len());
        let mut grown = Index::new("english").expect("english");
        for m in &msgs[..split] { grown.add(m); }
        for m in &msgs[split..] { grown.add(m); }
        let whole = index(&msgs);
        let refs: Vec<&Message> = msgs.iter().collect();
        let q = Query { text: format!("database module {query} port"), limit: 10, filters: Filters::default() };
        prop_assert_eq!(grown.search(&refs, &q).hits, whole.search(&refs, &q).hits);
        prop_assert_eq!(grown.bytes(), whole.bytes());
    }
}

#[test]
fn a_request_found_shows_how_its_answer_ended_once() {
    let mut msgs = session();
    // Request 7 (message 24) ends with a long answer whose conclusion is at its end.
    let long = format!(
        "{} The pool was sized at 48 connections.",
        "Checked the logs. ".repeat(30)
    );
    msgs[27] = said(Role::Ai, &long);
    let found = find(&msgs, "database settings of module 6", 3);
    let first = &found.hits[0];
    assert_eq!(first.index, 24);
    let (at, ending) = first.answer.clone().expect("the request's answer");
    assert_eq!(at, 27);
    assert!(ending.starts_with("… ") && ending.ends_with("The pool was sized at 48 connections."));
    assert!(ending.chars().count() <= 242, "{ending}");
    // The answer shown with its request is not shown again, nor counted apart.
    assert!(found.hits.iter().all(|h| h.index != 27));
    let alone = find(&msgs, "module 6", 100);
    let mut shown: Vec<usize> = alone
        .hits
        .iter()
        .flat_map(|h| [Some(h.index), h.answer.as_ref().map(|a| a.0)])
        .flatten()
        .collect();
    let count = shown.len();
    shown.sort_unstable();
    shown.dedup();
    assert_eq!(shown.len(), count, "a message shown twice");
    // Every match is shown (the limit is above them): none is left to count.
    assert_eq!(alone.matched, alone.hits.len());
}

#[test]
fn a_request_still_open_has_no_answer_and_can_be_left_out() {
    let mut msgs = session();
    msgs.push(said(
        Role::Human,
        "What was the staging database port again?",
    ));
    let refs: Vec<&Message> = msgs.iter().collect();
    let ix = index(&msgs);
    let q = |skip_open_request: bool| Query {
        text: "staging database port".into(),
        limit: 5,
        filters: Filters {
            skip_open_request,
            ..Filters::default()
        },
    };
    let open = msgs.len() - 1;
    let all = ix.search(&refs, &q(false));
    let asked = all
        .hits
        .iter()
        .find(|h| h.index == open)
        .expect("the newest request");
    assert_eq!(asked.answer, None);
    let skipped = ix.search(&refs, &q(true));
    assert_eq!(skipped.hits[0].index, 22);
    assert!(skipped.hits.iter().all(|h| h.index != open));
}

#[test]
fn an_ending_starts_at_a_word_or_a_character() {
    let short = said(Role::Ai, "Done.\nAll tests pass.");
    assert_eq!(excerpt::ending(&short), "Done. | All tests pass.");
    let long = said(Role::Ai, &format!("{}Port 5433.", "alpha beta ".repeat(40)));
    let tail = excerpt::ending(&long);
    assert!(
        tail.starts_with("… alpha ") || tail.starts_with("… beta "),
        "{tail}"
    );
    let han = said(
        Role::Ai,
        &format!("{}结论：端口 5433。", "数据库".repeat(100)),
    );
    let tail = excerpt::ending(&han);
    // About sixty tokens in either script: 240 widths, a Chinese character four.
    let widths = crate::memory::text::width(&tail);
    assert!(
        tail.ends_with("结论：端口 5433。") && (230..=243).contains(&widths),
        "{tail}"
    );
    assert!(tail.chars().count() < 80, "{tail}");
}

/// A conversation of requests on one kind of work, each answered.
fn exchanges(pairs: &[(&str, &str)]) -> Vec<Message> {
    pairs
        .iter()
        .flat_map(|(ask, answer)| [said(Role::Human, ask), said(Role::Ai, answer)])
        .collect()
}

#[test]
fn a_model_finds_the_users_words_in_its_own() {
    let msgs = exchanges(&[
        (
            "Move the db to the new host.",
            "Done: the db now runs on host-7.",
        ),
        ("Tidy the readme.", "The readme is tidy."),
        ("Note that Sam is allergic to peanuts.", "Noted."),
        (
            "Plan the economic review of the logs.",
            "The plan is in plan.md.",
        ),
        ("Check the logger output.", "It prints twice."),
    ]);
    let indices =
        |q: &str| -> Vec<usize> { find(&msgs, q, 3).hits.iter().map(|h| h.index).collect() };
    // Each question's words are in the conversation only in another form.
    // A short form against the long one.
    assert!(
        matches!(indices("database whereabouts").first(), Some(0 | 1)),
        "{:?}",
        indices("database whereabouts")
    );
    // A word against its derivation: -y / -ic, -ing / -er.
    assert_eq!(indices("allergy").first(), Some(&4));
    assert_eq!(indices("economy").first(), Some(&6));
    assert!(indices("logging trouble").contains(&8));
}

#[test]
fn words_spread_over_a_request_and_its_answer_find_the_exchange() {
    let msgs = exchanges(&[
        (
            "Where does the kiosk firmware live?",
            "In the vault, signed by Omar.",
        ),
        ("kiosk firmware vault report", "Filed."),
        ("kiosk firmware vault audit", "Filed."),
        ("kiosk firmware vault review", "Filed."),
    ]);
    // Three messages hold three of the words each; the first request holds two and its
    // answer the other two: as one passage it holds all four, and ranks first, shown
    // with its answer.
    let found = find(&msgs, "kiosk firmware vault Omar", 3);
    let first = &found.hits[0];
    assert_eq!(first.index, 0, "{found:?}");
    assert_eq!(first.answer.as_ref().map(|a| a.0), Some(1));
    assert!(first.answer.as_ref().is_some_and(|a| a.1.contains("Omar")));
}

#[test]
fn a_user_message_of_parallel_results_opens_no_request() {
    use crate::message::{Block, Content};
    let result = |id: &str| Block::Other {
        kind: "tool_result".into(),
        value: json!({"type": "tool_result", "tool_use_id": id, "content": "ok"}),
    };
    let results = Message {
        role: Role::Human,
        content: Content::Blocks(vec![result("a"), result("b")]),
        ..Message::default()
    };
    let msgs = vec![
        said(Role::Human, "read both files"),
        ai_call("a", "read_file", json!({"file_path": "a.py"})),
        results,
        said(Role::Human, "now fix the parser"),
    ];
    let ix = index(&msgs);
    let numbers: Vec<u32> = ix.docs().iter().map(|d| d.request).collect();
    assert_eq!(numbers, vec![1, 1, 1, 2]);
}

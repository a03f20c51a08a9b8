use super::*;
use crate::memory::render::{render, Ways};
use crate::memory::Budgets;
use crate::message::{Message, Role};
use crate::render::tests::{ai_call, tool};
use serde_json::json;

fn user(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Human, text);
    m.id = Some(id.into());
    m
}

/// A long session's memory: every layer, every head stage and runs.
fn session(requests: u32) -> Memory {
    let mut msgs = Vec::new();
    for n in 1..=requests {
        let text = match n % 5 {
            0 => format!("Never deploy region r-{n} on Fridays."),
            1 => format!(
                "Add feature {n}: follow mod{}.py, rule Q{}.\n- then test it",
                n % 3,
                1000 + n
            ),
            2 => format!("From now on the budget stays under ${n}00."),
            3 => format!("please look at logs/{n}.txt again"),
            _ => "thanks, that is fine".to_owned(),
        };
        msgs.push(user(&format!("u{n}"), &text));
        msgs.push(ai_call(
            &format!("c{n}"),
            "read_file",
            json!({"file_path": format!("/src/{n}.py")}),
        ));
        msgs.push(tool(&format!("c{n}"), &format!("contents of file {n}")));
        msgs.push(Message::text(Role::Ai, &format!("Done with {n}.")));
    }
    msgs.push(tool(
        "p1",
        &crate::memory::ledger::pinned_result(1, "Chose Postgres 16"),
    ));
    let refs: Vec<&Message> = msgs.iter().collect();
    let b = Budgets {
        ledger: 4_000,
        users: 600,
        steps: 300,
        heads: 1_200,
        notes: 400,
        folded_users: 300,
        room: None,
        per_token: 4.0,
    };
    let half = refs.len() / 2;
    let mut m = Memory::default();
    m.remember(&refs[..half], 1, Some("/h/t/1.md"));
    m.fit(&b, None);
    m.remember(&refs[half..], requests / 2 + 1, Some("/h/t/2.md"));
    let notes = "1. Primary request and intent:\n- build it\n2. Next step:\n- ship it";
    m.fold_all(notes, &b, None);
    m
}

/// A memory's text with each merged line's subject left out: a request shown by a few
/// of its words comes back as those words, whose first ones may name the line anew.
fn members(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once("…: R") {
            Some((_, rest)) if l.starts_with("- ") => format!("- R{rest}"),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_memory_reads_back_as_it_was_shown() {
    for requests in [3, 12, 40, 120] {
        let m = session(requests);
        for recall in [true, false] {
            let shown = render(&m, Ways { recall });
            let back = parse(&shown).expect("ours");
            let again = render(&back, Ways { recall });
            assert_eq!(members(&again), members(&shown), "{requests} requests");
            // Read back again, it is the same.
            assert_eq!(
                render(&parse(&again).expect("ours"), Ways { recall }),
                again
            );
        }
    }
}

#[test]
fn a_memory_compacted_again_keeps_what_it_showed() {
    let m = session(40);
    let shown = render(&m, Ways { recall: true });
    let mut again = parse(&shown).expect("ours");
    let next = [
        user("u99", "Our region is eu-west-9."),
        Message::text(Role::Ai, "Noted."),
    ];
    let refs: Vec<&Message> = next.iter().collect();
    again.remember(&refs, again.next_number(), Some("/h/t/3.md"));
    let b = Budgets {
        ledger: 4_000,
        users: 600,
        steps: 300,
        heads: 1_200,
        notes: 400,
        folded_users: 300,
        room: None,
        per_token: 4.0,
    };
    again.fit(&b, None);
    let after = render(&again, Ways { recall: true });
    for e in &m.ledger {
        assert!(after.contains(&e.text), "{} lost from\n{after}", e.text);
    }
    for n in 1..=40 {
        assert!(
            ["R{n}:", "R{n} ", "[R{n}]", "### R{n}\n"]
                .iter()
                .any(|f| after.contains(&f.replace("{n}", &n.to_string()))),
            "R{n} lost from\n{after}"
        );
    }
    // Verbatim, it is stated in its own text (and in the ledger, not shown twice).
    assert!(
        after.contains("### R41\nOur region is eu-west-9."),
        "{after}"
    );
    assert!(again
        .ledger
        .iter()
        .any(|e| e.text == "Our region is eu-west-9."));
    assert_eq!(again.files, ["/h/t/1.md", "/h/t/2.md", "/h/t/3.md"]);
}

#[test]
fn other_texts_are_not_memories() {
    assert!(parse("Here is a summary of the conversation to date:\n\nstuff").is_none());
    let empty = parse(OPENING).expect("ours");
    assert_eq!(empty, Memory::default());
}

#[test]
fn archive_lines_name_their_files_back() {
    let files: Vec<String> = [
        "/a/1.md",
        "/a/2.md",
        "/a/3.md",
        "/a/x.md",
        "/b/7.md",
        "run.archive.md",
    ]
    .iter()
    .map(|f| f.to_string())
    .collect();
    for group in [&files[..4], &files[..6], &files[5..]] {
        let m = Memory {
            files: group.to_vec(),
            ..Memory::default()
        };
        let back = parse(&render(&m, Ways { recall: false })).expect("ours");
        assert_eq!(back.files, group, "{}", render(&m, Ways { recall: false }));
    }
}

#[test]
fn merged_statements_read_back_one_by_one_and_hidden_ones_stay_in_the_archive() {
    let mut m = Memory::default();
    for n in 1..=40 {
        crate::memory::ledger::take_in(
            &mut m.ledger,
            n,
            None,
            &format!("Remember rule K{}.", 1000 + n),
        );
    }
    crate::memory::ledger::fit(&mut m.ledger, 0, crate::memory::ledger::press::MERGED, 4.0);
    let shown = render(&m, Ways { recall: true });
    assert!(shown.contains("- rules: R1 K1001; R2 K1002; "), "{shown}");
    let back = parse(&shown).expect("ours");
    assert_eq!(back.ledger.len(), 40);
    assert!(back.ledger.iter().all(|e| e.text.starts_with("rules: K10")));
    crate::memory::ledger::fit(
        &mut m.ledger,
        200,
        crate::memory::ledger::press::HIDDEN,
        4.0,
    );
    let back = parse(&render(&m, Ways { recall: true })).expect("ours");
    assert!(back.ledger.len() < 40 && back.ledger.last().is_some_and(|e| e.number == 40));
}

#[test]
fn a_merged_line_read_back_again_and_again_stays_as_it_was() {
    let mut m = Memory::default();
    let text = "The goal now includes the refunds report, ticket SDE-4511.";
    crate::memory::ledger::take_in(&mut m.ledger, 1, None, text);
    crate::memory::ledger::fit(&mut m.ledger, 0, crate::memory::ledger::press::MERGED, 4.0);
    let first = render(&m, Ways { recall: true });
    let mut shown = first.clone();
    for _ in 0..4 {
        let mut back = parse(&shown).expect("ours");
        crate::memory::ledger::fit(
            &mut back.ledger,
            0,
            crate::memory::ledger::press::MERGED,
            4.0,
        );
        shown = render(&back, Ways { recall: true });
    }
    let line = |t: &str| {
        t.lines()
            .find(|l| l.contains("SDE-4511"))
            .map(str::to_owned)
    };
    assert!(
        line(&first).is_some_and(|l| l.contains("goal includes refunds")),
        "{first}"
    );
    assert_eq!(line(&shown), line(&first), "{first}\n---\n{shown}");
}

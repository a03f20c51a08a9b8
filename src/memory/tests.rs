use super::render::{render, Ways};
use super::text::width;
use super::*;
use crate::message::Role;
use crate::render::tests::{ai_call, tool};
use proptest::prelude::*;
use serde_json::json;

const WIDE: Budgets = Budgets {
    ledger: 100_000,
    room: None,
    per_token: 4.0,
    users: 100_000,
    steps: 100_000,
    heads: 100_000,
    notes: 100_000,
    folded_users: 100_000,
};

fn user(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Human, text);
    m.id = Some(id.into());
    m
}

fn answer(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Ai, text);
    m.id = Some(id.into());
    m
}

/// A request with one tool call and an answer: four messages.
fn turn(n: usize, text: &str) -> Vec<Message> {
    vec![
        user(&format!("u{n}"), text),
        ai_call(&format!("c{n}"), "ls", json!({"path": format!("/{n}")})),
        tool(&format!("c{n}"), &format!("listing {n}")),
        answer(&format!("a{n}"), &format!("answer {n}")),
    ]
}

fn refs(msgs: &[Message]) -> Vec<&Message> {
    msgs.iter().collect()
}

#[test]
fn the_memory_reads_in_order_each_request_with_its_steps() {
    let mut m = Memory::default();
    let mut msgs = turn(1, "list the root");
    msgs.extend(turn(2, "now list it again,\nplease"));
    m.remember(&refs(&msgs), 1, Some("/h/t/1.md"));
    m.fit(&WIDE, None);
    let text = render(&m, Ways { recall: true });
    let expected = format!(
        "{} {}\n\n## Requests from R1, verbatim, each followed by the agent's steps\n\
         ### R1\nlist the root\n\
         - ls {{\"path\":\"/1\"}} → listing 1 recall(\"c1\")\n\
         - Agent: answer 1\n\
         ### R2\nnow list it again,\nplease\n\
         - ls {{\"path\":\"/2\"}} → listing 2 recall(\"c2\")\n\
         - Agent: answer 2\n\
         \n## Archive\nEvery compacted message is saved under /h/t/, one file a compaction, \
         oldest first: 1.md. Each request names its file; read it, or grep the folder, for a \
         detail.\n",
        render::INTRO,
        render::RECALL_HINT
    );
    assert_eq!(text, expected);
}

#[test]
fn numbering_and_order_survive_a_merge() {
    let mut m = Memory::default();
    m.remember(&refs(&turn(1, "first")), 1, Some("/h/1.md"));
    // The next span starts inside request 1, then opens request 2.
    let more = [
        ai_call("c9", "grep", json!({"pattern": "x"})),
        tool("c9", "found x"),
    ];
    let mut span = refs(&more);
    let second = turn(2, "second");
    span.extend(refs(&second));
    m.remember(&span, 2, Some("/h/2.md"));
    m.fit(&WIDE, None);
    let numbers: Vec<u32> = m.requests.iter().map(|r| r.number).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert!(m.requests[0].steps[2].contains("recall(\"c9\")"));
    assert_eq!(m.files, vec!["/h/1.md", "/h/2.md"]);
    let text = render(&m, Ways { recall: true });
    let r1 = text.find("### R1\n").unwrap_or(usize::MAX);
    let grep = text.find("grep").unwrap_or(0);
    let r2 = text.find("### R2\n").unwrap_or(0);
    assert!(r1 < grep && grep < r2, "{text}");
    assert!(text.contains("oldest first: 1.md to 2.md."));
    // Into short without a model, the numbers stay.
    let mut short = m.clone();
    short.fit(&Budgets { users: 0, ..WIDE }, None);
    let text = render(&short, Ways { recall: true });
    assert!(
        text.contains("- R1: first → Agent: answer 1 (1.md)\n"),
        "{text}"
    );
    assert!(text.contains("- R2: second → Agent: answer 2 (2.md)\n"));
    assert_eq!(short.next_number(), 3);
    // Folded by a model, the requests that fit their budget stay verbatim beside its
    // notes; an older one the notes do not name stays in short beside them.
    let mut folded = m.clone();
    folded.fold_all("R1 and R2: the root was listed twice.", &WIDE, None);
    let text = render(&folded, Ways { recall: true });
    assert!(text.contains("## Notes on the earlier work\nR1 and R2: the root was listed twice.\n"));
    assert!(text.contains("### R1\nfirst\n") && text.contains("### R2\nsecond\n"));
    let room = Budgets {
        folded_users: width("second") + REQUEST_OVERHEAD,
        ..WIDE
    };
    let fit = m.fold_all("R1 and R2: the root was listed twice.", &room, None);
    assert_eq!(fit.folded, 1);
    let text = render(&m, Ways { recall: true });
    assert!(
        text.contains("## Earlier requests, in short\n- R1: first → Agent: answer 1 (1.md)\n"),
        "{text}"
    );
    assert!(text.contains("### R2\nsecond\n") && !text.contains("### R1"));
    assert!(m.ranges.is_empty());
    assert_eq!(m.next_number(), 3);
    // Notes that name it stand for it.
    m.fold_all("R1 (First) listed the root; R2 again.", &room, None);
    let text = render(&m, Ways { recall: true });
    assert!(!text.contains("## Earlier requests, in short"), "{text}");
    assert_eq!(m.heads.len(), 1);
}

#[test]
fn a_fold_keeps_the_quotes_of_requests_that_leave_the_view() {
    let mut m = Memory::default();
    let mut msgs = turn(
        1,
        "never touch tests/legacy, and the staging database is on port 5433",
    );
    msgs.extend(turn(
        2,
        "now review the module that parses the configuration file",
    ));
    m.remember(&refs(&msgs), 1, Some("/h/1.md"));
    let notes = "User asked: never touch tests/legacy, and the staging database is on port 5433. \
                 Then: now review the module that parses the configuration file.";
    let room = Budgets {
        folded_users: width("now review the module that parses the configuration file")
            + REQUEST_OVERHEAD,
        ..WIDE
    };
    m.fold_all(notes, &room, None);
    let text = render(&m, Ways { recall: true });
    // R1 left the view: its words stay in the notes. R2 is in view under its number.
    assert!(text.contains("never touch tests/legacy, and the staging database is on port 5433."));
    assert!(text.contains("Then: (request R2)."), "{text}");
    assert!(text.contains("### R2\nnow review"));
}

#[test]
fn each_layer_keeps_its_budget_oldest_first() {
    let mut m = Memory::default();
    for n in 1..=30 {
        m.remember(
            &refs(&turn(n, &format!("request {n} {}", "x".repeat(40)))),
            n as u32,
            None,
        );
    }
    let b = Budgets {
        ledger: 1_000,
        room: None,
        per_token: 4.0,
        users: 600,
        steps: 200,
        heads: 900,
        notes: 40,
        folded_users: 150,
    };
    m.notes = Some("a long line of notes that cannot fit\nsecond line".into());
    let folded = m.fit(&b, None);
    assert!(folded.folded > 0);
    // The newest requests stay verbatim, the oldest of them lost their steps.
    let last = m.requests.last().map(|r| r.number);
    assert_eq!(last, Some(30));
    assert!(m.requests.iter().map(request_width).sum::<usize>() <= b.users);
    assert!(m.requests[0].steps.is_empty() && m.requests[0].left_out == 2);
    assert!(
        m.requests
            .iter()
            .flat_map(|r| &r.steps)
            .map(|s| width(s) + 1)
            .sum::<usize>()
            <= 200
    );
    // The oldest went into short, each still under its number with its own terms.
    assert!(m.ranges.is_empty());
    let text = render(&m, Ways { recall: true });
    for h in &m.heads {
        assert!(text.contains(&format!("request {}", h.number)), "{text}");
    }
    let mut numbers: Vec<u32> = m.heads.iter().map(|h| h.number).collect();
    numbers.extend(m.requests.iter().map(|r| r.number));
    assert_eq!(numbers, (1..=30).collect::<Vec<_>>());
    assert_eq!(
        m.notes.as_deref(),
        Some("a long line of\n(Cut here for space.)")
    );
    assert_eq!(folded.to_save, None, "no archive file to hold them");
}

#[test]
fn notes_cut_for_space_name_the_file_that_holds_them_whole() {
    let whole = format!(
        "1. Primary request and intent:\nbuild it\n2. Files and code:\n{}3. Next step:\nship it",
        "- a file line\n".repeat(80)
    );
    let b = Budgets { notes: 400, ..WIDE };
    let mut m = Memory::default();
    m.remember(&refs(&turn(1, "build it")), 1, Some("/h/t/3.md"));
    let fit = m.fold_all(&whole, &b, Some("/h/t/3.notes.md"));
    assert_eq!(fit.to_save.as_deref(), Some(whole.as_str()));
    assert_eq!(m.notes_file.as_deref(), Some("/h/t/3.notes.md"));
    let notes = m.notes.clone().unwrap_or_default();
    assert!(notes.contains("3. Next step:\nship it"), "{notes}");
    assert!(notes.ends_with("(Cut here for space: the whole notes are in /h/t/3.notes.md.)"));
    assert!(width(&notes) <= 400);
    // A later digest with less room cuts them again, naming the same file once, and
    // has nothing new to save.
    m.remember(&refs(&turn(2, "then test it")), 2, Some("/h/t/4.md"));
    let fit = m.fit(&Budgets { notes: 200, ..WIDE }, Some("/h/t/4.notes.md"));
    assert_eq!(fit.to_save, None);
    let notes = m.notes.clone().unwrap_or_default();
    assert_eq!(
        notes
            .matches("the whole notes are in /h/t/3.notes.md")
            .count(),
        1
    );
    assert!(width(&notes) <= 200);
    // Notes that fit again keep their cut and its pointer.
    m.fit(&WIDE, Some("/h/t/5.notes.md"));
    assert!(m
        .notes
        .as_deref()
        .unwrap_or("")
        .ends_with("/h/t/3.notes.md.)"));
}

fn request_width(r: &Request) -> usize {
    r.text.as_deref().map_or(0, width) + REQUEST_OVERHEAD
}

#[test]
fn a_model_summary_stands_in_for_requests_it_quotes() {
    let texts = vec![
        (1, "please fix the parser".to_owned()),
        (2, "ok".to_owned()),
    ];
    let notes = "User said: please fix the parser. Then: ok.";
    assert_eq!(
        notes_without_quotes(notes, &texts, 10),
        "User said: (request R1). Then: ok."
    );
}

#[test]
fn without_recall_no_line_names_it() {
    let mut m = Memory::default();
    m.remember(&refs(&turn(1, "first")), 1, Some("/h/1.md"));
    m.fit(&Budgets { users: 0, ..WIDE }, None);
    m.remember(&refs(&turn(2, "second")), 2, Some("/h/2.md"));
    let text = render(&m, Ways { recall: false });
    assert!(!text.contains("recall"), "{text}");
    assert!(text.contains("- R1: first → Agent: answer 1 (1.md)\n"));
    assert!(text.contains("- ls {\"path\":\"/2\"} → listing 2\n"));
}

#[test]
fn an_earlier_summary_becomes_the_notes() {
    let m = Memory::from_summary("1. The user wants a parser.\n", None, 0);
    assert_eq!(m.notes.as_deref(), Some("1. The user wants a parser."));
    let text = render(&m, Ways { recall: true });
    assert!(text.contains("## Notes on the earlier work\n1. The user wants a parser.\n"));
}

#[test]
fn an_earlier_summarizers_requests_and_file_keep_their_numbers() {
    // DeepAgents summarized 11 requests into its own file; the span then carries on
    // request 11 and opens 12.
    let earlier = Earlier {
        text: "The user reviews modules.",
        file: Some("/conversation_history/session_9.md"),
    };
    let mut msgs = vec![
        ai_call("c9", "ls", json!({"path": "/"})),
        tool("c9", "a.py"),
    ];
    msgs.extend(turn(12, "review module 12"));
    let (m, _) = after_compaction(
        None,
        Some(earlier),
        Span {
            msgs: &refs(&msgs),
            first_number: 12,
            kept: &[],
        },
        Files {
            archive: Some("/conversation_history/sw/1.md"),
            notes: None,
        },
        &WIDE,
        None,
    );
    let text = render(&m, Ways { recall: true });
    assert!(
        text.contains(
            "## Earlier requests, in short\n- R1-R11: what the notes above say (in session_9.md)\n"
        ),
        "{text}"
    );
    assert!(text.contains("### R11 (continued)\n- ls"));
    assert!(text.contains("### R12\nreview module 12\n"));
    assert!(text.contains(
        "Every compacted message is saved, oldest first: under /conversation_history/, \
         session_9.md; then under /conversation_history/sw/, 1.md."
    ));
}

#[test]
fn steps_before_any_request_stand_before_r1() {
    let msgs = [ai_call("c1", "ls", json!({})), tool("c1", "x")];
    let mut m = Memory::default();
    m.remember(&refs(&msgs), 1, None);
    m.remember(&refs(&turn(1, "go")), 1, None);
    assert_eq!(m.next_number(), 2);
    let text = render(&m, Ways { recall: true });
    assert!(
        text.contains("## Requests from the start, verbatim"),
        "{text}"
    );
    assert!(
        text.contains("### Before R1\n- ls {} → x recall(\"c1\")\n### R1\ngo\n"),
        "{text}"
    );
    m.fit(&Budgets { users: 0, ..WIDE }, None);
    let text = render(&m, Ways { recall: true });
    assert!(
        text.contains("- Before R1: (steps before any request)"),
        "{text}"
    );
}

#[test]
fn file_runs_are_short() {
    let files: Vec<String> = ["1.md", "2.md", "3.md", "3-2.md", "5.md"]
        .iter()
        .map(|f| format!("/h/t/{f}"))
        .collect();
    assert_eq!(render::file_runs(&files), "1.md to 3.md, 3-2.md, 5.md");
}

#[test]
fn budgets_scale_down_to_the_room() {
    let b = Budgets {
        users: 800,
        steps: 200,
        heads: 200,
        notes: 400,
        folded_users: 200,
        ..Budgets::default()
    };
    assert_eq!(
        b.within(10_000),
        Budgets {
            room: Some(10_000),
            ..b
        }
    );
    let small = b.within(800);
    assert_eq!(small.folded_users, 100);
    assert_eq!(
        (small.users, small.steps, small.heads, small.notes),
        (400, 100, 100, 200)
    );
    // What the ledger takes of the room is not the other layers'.
    let beside = b.within(1_000).after(200);
    assert_eq!((beside.users, beside.notes), (400, 200));
}

#[test]
fn budgets_take_a_conversations_widths_a_token_within_bounds() {
    let config = crate::config::MemoryConfig::default();
    let users = |per_token: f64| config.budgets(Some(10_000), per_token).users;
    // A fifth of 10,000 tokens at 4, 6 widths a token.
    assert_eq!((users(4.0), users(6.0)), (8_000, 12_000));
    // Past the bounds (2 and 8), the bound; a ratio that is no number, the assumed 4.
    assert_eq!((users(0.5), users(50.0)), (4_000, 16_000));
    assert_eq!((users(f64::NAN), users(f64::INFINITY)), (8_000, 8_000));
}

proptest! {
    /// However long the session and however its requests are spread over compactions,
    /// the memory stays within its budgets, and every request keeps its number.
    #[test]
    fn the_memory_is_bounded_whatever_the_session(
        lengths in prop::collection::vec(0usize..600, 1..120),
        per_span in 1usize..12,
        fold_every in 0usize..6,
    ) {
        let b = Budgets { users: 2_000, steps: 800, heads: 1_200, notes: 400, folded_users: 500, ..Budgets::default() };
        let mut m = Memory::default();
        let mut number = 1u32;
        for (k, chunk) in lengths.chunks(per_span).enumerate() {
            let msgs: Vec<Message> = chunk
                .iter()
                .enumerate()
                .flat_map(|(i, &len)| turn(number as usize + i, &"word ".repeat(len / 5 + 1)))
                .collect();
            m.remember(&refs(&msgs), number, Some(&format!("/h/{}.md", k + 1)));
            number += chunk.len() as u32;
            let folding = fold_every > 0 && k % fold_every == fold_every - 1;
            if folding {
                m.fold_all(&"note ".repeat(200), &b, None);
            } else {
                m.fit(&b, None);
            }
            let users: usize = m.requests.iter().map(request_width).sum();
            let verbatim = if folding { b.folded_users } else { b.users };
            prop_assert!(users <= verbatim || m.requests.len() == 1);
            let steps: usize = m.requests.iter().flat_map(|r| &r.steps).map(|s| width(s) + 1).sum();
            let heads = super::heads::shown_width(&m.heads);
            prop_assert!(users <= b.users || m.requests.len() == 1);
            prop_assert!(steps <= b.steps);
            prop_assert!(heads <= b.heads * HEADS_CEILING);
            prop_assert!(m.notes.as_deref().map_or(0, width) <= b.notes);
            prop_assert!(m.ranges.len() <= 1);
            // Under the ceiling, no request is a bare number.
            prop_assert!(m.ranges.is_empty() || heads > b.heads * (HEADS_CEILING - 1));
            prop_assert_eq!(m.next_number(), number);
        }
    }

    /// The digest and the fold made together are each what it is made alone.
    #[test]
    fn a_digest_and_a_fold_made_together_are_each_made_alone(
        lengths in prop::collection::vec(0usize..400, 1..40),
        before in 0usize..10,
        users in 200usize..4_000,
    ) {
        let b = Budgets { users, steps: 800, heads: 1_200, notes: 400, folded_users: users / 4, ..Budgets::default() };
        let earlier: Vec<Message> =
            (1..=before).flat_map(|n| turn(n, &"old ".repeat(n * 7))).collect();
        let mut previous = Memory::default();
        previous.remember(&refs(&earlier), 1, Some("/h/1.md"));
        previous.fit(&b, None);
        let first = before as u32 + 1;
        let msgs: Vec<Message> = lengths
            .iter()
            .enumerate()
            .flat_map(|(i, &len)| turn(before + 1 + i, &"word ".repeat(len / 5 + 1)))
            .collect();
        let files = || Files { archive: Some("/h/2.md"), notes: Some("/h/2.notes.md") };
        let taken = refs(&msgs);
        let span = Span { msgs: &taken, first_number: first, kept: &[] };
        let alone = |notes| after_compaction(Some(previous.clone()), None, span, files(), &b, notes);
        let (digest, fold) = digest_and_fold(Some(previous.clone()), None, span, files(), &b);
        prop_assert_eq!(digest, alone(None));
        prop_assert_eq!(fold, alone(Some("")));
    }
}

proptest! {
    /// Whatever the room, the memory fits it, or has given all it can: nothing is left
    /// but a terse opening, the ledger pressed to its terms (never dropped), one run
    /// named by its subjects, the notes' cut line and the archive line.
    #[test]
    fn the_memory_fits_any_room_it_can(
        lengths in prop::collection::vec(0usize..400, 1..60),
        rules in 0usize..12,
        room in 0usize..6_000,
        fold in proptest::bool::ANY,
    ) {
        let msgs: Vec<Message> = lengths
            .iter()
            .enumerate()
            .flat_map(|(i, &len)| {
                let rule = if i < rules { format!("Never touch module m{i}. ") } else { String::new() };
                turn(i + 1, &format!("{rule}{}", "word ".repeat(len / 5 + 1)))
            })
            .collect();
        let b = Budgets {
            ledger: 2_000,
            users: 4_000,
            steps: 800,
            heads: 1_200,
            notes: 400,
            folded_users: 1_000,
            room: Some(room),
            per_token: 4.0,
        };
        let mut m = Memory::default();
        m.remember(&refs(&msgs), 1, Some("/h/1.md"));
        if fold {
            m.fold_all(&"note ".repeat(300), &b, Some("/h/1.notes.md"));
        } else {
            m.fit(&b, None);
        }
        let text = render(&m, Ways { recall: true });
        if width(&text) > room {
            prop_assert!(m.terse, "{}", text);
            prop_assert!(m.requests.is_empty() && m.heads.is_empty() && m.ranges.len() <= 1, "{}", text);
            prop_assert!(m.ledger.iter().all(|e| e.pressed == ledger::press::HIDDEN));
        }
        // Every rule's module stays in view unless the room left none even for it,
        // when it is counted on the line of hidden statements.
        for (i, e) in m.ledger.iter().enumerate() {
            let module = format!("m{i}");
            let shown = text.contains(&module) || e.pressed == ledger::press::HIDDEN;
            prop_assert!(shown, "{} lost from {}", module, text);
        }
        prop_assert!(m.ledger.len() == rules.min(lengths.len()));
        // A run is never a bare range.
        prop_assert!(m.ranges.iter().all(|r| !r.subjects.is_empty()));
    }
}

#[test]
fn a_replaced_statement_leaves_every_layer() {
    let mut m = Memory::default();
    let first = [
        user(
            "u1",
            "Keep the monthly spend under $318. Also check the logs.",
        ),
        answer("a1", "ok"),
        user("u2", "Our region is eu-west-1."),
        answer("a2", "ok"),
    ];
    m.remember(&refs(&first), 1, Some("/h/1.md"));
    // R2 goes into short; R1 stays verbatim.
    m.fit(&WIDE, None);
    let region = m.requests.iter().position(|r| r.number == 2).expect("R2");
    let moved = m.requests.remove(region);
    m.heads.push(Head {
        number: 2,
        text: heads::of_request(2, moved.text.as_deref()).0,
        keys: heads::key_terms(moved.text.as_deref().unwrap_or("")),
        ..Head::default()
    });
    let later = [
        user("u3", "From now on the monthly spend stays under $547."),
        answer("a3", "ok"),
        user("u4", "Our region is ap-south-9."),
    ];
    m.remember(&refs(&later), 3, Some("/h/2.md"));
    let text = render(&m, Ways { recall: true });
    assert!(
        !text.contains("318") && !text.contains("eu-west-1"),
        "{text}"
    );
    assert!(
        text.contains("### R1\n(superseded: see R3) Also check the logs."),
        "{text}"
    );
    assert!(text.contains("- R2: (superseded: see R4) region"), "{text}");
    assert!(text.contains("### R3\nFrom now on the monthly spend stays under $547."));
    assert!(
        m.ledger.iter().any(|e| e.number == 3),
        "kept, shown where it is verbatim"
    );
    // Words still in view replace what the ledger held, and add nothing.
    m.superseded_by(&refs(&[user("u5", "Correction: our region is us-east-2.")]));
    assert!(!m.ledger.iter().any(|e| e.text.contains("ap-south-9")));
    assert!(!m.ledger.iter().any(|e| e.text.contains("us-east-2")));
}

#[test]
fn a_request_the_ledger_states_whole_needs_no_line_in_short_until_it_is_replaced() {
    let mut m = Memory::default();
    let first = [user("u1", "Our region is eu-west-1."), answer("a1", "ok")];
    m.remember(&refs(&first), 1, Some("/h/1.md"));
    m.fit(&Budgets { users: 0, ..WIDE }, None);
    let text = render(&m, Ways { recall: true });
    assert!(
        m.heads.is_empty() && text.contains("- [R1] Our region is eu-west-1."),
        "{text}"
    );
    let later = [user("u2", "Our region is ap-south-9."), answer("a2", "ok")];
    m.remember(&refs(&later), 2, Some("/h/2.md"));
    m.fit(&Budgets { users: 0, ..WIDE }, None);
    let text = render(&m, Ways { recall: true });
    assert!(!text.contains("eu-west-1"), "{text}");
    assert!(text.contains("- R1: (superseded: see R2) region"), "{text}");
    assert!(text.contains("- [R2] Our region is ap-south-9."), "{text}");
}

#[test]
fn a_model_summary_that_names_a_statement_stands_for_it_and_one_that_misses_it_cannot() {
    let mut m = Memory::default();
    let msgs = [
        user("u1", "Never disclose the vault code XKX-8683."),
        answer("a1", "ok"),
        user("u2", "Keep the monthly spend under $318."),
        answer("a2", "ok"),
    ];
    m.remember(&refs(&msgs), 1, Some("/h/1.md"));
    let b = Budgets {
        users: 0,
        folded_users: 0,
        ..WIDE
    };
    m.fold_all(
        "The user set a rule about XKX-8683 and talked about money.",
        &b,
        None,
    );
    let text = render(&m, Ways { recall: true });
    assert!(!text.contains("- [R1]"), "{text}");
    assert!(
        text.contains("- [R2] Keep the monthly spend under $318."),
        "{text}"
    );
}

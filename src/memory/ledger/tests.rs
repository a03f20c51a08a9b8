use super::*;

fn texts(entries: &[Entry]) -> Vec<(u32, &str)> {
    entries
        .iter()
        .map(|e| (e.number, e.text.as_str()))
        .collect()
}

#[test]
fn statements_enter_in_order_with_their_request() {
    let mut l = Vec::new();
    take_in(
        &mut l,
        3,
        Some("u3"),
        "Never disclose the vault code XKX-8683. How are you?",
    );
    take_in(&mut l, 4, None, "Keep the monthly spend under $300.");
    assert_eq!(
        texts(&l),
        [
            (3, "Never disclose the vault code XKX-8683."),
            (4, "Keep the monthly spend under $300.")
        ]
    );
    assert_eq!(l[0].id.as_deref(), Some("u3"));
    assert_eq!((l[0].kind, l[1].kind), (Kind::Rule, Kind::Limit));
}

#[test]
fn a_later_statement_in_other_words_replaces_the_earlier() {
    let mut l = Vec::new();
    take_in(&mut l, 1, None, "Keep the monthly spend under $300.");
    take_in(&mut l, 2, None, "Our region is eu-west-1.");
    take_in(&mut l, 3, None, "Always reply in English.");
    take_in(
        &mut l,
        9,
        None,
        "From now on the spend stays under five hundred dollars.",
    );
    take_in(&mut l, 10, None, "Our region is eu-central-1.");
    take_in(&mut l, 11, None, "Reply in French instead.");
    assert_eq!(
        texts(&l),
        [
            (9, "From now on the spend stays under five hundred dollars."),
            (10, "Our region is eu-central-1."),
            (11, "Reply in French instead."),
        ]
    );
}

#[test]
fn statements_on_other_things_stand_together() {
    let mut l = Vec::new();
    for n in 1..=3 {
        take_in(&mut l, n, None, &format!("Remember rule K1000{n}."));
    }
    take_in(&mut l, 4, None, "Never disclose the vault code XKX-8683.");
    take_in(&mut l, 5, None, "Update: the vault moved to building 4.");
    take_in(&mut l, 6, None, "My name is Dana.");
    take_in(&mut l, 7, None, "My team is platform-2.");
    assert_eq!(l.len(), 7, "{:#?}", texts(&l));
}

#[test]
fn the_same_words_again_move_to_the_newer_request() {
    let mut l = Vec::new();
    take_in(&mut l, 1, None, "Never log tokens.");
    take_in(&mut l, 8, None, "never   log tokens!");
    assert_eq!(texts(&l), [(8, "never   log tokens!")]);
}

#[test]
fn chinese_statements_on_other_things_stand_together() {
    let mut l = Vec::new();
    take_in(&mut l, 1, None, "以后请改用日文回答。");
    take_in(&mut l, 2, None, "现在计费服务改为由陈静负责。");
    assert_eq!(l.len(), 2, "{:#?}", texts(&l));
}

#[test]
fn chinese_updates_replace_too() {
    let mut l = Vec::new();
    take_in(
        &mut l,
        1,
        None,
        "每月预算不超过三百美元。禁止泄露金库密码 XKX-8683。",
    );
    take_in(&mut l, 2, None, "从现在起，每月预算不超过五百美元。");
    assert_eq!(
        texts(&l),
        [
            (1, "禁止泄露金库密码 XKX-8683。"),
            (2, "从现在起，每月预算不超过五百美元。")
        ]
    );
}

#[test]
fn words_still_in_view_drop_what_they_replace_and_add_nothing() {
    let mut l = Vec::new();
    take_in(
        &mut l,
        1,
        None,
        "The deadline is Friday. Use tabs, never spaces.",
    );
    superseded_by(&mut l, "Correction: the deadline is Monday.");
    assert_eq!(texts(&l), [(1, "Use tabs, never spaces.")]);
}

#[test]
fn pins_come_and_go_by_number() {
    let mut l = Vec::new();
    pin_result(
        &mut l,
        4,
        &pinned_result(1, "Chose Postgres over MySQL for JSONB"),
        true,
    );
    pin_result(
        &mut l,
        5,
        &pinned_result(2, "Plan: migrate then backfill"),
        true,
    );
    assert_eq!(
        l.iter().map(line).collect::<Vec<_>>(),
        [
            "- [P1] Chose Postgres over MySQL for JSONB",
            "- [P2] Plan: migrate then backfill"
        ]
    );
    pin_result(&mut l, 6, &unpinned_result(1), false);
    assert_eq!(l.len(), 1);
    assert_eq!(pin_change("Pinned Px: no"), None);
    assert_eq!(pin_change(&unpinned_result(7)), Some((7, None)));
    // A user's statement never replaces a pinned note.
    take_in(&mut l, 7, None, "The plan is: migrate then backfill.");
    assert_eq!(l.len(), 2);
}

#[test]
fn pressing_keeps_every_term_and_shrinks_the_oldest_first() {
    let mut l = Vec::new();
    for n in 1..=30 {
        take_in(
            &mut l,
            n,
            None,
            &format!(
                "Never send the reports for region R-{n} to the team in the old office at night."
            ),
        );
    }
    let whole = shown_cost(&l, 4.0);
    let used = fit(&mut l, whole * 3 / 5, press::TERMS, 4.0);
    assert!(used <= whole * 3 / 5, "{used} of {whole}");
    assert!(l[0].pressed > l[29].pressed);
    let text: String = l.iter().map(line).collect::<Vec<_>>().join("\n");
    for n in 1..=30 {
        assert!(text.contains(&format!("[R{n}] ")) && text.contains(&format!("R-{n}")));
    }
    assert!(
        text.starts_with("- [R1] Never send reports region R-"),
        "{text}"
    );
    // No room at all: every term stays, over the budget.
    let least = fit(&mut l, 0, press::TERMS, 4.0);
    assert!(least > 0 && l.iter().all(|e| e.pressed == press::TERMS));
    let text: String = l.iter().map(line).collect::<Vec<_>>().join("\n");
    assert!((1..=30).all(|n| text.contains(&format!("R-{n}"))), "{text}");
    // Merged, on one line by topic, each still with its number and terms.
    let merged = fit(&mut l, 0, press::MERGED, 4.0);
    assert!(merged < least * 2 / 3, "{merged} of {least}");
    let text = lines(&l).join("\n");
    assert!(
        text.starts_with("- rules: R1 send reports region R-1; R2 send reports region R-2; "),
        "{text}"
    );
    assert!(
        (1..=30).all(|n| text.contains(&format!("R{n} send reports region R-{n}"))),
        "{text}"
    );
    // Hidden only as the last resort: counted and named.
    fit(&mut l, 400, press::HIDDEN, 4.0);
    let text = lines(&l).join("\n");
    assert!(text.starts_with("- [R1-R"), "{text}");
    assert!(
        text.contains(" more, in the archive and found by recall: rules"),
        "{text}"
    );
    assert!(text.contains("R30 send reports region R-30"), "{text}");
}

proptest::proptest! {
    #[test]
    fn pressing_never_drops_a_term(
        texts in proptest::collection::vec("[A-Za-z0-9 ./_-]{0,120}", 1..20),
        budget in 0usize..2_000,
    ) {
        let mut l: Vec<Entry> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Entry {
                number: i as u32 + 1,
                id: None,
                kind: Kind::Rule,
                text: t.clone(),
                pressed: 0,
                pin: None,
            })
            .collect();
        fit(&mut l, budget, press::MERGED, 4.0);
        let shown = lines(&l).join("\n");
        for e in &l {
            for t in key_terms(&e.text) {
                // Merged, a number keeps itself, not the word before it.
                let kept = t.rsplit_once(' ').map_or(t.as_str(), |(_, n)| n);
                proptest::prop_assert!(shown.contains(kept), "{} missing from {}", t, shown);
            }
            let tag = format!("R{}", e.number);
            proptest::prop_assert!(shown.contains(&tag), "{} missing from {}", tag, shown);
        }
    }
}

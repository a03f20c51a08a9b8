//! The cheap passes without Python: exact edits, and plans that are idempotent and
//! never touch roles, ids or pairs.

use fastcompact::config::PlanConfig;
use fastcompact::cutoff::{Clause, Size};
use fastcompact::economics::Pricing;
use fastcompact::message::{Message, Role, ToolCall};
use fastcompact::passes::{Change, Memos, Pass};
use fastcompact::plan::{plan, Plan, PlanInput};
use fastcompact::tally::measure;
use fastcompact::tokens::HeuristicParams;
use proptest::prelude::*;
use serde_json::json;

fn call(name: &str, id: &str, args: serde_json::Value) -> Message {
    let mut m = Message::text(Role::Ai, "");
    m.tool_calls.push(ToolCall {
        id: Some(id.into()),
        name: name.into(),
        args: args.into(),
    });
    m
}

fn result(id: &str, name: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.tool_call_id = Some(id.into());
    m.name = Some(name.into());
    m
}

fn run(msgs: &[Message], cfg: &PlanConfig) -> Plan {
    run_with(msgs, cfg, None, None)
}

/// A plan with the settled prefix of an earlier plan and the memos of earlier calls.
fn run_with(
    msgs: &[Message],
    cfg: &PlanConfig,
    settled: Option<usize>,
    memos: Option<&Memos>,
) -> Plan {
    let p = HeuristicParams::default();
    plan(
        PlanInput {
            msgs: msgs.iter().collect(),
            tokens: msgs
                .iter()
                .map(|m| measure(m).heuristic_tokens(&p))
                .collect(),
            measures: None,
            skeletons: None,
            fixed: 0.0,
            max_input_tokens: None,
            params: p,
            timestamps: Vec::new(),
            now: None,
            archive: Vec::new(),
            memos,
            usage: &[],
            min_anchor: 0,
            prior: Default::default(),
            usage_of_unedited: false,
            settled,
            calls_before: 0,
        },
        cfg,
    )
}

fn apply(msgs: &[Message], plan: &Plan) -> Vec<Message> {
    let mut out = msgs.to_vec();
    for e in &plan.edits {
        e.apply(&mut out[e.index]);
    }
    out
}

/// Every pass on, every trigger reached, no batching.
fn eager() -> PlanConfig {
    let mut c = PlanConfig::default();
    c.budget.per_tool_chars = 40;
    c.budget.file_preview_chars = 10;
    c.truncate_args.trigger = Some(Size::Messages(1));
    c.truncate_args.keep = Size::Messages(2);
    c.truncate_args.max_length = 4;
    c.truncate_args.min_batch_tokens = 0;
    c.clearing.trigger = Size::Messages(1);
    c.clearing.keep_recent = 1;
    c.clearing.clear_at_least = 0;
    c.dedupe.min_batch_tokens = 0;
    c.collapse.trigger = Size::Messages(1);
    c.collapse.keep_recent_messages = 1;
    c.collapse.min_batch_tokens = 0;
    c
}

#[test]
fn clearing_names_the_call() {
    let msgs = vec![
        Message::text(Role::Human, "go"),
        call("grep", "a", json!({"pattern": "TODO"})),
        result("a", "grep", &"hit\n".repeat(100)),
        call("grep", "b", json!({"pattern": "FIXME"})),
        result("b", "grep", &"hit\n".repeat(50)),
    ];
    let mut cfg = PlanConfig::default();
    cfg.clearing.trigger = Size::Messages(1);
    cfg.clearing.keep_recent = 1;
    cfg.clearing.clear_at_least = 0;
    let p = run(&msgs, &cfg);
    assert_eq!(p.edits.len(), 1);
    assert_eq!(p.edits[0].index, 2);
    assert_eq!(p.edits[0].pass, Pass::Clearing);
    assert_eq!(
        p.edits[0].change,
        Change::Content("[Cleared to save context: grep(TODO); recall(\"a\") returns it.]".into())
    );
    assert!(p.tokens_after < p.tokens_before);
}

#[test]
fn nothing_fires_on_a_small_conversation_by_default() {
    let msgs = vec![
        Message::text(Role::Human, "go"),
        call("read_file", "a", json!({"file_path": "a.py"})),
        result("a", "read_file", "print(1)"),
    ];
    let p = run(&msgs, &PlanConfig::default());
    assert!(p.edits.is_empty());
    assert_eq!(p.tokens_before, p.tokens_after);
    assert!(!p.summary_needed);
}

#[derive(Clone, Debug)]
enum Step {
    Human,
    Read(u8),
    Write(u8),
}

fn session(steps: &[Step]) -> Vec<Message> {
    let mut out = vec![Message::text(Role::Human, "start")];
    for (i, s) in steps.iter().enumerate() {
        let id = format!("c{i}");
        match s {
            Step::Human => out.push(Message::text(Role::Human, "next")),
            Step::Read(f) => {
                out.push(call(
                    "read_file",
                    &id,
                    json!({"file_path": format!("f{f}.py")}),
                ));
                out.push(result(
                    &id,
                    "read_file",
                    &"line\n".repeat(usize::from(*f) * 3 + 1),
                ));
            }
            Step::Write(f) => {
                out.push(call(
                    "write_file",
                    &id,
                    json!({"file_path": format!("f{f}.py"), "content": "x".repeat(50)}),
                ));
                out.push(result(&id, "write_file", "ok"));
            }
        }
    }
    out
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            Just(Step::Human),
            (0u8..4).prop_map(Step::Read),
            (0u8..4).prop_map(Step::Write)
        ],
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn plans_are_idempotent_and_keep_structure(steps in steps()) {
        let msgs = session(&steps);
        let cfg = eager();
        let p = run(&msgs, &cfg);
        let edited = apply(&msgs, &p);
        prop_assert_eq!(edited.len(), msgs.len());
        for (a, b) in msgs.iter().zip(&edited) {
            prop_assert_eq!(a.role, b.role);
            prop_assert_eq!(&a.tool_call_id, &b.tool_call_id);
            prop_assert_eq!(a.call_ids(), b.call_ids());
        }
        let again = run(&edited, &cfg);
        prop_assert!(again.edits.is_empty(), "second plan edited {:?}", again.edits);
    }
}

/// The eager passes under a price model: batches commit when they pay.
fn priced() -> PlanConfig {
    let mut c = eager();
    c.pricing = Pricing::preset("anthropic");
    // A small trigger presses batches in short sessions too.
    c.trigger = vec![Clause(vec![Size::Tokens(150)])];
    c
}

/// A session planned call by call as the middleware plans it: each call one more
/// message, the settled prefix carried over, and the memos kept (or made afresh).
fn planned_calls(msgs: &[Message], keep_memos: bool) -> Vec<Plan> {
    let cfg = priced();
    let mut memos = Memos::default();
    let mut settled = None;
    let mut plans = Vec::new();
    for n in 1..=msgs.len() {
        let fresh;
        let m = if keep_memos {
            memos.resize(n);
            &memos
        } else {
            fresh = Memos::new(n);
            &fresh
        };
        let p = run_with(&msgs[..n], &cfg, settled, Some(m));
        settled = Some(p.settled);
        plans.push(p);
    }
    plans
}

#[test]
fn a_settled_prefix_is_remembered_until_a_message_in_it_changes() {
    let msgs = session(&[Step::Read(1), Step::Read(2), Step::Human, Step::Read(3)]);
    let cfg = priced();
    let mut memos = Memos::new(msgs.len());
    assert_eq!(memos.settled_upto(), None);
    let first = run_with(&msgs, &cfg, Some(5), Some(&memos));
    assert_eq!(memos.settled_upto(), Some(5));
    assert_eq!(run_with(&msgs, &cfg, Some(5), Some(&memos)), first);
    // A change after the prefix leaves it; one inside it, or a shorter list, drops it.
    memos.reset(7);
    assert_eq!(memos.settled_upto(), Some(5));
    memos.reset(4);
    assert_eq!(memos.settled_upto(), None);
    assert_eq!(run_with(&msgs, &cfg, Some(5), Some(&memos)), first);
    memos.truncate(3);
    assert_eq!(memos.settled_upto(), None);
    // Another prefix, or other settings, replace it.
    memos.resize(msgs.len());
    let _ = run_with(&msgs, &cfg, Some(5), Some(&memos));
    let other = run_with(&msgs, &cfg, Some(3), Some(&memos));
    assert_eq!(memos.settled_upto(), Some(3));
    assert_eq!(other, run_with(&msgs, &cfg, Some(3), None));
    let mut unpriced_keep = cfg.clone();
    unpriced_keep.clearing.keep_recent = 3;
    assert_eq!(
        run_with(&msgs, &unpriced_keep, Some(3), Some(&memos)),
        run_with(&msgs, &unpriced_keep, Some(3), None)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn remembered_settled_runs_plan_as_fresh_ones_do(steps in steps()) {
        let msgs = session(&steps);
        prop_assert_eq!(planned_calls(&msgs, true), planned_calls(&msgs, false));
    }
}

/// The session with each call's arguments kept as a cached message keeps them.
fn slimmed(msgs: &[Message], cfg: &PlanConfig) -> Vec<Message> {
    let whole = fastcompact::passes::truncate_args::whole_args(&cfg.truncate_args);
    let mut out = msgs.to_vec();
    for m in &mut out {
        fastcompact::passes::slim_args(m, whole);
    }
    out
}

#[test]
fn slimmed_arguments_keep_what_the_passes_read() {
    use fastcompact::message::{ArgFacts, Args};
    use fastcompact::passes::{slim_args, WholeArgs};
    let args = json!({"file_path": "src/app.py", "content": "abcdef"});
    let mut m = call("write_file", "w", args.clone());
    slim_args(&mut m, WholeArgs::longer_than(10));
    assert_eq!(
        m.tool_calls[0].args,
        Args::Facts(ArgFacts {
            key: fastcompact::message::text_key(&args.to_string()),
            // {'file_path': 'src/app.py', 'content': 'abcdef'}
            repr_len: 48,
            longest: 10,
            main: "src/app.py".into(),
        })
    );
    assert_eq!(m.tool_calls[0].args.key(), Args::from(args.clone()).key());
    // A string longer than the bound keeps them whole; so does EVERY.
    let mut long = call("write_file", "w", args.clone());
    slim_args(&mut long, WholeArgs::longer_than(9));
    slim_args(&mut long, WholeArgs::EVERY);
    assert_eq!(long.tool_calls[0].args.whole(), Some(&args));
    assert!(WholeArgs::EVERY < WholeArgs::longer_than(0));
    assert!(WholeArgs::longer_than(200) < WholeArgs::longer_than(usize::MAX));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn slimmed_messages_plan_as_whole_ones_do(steps in steps()) {
        let msgs = session(&steps);
        // Limits under which some calls keep their arguments whole and others not.
        let limits = |mut c: PlanConfig| {
            c.truncate_args.max_length = 100;
            c.truncate_args.file_max_length = 40;
            c
        };
        for cfg in [limits(eager()), limits(priced()), PlanConfig::default()] {
            let slim = slimmed(&msgs, &cfg);
            prop_assert_eq!(measure_all(&slim), measure_all(&msgs));
            prop_assert_eq!(run(&slim, &cfg), run(&msgs, &cfg));
            prop_assert_eq!(planned_calls_with(&slim, &cfg), planned_calls_with(&msgs, &cfg));
        }
    }
}

fn measure_all(msgs: &[Message]) -> Vec<fastcompact::tokens::Measure> {
    msgs.iter().map(measure).collect()
}

/// `planned_calls` under `cfg`, the memos kept.
fn planned_calls_with(msgs: &[Message], cfg: &PlanConfig) -> Vec<Plan> {
    let mut memos = Memos::default();
    let mut settled = None;
    (1..=msgs.len())
        .map(|n| {
            memos.resize(n);
            let p = run_with(&msgs[..n], cfg, settled, Some(&memos));
            settled = Some(p.settled);
            p
        })
        .collect()
}

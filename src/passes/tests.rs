use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::OnceLock;

use super::view::longest_string;
use super::*;
use crate::message::{Message, Role, ToolCall};
use serde_json::json;

proptest::proptest! {
    /// Ids in order of first use, past the names searched in order too.
    #[test]
    fn name_ids_count_in_order_of_first_use(keys in proptest::collection::vec(1u64..60, 0..200)) {
        let mut ids = NameIds::default();
        let mut first_use: Vec<u64> = Vec::new();
        for k in keys {
            let expected = first_use.iter().position(|&f| f == k).unwrap_or_else(|| {
                first_use.push(k);
                first_use.len() - 1
            });
            let key = NonZeroU64::new(k).unwrap_or(NonZeroU64::MIN);
            proptest::prop_assert_eq!(ids.id(key), expected);
        }
    }
}

/// The straightforward way: a map of every call seen so far.
fn results_by_map(msgs: &[&Message]) -> Vec<(usize, Option<usize>, Option<String>)> {
    let mut calls: HashMap<&str, (usize, &ToolCall)> = HashMap::new();
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        for c in &m.tool_calls {
            if let Some(id) = c.id.as_deref() {
                calls.insert(id, (i, c));
            }
        }
        if m.role == Role::Tool {
            let found = m.tool_call_id.as_deref().and_then(|id| calls.get(id));
            out.push((i, found.map(|f| f.0), found.map(|f| f.1.name.clone())));
        }
    }
    out
}

#[test]
fn tool_results_find_near_far_repeated_and_missing_calls() {
    let call = |id: &str, name: &str| ToolCall {
        id: Some(id.into()),
        name: name.into(),
        args: json!({}).into(),
    };
    let ai = |calls: Vec<ToolCall>| {
        let mut m = Message::text(Role::Ai, "");
        m.tool_calls = calls;
        m
    };
    let result = |id: &str| {
        let mut m = Message::text(Role::Tool, "r");
        m.tool_call_id = Some(id.into());
        m
    };
    let mut msgs = vec![ai(vec![call("far", "grep"), call("dup", "ls")])];
    msgs.extend((0..40).map(|_| Message::text(Role::Human, "filler")));
    msgs.push(ai(vec![call("dup", "read_file"), call("near", "execute")]));
    msgs.push(result("near"));
    msgs.push(result("far"));
    msgs.push(result("dup"));
    msgs.push(result("missing"));
    msgs.push(ai(vec![call("later", "ls")]));
    msgs.push(result("later"));
    let refs: Vec<&Message> = msgs.iter().collect();
    let fresh: Vec<_> = msgs.iter().map(Skeleton::of).collect();
    let (results, names) = tool_results(&refs, &fresh);
    let got: Vec<_> = results
        .iter()
        .map(|r| {
            let call = r.caller.map(|j| &refs[j].tool_calls[r.position]);
            (r.index, r.caller, call.map(|c| c.name.clone()))
        })
        .collect();
    assert_eq!(got, results_by_map(&refs));
    assert_eq!(
        names,
        ["execute", "grep", "read_file", "", "ls"],
        "tools by id, in order of first use"
    );
    // Links worked out beforehand (kept from an earlier turn) give the same results.
    let mut linked = fresh.clone();
    assert_eq!(link_results(&refs, &mut linked, 0), [42, 43, 44, 45, 47]);
    assert!(
        link_results(&refs, &mut linked, 0).is_empty(),
        "nothing left to link"
    );
    assert_eq!(tool_results(&refs, &linked), (results, names));
    assert_eq!(
        got[1],
        (43, Some(0), Some("grep".into())),
        "far from its call"
    );
    assert_eq!(
        got[2],
        (44, Some(41), Some("read_file".into())),
        "the newest call wins"
    );
    assert_eq!(got[3], (45, None, None));
}

/// How many leading candidates complete batches cover.
fn committed_prefix(savings: impl IntoIterator<Item = f64>, min: f64) -> usize {
    let mut batches = Batches::new(min);
    let mut committed = 0;
    for (i, s) in savings.into_iter().enumerate() {
        if batches.close_batch(s) {
            committed = i + 1;
        }
    }
    committed
}

#[test]
fn committed_prefix_is_stable_under_appends() {
    let s = [3.0, 3.0, 3.0, 3.0, 1.0];
    assert_eq!(committed_prefix(s, 5.0), 4);
    for n in 0..s.len() {
        let shorter = committed_prefix(s[..n].iter().copied(), 5.0);
        assert!(shorter <= committed_prefix(s, 5.0));
    }
    assert_eq!(committed_prefix([10.0], 5.0), 1);
    assert_eq!(committed_prefix([1.0, 1.0], 5.0), 0);
}

#[test]
fn batches_keep_the_edits_of_complete_batches_only() {
    let e = |index| Edit::content(index, Pass::Clearing, "x".into(), 0, 1.0);
    let mut b = Batches::new(5.0);
    b.push(e(0));
    b.push(e(1));
    b.keep(3.0); // open: 3
    b.push(e(2));
    b.discard(); // dropped, no savings counted
    assert!(b.candidate().is_empty());
    b.push(e(3));
    b.keep(2.0); // 5: the batch closes
    b.push(e(4));
    b.keep(-1.0); // a loss counts as nothing
    b.push(e(5));
    b.keep(4.0); // open: 4, not closed
    let kept: Vec<usize> = b.into_committed().iter().map(|e| e.index).collect();
    assert_eq!(kept, [0, 1, 3]);
    assert_eq!(committed_prefix([3.0, 2.0, -1.0, 4.0], 5.0), 2);
}

#[test]
fn memos_forget_a_call_but_keep_the_message_own_work() {
    let mut m = Memos::new(3);
    let set = |m: &Memos, i: usize| {
        let _ = m.at(i).cleared.set(keyed("c".into()));
        let _ = m.at(i).cleared_tokens.set((1, 2.0));
        let _ = m.at(i).read_key.set(7);
        let _ = m.at(i).truncated.set((1, None));
    };
    for i in 0..3 {
        set(&m, i);
    }
    m.forget_call(1);
    assert!(
        m.made(1).is_none_or(|s| s.cleared.get().is_none())
            && m.made(1).is_none_or(|s| s.read_key.get().is_none())
    );
    assert!(
        m.made(1).is_none_or(|s| s.cleared_tokens.get().is_none()),
        "tokens with the placeholder"
    );
    assert!(
        m.made(1).is_some_and(|s| s.truncated.get().is_some()),
        "the message's own arguments"
    );
    m.reset(2);
    assert!(
        m.made(2).is_none_or(|s| s.cleared.get().is_none())
            && m.made(2).is_none_or(|s| s.truncated.get().is_none())
    );
    assert!(m.made(2).is_none_or(|s| s.cleared_tokens.get().is_none()));
    assert!(
        m.made(0).is_some_and(|s| s.cleared.get().is_some())
            && m.made(0).is_some_and(|s| s.cleared_tokens.get().is_some()),
        "others untouched"
    );
    m.forget_call(7);
    m.truncate(1);
    m.resize(2);
    assert_eq!(m.len(), 2);
    assert!(
        m.made(0).is_some_and(|s| s.cleared.get().is_some())
            && m.made(1).is_none_or(|s| s.cleared.get().is_none())
    );
}

#[test]
fn remembered_keeps_the_first_value_under_its_key_only() {
    let memo = OnceLock::new();
    let made = |r: Remembered<'_, i32>| matches!(r, Remembered::Made(_));
    let r = remembered(&memo, None, || 1);
    assert_eq!((*r, made(r)), (1, true));
    assert!(memo.get().is_none(), "no key, nothing kept");
    let r = remembered(&memo, Some(7), || 2);
    assert_eq!((*r, made(r)), (2, false));
    let r = remembered(&memo, Some(7), || 3);
    assert_eq!((*r, made(r)), (2, false), "kept under 7");
    let r = remembered(&memo, Some(8), || 4);
    assert_eq!((*r, made(r)), (4, true), "another key");
    assert_eq!(memo.get(), Some(&(7, 2)));
}

proptest::proptest! {
    /// The skeleton's first-byte filter never rules out a message that holds a
    /// placeholder, whatever the time-gap template.
    #[test]
    fn skeletons_never_rule_out_a_placeholder(
        head in proptest::sample::select(vec![
            CLEARED, SUPERSEDED, COLLAPSED, COLLAPSED_MEMBER, "[", "", "Old result of ", "\u{e9}",
        ]),
        rest in ".{0,12}",
        template in proptest::sample::select(vec![
            "Old result of {tool}({arg}) cleared.", "{tool} cleared", "", "[gap] {tool}", "\u{e9}{arg}",
        ]),
    ) {
        let m = Message::text(Role::Tool, &format!("{head}{rest}"));
        if starts_as_placeholder(&m, template) {
            proptest::prop_assert!(Skeleton::of(&m).may_be_placeholder(template));
        }
    }
}

#[test]
fn skeletons_stay_small() {
    assert!(std::mem::size_of::<Skeleton>() <= 64);
}

#[test]
fn longest_string_looks_into_nested_values_not_keys() {
    let v = json!({"a_very_long_key_name": "ab", "n": [1, {"deep": "abcdef"}], "x": null});
    assert_eq!(longest_string(&v), 6);
    let mut deep = json!("abc");
    for _ in 0..500 {
        deep = json!([deep]);
    }
    assert_eq!(longest_string(&deep), 3);
}

#[test]
fn main_arg_prefers_paths_and_shortens() {
    let call = ToolCall {
        id: None,
        name: "read_file".into(),
        args: json!({"limit": 10, "file_path": "src/a.py"}).into(),
    };
    assert_eq!(main_arg(Some(&call)), "src/a.py");
    let long = ToolCall {
        id: None,
        name: "execute".into(),
        args: json!({"command": "x".repeat(100)}).into(),
    };
    assert_eq!(main_arg(Some(&long)).chars().count(), 81);
    assert_eq!(shorten("a\nb", 10), "a…");
    assert_eq!(main_arg(None), "");
}

#[test]
fn placeholders_are_recognised() {
    let gap = "[Idle: {tool}]";
    assert!(is_placeholder("[Cleared to save context: ls(/)]", gap));
    assert!(is_placeholder("[Idle: grep]", gap));
    assert!(!is_placeholder("def f(): pass", gap));
}

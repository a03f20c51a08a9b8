//! Pass 2, argument truncation: long string arguments of tool calls in AI messages
//! older than the keep window are shortened, nested strings too, with a note of the
//! original length.

use serde_json::Value;

use super::{remembered, Batches, Change, Edit, Pass, Remembered, Shortened, View, WholeArgs};
use crate::config::TruncateArgsConfig;
use crate::cutoff::Size;

/// Tools whose arguments are shortened when `truncate_all_tools` is off.
const FILE_WRITING_TOOLS: [&str; 2] = ["write_file", "edit_file"];

fn suffix(template: &str, length: usize) -> String {
    template.replace("{length}", &length.to_string())
}

/// The longest string argument a call to `tool` keeps: what a file-writing call
/// wrote is on disk, so it keeps only a head.
fn limit_of(cfg: &TruncateArgsConfig, tool: &str) -> usize {
    if FILE_WRITING_TOOLS.contains(&tool) {
        cfg.max_length.min(cfg.file_max_length)
    } else {
        cfg.max_length
    }
}

/// Whether `s` was already shortened by this pass (so it is never shortened twice).
fn already_shortened(s: &str, template: &str) -> bool {
    let marker = template.split("{length}").next().unwrap_or(template);
    !marker.is_empty() && s.contains(marker)
}

/// `v` with every string longer than `max` characters shortened; `None` when
/// nothing needed it.
fn shorten_value(v: &Value, max: usize, template: &str) -> Option<Value> {
    match v {
        // Byte length bounds the character count: most strings stop here.
        Value::String(s) if s.len() <= max => None,
        Value::String(s) => {
            let n = s.chars().count();
            if n <= max || already_shortened(s, template) {
                return None;
            }
            let end = s.char_indices().nth(max).map_or(s.len(), |(b, _)| b);
            Some(Value::String(format!(
                "{}{}",
                &s[..end],
                suffix(template, n)
            )))
        }
        Value::Array(items) => {
            let new: Vec<Option<Value>> = items
                .iter()
                .map(|i| shorten_value(i, max, template))
                .collect();
            if new.iter().all(Option::is_none) {
                return None;
            }
            Some(Value::Array(
                items
                    .iter()
                    .zip(new)
                    .map(|(old, new)| new.unwrap_or_else(|| old.clone()))
                    .collect(),
            ))
        }
        Value::Object(map) => {
            let mut changed = false;
            let out = map
                .iter()
                .map(|(k, old)| {
                    let new = shorten_value(old, max, template);
                    changed |= new.is_some();
                    (k.clone(), new.unwrap_or_else(|| old.clone()))
                })
                .collect();
            changed.then_some(Value::Object(out))
        }
        _ => None,
    }
}

/// The first message of the keep window: everything before it is old enough.
fn window_start(view: &View<'_, '_>, keep: Size) -> usize {
    let n = view.msgs.len();
    match keep {
        Size::Messages(k) => n.saturating_sub(k as usize),
        _ => {
            let budget = keep
                .tokens(view.max_input_tokens)
                .ok()
                .flatten()
                .unwrap_or(0) as f64;
            let mut suffix = 0.0;
            let mut start = n;
            for (i, t) in view.tokens.iter().enumerate().rev() {
                if suffix + t > budget {
                    break;
                }
                suffix += t;
                start = i;
            }
            start
        }
    }
}

/// The settings a shortening depends on.
fn fingerprint(cfg: &TruncateArgsConfig, view: &View<'_, '_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        cfg.max_length,
        cfg.file_max_length,
        &cfg.truncation_text,
        cfg.truncate_all_tools,
    )
        .hash(&mut h);
    let p = view.params;
    (
        p.chars_per_token.to_bits(),
        p.extra_tokens_per_message.to_bits(),
        p.count_name,
    )
        .hash(&mut h);
    h.finish()
}

/// The edits shortening message `i`'s arguments, with its tokens after them.
fn shorten_message(
    settings: u64,
    i: usize,
    m: &crate::message::Message,
    cfg: &TruncateArgsConfig,
    view: &View<'_, '_>,
) -> Option<Shortened> {
    let edits: Vec<Edit> = m
        .tool_calls
        .iter()
        .enumerate()
        .filter(|(_, call)| {
            cfg.truncate_all_tools || FILE_WRITING_TOOLS.contains(&call.name.as_str())
        })
        .filter_map(|(ci, call)| {
            let template = cfg
                .truncation_text
                .replace("{id}", call.id.as_deref().unwrap_or(""));
            // Arguments kept as facts are none longer than the shortest limit.
            let args = shorten_value(call.args.whole()?, limit_of(cfg, &call.name), &template)?;
            Some(Edit {
                index: i,
                pass: Pass::TruncateArgs,
                change: Change::ToolArgs {
                    call: ci,
                    args: std::sync::Arc::new(args),
                },
                tokens: 0.0,
                // The shortened arguments follow from the message, the call and the settings.
                key: settings.rotate_left(7) ^ ci as u64,
            })
        })
        .collect();
    if edits.is_empty() {
        return None;
    }
    let mut edited = m.clone();
    for e in &edits {
        e.apply(&mut edited);
    }
    let tokens = crate::tally::measure(&edited).heuristic_tokens(view.params);
    Some((
        edits.into_iter().map(|e| Edit { tokens, ..e }).collect(),
        tokens,
    ))
}

/// The arguments this pass may shorten, which a cached message keeps whole: those
/// with a string longer than the shortest limit, when the pass runs at all.
pub fn whole_args(cfg: &TruncateArgsConfig) -> WholeArgs {
    match cfg.trigger {
        Some(_) => WholeArgs::longer_than(cfg.max_length.min(cfg.file_max_length)),
        None => WholeArgs::longer_than(usize::MAX),
    }
}

pub fn run(view: &View<'_, '_>, cfg: &TruncateArgsConfig) -> Vec<Edit> {
    let Some(trigger) = cfg.trigger else {
        return Vec::new();
    };
    if !view.reached(trigger) {
        return Vec::new();
    }
    let start = window_start(view, cfg.keep);
    let settings = fingerprint(cfg, view);
    let shortest = cfg.max_length.min(cfg.file_max_length);
    // Candidate messages in order, each with its edits.
    let mut batches = Batches::new(cfg.min_batch_tokens as f64);
    for (i, m) in view.msgs.iter().enumerate().take(start) {
        // Nothing longer than the limit, nothing to shorten: the memo is not read.
        if !view
            .skeletons
            .get(i)
            .is_some_and(|s| s.calls_tools() && s.longest_arg as usize > shortest)
        {
            continue;
        }
        let shortened = remembered(&view.memo.at(i).truncated, Some(settings), || {
            shorten_message(settings, i, m, cfg, view)
        });
        // The message may sit elsewhere than when this was worked out.
        let tokens = match shortened {
            Remembered::Kept(Some((kept, tokens))) => {
                for e in kept {
                    batches.push(Edit {
                        index: i,
                        ..e.clone()
                    });
                }
                *tokens
            }
            Remembered::Made(Some((made, tokens))) => {
                for e in made {
                    batches.push(Edit { index: i, ..e });
                }
                tokens
            }
            Remembered::Kept(None) | Remembered::Made(None) => continue,
        };
        batches.keep(view.tokens[i] - tokens);
    }
    batches.into_committed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shortens_nested_strings_once() {
        let t = "…[{length} chars]";
        let v = json!({"content": "abcdef", "nested": ["xy", {"deep": "0123456789"}], "n": 5});
        let out = shorten_value(&v, 3, t).unwrap_or(Value::Null);
        assert_eq!(
            out,
            json!({"content": "abc…[6 chars]", "nested": ["xy", {"deep": "012…[10 chars]"}], "n": 5})
        );
        assert_eq!(shorten_value(&out, 3, t), None, "idempotent");
        assert_eq!(shorten_value(&json!({"a": "abc"}), 3, t), None);
    }
}

//! `search`: a conversation's ranked search, its index kept in the conversation cache
//! (made on the first search, grown by later ones, weighed in the byte bound).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::allocator::freed;
use super::cache::{conversation_key, read_with_cache, Want};
use super::counting::conversation_cache;
use super::read;
use crate::message::{Message, Role};
use crate::search::{Filters, Index, Query};

/// One message found: its index, score, excerpt, role (LangChain's type), tool, request
/// number, the id `recall` returns it by, and for a request the answer that closed it
/// (its index, id and ending).
type HitRow = (
    usize,
    f32,
    String,
    &'static str,
    Option<String>,
    u32,
    Option<String>,
    Option<(usize, Option<String>, String)>,
);

/// The id `recall` returns a message by: the call it answers, else its own.
fn recall_id(m: &Message) -> Option<String> {
    m.tool_call_id.clone().or_else(|| m.id.clone())
}

fn role_named(name: &str) -> PyResult<Role> {
    Ok(match name.trim().to_lowercase().as_str() {
        "human" | "user" => Role::Human,
        "ai" | "assistant" => Role::Ai,
        "tool" => Role::Tool,
        "system" => Role::System,
        other => {
            return Err(PyValueError::new_err(format!(
                "role: expected human, ai, tool or system, got {other:?}"
            )))
        }
    })
}

/// The messages best matching `query` (a few words; a part in double quotes is a phrase
/// a message must hold), best first, at most `limit`, among those of `role`, `tool` and
/// request numbers `requests` (first, last), leaving out the message that opened the
/// newest request when `skip_open_request` (asked from inside the conversation, the
/// model reads it already); and how many matched in all, and how many requests the
/// conversation has. Terms are stemmed for `language`. The index is kept
/// in the cache under `cache_key` (else the first message's id) and grows with the
/// conversation.
#[pyfunction]
#[pyo3(signature = (messages, query, *, limit=5, role=None, tool=None, requests=None, language="english", cache_key=None, skip_open_request=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn search(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    query: &str,
    limit: usize,
    role: Option<&str>,
    tool: Option<String>,
    requests: Option<(u32, u32)>,
    language: &str,
    cache_key: Option<&str>,
    skip_open_request: bool,
) -> PyResult<(Vec<HitRow>, usize, u32)> {
    let filters = Filters {
        role: role.map(role_named).transpose()?,
        tool,
        requests,
        skip_open_request,
    };
    let fresh = Index::new(language).ok_or_else(|| {
        PyValueError::new_err(format!(
            "language: expected one of {}, got {language:?}",
            crate::search::analyze::LANGUAGES.map(|(n, _)| n).join(", ")
        ))
    })?;
    let list = read::as_list(messages)?;
    let key = conversation_key(cache_key, &list);
    let (cached, trace) = {
        let mut c = conversation_cache();
        let cached = c.take(key);
        let trace = cached.entries.is_empty().then(|| c.trace_of(key)).flatten();
        (cached, trace)
    };
    let want = Want {
        bpe: None,
        shape: false,
        message: true,
        usage: false,
        recheck_all: false,
    };
    let mut kept = read_with_cache(&list, cached, trace, want)?.kept;
    let msgs: Vec<Arc<Message>> = kept
        .entries
        .iter()
        .filter_map(|e| e.message.clone())
        .collect();
    let mut index = match kept.search.take() {
        Some(ix) if ix.language() == fresh.language() && ix.len() <= msgs.len() => ix,
        _ => Box::new(fresh),
    };
    let q = Query {
        text: query.to_owned(),
        limit,
        filters,
    };
    let (found, total) = py.detach(|| {
        for m in &msgs[index.len()..] {
            index.add(m);
        }
        let refs: Vec<&Message> = msgs.iter().map(|m| &**m).collect();
        let total = index.docs().last().map_or(0, |d| d.request);
        (index.search(&refs, &q), total)
    });
    let rows = found
        .hits
        .into_iter()
        .map(|h| {
            let doc = &index.docs()[h.index];
            let answer = h.answer.map(|(a, ending)| (a, recall_id(&msgs[a]), ending));
            (
                h.index,
                h.score,
                h.excerpt,
                doc.role.type_name(),
                doc.tool.clone(),
                doc.request,
                recall_id(&msgs[h.index]),
                answer,
            )
        })
        .collect();
    kept.search = Some(index);
    let mut c = conversation_cache();
    let dropped = c.put(key, kept);
    drop(c);
    freed(dropped);
    Ok((rows, found.matched, total))
}

//! `search`: a conversation's ranked search, its index kept in the conversation cache
//! (made on the first search, grown by later ones, weighed in the byte bound).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::allocator::freed;
use super::cache::{conversation_key, read_with_cache, Conversation, Want};
use super::counting::{conversation_cache, taken_from_cache};
use super::errors::enter_core_ok;
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
    let q = Query {
        text: query.to_owned(),
        limit,
        filters,
    };
    let fresh = fresh_index(language)?;
    let list = read::as_list(messages)?;
    let key = conversation_key(cache_key, &list);
    let mut kept = read_through_cache(&list, key)?;
    let found = searched(py, &mut kept, fresh, &q);
    let dropped = conversation_cache().put(key, kept);
    freed(dropped);
    found
}

/// `q` answered over the conversation read into `kept`, its index grown by the
/// messages it has not seen yet (without the interpreter) and kept with it.
fn searched(
    py: Python<'_>,
    kept: &mut Conversation,
    fresh: Index,
    q: &Query,
) -> PyResult<(Vec<HitRow>, usize, u32)> {
    let msgs: Vec<Arc<Message>> = kept
        .entries
        .iter()
        .filter_map(|e| e.message.clone())
        .collect();
    let mut index = kept_index(kept, fresh, msgs.len());
    let (found, total) = enter_core_ok(py, true, || {
        for m in &msgs[index.len()..] {
            index.add(m);
        }
        let refs: Vec<&Message> = msgs.iter().map(|m| &**m).collect();
        let total = index.docs().last().map_or(0, |d| d.request);
        (index.search(&refs, q), total)
    })?; // A panic drops the index: the next search builds it anew.
    let rows = found.hits.into_iter().map(|h| row_of(h, &index, &msgs));
    let rows = rows.collect();
    kept.search = Some(index);
    Ok((rows, found.matched, total))
}

/// The index the conversation keeps, when it is of the same language and not ahead of
/// the messages (a conversation cut short); else `fresh`.
fn kept_index(kept: &mut Conversation, fresh: Index, messages: usize) -> Box<Index> {
    match kept.search.take() {
        Some(ix) if ix.language() == fresh.language() && ix.len() <= messages => ix,
        _ => Box::new(fresh),
    }
}

/// An empty index for `language`, or a `ValueError` naming the languages there are.
fn fresh_index(language: &str) -> PyResult<Index> {
    Index::new(language).ok_or_else(|| {
        PyValueError::new_err(format!(
            "language: expected one of {}, got {language:?}",
            crate::search::analyze::LANGUAGES.map(|(n, _)| n).join(", ")
        ))
    })
}

/// The conversation's messages, read through its cache entry (taken out of the cache
/// until the search puts it back).
fn read_through_cache(list: &Bound<'_, PyList>, key: u64) -> PyResult<Conversation> {
    let cached = taken_from_cache(key);
    let want = Want {
        bpe: None,
        shape: false,
        message: true,
        // The index reads every argument.
        args: crate::passes::WholeArgs::EVERY,
        usage: false,
        recheck_all: false,
    };
    Ok(read_with_cache(list, cached, want)?.kept)
}

/// A hit as Python gets it.
fn row_of(h: crate::search::Hit, index: &Index, msgs: &[Arc<Message>]) -> HitRow {
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
}

/// Add groups of short forms (the shape of the built-in `short_forms.txt`: one group a
/// line, `short, forms = long, forms`) to every later search; how many groups it took.
/// Raises `InputError` naming the first line it cannot read, and then adds nothing.
#[pyfunction]
pub fn add_short_forms(text: &str) -> PyResult<usize> {
    crate::search::forms::add(text)
        .map_err(|e| super::errors::InputError::new_err(format!("short forms: {e}")))
}

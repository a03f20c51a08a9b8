//! Python messages measured for counting only, without converting them: the parts
//! found by `source`, fed to the core's `Tally`.

use pyo3::intern;
use pyo3::prelude::*;

use super::read::{read_tool_calls, read_usage};
use super::reprlen;
use super::source::*;
use crate::cutoff::PairShape;
use crate::message::{BlockKind, Role};
use crate::pyrepr;
use crate::tally::Tally;
use crate::tokens::CachedCounts;

/// A message read for counting only: its measure, usage and pair shape, taken
/// straight from the Python objects without converting text or arguments.
pub struct Scanned<'py> {
    pub counts: CachedCounts,
    /// Only when asked for: collecting ids costs allocations that counting avoids.
    pub shape: Option<PairShape>,
    pub origin: Origin<'py>,
}

/// Scan one message of any accepted shape. Agrees with `read_message` followed by
/// `tally::measure` and `PairShape::from` (tested), at a fraction of the cost.
pub fn scan_message<'py>(
    item: &Bound<'py, PyAny>,
    want_shape: bool,
    want_usage: bool,
) -> Res<Scanned<'py>> {
    let py = item.py();
    let mut src = Source::of(item)?;
    let mut t = Tally::new(src.role, src.role_name.as_deref(), want_shape);
    match src.content()? {
        None => {}
        Some(Body::Text(s)) => t.text(s.len().unwrap_or(0)),
        Some(Body::Blocks(list)) => scan_blocks(&mut t, list)?,
    }
    let calls = src.tool_calls()?;
    if t.wants_shape() {
        for c in &calls {
            if let Some(id) = c.id()? {
                t.call(id, c.name()?.unwrap_or_default());
            }
        }
    }
    if let Some(id) = src.call_id.take() {
        // A result in a block counts as the user's message it came as (`Tally::of`).
        let chars = if src.result_in_block { 0 } else { id.chars() };
        t.answers(chars, t.wants_shape().then(|| id.into_string()));
    }
    let name = src.get_text(intern!(py, "name"))?;
    let name_chars = name.as_ref().map_or(0, StrValue::chars);
    let tool_name = name
        .filter(|_| t.wants_tool_name())
        .map(StrValue::into_string);
    // After the name, as in conversion: an OpenAI call's arguments are parsed here.
    if !calls.is_empty() && t.counts_calls() {
        // LangChain calls are counted as they are, as LangChain repr()s them; a list
        // holding an OpenAI call as LangChain counts the calls it converts the list to.
        let chars = if calls.iter().any(|c| c.function.is_some()) {
            pyrepr::tool_calls_repr_len(&read_tool_calls(&calls)?)
        } else {
            pyrepr::py_list_repr_len(calls.iter().map(|c| reprlen::repr_len(c.dict.as_any())))
        };
        t.calls_repr(chars);
    }
    let usage = match (&src.fields, src.role) {
        (Some(fields), Role::Ai) if want_usage => {
            read_usage(fields, py)?.map(|u| (u.input, u.output))
        }
        _ => None,
    };
    let (measure, shape) = t.finish(name_chars, tool_name);
    Ok(Scanned {
        counts: CachedCounts::counted(
            measure,
            // Only AI messages report usage: for the rest, none is known without looking.
            (want_usage || src.role != Role::Ai).then_some(usage),
        ),
        shape,
        origin: src.into_origin(),
    })
}

/// The blocks of list content, into the tally (with the ids of the calls and results
/// they hold, when it wants the pair shape).
fn scan_blocks(t: &mut Tally, list: &Bound<'_, pyo3::types::PyList>) -> Res<()> {
    let py = list.py();
    t.list();
    for (i, item) in list.iter().enumerate() {
        match block(i, item)? {
            BlockSrc::Text(s) => t.text(s.map_or(0, |s| s.len().unwrap_or(0))),
            BlockSrc::Image => t.image(),
            BlockSrc::Document => t.document(),
            BlockSrc::Other { kind, block, .. } => {
                t.block(kind, reprlen::repr_len(block.as_any()));
                if !t.wants_shape() {
                    continue;
                }
                match kind {
                    BlockKind::ToolUse => {
                        if let Some(id) = block_str(&block, intern!(py, "id"))? {
                            let name = block_str(&block, intern!(py, "name"))?;
                            t.block_call(id, name.unwrap_or_default());
                        }
                    }
                    BlockKind::ToolResult => {
                        if let Some(id) = block_str(&block, intern!(py, "tool_use_id"))? {
                            t.block_result(id);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

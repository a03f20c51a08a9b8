//! What the core hands back to Python, as typed classes: an edit, a pass's figures,
//! a turn's plan and a breakdown of where the tokens go. `Edit` and `PassStats` are
//! the public `fastcompact.Edit` and `fastcompact.PassStats`.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::passes::Change;

/// One rewrite: message ``index``'s ``field`` (``"content"``, or ``"tool_args"`` of
/// tool call ``call``) becomes ``value``; ``pass_name`` says which pass made it.
/// ``fingerprint`` identifies the rewrite (0 when unknown), so that the same edit of
/// the same message is recognised across turns without comparing values; ``target``
/// identifies the message it was made for (its role and tool calls or results; 0 when
/// unknown), which ``apply_edits`` checks.
#[pyclass(frozen, get_all, module = "fastcompact")]
pub(super) struct Edit {
    index: usize,
    pass_name: String,
    field: String,
    value: Py<PyAny>,
    call: Option<usize>,
    fingerprint: u64,
    target: u64,
}

#[pymethods]
impl Edit {
    #[new]
    #[pyo3(signature = (index, pass_name, field, value, call=None, fingerprint=0, target=0))]
    fn new(
        index: usize,
        pass_name: String,
        field: String,
        value: Py<PyAny>,
        call: Option<usize>,
        fingerprint: u64,
        target: u64,
    ) -> Self {
        Edit {
            index,
            pass_name,
            field,
            value,
            call,
            fingerprint,
            target,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Edit(index={}, pass_name={}, field={}, value={}, call={}, fingerprint={}, target={})",
            self.index,
            self.pass_name.as_str().into_pyobject(py)?.repr()?,
            self.field.as_str().into_pyobject(py)?.repr()?,
            self.value.bind(py).repr()?,
            self.call.map_or("None".to_owned(), |c| c.to_string()),
            self.fingerprint,
            self.target,
        ))
    }

    /// Equal when every field is (the value compared as Python compares it).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.cast::<Edit>() else {
            return Ok(false);
        };
        let o = other.get();
        Ok(self.index == o.index
            && self.pass_name == o.pass_name
            && self.field == o.field
            && self.call == o.call
            && self.fingerprint == o.fingerprint
            && self.target == o.target
            && self.value.bind(other.py()).eq(o.value.bind(other.py()))?)
    }

    /// From everything but the value (which may be a dict): equal edits hash alike.
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            self.index,
            &self.pass_name,
            &self.field,
            self.call,
            self.fingerprint,
            self.target,
        )
            .hash(&mut h);
        h.finish()
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let e = slf.get();
        let py = slf.py();
        let args = (
            e.index,
            e.pass_name.as_str(),
            e.field.as_str(),
            e.value.clone_ref(py),
            e.call,
            e.fingerprint,
            e.target,
        );
        Ok((slf.get_type().into_any(), args.into_pyobject(py)?))
    }
}

/// A 63-bit fingerprint of an edit's pass and change (never 0, which means
/// "unknown" to Python).
pub(super) fn edit_fingerprint(e: &crate::passes::Edit) -> u64 {
    let pass = e.pass as u64;
    ((e.key ^ pass.wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 1).max(1)
}

/// A core edit as Python sees it, made for the message `target` identifies.
pub(super) fn edit_object<'py>(
    py: Python<'py>,
    e: &crate::passes::Edit,
    target: u64,
) -> PyResult<Bound<'py, Edit>> {
    let (field, value, call) = match &e.change {
        Change::Content(text) => ("content", (**text).into_pyobject(py)?.into_any(), None),
        Change::ToolArgs { call, args } => (
            "tool_args",
            super::errors::pythonized(py, &**args)?,
            Some(*call),
        ),
    };
    let edit = Edit {
        index: e.index,
        pass_name: e.pass.name().to_owned(),
        field: field.to_owned(),
        value: value.unbind(),
        call,
        fingerprint: edit_fingerprint(e),
        target,
    };
    Bound::new(py, edit)
}

/// Tokens before and after one pass, and how many edits it made.
#[pyclass(frozen, get_all, eq, hash, module = "fastcompact")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct PassStats {
    name: String,
    tokens_before: u64,
    tokens_after: u64,
    edits: usize,
}

#[pymethods]
impl PassStats {
    #[new]
    fn new(name: String, tokens_before: u64, tokens_after: u64, edits: usize) -> Self {
        PassStats {
            name,
            tokens_before,
            tokens_after,
            edits,
        }
    }

    /// Tokens the pass took off.
    #[getter]
    fn saved(&self) -> i64 {
        self.tokens_before as i64 - self.tokens_after as i64
    }

    /// Whether the pass rewrites older messages, so commits only whole batches.
    #[getter]
    fn batched(&self) -> bool {
        crate::passes::Pass::ALL
            .into_iter()
            .find(|p| p.name() == self.name)
            .is_some_and(crate::plan::batched)
    }

    fn __repr__(&self) -> String {
        format!(
            "PassStats(name='{}', tokens_before={}, tokens_after={}, edits={})",
            self.name, self.tokens_before, self.tokens_after, self.edits
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let s = slf.get();
        let args = (s.name.as_str(), s.tokens_before, s.tokens_after, s.edits);
        Ok((slf.get_type().into_any(), args.into_pyobject(slf.py())?))
    }
}

/// Where counted tokens go: per message (with its role and tool name), per role
/// and per tool, and the total.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct Breakdown {
    total: u64,
    system_and_tools: u64,
    per_message: Vec<u64>,
    roles: Vec<&'static str>,
    tool_names: Vec<Option<String>>,
    per_role: BTreeMap<String, u64>,
    per_tool: BTreeMap<String, u64>,
}

#[pymethods]
impl Breakdown {
    /// Message `i`'s role and tool name: one message looked at without converting
    /// every message's.
    fn at(&self, i: usize) -> PyResult<(&'static str, Option<&str>)> {
        match (self.roles.get(i), self.tool_names.get(i)) {
            (Some(role), Some(tool)) => Ok((role, tool.as_deref())),
            _ => Err(pyo3::exceptions::PyIndexError::new_err(
                "message index out of range",
            )),
        }
    }

    /// The indices of the `n` largest messages, largest first (equal ones in order).
    fn largest(&self, n: usize) -> Vec<usize> {
        let key = |i: &usize| (std::cmp::Reverse(self.per_message[*i]), *i);
        let mut order: Vec<usize> = (0..self.per_message.len()).collect();
        if n < order.len() {
            order.select_nth_unstable_by_key(n, key);
            order.truncate(n);
        }
        order.sort_unstable_by_key(key);
        order
    }
}

impl Breakdown {
    pub(super) fn new(
        total: f64,
        system_and_tools: f64,
        per_message: &[f64],
        b: crate::tokens::Breakdown,
    ) -> Self {
        let ints = |m: BTreeMap<String, f64>| m.into_iter().map(|(k, v)| (k, v as u64)).collect();
        Breakdown {
            total: total as u64,
            system_and_tools: system_and_tools as u64,
            per_message: per_message.iter().map(|t| *t as u64).collect(),
            roles: b.roles,
            tool_names: b.tool_names,
            per_role: ints(b.per_role),
            per_tool: ints(b.per_tool),
        }
    }
}

/// One turn's plan as the core made it: the edits (or the model view built from
/// them), each pass's figures, the summary decision, and the sizes anchored on
/// provider usage.
#[pyclass(frozen, get_all, module = "fastcompact._core")]
pub(super) struct PlanOutcome {
    pub(super) edits: Vec<Py<Edit>>,
    pub(super) tokens_before: u64,
    pub(super) tokens_after: u64,
    pub(super) passes: Vec<Py<PassStats>>,
    pub(super) summary_needed: bool,
    pub(super) summary_cutoff: Option<usize>,
    /// The view's size anchored on provider usage, and how usage relates to the
    /// estimate (`usage = offset + ratio * estimate`).
    pub(super) true_tokens: u64,
    pub(super) ratio: f64,
    pub(super) offset: f64,
    pub(super) anchor: Option<usize>,
    /// Messages before `settled` are settled; a batch committed at `batch_at`.
    pub(super) settled: usize,
    pub(super) batch_at: Option<usize>,
    /// Tool results whose call is in no earlier message, by index.
    pub(super) orphans: Vec<usize>,
    /// User messages that answer several calls at once, by index.
    pub(super) parallel: Vec<usize>,
    /// The model view (when asked for), or where the tokens go (when not).
    pub(super) view: Option<Py<PyAny>>,
    pub(super) breakdown: Option<Py<Breakdown>>,
}

impl PlanOutcome {
    /// The plan as Python sees it; `with_edits`, its edits too, each made for the
    /// message `target` identifies (by index).
    pub(super) fn new(
        py: Python<'_>,
        plan: &crate::plan::Plan,
        with_edits: Option<&dyn Fn(usize) -> u64>,
    ) -> PyResult<Self> {
        let edits = if let Some(target) = with_edits {
            let objects = plan
                .edits
                .iter()
                .map(|e| edit_object(py, e, target(e.index)).map(Bound::unbind));
            objects.collect::<PyResult<_>>()?
        } else {
            Vec::new()
        };
        let passes = plan.passes.iter().map(|s| {
            let stats = PassStats {
                name: s.pass.name().to_owned(),
                tokens_before: s.tokens_before.ceil() as u64,
                tokens_after: s.tokens_after.ceil() as u64,
                edits: s.edits,
            };
            Py::new(py, stats)
        });
        Ok(PlanOutcome {
            edits,
            tokens_before: plan.tokens_before.ceil() as u64,
            tokens_after: plan.tokens_after.ceil() as u64,
            passes: passes.collect::<PyResult<_>>()?,
            summary_needed: plan.summary_needed,
            summary_cutoff: plan.summary_cutoff,
            true_tokens: plan.true_tokens.ceil() as u64,
            ratio: plan.calibration.ratio,
            offset: plan.calibration.offset,
            anchor: plan.anchor,
            settled: plan.settled,
            batch_at: plan.batch_at,
            orphans: plan.orphans.clone(),
            parallel: plan.parallel.clone(),
            view: None,
            breakdown: None,
        })
    }
}

//! Sizes and triggers as Python gives them, read with the core's one validation
//! (`Size::parse`): for the config classes and the helpers alike.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::cutoff::{Clause, Size};
use crate::message::InputError as CoreInputError;

fn bad(field: &str, reason: String) -> CoreInputError {
    CoreInputError::new(None, field, reason)
}

/// A `(kind, value)` pair of a string and a number (a tuple or a list), or `None`.
fn pair<'py>(value: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let is_seq = value.is_instance_of::<PyTuple>() || value.is_instance_of::<PyList>();
    if !is_seq || value.len().ok()? != 2 {
        return None;
    }
    let (kind, number) = (value.get_item(0).ok()?, value.get_item(1).ok()?);
    let numeric = number.extract::<f64>().is_ok() && !number.is_instance_of::<PyBool>();
    (kind.is_instance_of::<PyString>() && numeric).then_some((kind, number))
}

/// One size, validated; `field` names it in the error.
pub(super) fn read_size(value: &Bound<'_, PyAny>, field: &str) -> Result<Size, CoreInputError> {
    let Some((kind, number)) = pair(value) else {
        let shown = value.repr().map(|r| r.to_string()).unwrap_or_default();
        return Err(bad(
            field,
            format!("expected ('messages', n), ('tokens', n) or ('fraction', f), got {shown}"),
        ));
    };
    let kind: String = kind
        .extract()
        .map_err(|e: PyErr| bad(field, e.to_string()))?;
    let number: f64 = number
        .extract()
        .map_err(|e: PyErr| bad(field, e.to_string()))?;
    Size::parse(&kind, number, field)
}

/// One trigger: a size, a dict of sizes that must all be reached
/// (`{"tokens": 100_000, "messages": 50}`), or a list of sizes (the same, as
/// `CompactionConfig.resolved()` writes it).
fn read_clause(value: &Bound<'_, PyAny>, field: &str) -> Result<Clause, CoreInputError> {
    if let Ok(d) = value.cast::<PyDict>() {
        if d.is_empty() {
            return Err(bad(
                field,
                "an empty clause never fires; leave it out for the default".into(),
            ));
        }
        let sizes = d.iter().map(|(kind, number)| {
            let given =
                PyTuple::new(value.py(), [kind, number]).map_err(|e| bad(field, e.to_string()))?;
            read_size(given.as_any(), field)
        });
        return sizes.collect::<Result<_, _>>().map(Clause);
    }
    if !meant_as_size(value) {
        if let Ok(items) = value.cast::<PyList>() {
            if !items.is_empty() && items.iter().all(|s| pair(&s).is_some()) {
                let sizes = items.iter().map(|s| read_size(&s, field));
                return sizes.collect::<Result<_, _>>().map(Clause);
            }
        }
    }
    Ok(Clause(vec![read_size(value, field)?]))
}

/// Whether `value` is meant as one size: two items, a string first (a bad number in
/// it is that size's error, not a list of triggers').
fn meant_as_size(value: &Bound<'_, PyAny>) -> bool {
    value.len().ok() == Some(2)
        && value
            .get_item(0)
            .is_ok_and(|k| k.is_instance_of::<PyString>())
}

/// Triggers, any of which fires: one trigger, or a non-empty list (or tuple) of them.
pub(super) fn read_triggers(
    value: &Bound<'_, PyAny>,
    field: &str,
) -> Result<Vec<Clause>, CoreInputError> {
    let is_seq = value.is_instance_of::<PyTuple>() || value.is_instance_of::<PyList>();
    let many = is_seq && !meant_as_size(value);
    if !many {
        return Ok(vec![read_clause(value, field)?]);
    }
    let items: Vec<Bound<'_, PyAny>> = value
        .try_iter()
        .and_then(|it| it.collect::<PyResult<_>>())
        .map_err(|e| bad(field, e.to_string()))?;
    if items.is_empty() {
        return Err(bad(
            field,
            "an empty list never fires; leave it out for the default".into(),
        ));
    }
    items.iter().map(|t| read_clause(t, field)).collect()
}

/// A size as Python reads it back: `(kind, value)`.
pub(super) fn size_pair<'py>(py: Python<'py>, size: Size) -> PyResult<Bound<'py, PyAny>> {
    Ok(match size {
        Size::Messages(n) => ("messages", n).into_pyobject(py)?.into_any(),
        Size::Tokens(n) => ("tokens", n).into_pyobject(py)?.into_any(),
        Size::Fraction(f) => ("fraction", f).into_pyobject(py)?.into_any(),
    })
}

/// A config field's error: a plain `ValueError` that names the field as the config
/// class spells it (`CompactionConfig.keep: ...`).
pub(super) fn config_error(e: CoreInputError) -> PyErr {
    PyValueError::new_err(format!("{}: {}", e.field, e.reason))
}

//! Core errors as Python exceptions: one conversion, which also sets the
//! exception's `index` and `field` for programs to read.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::message::InputError as CoreInputError;

// Named by its full module path so that it pickles (worker processes send it back).
create_exception!(
    fastcompact._core,
    InputError,
    PyValueError,
    "Malformed input, naming the message index and field."
);

impl From<CoreInputError> for PyErr {
    fn from(e: CoreInputError) -> PyErr {
        let err = InputError::new_err(e.to_string());
        Python::attach(|py| {
            let value = err.value(py);
            // Attributes for programs; the message already says it all for people.
            let _ = value.setattr("index", e.index);
            let _ = value.setattr("field", e.field.as_str());
        });
        err
    }
}

/// Core work run from a binding, as one call (every binding that runs the core goes
/// through here): without the interpreter when `detach` (long work, so that other
/// threads run meanwhile), a panic caught and raised as `RuntimeError` (a bug in the
/// core must not take the agent down: the middleware then sends the view unedited),
/// and the core's error raised as its Python exception.
pub(super) fn enter_core<T, E>(
    py: Python<'_>,
    detach: bool,
    work: impl FnOnce() -> Result<T, E> + Send,
) -> PyResult<T>
where
    T: Send,
    E: Into<PyErr> + Send,
{
    let guarded = || std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    let outcome = if detach {
        py.detach(guarded)
    } else {
        guarded()
    };
    match outcome {
        Ok(done) => done.map_err(Into::into),
        Err(_) => Err(PyRuntimeError::new_err(
            "fastcompact: internal error in the core",
        )),
    }
}

/// `enter_core` for work that cannot fail but by a panic.
pub(super) fn enter_core_ok<T: Send>(
    py: Python<'_>,
    detach: bool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    enter_core(py, detach, || Ok::<T, std::convert::Infallible>(work()))
}

/// A core value as Python objects (dicts, lists, numbers), or a `ValueError`.
pub(super) fn pythonized<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A Python value read as a core value, or a `ValueError` naming what it should be.
pub(super) fn depythonized<T: serde::de::DeserializeOwned>(
    value: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<T> {
    pythonize::depythonize(value).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

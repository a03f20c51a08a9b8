//! Core errors as Python exceptions: one conversion, which also sets the
//! exception's `index` and `field` for programs to read.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
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

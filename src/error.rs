//! Errors raised while building a model or reading input files.
//!
//! Physics never returns errors mid-run (see [`crate::step::StepReport`] for run-time flags);
//! everything that can be wrong with input is caught here, at build time, and names the file and
//! the element at fault so that a one-line message is enough to fix it.

use thiserror::Error;

/// An input error: which file, which element, what is wrong.
#[derive(Debug, Error)]
pub enum InputError {
    /// A file could not be read or written.
    #[error("{file}: {reason}")]
    Io {
        /// The file.
        file: String,
        /// What failed and why, e.g. "cannot read: No such file or directory (os error 2)".
        reason: String,
    },
    /// A file could not be parsed (syntax, unknown key, wrong type).
    #[error("{file}: {reason}")]
    Parse {
        /// The file.
        file: String,
        /// What the parser said, including line/column where known.
        reason: String,
    },
    /// A well-formed file describes something invalid.
    #[error("{file}: {element}: {reason}")]
    Invalid {
        /// The file.
        file: String,
        /// The element at fault: `link 'x'`, `joint 'y'`, `objects[2].mass_kg`.
        element: String,
        /// What is wrong.
        reason: String,
    },
}

impl InputError {
    /// Shorthand for [`InputError::Invalid`].
    pub fn invalid(file: impl Into<String>, element: impl Into<String>, reason: impl Into<String>) -> Self {
        InputError::Invalid { file: file.into(), element: element.into(), reason: reason.into() }
    }
}

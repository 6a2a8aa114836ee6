//! Errors that say where: every problem with user input names the file and the line or record.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in an input file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (it is empty, unreadable, has no records, ...).
    File,
    /// A 1-based line number.
    Line(u64),
    /// A 1-based record number, with the record's name when it has one.
    Record { number: u64, name: Option<String> },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Line(n) => write!(f, ": line {n}"),
            Location::Record {
                number,
                name: Some(name),
            } => write!(f, ": record {number} ({name})"),
            Location::Record { number, name: None } => write!(f, ": record {number}"),
        }
    }
}

/// A problem with a user-supplied input: which file, where in it, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}{location}: {message}", path.display())]
pub struct InputError {
    pub path: PathBuf,
    pub location: Location,
    pub message: String,
}

impl InputError {
    pub fn file(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            location: Location::File,
            message: message.into(),
        }
    }

    pub fn line(path: impl AsRef<Path>, line: u64, message: impl Into<String>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            location: Location::Line(line),
            message: message.into(),
        }
    }

    pub fn record(
        path: impl AsRef<Path>,
        number: u64,
        name: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            location: Location::Record {
                number,
                name: name.map(str::to_owned),
            },
            message: message.into(),
        }
    }
}

/// Turns an I/O error met while reading `path` into an [`InputError`], recognising the usual
/// signature of a truncated or corrupt compressed stream.
pub fn read_error(path: &Path, location: Location, err: std::io::Error) -> InputError {
    let message = match err.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            "unexpected end of file: the file is truncated or its compressed stream is corrupt"
                .to_string()
        }
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
            format!("corrupt or unreadable data: {err}")
        }
        _ => format!("read failed: {err}"),
    };
    InputError {
        path: path.to_path_buf(),
        location,
        message,
    }
}

//! Why a metric could not be computed from the inputs given.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsError {
    /// Labels and scores (or predictions) disagree in length.
    LengthMismatch { labels: usize, other: usize },
    /// A label or prediction is not a class index below the class count.
    ClassOutOfRange {
        index: usize,
        class: usize,
        n_classes: usize,
    },
    /// Fewer than two classes, or no examples.
    Empty,
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::LengthMismatch { labels, other } => {
                write!(f, "{labels} labels but {other} predictions/scores")
            }
            MetricsError::ClassOutOfRange {
                index,
                class,
                n_classes,
            } => write!(
                f,
                "example {index}: class {class} is out of range for {n_classes} classes"
            ),
            MetricsError::Empty => write!(f, "no examples, or fewer than two classes"),
        }
    }
}

impl std::error::Error for MetricsError {}

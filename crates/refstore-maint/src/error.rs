//! Why housekeeping failed.

/// Why housekeeping failed. Nothing stored is lost by a failure: new files
/// are visible only once complete, old ones removed only once redundant.
#[derive(Debug, thiserror::Error)]
pub enum MaintError {
    /// A filesystem operation failed.
    #[error("{0}")]
    Io(#[from] refstore_fs::Error),
    /// Reading objects failed.
    #[error("{0}")]
    Odb(#[from] refstore_odb::OdbError),
    /// A file is not in the format expected.
    #[error("{0}")]
    Format(String),
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// Refs could not be packed.
    #[error("{0}")]
    Refs(String),
    /// Another process is doing this work right now.
    #[error("{0}")]
    Busy(String),
}

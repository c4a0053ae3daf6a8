//! Why a repository could not be opened.

use refstore_refs::backend;
use std::path::PathBuf;

/// Why a repository, its ref store or its object database could not be
/// opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No repository at the path (nor at the usual variants of it).
    #[error("'{}' does not appear to be a git repository", .0.display())]
    NotARepository(PathBuf),
    /// The configuration is unreadable or names an unknown format.
    #[error("{0}")]
    Config(String),
    /// The ref store cannot be opened.
    #[error("{0}")]
    Refs(#[from] backend::OpenError),
    /// The object database cannot be opened.
    #[error("{0}")]
    Objects(#[from] refstore_odb::OdbError),
}

impl From<refstore_fs::config::ConfigError> for OpenError {
    fn from(e: refstore_fs::config::ConfigError) -> Self {
        OpenError::Config(e.to_string())
    }
}

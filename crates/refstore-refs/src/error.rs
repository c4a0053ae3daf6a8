//! The errors every backend reports: reading refs ([`ReadError`]) and
//! committing a transaction ([`CommitError`]).
//!
//! They are shared so that commands and the protocol handle both formats
//! alike; each variant names the file at fault where there is one.

use crate::files::{loose, packed};
use crate::transaction::Rejected;
use crate::RefName;
use std::path::PathBuf;

/// An error reading refs.
#[derive(Debug)]
pub enum ReadError {
    /// The filesystem failed.
    Fs(refstore_fs::Error),
    /// `packed-refs` is corrupt.
    Packed {
        /// The file.
        path: PathBuf,
        /// The bad line.
        error: packed::PackedError,
    },
    /// A loose ref file that holds no valid value.
    BrokenRef {
        /// The ref's name.
        name: RefName,
        /// What is wrong.
        error: loose::LooseError,
    },
    /// A reftable (or `tables.list`) is damaged.
    Reftable {
        /// The table, or the stack's directory when the damage was found
        /// while reading the stack as a whole.
        path: PathBuf,
        /// What is wrong.
        error: crate::reftable::Error,
    },
    /// `tables.list.lock` could not be taken.
    Locked(String),
    /// Symbolic refs nested deeper than git allows, or in a cycle.
    SymrefTooDeep(RefName),
    /// A store kept elsewhere (a cluster's etcd) cannot be reached or
    /// cannot answer now; the message says why.
    Unavailable(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Fs(e) => write!(f, "{e}"),
            ReadError::Packed { path, error } => {
                write!(f, "corrupt packed-refs file '{}': {error}", path.display())
            }
            ReadError::BrokenRef { name, error } => write!(f, "broken ref {name}: {error}"),
            ReadError::Reftable { path, error } => write!(f, "'{}': {error}", path.display()),
            ReadError::Locked(message) => write!(f, "{message}"),
            ReadError::SymrefTooDeep(name) => {
                write!(f, "symbolic ref {name} nests too deeply (or is a cycle)")
            }
            ReadError::Unavailable(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<refstore_fs::Error> for ReadError {
    fn from(e: refstore_fs::Error) -> Self {
        ReadError::Fs(e)
    }
}

impl From<crate::reftable::StackError> for ReadError {
    fn from(e: crate::reftable::StackError) -> Self {
        use crate::reftable::StackError;
        match e {
            StackError::Io(e) => ReadError::Fs(e),
            StackError::Lock(e) => ReadError::Locked(e.to_string()),
            StackError::Table { path, source } => ReadError::Reftable {
                path,
                error: source,
            },
        }
    }
}

/// Why a transaction failed as a whole.
#[derive(Debug)]
pub enum CommitError {
    /// An atomic transaction had an update that cannot be applied.
    Rejected(Rejected),
    /// Reading the current refs failed.
    Read(ReadError),
    /// A lock another writer holds did not come free in time (the message
    /// says which and what to do).
    Locked(String),
    /// Writing failed; nothing was committed if this happened before the
    /// first rename, and every ref is old or new otherwise.
    Fs(refstore_fs::Error),
    /// A store kept elsewhere (a cluster's etcd) cannot be reached or
    /// cannot commit now; nothing was committed unless the message says
    /// the outcome is unknown.
    Unavailable(String),
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitError::Rejected(r) => write!(f, "{r}"),
            CommitError::Locked(message) => write!(f, "{message}"),
            CommitError::Read(e) => write!(f, "{e}"),
            CommitError::Fs(e) => write!(f, "{e}"),
            CommitError::Unavailable(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for CommitError {}

impl From<ReadError> for CommitError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Locked(message) => CommitError::Locked(message),
            ReadError::Unavailable(message) => CommitError::Unavailable(message),
            e => CommitError::Read(e),
        }
    }
}

impl From<refstore_fs::Error> for CommitError {
    fn from(e: refstore_fs::Error) -> Self {
        CommitError::Fs(e)
    }
}

impl From<crate::reftable::StackError> for CommitError {
    fn from(e: crate::reftable::StackError) -> Self {
        ReadError::from(e).into()
    }
}

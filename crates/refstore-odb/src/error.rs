//! Errors of the object database.

use refstore_hash::{ObjectFormat, ObjectId};
use std::path::PathBuf;

/// Why an object could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum OdbError {
    /// The object directory could not be opened (missing, unreadable, or a
    /// broken `info/alternates`).
    #[error("cannot open object directory '{path}': {source}")]
    Open {
        /// The `objects` directory.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// An id of the other hash function was given.
    #[error("object id {id} is not a {expected} id; the repository uses {expected}")]
    WrongFormat {
        /// The id given.
        id: ObjectId,
        /// The repository's object format.
        expected: &'static str,
    },
    /// The object exists but could not be read: a corrupt loose object or
    /// pack, or an I/O error. `git fsck` tells more.
    #[error("cannot read object {id}: {source}; run 'git fsck' to check the repository")]
    Read {
        /// The object.
        id: ObjectId,
        /// What went wrong.
        source: gix_error::Error,
    },
    /// An annotated tag points at an object that is not in the database.
    #[error("tag {tag} points at {target}, which is missing")]
    MissingTagTarget {
        /// The tag whose target is missing.
        tag: ObjectId,
        /// The missing object.
        target: ObjectId,
    },
    /// An annotated tag object could not be parsed.
    #[error("tag object {id} is corrupt: {source}")]
    CorruptTag {
        /// The tag object.
        id: ObjectId,
        /// What the parser found.
        source: gix_error::Error,
    },
    /// SHA-1 collision detection rejected the content, as git does.
    #[error("refusing to store an object: {source}")]
    Collision {
        /// What the hasher detected.
        source: gix_error::Error,
    },
    /// A pack that cannot be read: truncated, corrupt, or with deltas whose
    /// base is missing. Nothing from it is stored.
    #[error("pack is unusable: {0}")]
    Pack(String),
    /// A pack refused for what it would cost to take in: its objects
    /// inflate beyond the bound set for it, or it holds a delta of an
    /// object at or above `core.bigFileThreshold`. Nothing from it is
    /// stored.
    #[error("{0}")]
    Refused(String),
    /// A filesystem operation of a write failed.
    #[error(transparent)]
    Fs(#[from] refstore_fs::Error),
}

impl OdbError {
    pub(crate) fn wrong_format(id: ObjectId, expected: ObjectFormat) -> Self {
        OdbError::WrongFormat {
            id,
            expected: expected.name(),
        }
    }
}

/// gix-pack's error with its causes, or git's "early EOF" for input that
/// ends too soon.
pub(crate) fn describe(error: &gix_error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::UnexpectedEof {
                return "early EOF: the pack is truncated".into();
            }
        }
        let text = e.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        cause = e.source();
    }
    parts.join(": ")
}

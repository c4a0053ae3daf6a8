//! The operations every ref format offers, so that commands and the
//! protocol work on a repository without knowing how its refs are stored.
//!
//! [`open`] picks the format a repository's configuration names
//! (`extensions.refStorage`). Format-specific work (packing loose refs,
//! compacting tables, verifying files) stays on the concrete backends.

use crate::files::transaction::{CommitError, CommitOptions};
use crate::files::{FilesBackend, Listing, ReadError, Resolved};
use crate::transaction::{Outcome, Transaction};
use crate::value::Ref;
use crate::{ObjectFormat, RefName};
use refstore_fs::Vfs;
use std::path::PathBuf;
use std::sync::Arc;

/// A ref store in one of Git's formats.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// The repository's object format.
    fn object_format(&self) -> ObjectFormat;

    /// The ref `name` as stored (a symbolic ref is not followed).
    fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError>;

    /// Follows `name` through symbolic refs to the ref holding an object id.
    /// `None` if `name` itself does not exist.
    fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError>;

    /// Every ref below `refs/` whose name starts with `prefix`, sorted by
    /// name, with peeled values where the store keeps them.
    fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError>;

    /// Applies `tx` with one data flush point and one directory flush point.
    /// Atomic transactions fail as a whole with the first rejection; batch
    /// transactions report rejections in the outcome.
    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError>;
}

impl Backend for FilesBackend {
    fn object_format(&self) -> ObjectFormat {
        FilesBackend::object_format(self)
    }

    fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        FilesBackend::read(self, name)
    }

    fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        FilesBackend::resolve(self, name)
    }

    fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError> {
        FilesBackend::list(self, prefix)
    }

    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError> {
        FilesBackend::commit(self, tx, options)
    }
}

/// Where a repository keeps its refs.
#[derive(Debug, Clone)]
pub struct Location {
    /// The git directory (per-worktree refs such as `HEAD`).
    pub git_dir: PathBuf,
    /// The common directory (shared refs).
    pub common_dir: PathBuf,
    /// The object format (`extensions.objectFormat`).
    pub object_format: ObjectFormat,
    /// The ref format (`extensions.refStorage`).
    pub storage: refstore_fs::config::RefStorage,
}

/// Why a repository's ref store cannot be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The repository uses a format this build cannot serve.
    Unsupported(&'static str),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Unsupported(format) => write!(
                f,
                "this repository uses the {format} ref format, which this build of refstore cannot read or write yet"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// Opens the ref store of the repository at `location` in the format its
/// configuration names.
pub fn open(vfs: Arc<dyn Vfs>, location: &Location) -> Result<Arc<dyn Backend>, OpenError> {
    use refstore_fs::config::RefStorage;
    match location.storage {
        RefStorage::Files => Ok(Arc::new(FilesBackend::new(
            vfs,
            location.git_dir.clone(),
            location.common_dir.clone(),
            location.object_format,
        ))),
        RefStorage::Reftable => Err(OpenError::Unsupported("reftable")),
    }
}

//! The operations every ref format offers, so that commands and the
//! protocol work on a repository without knowing how its refs are stored.
//!
//! [`open`] picks the format a repository's configuration names
//! (`extensions.refStorage`). Format-specific work (packing loose refs,
//! compacting tables, verifying files) stays on the concrete backends,
//! reached through [`Backend::as_files`] and [`Backend::as_reftable`].

use crate::error::{CommitError, ReadError};
use crate::files::transaction::CommitOptions;
use crate::files::{FilesBackend, Listing, Resolved};
use crate::reftable::{ReftableBackend, ReftableOptions};
use crate::transaction::{Outcome, Rejected, Transaction};
use crate::value::{Ref, RefView};
use crate::{ObjectFormat, PeelObjects, RefName};
use refstore_fs::flush::BatchMechanism;
use refstore_fs::Vfs;
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

/// A transaction checked and locked by [`Backend::prepare`], not yet
/// visible. Dropping it releases its locks, like [`abort`](Self::abort).
pub trait PreparedTransaction {
    /// The updates rejected so far (batch transactions only).
    fn rejected(&self) -> &[Rejected];

    /// Makes the transaction durable and visible.
    fn commit(self: Box<Self>) -> Result<Outcome, CommitError>;

    /// Releases every lock; nothing changes.
    fn abort(self: Box<Self>) -> Result<(), CommitError>;
}

impl PreparedTransaction for crate::files::transaction::Prepared<'_> {
    fn rejected(&self) -> &[Rejected] {
        crate::files::transaction::Prepared::rejected(self)
    }

    fn commit(self: Box<Self>) -> Result<Outcome, CommitError> {
        (*self).commit()
    }

    fn abort(self: Box<Self>) -> Result<(), CommitError> {
        (*self).abort()
    }
}

impl PreparedTransaction for crate::reftable::transaction::Prepared<'_> {
    fn rejected(&self) -> &[Rejected] {
        crate::reftable::transaction::Prepared::rejected(self)
    }

    fn commit(self: Box<Self>) -> Result<Outcome, CommitError> {
        (*self).commit()
    }

    fn abort(self: Box<Self>) -> Result<(), CommitError> {
        (*self).abort()
    }
}

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

    /// Shows `visitor` the refs [`list`](Self::list) would return, in the
    /// same order, without building them: names borrow the store's
    /// buffers, and [`RefView::peeled`] says whether the store knows the
    /// peeled value. Visiting stops when `visitor` breaks. A store may
    /// report damage after some refs were visited.
    fn visit(
        &self,
        prefix: &[u8],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        for r in &self.list(prefix)?.refs {
            if visitor(RefView::of(r)).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Shows `visitor` the refs of each of `prefixes` in turn, as
    /// [`visit`](Self::visit) does for one; the prefixes are sorted and
    /// none covers another, so no ref is shown twice. A store whose every
    /// reading costs a round trip reads them all at one moment, once.
    fn visit_each(
        &self,
        prefixes: &[&[u8]],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        let mut stopped = false;
        for prefix in prefixes {
            self.visit(prefix, &mut |view| {
                let flow = visitor(view);
                stopped = flow.is_break();
                flow
            })?;
            if stopped {
                break;
            }
        }
        Ok(())
    }

    /// Applies `tx` with one data flush point and one directory flush point.
    /// Atomic transactions fail as a whole with the first rejection; batch
    /// transactions report rejections in the outcome.
    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError>;

    /// Locks, checks and stages `tx` without making it visible, for callers
    /// that decide later whether to commit (`update-ref --stdin`'s
    /// `prepare`).
    fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Box<dyn PreparedTransaction + 'a>, CommitError>;

    /// Lends the store a way to peel tags. A store that records peeled
    /// values beside refs (reftable) records them for the refs it writes
    /// from then on; the files backend keeps none in loose refs, as git.
    fn set_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        let _ = peeler;
    }

    /// A view of these refs for a reader that may be answered as of a
    /// recent moment rather than the latest: one that only chooses among
    /// objects a client asked for by id (the annotated tags sent along
    /// with a pack), and promises the client nothing about the refs.
    /// `None` (the default) when reading the store itself costs no more:
    /// a store that confirms every reading through a round trip
    /// elsewhere answers such a reader from a copy confirmed moments ago.
    fn recent(&self) -> Option<Arc<dyn Backend>> {
        None
    }

    /// The files backend, when this is one.
    fn as_files(&self) -> Option<&FilesBackend> {
        None
    }

    /// The reftable backend, when this is one.
    fn as_reftable(&self) -> Option<&ReftableBackend> {
        None
    }
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

    fn visit(
        &self,
        prefix: &[u8],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        FilesBackend::visit(self, prefix, visitor)
    }

    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError> {
        FilesBackend::commit(self, tx, options)
    }

    fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Box<dyn PreparedTransaction + 'a>, CommitError> {
        Ok(Box::new(FilesBackend::prepare(self, tx, options)?))
    }

    fn as_files(&self) -> Option<&FilesBackend> {
        Some(self)
    }
}

impl Backend for ReftableBackend {
    fn object_format(&self) -> ObjectFormat {
        ReftableBackend::object_format(self)
    }

    fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        ReftableBackend::read(self, name)
    }

    fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        ReftableBackend::resolve(self, name)
    }

    fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError> {
        ReftableBackend::list(self, prefix)
    }

    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError> {
        ReftableBackend::commit(self, tx, options)
    }

    fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Box<dyn PreparedTransaction + 'a>, CommitError> {
        Ok(Box::new(ReftableBackend::prepare(self, tx, options)?))
    }

    fn set_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        ReftableBackend::set_peeler(self, peeler)
    }

    fn as_reftable(&self) -> Option<&ReftableBackend> {
        Some(self)
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
    /// The configuration names the reftable format but the stack's
    /// directory is missing.
    MissingStack(PathBuf),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::MissingStack(dir) => write!(
                f,
                "the repository uses the reftable ref format but '{}' is not a directory; restore it from a backup or set extensions.refStorage to match the refs on disk",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// Opens the ref store of the repository at `location` in the format its
/// configuration names, with git's default `reftable.*` settings and the
/// batch flush mechanism chosen per filesystem. Use [`open_with`] to honour
/// a repository's own settings.
pub fn open(vfs: Arc<dyn Vfs>, location: &Location) -> Result<Arc<dyn Backend>, OpenError> {
    let reftable = ReftableOptions::new(location.object_format);
    open_with(vfs, location, reftable, BatchMechanism::Auto)
}

/// Opens the ref store of the repository at `location`; a reftable store
/// writes with `reftable` (see [`ReftableOptions::from_settings`]), and the
/// flush points of the `batch` method of either format are carried out by
/// `mechanism` (`refstore.batchFlush`, see
/// [`FsyncSettings::batch_mechanism`](refstore_fs::config::FsyncSettings::batch_mechanism)).
pub fn open_with(
    vfs: Arc<dyn Vfs>,
    location: &Location,
    mut reftable: ReftableOptions,
    mechanism: BatchMechanism,
) -> Result<Arc<dyn Backend>, OpenError> {
    use refstore_fs::config::RefStorage;
    match location.storage {
        RefStorage::Files => Ok(Arc::new(
            FilesBackend::new(
                vfs,
                location.git_dir.clone(),
                location.common_dir.clone(),
                location.object_format,
            )
            .with_batch_mechanism(mechanism),
        )),
        RefStorage::Reftable => {
            reftable.batch_mechanism = mechanism;
            let backend =
                ReftableBackend::new(vfs, &location.common_dir, location.object_format, reftable);
            let is_dir = backend
                .vfs()
                .stat(backend.dir())
                .is_ok_and(|m| m.kind == refstore_fs::FileKind::Dir);
            if !is_dir {
                return Err(OpenError::MissingStack(backend.dir().to_owned()));
            }
            Ok(Arc::new(backend))
        }
    }
}

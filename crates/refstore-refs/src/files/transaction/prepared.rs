//! A prepared transaction: its refs locked and checked, the new values in
//! the lock files, nothing visible yet; and how it is committed.

use super::journal::Journal;
use super::CommitError;
use crate::files::packed::PackedSnapshot;
use crate::files::packed_lock::PackedLock;
use crate::files::FilesBackend;
use crate::observed::CommitClock;
use crate::plan::Planned;
use crate::transaction::{Outcome, Rejected, Transaction};
use crate::value::Target;
use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_fs::lock::LockFile;
use std::borrow::Cow;
use std::time::Duration;

/// How a transaction is committed.
#[derive(Debug, Clone)]
pub struct CommitOptions {
    /// How files are flushed (`core.fsync` reference component).
    pub flush: FlushMethod,
    /// `core.filesRefLockTimeout`.
    pub lock_timeout: Duration,
    /// `core.packedRefsTimeout`.
    pub packed_refs_timeout: Duration,
    /// `core.logAllRefUpdates`, resolved.
    pub log_updates: LogRefUpdates,
    /// The committer signature for reflog lines.
    pub signature: String,
}

/// A locked update with its current value.
pub(super) struct Locked {
    pub(super) planned: Planned,
    pub(super) lock: LockFile,
    pub(super) old: Option<Target>,
    /// The object `old` resolves to.
    pub(super) old_id: Option<crate::ObjectId>,
    pub(super) in_packed: bool,
}

/// A transaction whose refs are locked and checked and whose new values
/// are written to lock files; nothing is visible yet. Dropping it releases
/// the locks.
pub struct Prepared<'a> {
    pub(super) backend: &'a FilesBackend,
    pub(super) tx: Cow<'a, Transaction>,
    pub(super) options: &'a CommitOptions,
    pub(super) packed: PackedSnapshot,
    pub(super) batch: FlushBatch,
    pub(super) locked: Vec<Locked>,
    pub(super) packed_lock: Option<PackedLock>,
    pub(super) outcome: Outcome,
    pub(super) clock: CommitClock,
}

impl Prepared<'_> {
    /// Rejections so far (batch transactions only).
    pub fn rejected(&self) -> &[Rejected] {
        &self.outcome.rejected
    }

    /// Releases every lock; nothing changes.
    pub fn abort(self) -> Result<(), CommitError> {
        if let Some(packed) = self.packed_lock {
            packed.release()?;
        }
        for l in self.locked {
            l.lock.rollback()?;
        }
        Ok(())
    }

    /// Writes the reflogs, flushes, and makes every update visible.
    pub fn commit(self) -> Result<Outcome, CommitError> {
        let Prepared {
            backend,
            tx,
            options,
            packed,
            mut batch,
            locked,
            packed_lock,
            mut outcome,
            clock,
        } = self;
        let vfs = backend.vfs.clone();
        let mut journal = Journal::default();
        let mut visible = vec![false; locked.len()];
        let result = Self::apply(
            backend,
            &tx,
            options,
            &packed,
            &mut batch,
            locked,
            packed_lock,
            &mut outcome,
            &mut journal,
            &mut visible,
        );
        match result {
            Ok(()) => {
                clock.committed(&outcome);
                Ok(outcome)
            }
            Err(e) => {
                journal.undo(vfs.as_ref(), &visible);
                Err(e)
            }
        }
    }
}

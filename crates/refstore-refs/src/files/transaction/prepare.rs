//! Steps 1 to 3 of a commit: resolving the updates, locking their refs
//! and checking their old values, leaving a [`Prepared`] transaction.

use super::prepared::{CommitOptions, Locked, Prepared};
use super::CommitError;
use crate::files::packed::PackedSnapshot;
use crate::files::packed_lock::PackedLock;
use crate::files::FilesBackend;
use crate::observed::CommitClock;
use crate::plan::{self, Planned, Reads};
use crate::transaction::{Change, Outcome, Rejection, Transaction};
use crate::RefName;
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::LockFile;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// The updates of a transaction resolved (step 1), with the names it
/// creates and those in the way of them.
struct Resolved {
    planned: Vec<Planned>,
    /// Refs to be created, for the availability check.
    missing: Vec<RefName>,
    /// Every ref the transaction touches.
    affected: BTreeSet<RefName>,
    /// The refs of `missing` another ref is in the way of.
    blocked: BTreeMap<RefName, Rejection>,
}

impl FilesBackend {
    /// Resolves, checks and locks every ref of `tx` and writes the new
    /// values into the lock files, without making anything visible. The
    /// refs stay locked until the prepared transaction is committed or
    /// aborted (or dropped, which aborts).
    pub fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Prepared<'a>, CommitError> {
        let clock = CommitClock::start();
        let mut outcome = Outcome::default();
        // packed-refs is read once (in place when sorted: a transaction
        // looks up its own refs, not all of them); it is read again, whole,
        // under its lock only if the transaction rewrites it.
        let packed = self.packed_snapshot(tx.updates.len())?;

        // 1. Resolve the updates.
        let Resolved {
            planned,
            missing,
            affected,
            mut blocked,
        } = self.resolve_updates(&tx, &mut outcome, &packed)?;

        // 2. Lock every ref.
        let mut batch = self.flush_batch(options.flush);
        let held = self.lock_refs(&tx, planned, &mut blocked, options, &mut batch)?;

        // A transaction that deletes a ref below `refs/` holds
        // `packed-refs.lock` from here until its loose files are gone, as
        // git does: otherwise a `pack-refs` in between could pack the ref,
        // fail to prune its locked loose file, and the ref would come back
        // from `packed-refs` once only its loose file is removed.
        let packed_lock = self.lock_packed_for_deletes(&tx, &held, options)?;

        // `packed-refs` again, now that every ref is locked (and
        // `packed-refs` itself when refs are deleted): a ref packed and
        // pruned since the first read is found, and a name packed since
        // then is in the way of the names this transaction creates.
        let (packed, changed) = packed
            .refreshed(self.packed_text()?, self.format, tx.updates.len())
            .map_err(|e| self.packed_error(e))?;
        if changed && !missing.is_empty() {
            blocked = self.unavailable(&missing, &affected, &packed)?;
        }

        // 3. Check old values under the locks, write new ones.
        let locked = self.check_old_values(&tx, held, &mut blocked, &packed, &mut outcome)?;
        let packed_lock = self.rewrite_packed(&tx, packed_lock, &packed, &locked, &mut batch)?;
        Ok(Prepared {
            backend: self,
            tx,
            options,
            packed,
            batch,
            locked,
            packed_lock,
            outcome,
            clock,
        })
    }

    /// Step 1: resolves symbolic refs, rejects duplicates, and finds which
    /// of the refs to create another ref is in the way of.
    fn resolve_updates(
        &self,
        tx: &Transaction,
        outcome: &mut Outcome,
        packed: &PackedSnapshot,
    ) -> Result<Resolved, CommitError> {
        // 1. Resolve symbolic refs and reject duplicates.
        let mut reads = Reads::new(tx.updates.len(), |name: &RefName| {
            self.read_in(name, packed)
        });
        let planned = plan::follow_symrefs(tx, outcome, |name| reads.deref_target(name))?;

        // Availability of every touched ref that does not exist yet, against
        // the store and the transaction's other refs (git's rule, in input
        // order).
        let mut missing = Vec::new();
        let affected: BTreeSet<RefName> = planned.iter().map(|p| p.target.clone()).collect();
        for p in &planned {
            if !p.target.is_root_ref() && reads.get(&p.target)?.is_none() {
                missing.push(p.target.clone());
            }
        }
        let blocked = self.unavailable(&missing, &affected, packed)?;
        Ok(Resolved {
            planned,
            missing,
            affected,
            blocked,
        })
    }

    /// Writes the new `packed-refs` (without the deleted refs it holds)
    /// under `packed_lock`, when the transaction holds it.
    fn rewrite_packed(
        &self,
        tx: &Transaction,
        packed_lock: Option<LockFile>,
        packed: &PackedSnapshot,
        locked: &[Locked],
        batch: &mut FlushBatch,
    ) -> Result<Option<PackedLock>, CommitError> {
        // `packed-refs` is rewritten when a ref it holds is deleted; read
        // under its lock above, it is the file as it is now.
        Ok(match packed_lock {
            Some(lock) => Some(
                self.write_packed_without(
                    lock,
                    packed,
                    locked
                        .iter()
                        .filter(|l| {
                            l.in_packed && tx.updates[l.planned.index].change == Change::Delete
                        })
                        .map(|l| &l.planned.target)
                        .collect(),
                    batch,
                )?,
            ),
            None => None,
        })
    }
}

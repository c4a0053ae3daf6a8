//! Committing a transaction in the files format, durably, with two flush
//! points however many refs it touches.
//!
//! Preparing ([`FilesBackend::prepare`]):
//! 1. Resolve each update through symbolic refs (unless `no_deref`), reject
//!    duplicates, and run the batched availability check.
//! 2. Lock every ref (`<ref>.lock`, in the order given). A transaction that
//!    deletes a ref below `refs/` then locks `packed-refs` too, and holds it
//!    until its loose files are gone, whether or not the ref is packed (see
//!    [`packed_lock`](super::packed_lock)).
//! 3. Read `packed-refs` again (under its lock when held), so that every
//!    value is read after its lock was taken: check each old value, and
//!    write the new value into the lock file. A deleted ref found packed
//!    now is removed from a new `packed-refs`, written to
//!    `packed-refs.new`.
//!
//! Committing ([`Prepared::commit`]):
//! 4. Append the reflog lines, then flush point one: every written file is
//!    durable.
//! 5. Rename `packed-refs.new` onto `packed-refs` first (a crash then
//!    leaves a deleted ref's loose file, still its old value), then every
//!    ref lock onto its ref; remove deleted refs' files, reflogs and
//!    emptied directories, and only then release `packed-refs.lock`.
//! 6. Flush point two: every changed directory is durable. Only now is
//!    success reported.
//!
//! A failure before the first rename changes nothing: the reflog lines
//! already appended are cut off again and every lock is released. A failure
//! later leaves each ref old or new (as git does, the refs renamed before it
//! keep their new values), with reflog lines only for the refs that took
//! their new values. Removing a deleted ref's reflog or a lock file that
//! failed does not stop the other updates; it is reported at the end.

use super::packed::PackedSnapshot;
use super::packed_lock::PackedLock;
use super::{loose, reflog, FilesBackend, ReadError};
use crate::availability::{self, ExistingRefs};
pub use crate::error::CommitError;
use crate::observed::CommitClock;
use crate::plan::{self, Planned, Reads};
use crate::transaction::{Change, Outcome, Rejected, Rejection, Transaction};
use crate::value::Target;
use crate::RefName;
use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_fs::lock::{LockError, LockFile};
use refstore_fs::FileKind;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
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

/// Reflog lines appended by a transaction, so that a transaction that fails
/// can take back those of the updates that did not become visible.
#[derive(Default)]
struct Journal {
    /// Index (in `Prepared::locked`) of the update being logged.
    update: usize,
    /// Each append: the reflog, its length before (`None`: it was created),
    /// the length of the line, and the update it was for.
    appended: Vec<(PathBuf, Option<u64>, u64, usize)>,
}

impl Journal {
    /// Cuts back every reflog appended to for an update that did not become
    /// visible. A reflog that grew by more than this transaction's line was
    /// appended to by another writer (HEAD's is not locked) and is left as
    /// it is. Best effort: the transaction's own error is what is reported.
    fn undo(self, vfs: &dyn refstore_fs::Vfs, visible: &[bool]) {
        for (path, previous, line, update) in self.appended.into_iter().rev() {
            if visible.get(update).copied().unwrap_or(false) {
                continue;
            }
            let Ok(now) = vfs.stat(&path) else { continue };
            let start = previous.unwrap_or(0);
            if now.len < start || now.len > start + line {
                continue;
            }
            let _ = match previous {
                Some(len) => vfs.truncate(&path, len),
                None => vfs.unlink(&path),
            };
        }
    }
}

/// A locked update with its current value.
struct Locked {
    planned: Planned,
    lock: LockFile,
    old: Option<Target>,
    /// The object `old` resolves to.
    old_id: Option<crate::ObjectId>,
    in_packed: bool,
}

/// Names existing in the store, for the availability check: packed refs by
/// binary search, loose refs by looking at the file or walking the directory.
struct Existing<'a> {
    backend: &'a FilesBackend,
    packed: &'a PackedSnapshot,
    loose_dirs: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    /// The first read error, reported once the check is over (the check's
    /// interface cannot fail).
    error: Option<ReadError>,
}

impl ExistingRefs for Existing<'_> {
    fn contains(&mut self, name: &[u8]) -> bool {
        let Ok(ref_name) = RefName::new(name) else {
            return false;
        };
        let loose = match self.backend.vfs.stat(&self.backend.loose_path(&ref_name)) {
            Ok(m) => m.kind == FileKind::File,
            // A prefix of the name being a file, or a name too long for the
            // filesystem, is "no such ref" too (locking it reports why).
            Err(e) if e.is_not_found() || matches!(e.raw_os_error(), Some(20 | 36)) => false,
            Err(e) => {
                self.error.get_or_insert(e.into());
                false
            }
        };
        loose
            || match self.packed.find(name) {
                Ok(found) => found.is_some(),
                Err(e) => {
                    self.error.get_or_insert(self.backend.packed_error(e));
                    false
                }
            }
    }

    fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>> {
        // Only names below `from` matter to the check (see
        // `ExistingRefs::seek`): packed ones are looked up by that prefix.
        let packed = match self.packed.first_with_prefix(from) {
            Ok(found) => found,
            Err(e) => {
                self.error.get_or_insert(self.backend.packed_error(e));
                None
            }
        };
        let dir_len = from.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        let dir = from[..dir_len].to_vec();
        let backend = self.backend;
        let error = &mut self.error;
        let names = self.loose_dirs.entry(dir.clone()).or_insert_with(|| {
            // Packed refs are searched separately; only loose names here.
            match backend.loose_names(&dir) {
                Ok(names) => names.into_iter().map(|n| n.as_bytes().to_vec()).collect(),
                Err(e) => {
                    error.get_or_insert(e);
                    Vec::new()
                }
            }
        });
        let i = names.partition_point(|n| n.as_slice() < from);
        let loose = names.get(i).cloned();
        match (packed, loose) {
            (Some(p), Some(l)) => Some(p.min(l)),
            (p, l) => p.or(l),
        }
    }
}

/// A transaction whose refs are locked and checked and whose new values
/// are written to lock files; nothing is visible yet. Dropping it releases
/// the locks.
pub struct Prepared<'a> {
    backend: &'a FilesBackend,
    tx: Cow<'a, Transaction>,
    options: &'a CommitOptions,
    packed: PackedSnapshot,
    batch: FlushBatch,
    locked: Vec<Locked>,
    packed_lock: Option<PackedLock>,
    outcome: Outcome,
    clock: CommitClock,
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

    /// Steps 4 to 6 of a commit; `visible` records which updates took
    /// effect, in case of failure.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        backend: &FilesBackend,
        tx: &Transaction,
        options: &CommitOptions,
        packed: &PackedSnapshot,
        batch: &mut FlushBatch,
        mut locked: Vec<Locked>,
        packed_lock: Option<PackedLock>,
        outcome: &mut Outcome,
        journal: &mut Journal,
        visible: &mut [bool],
    ) -> Result<(), CommitError> {
        let vfs = backend.vfs.clone();
        let head_target = match backend.read_loose(&RefName::new("HEAD").expect("valid")) {
            Ok(Some(Target::Symbolic(t))) => Some(t),
            Ok(_) | Err(ReadError::BrokenRef { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        for (i, l) in locked.iter_mut().enumerate() {
            journal.update = i;
            let update = &tx.updates[l.planned.index];
            let new_id = match &update.change {
                // Setting a ref to the value it has writes nothing and logs
                // nothing for the ref; HEAD's reflog still records it when
                // HEAD is involved, as in git.
                Change::Set(target) if l.old.as_ref() == Some(target) => {
                    if let Some(id) = target.object_id() {
                        backend.log_head_only(
                            l,
                            id,
                            id,
                            tx.message.as_deref(),
                            options,
                            &head_target,
                            batch,
                            journal,
                        )?;
                    }
                    continue;
                }
                // A symbolic ref set in place is logged only with a message
                // and when its new target resolves, from the old to the new
                // resolved object, as git's symbolic-ref does.
                Change::Set(Target::Symbolic(to)) => {
                    let new = backend.resolve_in(to, packed)?.and_then(|r| r.id);
                    if let (Some(new), Some(message)) = (new, tx.message.as_deref()) {
                        let old = l.old_id.unwrap_or(backend.format.null_id());
                        let line = reflog::line(&old, &new, &options.signature, Some(message));
                        backend.append_reflog(
                            &l.planned.target,
                            &line,
                            tx.create_reflog,
                            options.log_updates,
                            batch,
                            journal,
                        )?;
                    }
                    continue;
                }
                Change::Set(target) => target.object_id().copied(),
                Change::Delete => None,
                // git records a verify that goes through HEAD in HEAD's
                // reflog, as a line without message towards the null id.
                Change::Verify => {
                    let null = backend.format.null_id();
                    let old = l.old_id.unwrap_or(null);
                    backend.log_head_only(
                        l,
                        &old,
                        &null,
                        None,
                        options,
                        &head_target,
                        batch,
                        journal,
                    )?;
                    continue;
                }
            };
            // Reflogs: the changed ref, the symref named, and HEAD when it
            // points at the changed ref. A deleted ref loses its own reflog
            // (below), but HEAD records that its branch went away.
            let null = backend.format.null_id();
            let old = l.old_id.unwrap_or(null);
            let new = new_id.unwrap_or(null);
            backend.log_update(l, &old, &new, tx, options, &head_target, batch, journal)?;
        }
        // 4. Flush point one.
        for l in &mut locked {
            l.lock.stage(batch)?;
        }
        batch.flush_files()?;

        // 5. Make it visible: packed-refs first, then the loose refs.
        // packed-refs.lock stays held until the deleted refs' loose files
        // are gone (see `packed_lock`).
        let mut packed_lock = packed_lock;
        if let Some(packed) = &mut packed_lock {
            if packed.rewrites() {
                // A deleted ref that is loose as well as packed must not lose
                // its loose file on disk before packed-refs loses it, or a
                // crash could bring its older packed value back. Filesystems
                // need not keep metadata operations in order, so the new
                // packed-refs is made durable before any loose file goes;
                // only this case pays for it.
                let shadowed_delete = locked.iter().any(|l| {
                    l.in_packed
                        && tx.updates[l.planned.index].change == Change::Delete
                        && vfs.stat(&backend.loose_path(&l.planned.target)).is_ok()
                });
                packed.install(batch)?;
                if shadowed_delete {
                    batch.flush_dirs()?;
                }
            }
        }
        let mut emptied = Vec::new();
        // Cleanup that failed after an update took effect: reported once
        // every update is made, so one stuck file does not stop the rest.
        let mut cleanup_error: Option<CommitError> = None;
        let mut note = |result: refstore_fs::Result<()>| {
            if let Err(e) = result {
                cleanup_error.get_or_insert(e.into());
            }
        };
        for (i, l) in locked.into_iter().enumerate() {
            let update = &tx.updates[l.planned.index];
            match &update.change {
                Change::Set(target) if l.old.as_ref() == Some(target) => {
                    visible[i] = true;
                    note(l.lock.rollback());
                }
                Change::Set(_) => {
                    l.lock.commit(batch)?;
                    visible[i] = true;
                }
                Change::Verify => {
                    visible[i] = true;
                    note(l.lock.rollback());
                }
                Change::Delete => {
                    let path = backend.loose_path(&l.planned.target);
                    match vfs.unlink(&path) {
                        Ok(()) => {}
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e.into()),
                    }
                    visible[i] = true;
                    note(l.lock.rollback());
                    let parent = path.parent().expect("refs have a directory").to_owned();
                    batch.dir_changed(&parent);
                    let log = backend.logs_path(&l.planned.target);
                    match vfs.unlink(&log) {
                        Ok(()) => {
                            let log_dir = log.parent().expect("logs have a directory");
                            batch.dir_changed(log_dir);
                            emptied.push(log_dir.to_owned());
                        }
                        Err(e) if e.is_not_found() || e.raw_os_error() == Some(20) => {}
                        Err(e) => note(Err(e)),
                    }
                    emptied.push(parent);
                }
            }
            outcome.applied += 1;
        }
        for dir in emptied {
            backend.remove_empty_dirs(&dir, batch);
        }
        if let Some(packed) = packed_lock {
            note(packed.release());
        }

        // 6. Flush point two.
        batch.flush_dirs()?;
        cleanup_error.map_or(Ok(()), Err)
    }
}

impl FilesBackend {
    fn logs_path(&self, name: &RefName) -> PathBuf {
        let base = if name.is_root_ref() {
            &self.git_dir
        } else {
            &self.common_dir
        };
        base.join("logs")
            .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.as_bytes()))
    }

    /// Commits `tx`. Atomic transactions fail as a whole with the first
    /// rejection; batch transactions report rejections in the outcome.
    pub fn commit(
        &self,
        tx: &Transaction,
        options: &CommitOptions,
    ) -> Result<Outcome, CommitError> {
        self.prepare(Cow::Borrowed(tx), options)?.commit()
    }

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
        let reject = |outcome: &mut Outcome, name: &RefName, reason: Rejection| {
            plan::reject(&tx, outcome, name, reason)
        };

        // packed-refs is read once (in place when sorted: a transaction
        // looks up its own refs, not all of them); it is read again, whole,
        // under its lock only if the transaction rewrites it.
        let packed = self.packed_snapshot(tx.updates.len())?;

        // 1. Resolve symbolic refs and reject duplicates.
        let mut reads = Reads::new(tx.updates.len(), |name: &RefName| {
            self.read_in(name, &packed)
        });
        let planned = plan::follow_symrefs(&tx, &mut outcome, |name| reads.deref_target(name))?;

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
        let mut blocked = self.unavailable(&missing, &affected, &packed)?;

        // 2. Lock every ref.
        let vfs = self.vfs.clone();
        let mut batch = self.flush_batch(options.flush);
        // Rejections wait for the checks below, so that they come in the
        // order of the updates, as git reports them.
        let mut held: Vec<(Planned, Result<LockFile, Rejection>)> =
            Vec::with_capacity(planned.len());
        for p in planned {
            let lock = match blocked.remove(&p.target) {
                Some(reason) => Err(reason),
                None => self.lock_ref(&p.target, options.lock_timeout, &mut batch),
            };
            // The new value is written and handed to the flush batch at
            // once, so that no descriptor stays open per ref while the
            // others are locked; locks with nothing to write close theirs.
            // A lock whose check fails below is rolled back, and one whose
            // ref already holds the new value is not renamed.
            let lock = match lock {
                Ok(mut lock) => {
                    match &tx.updates[p.index].change {
                        Change::Set(target) => {
                            lock.write_all(&loose::format(target))?;
                            lock.stage(&mut batch)?;
                        }
                        _ => lock.close_handle(),
                    }
                    Ok(lock)
                }
                Err(reason) => Err(reason),
            };
            held.push((p, lock));
        }

        // A transaction that deletes a ref below `refs/` holds
        // `packed-refs.lock` from here until its loose files are gone, as
        // git does: otherwise a `pack-refs` in between could pack the ref,
        // fail to prune its locked loose file, and the ref would come back
        // from `packed-refs` once only its loose file is removed.
        let deletes = held.iter().find(|(p, lock)| {
            lock.is_ok() && tx.updates[p.index].change == Change::Delete && !p.target.is_root_ref()
        });
        let packed_lock = match deletes {
            Some((first, _)) => Some(
                LockFile::acquire(&vfs, self.packed_path(), options.packed_refs_timeout).map_err(
                    |e| match e {
                        LockError::Io(e) => CommitError::Fs(e),
                        held => CommitError::Rejected(Rejected {
                            name: first.target.clone(),
                            reason: Rejection::Locked(held.to_string()),
                        }),
                    },
                )?,
            ),
            None => None,
        };

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
        let mut locked: Vec<Locked> = Vec::with_capacity(held.len());
        for (p, lock) in held {
            let update = &tx.updates[p.index];
            let lock = match lock {
                Ok(lock) => lock,
                Err(reason) => {
                    reject(&mut outcome, &p.target, reason)?;
                    continue;
                }
            };
            if let Some(reason) = blocked.remove(&p.target) {
                lock.rollback()?;
                reject(&mut outcome, &p.target, reason)?;
                continue;
            }
            // Root refs are never packed.
            let packed_value = match p.target.is_root_ref() {
                true => None,
                false => packed
                    .find(p.target.as_bytes())
                    .map_err(|e| self.packed_error(e))?
                    .map(|r| r.target),
            };
            let in_packed = packed_value.is_some();
            let current = match self.read_loose(&p.target) {
                Ok(Some(t)) => Some(t),
                Ok(None) => packed_value,
                Err(ReadError::BrokenRef { .. }) => {
                    lock.rollback()?;
                    reject(&mut outcome, &update.name, Rejection::Broken)?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let old = current;
            // A symbolic ref changed in place is compared and logged by the
            // object it resolves to, as git does.
            let old_id = match &old {
                Some(Target::Object(id)) => Some(*id),
                Some(Target::Symbolic(to)) => self.resolve_in(to, &packed)?.and_then(|r| r.id),
                None => None,
            };
            let check = update.expected.check(&old, old_id);
            if let Err(reason) = check {
                // A lock left behind would block every later update of the
                // ref: one that cannot be removed fails the transaction
                // (nothing is changed yet), naming the file to remove.
                lock.rollback()?;
                reject(&mut outcome, &p.target, reason)?;
                continue;
            }
            locked.push(Locked {
                planned: p,
                lock,
                old,
                old_id,
                in_packed,
            });
        }

        // `packed-refs` is rewritten when a ref it holds is deleted; read
        // under its lock above, it is the file as it is now.
        let packed_lock = match packed_lock {
            Some(lock) => Some(
                self.write_packed_without(
                    lock,
                    &packed,
                    locked
                        .iter()
                        .filter(|l| {
                            l.in_packed && tx.updates[l.planned.index].change == Change::Delete
                        })
                        .map(|l| &l.planned.target)
                        .collect(),
                    &mut batch,
                )?,
            ),
            None => None,
        };
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

    /// The refs of `missing` (to be created) that another ref is in the
    /// way of, in the store (`packed` and the loose files) or among
    /// `affected`, with the reason each is rejected.
    fn unavailable(
        &self,
        missing: &[RefName],
        affected: &BTreeSet<RefName>,
        packed: &PackedSnapshot,
    ) -> Result<BTreeMap<RefName, Rejection>, CommitError> {
        let mut existing = Existing {
            backend: self,
            packed,
            loose_dirs: BTreeMap::new(),
            error: None,
        };
        let conflicts = availability::check(missing, affected, &mut existing);
        if let Some(e) = existing.error {
            return Err(e.into());
        }
        Ok(availability::rejections(conflicts))
    }

    /// Takes the lock of a ref, creating its directories; a file in the way
    /// of a directory is a name conflict.
    fn lock_ref(
        &self,
        name: &RefName,
        timeout: Duration,
        batch: &mut FlushBatch,
    ) -> Result<LockFile, Rejection> {
        let path = self.loose_path(name);
        let locked = |e: LockError| match e {
            LockError::Held { .. } => Rejection::Locked(e.to_string()),
            LockError::Io(e) => Rejection::Locked(e.to_string()),
        };
        // An empty directory tree where the ref's file must go (left by a
        // deleted ref below it) is removed, as git does.
        if self.vfs.stat(&path).is_ok_and(|m| m.kind == FileKind::Dir)
            && !self.remove_empty_tree(&path)
        {
            return Err(Rejection::Locked(format!(
                "there is a non-empty directory '{}' blocking reference '{name}'",
                path.display()
            )));
        }
        match LockFile::acquire(&self.vfs, &path, timeout) {
            Ok(lock) => Ok(lock),
            Err(LockError::Io(e)) if e.is_not_found() => {
                let parent = path.parent().expect("refs have a directory");
                if let Err(e) = batch.create_dir_all(parent) {
                    // Some prefix of the name is a file: a ref in the way.
                    let existing = name
                        .prefixes()
                        .find(|p| {
                            RefName::new(p).is_ok_and(|p| {
                                self.vfs
                                    .stat(&self.loose_path(&p))
                                    .is_ok_and(|m| m.kind == FileKind::File)
                            })
                        })
                        .map(RefName::from_trusted);
                    return Err(match existing {
                        Some(existing) => Rejection::NameConflict { existing },
                        None => Rejection::Locked(e.to_string()),
                    });
                }
                LockFile::acquire(&self.vfs, &path, timeout).map_err(locked)
            }
            Err(e) => Err(locked(e)),
        }
    }

    /// Appends the reflog lines of one update: to the changed ref (unless it
    /// is deleted), to the symbolic ref it was reached through, and to HEAD
    /// when HEAD points at the changed ref.
    #[allow(clippy::too_many_arguments)]
    fn log_update(
        &self,
        l: &Locked,
        old: &crate::ObjectId,
        new: &crate::ObjectId,
        tx: &Transaction,
        options: &CommitOptions,
        head_target: &Option<RefName>,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let mut names = Vec::new();
        if !new.is_null() {
            names.push(l.planned.target.clone());
        }
        names.extend(l.planned.via.clone());
        if head_target.as_ref() == Some(&l.planned.target) && l.planned.via.is_none() {
            names.push(RefName::new("HEAD").expect("valid"));
        }
        let line = reflog::line(old, new, &options.signature, tx.message.as_deref());
        for name in names {
            self.append_reflog(
                &name,
                &line,
                tx.create_reflog,
                options.log_updates,
                batch,
                journal,
            )?;
        }
        Ok(())
    }

    /// Appends a line to HEAD's reflog only, if the update involves HEAD
    /// (names it, or changes the ref HEAD points at).
    #[allow(clippy::too_many_arguments)]
    fn log_head_only(
        &self,
        l: &Locked,
        old: &crate::ObjectId,
        new: &crate::ObjectId,
        message: Option<&str>,
        options: &CommitOptions,
        head_target: &Option<RefName>,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let via_head = l
            .planned
            .via
            .as_ref()
            .is_some_and(|v| v.as_bytes() == b"HEAD");
        let points_at_target =
            l.planned.via.is_none() && head_target.as_ref() == Some(&l.planned.target);
        if !via_head && !points_at_target {
            return Ok(());
        }
        let line = reflog::line(old, new, &options.signature, message);
        let head = RefName::new("HEAD").expect("valid");
        // The update's own create-reflog flag does not apply to HEAD.
        self.append_reflog(&head, &line, false, options.log_updates, batch, journal)
    }

    fn append_reflog(
        &self,
        name: &RefName,
        line: &[u8],
        force_create: bool,
        policy: LogRefUpdates,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let path = self.logs_path(name);
        let create = force_create || reflog::autocreates(policy, name.as_bytes());
        // The length before the append, so that a failed transaction can
        // cut its line off again.
        let previous = match self.vfs.stat(&path) {
            Ok(m) if m.kind == FileKind::File => Some(m.len),
            Ok(_) => None,
            Err(e) if e.is_not_found() || e.raw_os_error() == Some(20) => None,
            Err(e) => return Err(e.into()),
        };
        if !create && previous.is_none() {
            return Ok(());
        }
        let parent = path.parent().expect("logs have a directory");
        batch.create_dir_all(parent)?;
        batch.dir_changed(parent);
        let mut file = self.vfs.open_append(&path)?;
        journal
            .appended
            .push((path.clone(), previous, line.len() as u64, journal.update));
        file.write_all(line)?;
        batch.stage(file)?;
        Ok(())
    }

    /// Removes `dir` if it holds nothing but empty directories.
    fn remove_empty_tree(&self, dir: &Path) -> bool {
        let Ok(entries) = self.vfs.read_dir(dir) else {
            return false;
        };
        entries
            .iter()
            .all(|e| e.kind == FileKind::Dir && self.remove_empty_tree(&dir.join(&e.name)))
            && self.vfs.rmdir(dir).is_ok()
    }

    /// Removes `dir` and its parents while they are empty, stopping at the
    /// top directories (`refs/`, `logs/refs/` and the namespaces in them).
    pub(super) fn remove_empty_dirs(&self, dir: &Path, batch: &mut FlushBatch) {
        // Compared as bytes below the common directory: this runs for every
        // deleted ref, and building and comparing paths per call showed.
        const STOPS: [&[u8]; 7] = [
            b"",
            b"refs",
            b"refs/heads",
            b"refs/tags",
            b"logs",
            b"logs/refs",
            b"logs/refs/heads",
        ];
        let is_stop = |dir: &Path| match dir.strip_prefix(&self.common_dir) {
            Ok(relative) => dir == self.git_dir || STOPS.contains(&relative.as_os_str().as_bytes()),
            Err(_) => true,
        };
        let mut dir = dir.to_owned();
        while !is_stop(&dir) {
            if self.vfs.rmdir(&dir).is_err() {
                return;
            }
            batch.dir_removed(&dir);
            let parent = dir.parent().expect("below the common dir").to_owned();
            batch.dir_changed(&parent);
            dir = parent;
        }
    }
}

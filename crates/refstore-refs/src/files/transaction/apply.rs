//! Steps 4 to 6 of a commit: the reflog lines and flush point one, then
//! `packed-refs` and every ref made visible, the deleted refs' files and
//! emptied directories removed, and flush point two.

use super::journal::Journal;
use super::prepared::{CommitOptions, Locked, Prepared};
use super::CommitError;
use crate::files::packed::PackedSnapshot;
use crate::files::packed_lock::PackedLock;
use crate::files::{reflog, FilesBackend, ReadError};
use crate::transaction::{Change, Outcome, Transaction};
use crate::value::Target;
use crate::RefName;
use refstore_fs::flush::FlushBatch;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

impl Prepared<'_> {
    /// Steps 4 to 6 of a commit; `visible` records which updates took
    /// effect, in case of failure.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
        backend: &FilesBackend,
        tx: &Transaction,
        options: &CommitOptions,
        packed: &PackedSnapshot,
        batch: &mut FlushBatch,
        mut locked: Vec<Locked>,
        mut packed_lock: Option<PackedLock>,
        outcome: &mut Outcome,
        journal: &mut Journal,
        visible: &mut [bool],
    ) -> Result<(), CommitError> {
        // 4. The reflog lines, then flush point one.
        log_updates(backend, tx, options, packed, batch, &locked, journal)?;
        for l in &mut locked {
            l.lock.stage(batch)?;
        }
        batch.flush_files()?;

        // 5. Make it visible: packed-refs first, then the loose refs.
        // packed-refs.lock stays held until the deleted refs' loose files
        // are gone (see `packed_lock`).
        install_packed(backend, tx, batch, &locked, &mut packed_lock)?;
        let cleanup_error =
            make_visible(backend, tx, batch, locked, packed_lock, outcome, visible)?;

        // 6. Flush point two.
        batch.flush_dirs()?;
        cleanup_error.map_or(Ok(()), Err)
    }
}

/// Appends the reflog lines of every update (step 4, before the flush).
fn log_updates(
    backend: &FilesBackend,
    tx: &Transaction,
    options: &CommitOptions,
    packed: &PackedSnapshot,
    batch: &mut FlushBatch,
    locked: &[Locked],
    journal: &mut Journal,
) -> Result<(), CommitError> {
    let head_target = match backend.read_loose(&RefName::new("HEAD").expect("valid")) {
        Ok(Some(Target::Symbolic(t))) => Some(t),
        Ok(_) | Err(ReadError::BrokenRef { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    for (i, l) in locked.iter().enumerate() {
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
    Ok(())
}

/// Renames the new `packed-refs` into place, when the transaction rewrites
/// it (the first rename of step 5).
fn install_packed(
    backend: &FilesBackend,
    tx: &Transaction,
    batch: &mut FlushBatch,
    locked: &[Locked],
    packed_lock: &mut Option<PackedLock>,
) -> Result<(), CommitError> {
    let vfs = backend.vfs.clone();
    if let Some(packed) = packed_lock {
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
    Ok(())
}

/// Renames every ref lock onto its ref and removes the deleted refs'
/// files, reflogs and emptied directories, then releases
/// `packed-refs.lock` (the rest of step 5). A cleanup that failed after
/// its update took effect is returned, to be reported once the changes
/// are durable.
fn make_visible(
    backend: &FilesBackend,
    tx: &Transaction,
    batch: &mut FlushBatch,
    locked: Vec<Locked>,
    packed_lock: Option<PackedLock>,
    outcome: &mut Outcome,
    visible: &mut [bool],
) -> Result<Option<CommitError>, CommitError> {
    let vfs = backend.vfs.clone();
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
    Ok(cleanup_error)
}

impl FilesBackend {
    /// Removes `dir` and its parents while they are empty, stopping at the
    /// top directories (`refs/`, `logs/refs/` and the namespaces in them).
    pub(in crate::files) fn remove_empty_dirs(&self, dir: &Path, batch: &mut FlushBatch) {
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

//! Step 2 of [`prepare`](super::prepare): taking the lock of every ref
//! (writing its new value into the lock file), and `packed-refs.lock` for a
//! transaction that deletes refs.

use super::prepared::CommitOptions;
use super::CommitError;
use crate::files::{loose, FilesBackend};
use crate::plan::Planned;
use crate::transaction::{Change, Rejected, Rejection, Transaction};
use crate::RefName;
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::{LockError, LockFile};
use refstore_fs::FileKind;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A planned update with its lock, or the reason it is rejected (reported
/// once the old values are checked, in the order of the updates).
pub(super) type Held = (Planned, Result<LockFile, Rejection>);

impl FilesBackend {
    /// Locks the ref of every update in `planned`, in order, except those
    /// `blocked` rejects, and writes each new value into its lock file.
    pub(super) fn lock_refs(
        &self,
        tx: &Transaction,
        planned: Vec<Planned>,
        blocked: &mut BTreeMap<RefName, Rejection>,
        options: &CommitOptions,
        batch: &mut FlushBatch,
    ) -> Result<Vec<Held>, CommitError> {
        // Rejections wait for the checks below, so that they come in the
        // order of the updates, as git reports them.
        let mut held: Vec<(Planned, Result<LockFile, Rejection>)> =
            Vec::with_capacity(planned.len());
        for p in planned {
            let lock = match blocked.remove(&p.target) {
                Some(reason) => Err(reason),
                None => self.lock_ref(&p.target, options.lock_timeout, batch),
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
                            lock.stage(batch)?;
                        }
                        _ => lock.close_handle(),
                    }
                    Ok(lock)
                }
                Err(reason) => Err(reason),
            };
            held.push((p, lock));
        }
        Ok(held)
    }

    /// Takes `packed-refs.lock` if the transaction deletes a ref below
    /// `refs/` whose lock it holds.
    pub(super) fn lock_packed_for_deletes(
        &self,
        tx: &Transaction,
        held: &[Held],
        options: &CommitOptions,
    ) -> Result<Option<LockFile>, CommitError> {
        // A transaction that deletes a ref below `refs/` holds
        // `packed-refs.lock` from here until its loose files are gone, as
        // git does: otherwise a `pack-refs` in between could pack the ref,
        // fail to prune its locked loose file, and the ref would come back
        // from `packed-refs` once only its loose file is removed.
        let deletes = held.iter().find(|(p, lock)| {
            lock.is_ok() && tx.updates[p.index].change == Change::Delete && !p.target.is_root_ref()
        });
        Ok(match deletes {
            Some((first, _)) => Some(
                LockFile::acquire(&self.vfs, self.packed_path(), options.packed_refs_timeout)
                    .map_err(|e| match e {
                        LockError::Io(e) => CommitError::Fs(e),
                        held => CommitError::Rejected(Rejected {
                            name: first.target.clone(),
                            reason: Rejection::Locked(held.to_string()),
                        }),
                    })?,
            ),
            None => None,
        })
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
}

//! Packing loose refs into `packed-refs` (`pack-refs`), then pruning the
//! loose files that were packed.
//!
//! 1. Lock `packed-refs` and read it afresh under the lock.
//! 2. Merge in the loose refs to pack (tags and already packed refs, or
//!    every ref with `all`); symbolic and broken refs stay loose. Annotated
//!    tags get their peeled line from the caller's `peel`.
//! 3. Write, flush, rename: the new `packed-refs` is durable before any
//!    loose file goes away, so a crash leaves each ref loose or packed with
//!    the same value.
//! 4. Prune: each packed loose ref is locked, re-read, and removed only if
//!    it still holds the packed value (a concurrent update wins). Emptied
//!    directories go too; one directory flush ends it.

use super::packed;
use super::transaction::CommitError;
use super::FilesBackend;
use crate::value::Target;
use crate::{ObjectId, RefName};
use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_fs::lock::{LockError, LockFile};
use std::collections::BTreeMap;
use std::time::Duration;

/// How `pack-refs` runs.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Pack every ref, not just tags and refs already packed (`--all`).
    pub all: bool,
    /// Remove the loose files of packed refs (not `--no-prune`).
    pub prune: bool,
    /// How files are flushed (`core.fsync` reference component).
    pub flush: FlushMethod,
    /// `core.filesRefLockTimeout`, for pruning.
    pub lock_timeout: Duration,
    /// `core.packedRefsTimeout`.
    pub packed_refs_timeout: Duration,
}

/// What `pack-refs` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PackOutcome {
    /// Refs in `packed-refs` afterwards.
    pub packed: usize,
    /// Loose files removed.
    pub pruned: usize,
}

/// Refs private to one worktree, which git never packs.
fn is_per_worktree(name: &[u8]) -> bool {
    [&b"refs/bisect/"[..], b"refs/worktree/", b"refs/rewritten/"]
        .iter()
        .any(|p| name.starts_with(p))
}

impl FilesBackend {
    /// Packs loose refs into `packed-refs`. `peel` gives the fully peeled
    /// object of an annotated tag (`None` for any other object).
    pub fn pack_refs(
        &self,
        options: &PackOptions,
        peel: &dyn Fn(&ObjectId) -> Option<ObjectId>,
    ) -> Result<PackOutcome, CommitError> {
        let vfs = self.vfs.clone();
        let mut batch = self.flush_batch(options.flush);
        let mut lock = LockFile::acquire(&vfs, self.packed_path(), options.packed_refs_timeout)
            .map_err(|e| match e {
                LockError::Io(e) => CommitError::Fs(e),
                held => CommitError::Locked(held.to_string()),
            })?;
        let current = self.packed()?;
        let mut merged: BTreeMap<RefName, (ObjectId, Option<ObjectId>)> = current
            .iter()
            .filter_map(|r| {
                let id = *r.target.object_id()?;
                // Without the fully-peeled trait a missing peeled line says
                // nothing; the value is computed afresh.
                let peeled = if current.is_fully_peeled() {
                    r.peeled
                } else {
                    peel(&id)
                };
                Some((r.name, (id, peeled)))
            })
            .collect();
        let mut to_prune = Vec::new();
        for name in self.loose_names(b"refs/")? {
            if is_per_worktree(name.as_bytes()) {
                continue;
            }
            let in_packed = current.find(name.as_bytes()).is_some();
            if !options.all && !name.as_bytes().starts_with(b"refs/tags/") && !in_packed {
                continue;
            }
            let id = match self.read_loose(&name) {
                Ok(Some(Target::Object(id))) => id,
                // Symbolic refs stay loose; broken ones are left alone.
                Ok(_) | Err(super::ReadError::BrokenRef { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            merged.insert(name.clone(), (id, peel(&id)));
            to_prune.push((name, id));
        }
        lock.write_all(&packed::write(
            merged.iter().map(|(n, (id, p))| (n.clone(), *id, *p)),
        ))?;
        lock.stage(&mut batch)?;
        batch.flush_files()?;
        lock.commit(&mut batch)?;
        batch.flush_dirs()?;

        let mut outcome = PackOutcome {
            packed: merged.len(),
            pruned: 0,
        };
        if options.prune {
            let mut batch = self.flush_batch(options.flush);
            for (name, id) in to_prune {
                if self.prune_loose(&name, &id, options.lock_timeout, &mut batch)? {
                    outcome.pruned += 1;
                }
            }
            batch.flush_dirs()?;
        }
        Ok(outcome)
    }

    /// Removes the loose file of `name` if, under its lock, it still holds
    /// `id`. A ref someone else holds locked is left loose.
    fn prune_loose(
        &self,
        name: &RefName,
        id: &ObjectId,
        timeout: Duration,
        batch: &mut FlushBatch,
    ) -> Result<bool, CommitError> {
        let path = self.loose_path(name);
        let lock = match LockFile::acquire(&self.vfs, &path, timeout) {
            Ok(lock) => lock,
            // The ref's directory is gone: a racing deletion removed the ref
            // (and its emptied directory) since it was packed.
            Err(LockError::Io(e)) if e.is_not_found() => return Ok(false),
            Err(LockError::Io(e)) => return Err(CommitError::Fs(e)),
            Err(_) => return Ok(false),
        };
        let unchanged =
            matches!(self.read_loose(name), Ok(Some(Target::Object(now))) if now == *id);
        if unchanged {
            self.vfs.unlink(&path)?;
        }
        lock.rollback()?;
        if unchanged {
            let parent = path.parent().expect("refs have a directory").to_owned();
            batch.dir_changed(&parent);
            self.remove_empty_dirs(&parent, batch);
        }
        Ok(unchanged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_private_refs_are_recognised() {
        assert!(is_per_worktree(b"refs/bisect/bad"));
        assert!(is_per_worktree(b"refs/worktree/x"));
        assert!(!is_per_worktree(b"refs/heads/bisect"));
    }
}

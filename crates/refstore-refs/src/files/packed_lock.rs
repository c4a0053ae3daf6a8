//! `packed-refs.lock` as a transaction that deletes refs holds it: taken
//! after the refs' own locks and kept until their loose files are gone,
//! whether or not a deleted ref is packed.
//!
//! Holding it all that time is what keeps a racing `pack-refs` from
//! packing a ref the transaction is deleting: `pack-refs` reads loose
//! files under this lock, and a loose file read after the new
//! `packed-refs` is in place but before the transaction removes it would
//! be packed again and come back. So the new `packed-refs` is not written
//! into the lock file (renaming that would release the lock) but into
//! `packed-refs.new`, renamed onto `packed-refs` while the lock stays
//! held, as git does.

use super::packed::{self, PackedSnapshot};
use super::transaction::CommitError;
use super::FilesBackend;
use crate::RefName;
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::LockFile;
use refstore_fs::Vfs;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// `packed-refs.lock`, held for a transaction's deletions, and the new
/// `packed-refs` to put in place if a deleted ref was packed. Dropped
/// before it is released, it gives the lock up and removes a new file not
/// put in place.
pub(super) struct PackedLock {
    vfs: Arc<dyn Vfs>,
    lock: Option<LockFile>,
    /// `packed-refs.new`, written and staged, if `packed-refs` changes.
    new: Option<PathBuf>,
}

impl PackedLock {
    /// Whether `packed-refs` is replaced.
    pub(super) fn rewrites(&self) -> bool {
        self.new.is_some()
    }

    /// Puts the new `packed-refs` in place (if any), keeping the lock.
    pub(super) fn install(&mut self, batch: &mut FlushBatch) -> refstore_fs::Result<()> {
        if let (Some(new), Some(lock)) = (&self.new, &self.lock) {
            let target = lock.target().to_owned();
            self.vfs.rename(new, &target)?;
            self.new = None;
            if let Some(dir) = target.parent() {
                batch.dir_changed(dir);
            }
        }
        Ok(())
    }

    /// Releases the lock, removing a new `packed-refs` that was not put
    /// in place.
    pub(super) fn release(mut self) -> refstore_fs::Result<()> {
        if let Some(new) = self.new.take() {
            let _ = self.vfs.unlink(&new);
        }
        match self.lock.take() {
            Some(lock) => lock.rollback(),
            None => Ok(()),
        }
    }
}

impl Drop for PackedLock {
    fn drop(&mut self) {
        if let Some(new) = self.new.take() {
            let _ = self.vfs.unlink(&new);
        }
    }
}

impl FilesBackend {
    /// `packed-refs.new`, where a transaction holding `packed-refs.lock`
    /// writes the file's next content.
    fn packed_new_path(&self) -> PathBuf {
        self.common_dir.join("packed-refs.new")
    }

    /// Prepares the `packed-refs` of `current` (read under `lock`) without
    /// the refs named in `doomed`, if any of them is packed: written to
    /// `packed-refs.new` and staged in `batch`. Otherwise the lock is only
    /// held.
    pub(super) fn write_packed_without(
        &self,
        mut lock: LockFile,
        current: &PackedSnapshot,
        doomed: BTreeSet<&RefName>,
        batch: &mut FlushBatch,
    ) -> Result<PackedLock, CommitError> {
        lock.close_handle();
        if doomed.is_empty() {
            return Ok(PackedLock {
                vfs: self.vfs.clone(),
                lock: Some(lock),
                new: None,
            });
        }
        let parsed;
        let current = match current {
            PackedSnapshot::Parsed(read) => read,
            PackedSnapshot::Sorted { text, format } => {
                parsed = packed::PackedRefs::parse(text.to_vec(), *format)
                    .map_err(|e| self.packed_error(e))?;
                &parsed
            }
        };
        let kept = current
            .iter()
            .filter(|r| !doomed.contains(&r.name))
            .filter_map(|r| {
                let id = *r.target.object_id()?;
                Some((r.name, id, r.peeled))
            });
        let new = self.packed_new_path();
        // Only a holder of the lock writes this file: one found here was
        // left by a process that died holding it.
        match self.vfs.unlink(&new) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
        let mut file = self.vfs.create_exclusive(&new)?;
        let written = file
            .write_all(&packed::write(kept))
            .and_then(|()| batch.stage(file));
        if let Err(e) = written {
            let _ = self.vfs.unlink(&new);
            return Err(e.into());
        }
        Ok(PackedLock {
            vfs: self.vfs.clone(),
            lock: Some(lock),
            new: Some(new),
        })
    }
}

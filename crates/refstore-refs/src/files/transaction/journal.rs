//! The reflog lines a transaction appended, so that a transaction that
//! fails can take back those of the updates that did not become visible.

use std::path::PathBuf;

/// Reflog lines appended by a transaction, so that a transaction that fails
/// can take back those of the updates that did not become visible.
#[derive(Default)]
pub(super) struct Journal {
    /// Index (in `Prepared::locked`) of the update being logged.
    pub(super) update: usize,
    /// Each append: the reflog, its length before (`None`: it was created),
    /// the length of the line, and the update it was for.
    pub(super) appended: Vec<(PathBuf, Option<u64>, u64, usize)>,
}

impl Journal {
    /// Cuts back every reflog appended to for an update that did not become
    /// visible. A reflog that grew by more than this transaction's line was
    /// appended to by another writer (HEAD's is not locked) and is left as
    /// it is. Best effort: the transaction's own error is what is reported.
    pub(super) fn undo(self, vfs: &dyn refstore_fs::Vfs, visible: &[bool]) {
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

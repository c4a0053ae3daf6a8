//! A copy on disk of what a push's pack reader consumed, so that the pack
//! can be read a second time without holding it in memory.
//!
//! `refstore serve` streams objects from a threshold far below
//! `core.bigFileThreshold` (`refstore.bigFileThreshold`), and a streamed
//! object cannot be a delta base. A git client deltifies objects up to its
//! own `core.bigFileThreshold` (512 MiB), so a push that changes a 20 MB
//! file holds such a delta. That push is read again from this copy (and
//! the rest of the request) with git's threshold, as git would take it:
//! the cost of holding those objects whole falls on such pushes alone.
//!
//! The copy is a `tmp_spool_*` file in `objects/`, written through the
//! [`Vfs`] without flushing (it is never part of the repository), removed
//! when dropped; one left by a killed process is removed by the cleanup
//! task with other `tmp_*` files.

use refstore_fs::{Mapped, Vfs, VfsFile};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A file holding what was read through a [`Tee`].
pub(crate) struct Spool {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    file: Option<Box<dyn VfsFile>>,
    /// The first write that failed: the copy is then incomplete.
    failed: Option<io::Error>,
}

impl Spool {
    /// A new, empty spool file in `objects_dir`.
    pub(crate) fn create(vfs: Arc<dyn Vfs>, objects_dir: &Path) -> Result<Spool, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = objects_dir.join(format!("tmp_spool_{}_{n}", std::process::id()));
        let file = vfs
            .create_exclusive(&path)
            .map_err(|e| format!("unable to create {}: {e}", path.display()))?;
        Ok(Spool {
            vfs,
            path,
            file: Some(file),
            failed: None,
        })
    }

    /// Reads `inner`, copying every byte it gives into this file.
    pub(crate) fn tee<'a, R: Read>(&'a mut self, inner: R) -> Tee<'a, R> {
        Tee { inner, spool: self }
    }

    /// Everything copied so far, mapped from the file; fails if a write
    /// failed.
    pub(crate) fn copied(&mut self) -> Result<Mapped, String> {
        if let Some(e) = self.failed.take() {
            return Err(format!("unable to write {}: {e}", self.path.display()));
        }
        drop(self.file.take());
        self.vfs
            .read_mapped(&self.path)
            .map_err(|e| format!("unable to read {}: {e}", self.path.display()))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        drop(self.file.take());
        let _ = self.vfs.unlink(&self.path);
    }
}

/// A reader that copies what it reads into a [`Spool`].
pub(crate) struct Tee<'a, R> {
    inner: R,
    spool: &'a mut Spool,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.spool.failed.is_none() {
            if let Some(file) = &mut self.spool.file {
                if let Err(e) = file.write_all(&buf[..n]) {
                    // Reported only if the copy is needed.
                    self.spool.failed = Some(io::Error::other(e.to_string()));
                }
            }
        }
        Ok(n)
    }
}

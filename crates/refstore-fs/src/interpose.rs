//! A filesystem that runs a hook before each operation: for tests that
//! place another process's step at a chosen point of an operation (a
//! prune that removes an object just as a push freshens it, a push that
//! migrates its objects while housekeeping reads the refs), so that a
//! race that real processes hit only now and then happens every time.
//!
//! The hook sees the operation and its path (for a rename or link, the
//! source) and may do anything, usually through another handle on the
//! same filesystem; the operation then runs on the inner filesystem as
//! usual. Writes through an open file are not operations here.
//!
//! ```
//! use refstore_fs::interpose::Interpose;
//! use refstore_fs::sim::SimFs;
//! use refstore_fs::{Op, Vfs};
//! use std::path::Path;
//! use std::sync::{Arc, Mutex};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! let fs = Interpose::new(Arc::new(SimFs::new()), move |op, path| {
//!     log.lock().unwrap().push((op, path.to_owned()));
//! });
//! fs.mkdir(Path::new("/d")).unwrap();
//! assert_eq!(seen.lock().unwrap()[0], (Op::Mkdir, "/d".into()));
//! ```

use crate::vfs::{DirEntry, FsType, Metadata, Op, Result, Vfs, VfsFile};
use crate::Mapped;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The hook: called with each operation and its path before it runs.
type Hook = dyn Fn(Op, &Path) + Send + Sync;

/// A [`Vfs`] that calls a hook before delegating each operation.
pub struct Interpose {
    inner: Arc<dyn Vfs>,
    hook: Box<Hook>,
}

impl std::fmt::Debug for Interpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpose")
            .field("inner", &self.inner)
            .finish()
    }
}

impl Interpose {
    /// `inner`, with `hook` called before each of its operations.
    pub fn new(inner: Arc<dyn Vfs>, hook: impl Fn(Op, &Path) + Send + Sync + 'static) -> Self {
        Interpose {
            inner,
            hook: Box::new(hook),
        }
    }
}

impl Vfs for Interpose {
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        (self.hook)(Op::CreateExclusive, path);
        self.inner.create_exclusive(path)
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        (self.hook)(Op::OpenAppend, path);
        self.inner.open_append(path)
    }
    fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        (self.hook)(Op::Open, path);
        self.inner.open_existing(path)
    }
    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        (self.hook)(Op::Read, path);
        self.inner.read(path)
    }
    fn read_mapped(&self, path: &Path) -> Result<Mapped> {
        (self.hook)(Op::Read, path);
        self.inner.read_mapped(path)
    }
    fn read_link(&self, path: &Path) -> Result<PathBuf> {
        (self.hook)(Op::ReadLink, path);
        self.inner.read_link(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        (self.hook)(Op::Rename, from);
        self.inner.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        (self.hook)(Op::Link, from);
        self.inner.link(from, to)
    }
    fn unlink(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::Unlink, path);
        self.inner.unlink(path)
    }
    fn mkdir(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::Mkdir, path);
        self.inner.mkdir(path)
    }
    fn rmdir(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::Rmdir, path);
        self.inner.rmdir(path)
    }
    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        (self.hook)(Op::ReadDir, path);
        self.inner.read_dir(path)
    }
    fn stat(&self, path: &Path) -> Result<Metadata> {
        (self.hook)(Op::Stat, path);
        self.inner.stat(path)
    }
    fn fsync_dir(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::FsyncDir, path);
        self.inner.fsync_dir(path)
    }
    fn syncfs(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::Syncfs, path);
        self.inner.syncfs(path)
    }
    fn filesystem_type(&self, path: &Path) -> Result<FsType> {
        (self.hook)(Op::Statfs, path);
        self.inner.filesystem_type(path)
    }
    fn touch(&self, path: &Path) -> Result<()> {
        (self.hook)(Op::SetTimes, path);
        self.inner.touch(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        (self.hook)(Op::Truncate, path);
        self.inner.truncate(path, len)
    }
}

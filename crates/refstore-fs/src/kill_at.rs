//! A filesystem that kills its own process with `SIGKILL` just before its
//! k-th change: for tests that stop a whole command at every step of its
//! work, as the OOM killer or an operator's `kill -9` would, and check
//! what it leaves behind.
//!
//! A change is any call that alters the filesystem or flushes it: creating
//! or opening a file for writing, a write, a flush of a file or directory,
//! a rename, link, unlink, mkdir, rmdir, touch or truncate. Reads are not
//! counted. A killed process leaves everything it wrote in the page cache
//! (unlike a power loss, which [`crate::sim::SimFs`] models), so stopping
//! before each change in turn reaches every state the command can leave.
//!
//! The refstore binary wraps its filesystem in one when the environment
//! names a step ([`STEP_VARIABLE`]); otherwise nothing of this runs.
//!
//! This is a test hook, so it exists only when the crate is built with the
//! `test-kill-at` feature, which the tests' builds enable (through a
//! dev-dependency) and a release build of refstore does not: there,
//! [`from_env`] returns the filesystem as it is and reads no variable.

use crate::vfs::Vfs;
use std::sync::Arc;

/// The environment variable naming the step (1 for the first change) at
/// which the process kills itself.
pub const STEP_VARIABLE: &str = "REFSTORE_TEST_KILL_AT_STEP";

/// Wraps `inner` in a [`KillAt`] if [`STEP_VARIABLE`] names a step;
/// returns it unchanged otherwise.
#[cfg(feature = "test-kill-at")]
pub fn from_env(inner: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    match std::env::var(STEP_VARIABLE)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(step) if step > 0 => Arc::new(KillAt::new(inner, step)),
        _ => inner,
    }
}

/// Returns `inner`: without the `test-kill-at` feature there is no hook.
#[cfg(not(feature = "test-kill-at"))]
pub fn from_env(inner: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    inner
}

#[cfg(feature = "test-kill-at")]
pub use hook::KillAt;

#[cfg(feature = "test-kill-at")]
mod hook {
    use crate::vfs::{DirEntry, FsType, Metadata, RecordLock, Result, Vfs, VfsFile};
    use crate::Mapped;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// Counts changes and kills the process at the chosen one.
    #[derive(Debug)]
    pub struct KillAt {
        inner: Arc<dyn Vfs>,
        counter: Arc<Counter>,
    }

    #[derive(Debug)]
    struct Counter {
        done: AtomicU64,
        kill_at: u64,
    }

    impl Counter {
        /// Called before each change: the `kill_at`-th never happens.
        fn step(&self) {
            let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.kill_at {
                // SIGKILL cannot be caught: nothing runs after this, no
                // destructor, no buffered output.
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
                // The signal is delivered before the call returns; nothing
                // may go on in the meantime.
                loop {
                    std::thread::park();
                }
            }
        }
    }

    impl KillAt {
        /// Kills the process before the `step`-th change made through it.
        pub fn new(inner: Arc<dyn Vfs>, step: u64) -> KillAt {
            KillAt {
                inner,
                counter: Arc::new(Counter {
                    done: AtomicU64::new(0),
                    kill_at: step,
                }),
            }
        }

        fn wrap(&self, file: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
            Box::new(KillAtFile {
                inner: file,
                counter: self.counter.clone(),
            })
        }
    }

    struct KillAtFile {
        inner: Box<dyn VfsFile>,
        counter: Arc<Counter>,
    }

    impl VfsFile for KillAtFile {
        fn path(&self) -> &Path {
            self.inner.path()
        }
        fn write_all(&mut self, buf: &[u8]) -> Result<()> {
            self.counter.step();
            self.inner.write_all(buf)
        }
        fn fsync(&mut self) -> Result<()> {
            self.counter.step();
            self.inner.fsync()
        }
        fn fdatasync(&mut self) -> Result<()> {
            self.counter.step();
            self.inner.fdatasync()
        }
        fn start_writeout(&mut self) -> Result<()> {
            self.inner.start_writeout()
        }
        fn try_flock(&mut self) -> Result<bool> {
            self.inner.try_flock()
        }
        fn record_lock(&mut self, lock: RecordLock) -> Result<bool> {
            self.inner.record_lock(lock)
        }
    }

    impl Vfs for KillAt {
        fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
            self.counter.step();
            self.inner.create_exclusive(path).map(|f| self.wrap(f))
        }
        fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
            self.counter.step();
            self.inner.open_append(path).map(|f| self.wrap(f))
        }
        fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
            self.inner.open_existing(path).map(|f| self.wrap(f))
        }
        fn read(&self, path: &Path) -> Result<Vec<u8>> {
            self.inner.read(path)
        }
        fn read_mapped(&self, path: &Path) -> Result<Mapped> {
            self.inner.read_mapped(path)
        }
        fn read_link(&self, path: &Path) -> Result<PathBuf> {
            self.inner.read_link(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> Result<()> {
            self.counter.step();
            self.inner.rename(from, to)
        }
        fn link(&self, from: &Path, to: &Path) -> Result<()> {
            self.counter.step();
            self.inner.link(from, to)
        }
        fn unlink(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.unlink(path)
        }
        fn mkdir(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.mkdir(path)
        }
        fn rmdir(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.rmdir(path)
        }
        fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
            self.inner.read_dir(path)
        }
        fn stat(&self, path: &Path) -> Result<Metadata> {
            self.inner.stat(path)
        }
        fn fsync_dir(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.fsync_dir(path)
        }
        fn syncfs(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.syncfs(path)
        }
        fn filesystem_type(&self, path: &Path) -> Result<FsType> {
            self.inner.filesystem_type(path)
        }
        fn touch(&self, path: &Path) -> Result<()> {
            self.counter.step();
            self.inner.touch(path)
        }
        fn truncate(&self, path: &Path, len: u64) -> Result<()> {
            self.counter.step();
            self.inner.truncate(path, len)
        }
    }
}

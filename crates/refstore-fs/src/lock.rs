//! Lockfiles with git's protocol, so refstore and git can write one
//! repository at the same time.
//!
//! To change `<path>`, a writer creates `<path>.lock` with `O_CREAT|O_EXCL`;
//! whoever creates it owns the right to replace `<path>`. The new content is
//! written into the lock file, made durable through a [`FlushBatch`], and
//! renamed onto `<path>`; a writer that gives up removes the lock file. A
//! held lock is retried with a growing, jittered backoff until a timeout
//! (git's `core.filesRefLockTimeout`, `core.packedRefsTimeout`); then the
//! error names the lock file and says what to do, as git does.

use crate::flush::FlushBatch;
use crate::stale;
use crate::vfs::{self, Vfs, VfsFile};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process holds the lock and did not release it in time.
    Held {
        /// The lock file that exists.
        lock_path: PathBuf,
    },
    /// Creating the lock file failed for another reason (missing directory,
    /// permissions, ...).
    Io(vfs::Error),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Held { lock_path } => write!(
                f,
                "Unable to create '{}': File exists.\n\n\
                 Another git process seems to be running in this repository, e.g.\n\
                 an editor opened by 'git commit'. Please make sure all processes\n\
                 are terminated then try again. If it still fails, a git process\n\
                 may have crashed in this repository earlier:\n\
                 remove the file manually to continue.",
                lock_path.display()
            ),
            LockError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Held { .. } => None,
            LockError::Io(e) => Some(e),
        }
    }
}

/// `<path>.lock` for `path`.
pub fn lock_path_for(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::with_capacity(path.as_os_str().len() + 5);
    name.push(path.as_os_str());
    name.push(".lock");
    PathBuf::from(name)
}

/// A held lock on one file.
///
/// Dropping a lock that was not committed removes the lock file, so an error
/// anywhere in a transaction releases every lock it took.
pub struct LockFile {
    vfs: Arc<dyn Vfs>,
    target: PathBuf,
    lock_path: PathBuf,
    file: Option<Box<dyn VfsFile>>,
    held: bool,
    /// Set where stale locks are recovered: this process keeps its read
    /// lock on the repository's holder file while the lock is held.
    holding: Option<stale::Hold>,
}

impl fmt::Debug for LockFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockFile")
            .field("lock_path", &self.lock_path)
            .field("held", &self.held)
            .finish()
    }
}

impl LockFile {
    /// Takes the lock for `target`, retrying for up to `timeout` while another
    /// process holds it (zero: one attempt).
    pub fn acquire(
        vfs: &Arc<dyn Vfs>,
        target: impl Into<PathBuf>,
        timeout: Duration,
    ) -> Result<LockFile, LockError> {
        let target = target.into();
        let lock_path = lock_path_for(&target);
        let deadline = vfs.now() + timeout;
        let mut backoff = Duration::from_millis(1);
        let mut holding = stale::before_create(vfs, &lock_path).map_err(LockError::Io)?;
        loop {
            match vfs.create_exclusive(&lock_path) {
                Ok(file) => {
                    if let Some(hold) = &mut holding {
                        hold.created(&lock_path);
                    }
                    return Ok(LockFile {
                        vfs: vfs.clone(),
                        target,
                        lock_path,
                        file: Some(file),
                        held: true,
                        holding,
                    });
                }
                Err(e) if e.is_already_exists() => {
                    // An abandoned lock is removed and the lock taken at once.
                    if holding.is_some()
                        && stale::recover(vfs, &lock_path, holding.as_ref()).unwrap_or(false)
                    {
                        continue;
                    }
                    let now = vfs.now();
                    if now >= deadline {
                        return Err(LockError::Held { lock_path });
                    }
                    vfs.pause(backoff.min(deadline - now));
                    backoff = (backoff * 2).min(Duration::from_millis(1000));
                }
                Err(e) => return Err(LockError::Io(e)),
            }
        }
    }

    /// The file this lock protects.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The lock file itself (`<target>.lock`).
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// Appends to the lock file's new content.
    ///
    /// # Panics
    /// If called after [`stage`](Self::stage).
    pub fn write_all(&mut self, data: &[u8]) -> vfs::Result<()> {
        self.file
            .as_mut()
            .expect("lock file written after it was staged")
            .write_all(data)
    }

    /// Hands the completely written lock file to `batch`, which flushes it at
    /// its data flush point. Call [`commit`](Self::commit) only after that.
    pub fn stage(&mut self, batch: &mut FlushBatch) -> vfs::Result<()> {
        match self.file.take() {
            Some(file) => batch.stage(file),
            None => Ok(()),
        }
    }

    /// Closes the lock file's handle without writing to it, for a lock that
    /// will be rolled back or whose file stays empty: holding thousands of
    /// locks must not mean holding thousands of descriptors.
    pub fn close_handle(&mut self) {
        self.file = None;
    }

    /// Renames the lock file onto its target and records the target's
    /// directory in `batch` for the directory flush point.
    pub fn commit(mut self, batch: &mut FlushBatch) -> vfs::Result<()> {
        debug_assert!(self.file.is_none(), "lock committed before it was staged");
        self.file = None;
        self.vfs.rename(&self.lock_path, &self.target)?;
        self.held = false;
        self.holding = None;
        if let Some(dir) = self.target.parent() {
            batch.dir_changed(dir);
        }
        Ok(())
    }

    /// Gives the lock up, leaving the target unchanged.
    pub fn rollback(mut self) -> vfs::Result<()> {
        self.release()
    }

    fn release(&mut self) -> vfs::Result<()> {
        self.file = None;
        if !self.held {
            return Ok(());
        }
        self.held = false;
        let removed = self.vfs.unlink(&self.lock_path);
        self.holding = None;
        removed
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Best effort: a lock file that cannot be removed is reported by the
        // next writer's "Unable to create ... .lock" message.
        let _ = self.release();
    }
}

/// Commits a set of written locks with the two flush points of `batch`:
/// stage all, flush data once, rename all, flush directories once.
pub fn commit_all(locks: Vec<LockFile>, batch: &mut FlushBatch) -> vfs::Result<()> {
    let mut locks = locks;
    for lock in &mut locks {
        lock.stage(batch)?;
    }
    batch.flush_files()?;
    for lock in locks {
        lock.commit(batch)?;
    }
    batch.flush_dirs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flush::FlushMethod;
    use crate::real::RealFs;
    use std::time::Instant;

    fn setup() -> (tempfile::TempDir, Arc<dyn Vfs>) {
        (tempfile::tempdir().unwrap(), Arc::new(RealFs::new()))
    }

    #[test]
    fn dropped_lock_is_released_and_target_untouched() {
        let (tmp, vfs) = setup();
        let target = tmp.path().join("ref");
        {
            let mut lock = LockFile::acquire(&vfs, &target, Duration::ZERO).unwrap();
            lock.write_all(b"new\n").unwrap();
            assert!(vfs.exists(lock.lock_path()));
        }
        assert!(!vfs.exists(&lock_path_for(&target)));
        assert!(!vfs.exists(&target));
        LockFile::acquire(&vfs, &target, Duration::ZERO)
            .unwrap()
            .rollback()
            .unwrap();
    }

    #[test]
    fn held_lock_fails_after_the_timeout_naming_the_file() {
        let (tmp, vfs) = setup();
        let target = tmp.path().join("packed-refs");
        let _held = LockFile::acquire(&vfs, &target, Duration::ZERO).unwrap();
        let start = Instant::now();
        let err = LockFile::acquire(&vfs, &target, Duration::from_millis(150)).unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(150));
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "Unable to create '{}': File exists.",
                lock_path_for(&target).display()
            )),
            "{msg}"
        );
        assert!(
            msg.contains("remove the file manually to continue"),
            "{msg}"
        );
        assert!(matches!(
            LockFile::acquire(&vfs, &target, Duration::ZERO),
            Err(LockError::Held { .. })
        ));
    }

    #[test]
    fn missing_directory_is_an_io_error() {
        let (tmp, vfs) = setup();
        match LockFile::acquire(&vfs, tmp.path().join("no/such/ref"), Duration::ZERO) {
            Err(LockError::Io(e)) => assert!(e.is_not_found()),
            other => panic!("unexpected: {other:?}"),
        }
    }

    #[test]
    fn commit_all_replaces_every_target() {
        let (tmp, vfs) = setup();
        for method in [FlushMethod::Fsync, FlushMethod::Batch, FlushMethod::None] {
            let mut batch = FlushBatch::new(vfs.clone(), method, tmp.path());
            let locks: Vec<_> = (0..5)
                .map(|i| {
                    let mut l =
                        LockFile::acquire(&vfs, tmp.path().join(format!("r{i}")), Duration::ZERO)
                            .unwrap();
                    l.write_all(format!("{i} {}\n", method.name()).as_bytes())
                        .unwrap();
                    l
                })
                .collect();
            commit_all(locks, &mut batch).unwrap();
            for i in 0..5 {
                let p = tmp.path().join(format!("r{i}"));
                assert_eq!(
                    vfs.read(&p).unwrap(),
                    format!("{i} {}\n", method.name()).as_bytes()
                );
                assert!(!vfs.exists(&lock_path_for(&p)));
            }
        }
    }
}

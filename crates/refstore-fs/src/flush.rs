//! Flush methods and flush batches: how written files become durable.
//!
//! A [`FlushBatch`] collects the files of one transaction and the directories
//! whose entries it changes, and makes them durable at two points: once for
//! file data before anything is renamed into place, once for directory
//! entries before success is reported. What happens at those points is the
//! [`FlushMethod`]:
//!
//! | method | file data | directory entries | durable |
//! |---|---|---|---|
//! | `none` | nothing | nothing | no |
//! | `writeout-only` | write-back started (`sync_file_range`) | nothing | no |
//! | `fsync` | `fsync` each file when it is staged | `fsync` each directory | yes, one device flush per file |
//! | `batch` | write-back started when staged; one flush point | one flush point | yes, two device flushes per transaction |
//!
//! The flush point of `batch` is a [`BatchMechanism`]; see the crate docs for
//! the measurements behind the default.

use crate::vfs::{Result, Vfs, VfsFile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How files are made durable (git's `core.fsyncMethod`, plus `none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlushMethod {
    /// No flushes at all: fast, and a crash can lose or empty any file.
    None,
    /// `fsync` every file before its rename and every changed directory after.
    Fsync,
    /// Start write-back only; orders data on most filesystems, not durable.
    WriteoutOnly,
    /// Stage everything, then one flush point for data and one for directories.
    Batch,
}

impl FlushMethod {
    /// Parses a `core.fsyncMethod` value (`fsync`, `writeout-only`, `batch`).
    pub fn from_config_name(name: &str) -> Option<Self> {
        match name {
            "fsync" => Some(FlushMethod::Fsync),
            "writeout-only" => Some(FlushMethod::WriteoutOnly),
            "batch" => Some(FlushMethod::Batch),
            _ => None,
        }
    }

    /// The method's name as git's config spells it (`none` for no flushing).
    pub fn name(self) -> &'static str {
        match self {
            FlushMethod::None => "none",
            FlushMethod::Fsync => "fsync",
            FlushMethod::WriteoutOnly => "writeout-only",
            FlushMethod::Batch => "batch",
        }
    }

    /// True if a transaction using this method survives power loss once it
    /// reports success.
    pub fn is_durable(self) -> bool {
        matches!(self, FlushMethod::Fsync | FlushMethod::Batch)
    }
}

/// How the single flush point of [`FlushMethod::Batch`] is carried out.
///
/// Both are correct on Linux; `sync_file_range` alone (git's original batch
/// mode) is not, because it flushes no device cache and no metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BatchMechanism {
    /// `fdatasync` (directories: `fsync`) on every staged file at once, from
    /// several threads, so the device commits them together.
    ConcurrentFsync,
    /// One `syncfs(2)` on the repository's filesystem (the default: fastest
    /// where measured, see the crate docs). Flushes everything any process
    /// wrote to that filesystem, which on a host with much unrelated write
    /// traffic can cost more than the transaction's own files; choose
    /// `ConcurrentFsync` there.
    #[default]
    Syncfs,
}

/// Open handles a `ConcurrentFsync` batch keeps before flushing a group.
const MAX_STAGED_HANDLES: usize = 256;

/// Threads used for concurrent flushes: enough to keep a device's queue full,
/// few enough not to matter for memory.
const FLUSH_THREADS: usize = 32;

/// The files and directories of one transaction, flushed together.
///
/// Use: [`stage`](Self::stage) every written file, [`flush_files`](Self::flush_files)
/// once, rename everything into place while calling
/// [`dir_changed`](Self::dir_changed) for each directory that gained or lost
/// an entry, then [`flush_dirs`](Self::flush_dirs) once before reporting
/// success. An error from a flush point fails the transaction; flushes are
/// never retried after a failure.
pub struct FlushBatch {
    vfs: Arc<dyn Vfs>,
    method: FlushMethod,
    mechanism: BatchMechanism,
    filesystem: PathBuf,
    staged: Vec<Box<dyn VfsFile>>,
    /// Whether files were staged since the last data flush point.
    files_pending: bool,
    dirs: BTreeSet<PathBuf>,
    /// Directories known to exist, so each is checked once per batch.
    known_dirs: std::collections::HashSet<PathBuf>,
}

impl std::fmt::Debug for FlushBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlushBatch")
            .field("method", &self.method)
            .field("mechanism", &self.mechanism)
            .field("staged", &self.staged.len())
            .field("dirs", &self.dirs)
            .finish()
    }
}

impl FlushBatch {
    /// A batch for files on the filesystem that holds `filesystem` (the
    /// repository directory: `syncfs` is issued on it).
    pub fn new(vfs: Arc<dyn Vfs>, method: FlushMethod, filesystem: impl Into<PathBuf>) -> Self {
        FlushBatch {
            vfs,
            method,
            mechanism: BatchMechanism::default(),
            filesystem: filesystem.into(),
            staged: Vec::new(),
            files_pending: false,
            dirs: BTreeSet::new(),
            known_dirs: std::collections::HashSet::new(),
        }
    }

    /// Chooses the mechanism of the `batch` flush points.
    pub fn with_mechanism(mut self, mechanism: BatchMechanism) -> Self {
        self.mechanism = mechanism;
        self
    }

    /// The method this batch flushes with.
    pub fn method(&self) -> FlushMethod {
        self.method
    }

    /// Hands over a completely written file. With `fsync` it is flushed now;
    /// with `batch` its write-back starts now and it is flushed at
    /// [`flush_files`](Self::flush_files).
    pub fn stage(&mut self, mut file: Box<dyn VfsFile>) -> Result<()> {
        match self.method {
            FlushMethod::None => Ok(()),
            FlushMethod::Fsync => file.fsync(),
            FlushMethod::WriteoutOnly => file.start_writeout(),
            // One syncfs covers the file without its handle, so none is kept
            // (a transaction of 10k refs must not hold 10k descriptors).
            FlushMethod::Batch if self.mechanism == BatchMechanism::Syncfs => {
                self.files_pending = true;
                Ok(())
            }
            FlushMethod::Batch => {
                // Concurrent flushes finish sooner when write-back is already
                // under way.
                file.start_writeout()?;
                self.staged.push(file);
                // Bounded descriptors: flush early in groups. Each group is
                // still flushed before anything is renamed into place.
                if self.staged.len() >= MAX_STAGED_HANDLES {
                    self.flush_files()?;
                }
                Ok(())
            }
        }
    }

    /// Records that `dir` gained or lost an entry.
    pub fn dir_changed(&mut self, dir: &Path) {
        if self.method.is_durable() && !self.dirs.contains(dir) {
            self.dirs.insert(dir.to_owned());
        }
    }

    /// Records that `dir` was removed: it is no longer flushed (its parent,
    /// which lost the entry, must be recorded with [`dir_changed`](Self::dir_changed)).
    pub fn dir_removed(&mut self, dir: &Path) {
        self.dirs.remove(dir);
        self.known_dirs.remove(dir);
    }

    /// Creates `dir` and any missing parents, recording every directory that
    /// gains an entry, so the new directories survive the directory flush
    /// point along with what is put in them.
    pub fn create_dir_all(&mut self, dir: &Path) -> Result<()> {
        if self.known_dirs.contains(dir) || self.vfs.stat(dir).is_ok() {
            self.known_dirs.insert(dir.to_owned());
            return Ok(());
        }
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.create_dir_all(parent)?;
            self.dir_changed(parent);
        }
        match self.vfs.mkdir(dir) {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => {
                self.known_dirs.insert(dir.to_owned());
                Ok(())
            }
        }
    }

    /// The data flush point: every staged file is durable when this returns.
    pub fn flush_files(&mut self) -> Result<()> {
        if self.method != FlushMethod::Batch {
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        let pending = std::mem::take(&mut self.files_pending);
        match self.mechanism {
            BatchMechanism::Syncfs if pending => self.vfs.syncfs(&self.filesystem),
            BatchMechanism::Syncfs => Ok(()),
            BatchMechanism::ConcurrentFsync if staged.is_empty() => Ok(()),
            BatchMechanism::ConcurrentFsync => {
                concurrently(staged, |mut file: Box<dyn VfsFile>| file.fdatasync())
            }
        }
    }

    /// The directory flush point: every recorded directory's entries are
    /// durable when this returns.
    pub fn flush_dirs(&mut self) -> Result<()> {
        let dirs = std::mem::take(&mut self.dirs);
        if dirs.is_empty() {
            return Ok(());
        }
        match (self.method, self.mechanism) {
            (FlushMethod::Fsync, _) => dirs.iter().try_for_each(|d| self.vfs.fsync_dir(d)),
            (_, BatchMechanism::Syncfs) => self.vfs.syncfs(&self.filesystem),
            (_, BatchMechanism::ConcurrentFsync) => {
                let vfs = &self.vfs;
                concurrently(dirs.into_iter().collect(), |d: PathBuf| vfs.fsync_dir(&d))
            }
        }
    }
}

/// Runs `flush` on every item from up to [`FLUSH_THREADS`] threads; returns
/// the first error after all flushes have finished.
fn concurrently<T: Send>(items: Vec<T>, flush: impl Fn(T) -> Result<()> + Sync) -> Result<()> {
    if items.len() == 1 {
        return items.into_iter().try_for_each(flush);
    }
    let threads = items.len().min(FLUSH_THREADS);
    let mut queues: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        queues[i % threads].push(item);
    }
    let flush = &flush;
    std::thread::scope(|scope| {
        let handles: Vec<_> = queues
            .into_iter()
            .map(|queue| {
                scope.spawn(move || {
                    let mut first_error = None;
                    for item in queue {
                        if let Err(e) = flush(item) {
                            first_error.get_or_insert(e);
                        }
                    }
                    first_error
                })
            })
            .collect();
        let mut first_error = None;
        for handle in handles {
            if let Some(e) = handle.join().expect("a flush thread panicked") {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::RealFs;

    fn write_all(method: FlushMethod, mechanism: BatchMechanism) {
        let tmp = tempfile::tempdir().unwrap();
        let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
        let mut batch = FlushBatch::new(vfs.clone(), method, tmp.path()).with_mechanism(mechanism);
        let mut tmps = Vec::new();
        for i in 0..40 {
            let dir = tmp.path().join(format!("d{}", i % 3));
            vfs.create_dir_all(&dir).unwrap();
            let path = dir.join(format!("f{i}.tmp"));
            let mut f = vfs.create_exclusive(&path).unwrap();
            f.write_all(format!("{i}\n").as_bytes()).unwrap();
            batch.stage(f).unwrap();
            tmps.push(path);
        }
        batch.flush_files().unwrap();
        for path in &tmps {
            vfs.rename(path, &path.with_extension("")).unwrap();
            batch.dir_changed(path.parent().unwrap());
        }
        assert_eq!(batch.dirs.len(), if method.is_durable() { 3 } else { 0 });
        batch.flush_dirs().unwrap();
        assert!(batch.dirs.is_empty() && batch.staged.is_empty());
        for (i, path) in tmps.iter().enumerate() {
            assert_eq!(
                vfs.read(&path.with_extension("")).unwrap(),
                format!("{i}\n").as_bytes()
            );
        }
    }

    #[test]
    fn every_method_leaves_the_right_files() {
        for method in [
            FlushMethod::None,
            FlushMethod::Fsync,
            FlushMethod::WriteoutOnly,
            FlushMethod::Batch,
        ] {
            for mechanism in [BatchMechanism::ConcurrentFsync, BatchMechanism::Syncfs] {
                write_all(method, mechanism);
            }
        }
    }

    #[test]
    fn config_names() {
        for m in [
            FlushMethod::Fsync,
            FlushMethod::WriteoutOnly,
            FlushMethod::Batch,
        ] {
            assert_eq!(FlushMethod::from_config_name(m.name()), Some(m));
        }
        assert_eq!(FlushMethod::from_config_name("none"), None);
        assert!(!FlushMethod::WriteoutOnly.is_durable());
    }
}

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
//!
//! Every flush point that flushed something is reported to the process's
//! [`observe`](crate::observe) observer with the mechanism that carried it
//! out: `fsync` (a file or directory at a time), `fdatasync` (per-file
//! flushes of a batch) or `syncfs`.

use crate::observe;
use crate::vfs::{FsType, Result, Vfs, VfsFile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

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

/// How the flush points of [`FlushMethod::Batch`] are carried out
/// (refstore's `refstore.batchFlush`: `auto`, `syncfs`, `fdatasync`).
///
/// Both concrete mechanisms are correct where they flush at all;
/// `sync_file_range` alone (git's original batch mode) is not, because it
/// flushes no device cache and no metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BatchMechanism {
    /// Chosen per filesystem when a batch first needs it: `Syncfs` where
    /// `syncfs(2)` is known to reach stable storage, `ConcurrentFsync`
    /// everywhere else (see [`for_filesystem`](Self::for_filesystem)).
    #[default]
    Auto,
    /// `fdatasync` (directories: `fsync`) on every staged file at once, from
    /// several threads, so the device commits them together. Correct on
    /// every filesystem that implements `fsync`, FUSE included.
    ConcurrentFsync,
    /// One `syncfs(2)` on the repository's filesystem: the fastest where it
    /// flushes (see the crate docs), and a flush of nothing on FUSE. It also
    /// flushes everything any process wrote to that filesystem, so on a host
    /// with much unrelated write traffic it can cost more than the
    /// transaction's own files; choose `ConcurrentFsync` there.
    Syncfs,
}

impl BatchMechanism {
    /// Parses a `refstore.batchFlush` value (`auto`, `syncfs`, `fdatasync`;
    /// any case).
    pub fn from_config_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "auto" => Some(BatchMechanism::Auto),
            "syncfs" => Some(BatchMechanism::Syncfs),
            "fdatasync" => Some(BatchMechanism::ConcurrentFsync),
            _ => None,
        }
    }

    /// The mechanism's `refstore.batchFlush` name.
    pub fn name(self) -> &'static str {
        match self {
            BatchMechanism::Auto => "auto",
            BatchMechanism::Syncfs => "syncfs",
            BatchMechanism::ConcurrentFsync => "fdatasync",
        }
    }

    /// The mechanism `Auto` chooses on a filesystem of type `fs_type`.
    ///
    /// `syncfs` is chosen only where the filesystem's `sync_fs` operation
    /// commits its journal or checkpoint and flushes the device cache when
    /// asked to wait, as `syncfs(2)` does: ext2/ext3/ext4 (one magic number,
    /// served by the ext4 driver; it issues a cache flush with or without a
    /// journal), XFS (forces the log), Btrfs (commits the transaction) and
    /// F2FS (writes a checkpoint). On tmpfs and ramfs nothing survives power
    /// loss whatever is called, and one `syncfs` is the cheapest way to do
    /// nothing. Everything else gets concurrent `fdatasync`: FUSE, where
    /// `syncfs` sends the daemon no flush request; network filesystems;
    /// overlayfs, whose `syncfs` reaches an upper filesystem of a type
    /// `statfs` does not tell; and filesystems not listed here, for which
    /// per-file flushes are the correct choice that POSIX promises.
    pub fn for_filesystem(fs_type: FsType) -> BatchMechanism {
        match fs_type {
            FsType::EXT4 | FsType::XFS | FsType::BTRFS | FsType::F2FS => BatchMechanism::Syncfs,
            FsType::TMPFS | FsType::RAMFS => BatchMechanism::Syncfs,
            _ => BatchMechanism::ConcurrentFsync,
        }
    }

    /// The concrete mechanism for files under `path`: `self` unless it is
    /// `Auto`, which asks the filesystem's type (one `statfs`). If the type
    /// cannot be read, concurrent `fdatasync`, which is correct everywhere.
    pub fn resolve(self, vfs: &dyn Vfs, path: &Path) -> BatchMechanism {
        match self {
            BatchMechanism::Auto => vfs
                .filesystem_type(path)
                .map_or(BatchMechanism::ConcurrentFsync, Self::for_filesystem),
            concrete => concrete,
        }
    }
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
    /// Directories known to exist, so each is checked once per batch
    /// (keyed by their bytes, which hash faster than a `Path`'s components).
    known_dirs: std::collections::HashSet<std::ffi::OsString>,
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

    /// Chooses the mechanism of the `batch` flush points (`Auto` when not
    /// chosen).
    pub fn with_mechanism(mut self, mechanism: BatchMechanism) -> Self {
        self.mechanism = mechanism;
        self
    }

    /// The concrete mechanism of the `batch` flush points, resolving `Auto`
    /// on first use. One `statfs` per batch is not cached across batches:
    /// it costs about a microsecond, against the hundreds of microseconds
    /// of the device flush it decides.
    fn mechanism(&mut self) -> BatchMechanism {
        if self.mechanism == BatchMechanism::Auto {
            self.mechanism = self.mechanism.resolve(&*self.vfs, &self.filesystem);
        }
        self.mechanism
    }

    /// The method this batch flushes with.
    pub fn method(&self) -> FlushMethod {
        self.method
    }

    /// Hands over a completely written file. With `fsync` it is flushed now;
    /// with `batch` its write-back starts now and it is flushed at
    /// [`flush_files`](Self::flush_files).
    pub fn stage(&mut self, mut file: Box<dyn VfsFile>) -> Result<()> {
        let by_syncfs =
            self.method == FlushMethod::Batch && self.mechanism() == BatchMechanism::Syncfs;
        match self.method {
            FlushMethod::None => Ok(()),
            FlushMethod::Fsync => reported(FSYNC, || file.fsync()),
            FlushMethod::WriteoutOnly => file.start_writeout(),
            // One syncfs covers the file without its handle, so none is kept
            // (a transaction of 10k refs must not hold 10k descriptors).
            FlushMethod::Batch if by_syncfs => {
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
        self.known_dirs.remove(dir.as_os_str());
    }

    /// Creates `dir` and any missing parents, recording every directory that
    /// gains an entry, so the new directories survive the directory flush
    /// point along with what is put in them.
    pub fn create_dir_all(&mut self, dir: &Path) -> Result<()> {
        if self.known_dirs.contains(dir.as_os_str()) {
            return Ok(());
        }
        if self.vfs.stat(dir).is_ok() {
            self.known_dirs.insert(dir.as_os_str().to_owned());
            return Ok(());
        }
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.create_dir_all(parent)?;
            self.dir_changed(parent);
        }
        match self.vfs.mkdir(dir) {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => {
                self.known_dirs.insert(dir.as_os_str().to_owned());
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
        if staged.is_empty() && !pending {
            return Ok(());
        }
        match self.mechanism() {
            BatchMechanism::Syncfs => reported(SYNCFS, || self.vfs.syncfs(&self.filesystem)),
            _ => reported(FDATASYNC, || {
                concurrently(staged, |mut file: Box<dyn VfsFile>| file.fdatasync())
            }),
        }
    }

    /// One flush point for both: every staged file and every recorded
    /// directory's entries are durable when this returns. With `syncfs`
    /// that is one call where [`flush_files`](Self::flush_files) followed
    /// by [`flush_dirs`](Self::flush_dirs) would make two; per-file
    /// flushes of the files and the directories run in one batch.
    pub fn flush_files_and_dirs(&mut self) -> Result<()> {
        if self.method != FlushMethod::Batch {
            self.flush_files()?;
            return self.flush_dirs();
        }
        let staged = std::mem::take(&mut self.staged);
        let pending = std::mem::take(&mut self.files_pending);
        let dirs = std::mem::take(&mut self.dirs);
        if staged.is_empty() && !pending && dirs.is_empty() {
            return Ok(());
        }
        match self.mechanism() {
            BatchMechanism::Syncfs => reported(SYNCFS, || self.vfs.syncfs(&self.filesystem)),
            _ => {
                let vfs = &self.vfs;
                let items: Vec<Pending> = staged
                    .into_iter()
                    .map(Pending::File)
                    .chain(dirs.into_iter().map(Pending::Dir))
                    .collect();
                reported(FDATASYNC, || {
                    concurrently(items, |item| match item {
                        Pending::File(mut file) => file.fdatasync(),
                        Pending::Dir(dir) => vfs.fsync_dir(&dir),
                    })
                })
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
        if self.method == FlushMethod::Fsync {
            return reported(FSYNC, || {
                dirs.iter().try_for_each(|d| self.vfs.fsync_dir(d))
            });
        }
        match self.mechanism() {
            BatchMechanism::Syncfs => reported(SYNCFS, || self.vfs.syncfs(&self.filesystem)),
            _ => {
                let vfs = &self.vfs;
                reported(FDATASYNC, || {
                    concurrently(dirs.into_iter().collect(), |d: PathBuf| vfs.fsync_dir(&d))
                })
            }
        }
    }
}

/// The mechanism names flush points are reported with.
const FSYNC: &str = "fsync";
const FDATASYNC: &str = "fdatasync";
const SYNCFS: &str = "syncfs";

/// Runs one flush point and reports it, with its duration, to the
/// process's observer if there is one and the flush succeeded (a failed
/// flush fails its transaction, which reports the failure).
fn reported(mechanism: &'static str, flush: impl FnOnce() -> Result<()>) -> Result<()> {
    let Some(observer) = observe::observer() else {
        return flush();
    };
    let start = Instant::now();
    flush()?;
    observer.flushed(mechanism, start.elapsed());
    Ok(())
}

/// A file or a directory waiting for a combined flush point.
enum Pending {
    File(Box<dyn VfsFile>),
    Dir(PathBuf),
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
    use crate::vfs::Op;

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
            for mechanism in [
                BatchMechanism::Auto,
                BatchMechanism::ConcurrentFsync,
                BatchMechanism::Syncfs,
            ] {
                write_all(method, mechanism);
            }
        }
    }

    #[test]
    fn auto_resolves_by_filesystem_type() {
        let sim = crate::sim::SimFs::new();
        let fuse = crate::sim::SimFs::fuse();
        let root = Path::new("/");
        assert_eq!(
            BatchMechanism::Auto.resolve(&sim, root),
            BatchMechanism::Syncfs
        );
        assert_eq!(
            BatchMechanism::Auto.resolve(&fuse, root),
            BatchMechanism::ConcurrentFsync
        );
        // A chosen mechanism is kept whatever the filesystem.
        assert_eq!(
            BatchMechanism::Syncfs.resolve(&fuse, root),
            BatchMechanism::Syncfs
        );
        // A type that cannot be read falls back to per-file flushes.
        assert_eq!(
            BatchMechanism::Auto.resolve(&sim, Path::new("/missing")),
            BatchMechanism::ConcurrentFsync
        );
        for (fs_type, expected) in [
            (FsType::EXT4, BatchMechanism::Syncfs),
            (FsType::XFS, BatchMechanism::Syncfs),
            (FsType::BTRFS, BatchMechanism::Syncfs),
            (FsType::F2FS, BatchMechanism::Syncfs),
            (FsType::TMPFS, BatchMechanism::Syncfs),
            (FsType::FUSE, BatchMechanism::ConcurrentFsync),
            (FsType::NFS, BatchMechanism::ConcurrentFsync),
            (FsType::OVERLAYFS, BatchMechanism::ConcurrentFsync),
            (FsType::ZFS, BatchMechanism::ConcurrentFsync),
            (FsType(0x1234), BatchMechanism::ConcurrentFsync),
        ] {
            assert_eq!(
                BatchMechanism::for_filesystem(fs_type),
                expected,
                "{fs_type:?}"
            );
        }
    }

    #[test]
    fn auto_on_the_real_filesystem_follows_statfs() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let fs_type = fs.filesystem_type(tmp.path()).unwrap();
        assert_eq!(
            BatchMechanism::Auto.resolve(&fs, tmp.path()),
            BatchMechanism::for_filesystem(fs_type)
        );
        // /dev/shm is tmpfs wherever it exists.
        if fs.filesystem_type(Path::new("/dev/shm")).ok() == Some(FsType::TMPFS) {
            assert_eq!(
                BatchMechanism::Auto.resolve(&fs, Path::new("/dev/shm")),
                BatchMechanism::Syncfs
            );
        }
    }

    /// The flush operations of an `Auto` batch of `files` new files in one
    /// directory on a simulated ext4, with both flush points.
    fn auto_batch_ops(files: usize, combined: bool) -> Vec<Op> {
        let sim = crate::sim::SimFs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
        vfs.create_dir_all(Path::new("/repo/d")).unwrap();
        sim.start_tracing();
        let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Batch, "/repo");
        for i in 0..files {
            let mut f = vfs
                .create_exclusive(&Path::new("/repo/d").join(format!("f{i}")))
                .unwrap();
            f.write_all(b"x").unwrap();
            batch.stage(f).unwrap();
        }
        batch.dir_changed(Path::new("/repo/d"));
        if combined {
            batch.flush_files_and_dirs().unwrap();
        } else {
            batch.flush_files().unwrap();
            batch.flush_dirs().unwrap();
        }
        sim.traced_ops()
            .into_iter()
            .map(|(op, _)| op)
            .filter(|op| matches!(op, Op::Syncfs | Op::Fdatasync | Op::FsyncDir))
            .collect()
    }

    #[test]
    fn auto_flushes_batches_of_every_size_by_syncfs_where_it_flushes() {
        use Op::*;
        for files in [1, 2, 8, 9, 1000] {
            assert_eq!(auto_batch_ops(files, false), [Syncfs, Syncfs], "{files}");
            assert_eq!(auto_batch_ops(files, true), [Syncfs], "{files}");
        }
    }

    #[test]
    fn an_explicit_syncfs_batch_never_flushes_file_by_file() {
        let sim = crate::sim::SimFs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
        vfs.create_dir_all(Path::new("/repo/d")).unwrap();
        sim.start_tracing();
        let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Batch, "/repo")
            .with_mechanism(BatchMechanism::Syncfs);
        let mut f = vfs.create_exclusive(Path::new("/repo/d/a")).unwrap();
        f.write_all(b"x").unwrap();
        batch.stage(f).unwrap();
        batch.flush_files().unwrap();
        batch.dir_changed(Path::new("/repo/d"));
        batch.flush_dirs().unwrap();
        let ops: Vec<Op> = sim.traced_ops().into_iter().map(|(op, _)| op).collect();
        assert_eq!(
            ops.iter().filter(|&&op| op == Op::Syncfs).count(),
            2,
            "{ops:?}"
        );
        assert!(!ops.contains(&Op::Fdatasync), "{ops:?}");
        assert!(!ops.contains(&Op::FsyncDir), "{ops:?}");
    }

    #[test]
    fn a_fuse_batch_flushes_each_file_and_directory() {
        let fuse = crate::sim::SimFs::fuse();
        let vfs: Arc<dyn Vfs> = Arc::new(fuse.clone());
        vfs.create_dir_all(Path::new("/repo/d")).unwrap();
        fuse.start_tracing();
        let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Batch, "/repo");
        for name in ["a", "b"] {
            let mut f = vfs
                .create_exclusive(&Path::new("/repo/d").join(name))
                .unwrap();
            f.write_all(b"x").unwrap();
            batch.stage(f).unwrap();
        }
        batch.flush_files().unwrap();
        batch.dir_changed(Path::new("/repo/d"));
        batch.flush_dirs().unwrap();
        let ops: Vec<Op> = fuse.traced_ops().into_iter().map(|(op, _)| op).collect();
        assert!(!ops.contains(&Op::Syncfs), "{ops:?}");
        assert_eq!(ops.iter().filter(|&&op| op == Op::Fdatasync).count(), 2);
        assert_eq!(ops.iter().filter(|&&op| op == Op::FsyncDir).count(), 1);
    }

    #[test]
    fn mechanism_config_names() {
        for m in [
            BatchMechanism::Auto,
            BatchMechanism::Syncfs,
            BatchMechanism::ConcurrentFsync,
        ] {
            assert_eq!(BatchMechanism::from_config_name(m.name()), Some(m));
        }
        assert_eq!(
            BatchMechanism::from_config_name("FDataSync"),
            Some(BatchMechanism::ConcurrentFsync)
        );
        assert_eq!(BatchMechanism::from_config_name("fsync"), None);
        assert_eq!(BatchMechanism::default(), BatchMechanism::Auto);
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

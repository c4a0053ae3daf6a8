//! The filesystem interface every storage layer of refstore is written against.
//!
//! The trait is deliberately small and close to POSIX: exclusive creation,
//! whole-file reads, renames, directory operations and the four flush
//! primitives refstore's durability rests on (`fsync`, `fdatasync`, directory
//! `fsync`, `syncfs`) plus write-back initiation. Paths are absolute or
//! relative to the process's working directory, exactly as `std::fs` treats
//! them.
//!
//! Errors carry the operation and the path, so a message shown to a user
//! always names the file that failed.

use crate::Mapped;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A result whose error names the filesystem operation and path that failed.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The filesystem operation that failed, for error messages and fault injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Op {
    CreateExclusive,
    OpenAppend,
    Write,
    Read,
    ReadLink,
    Rename,
    Link,
    Unlink,
    Mkdir,
    Rmdir,
    ReadDir,
    Stat,
    Fsync,
    Fdatasync,
    FsyncDir,
    Syncfs,
    Statfs,
    StartWriteout,
    SetTimes,
    Truncate,
    Flock,
    Open,
    RecordLock,
}

impl Op {
    /// The verb used in error messages, e.g. "cannot rename 'a'".
    pub fn verb(self) -> &'static str {
        match self {
            Op::CreateExclusive => "create",
            Op::OpenAppend => "open for appending",
            Op::Write => "write",
            Op::Read => "read",
            Op::ReadLink => "read link",
            Op::Rename => "rename",
            Op::Link => "link",
            Op::Unlink => "remove",
            Op::Mkdir => "create directory",
            Op::Rmdir => "remove directory",
            Op::ReadDir => "read directory",
            Op::Stat => "stat",
            Op::Fsync => "fsync",
            Op::Fdatasync => "fdatasync",
            Op::FsyncDir => "fsync directory",
            Op::Flock => "lock",
            Op::Syncfs => "syncfs",
            Op::Statfs => "statfs",
            Op::StartWriteout => "start write-back of",
            Op::SetTimes => "set times of",
            Op::Truncate => "truncate",
            Op::Open => "open",
            Op::RecordLock => "lock",
        }
    }
}

/// A failed filesystem operation: what was attempted, on which path, and why.
#[derive(Debug)]
pub struct Error {
    /// The operation that failed.
    pub op: Op,
    /// The path it was applied to (for a rename or link: the source).
    pub path: PathBuf,
    /// The underlying OS error.
    pub source: io::Error,
}

impl Error {
    /// Wraps an OS error with the operation and path it came from.
    pub fn new(op: Op, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error {
            op,
            path: path.into(),
            source,
        }
    }

    /// The kind of the underlying OS error.
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }

    /// True if the path (or a parent directory) does not exist.
    pub fn is_not_found(&self) -> bool {
        self.kind() == io::ErrorKind::NotFound
    }

    /// True if exclusive creation, mkdir or link found the path taken.
    pub fn is_already_exists(&self) -> bool {
        self.kind() == io::ErrorKind::AlreadyExists
    }

    /// The raw OS error number, if there is one (`ENOTDIR`, `ENOTEMPTY`, ...).
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} '{}': {}",
            self.op.verb(),
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// What a directory entry or stat result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed by [`Vfs::stat`]).
    Symlink,
    /// Anything else (socket, fifo, device).
    Other,
}

/// The subset of `lstat(2)` refstore uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// File type, without following a final symlink.
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification time.
    pub modified: SystemTime,
}

/// The kind of filesystem holding a path: the magic number `statfs(2)`
/// reports in `f_type` (see `statfs(2)` and `linux/magic.h`).
///
/// Durability decisions depend on it: `syncfs(2)` reaches stable storage on
/// some filesystems and does nothing of the kind on others (see
/// [`crate::flush::BatchMechanism::for_filesystem`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsType(pub u32);

impl FsType {
    /// ext2, ext3 and ext4 (one magic number for all three).
    pub const EXT4: FsType = FsType(0xEF53);
    /// XFS.
    pub const XFS: FsType = FsType(0x5846_5342);
    /// Btrfs.
    pub const BTRFS: FsType = FsType(0x9123_683E);
    /// F2FS.
    pub const F2FS: FsType = FsType(0xF2F5_2010);
    /// tmpfs (also `/dev/shm`).
    pub const TMPFS: FsType = FsType(0x0102_1994);
    /// ramfs.
    pub const RAMFS: FsType = FsType(0x8584_58F6);
    /// Every FUSE filesystem (sshfs, s3fs, GlusterFS, JuiceFS, ...).
    pub const FUSE: FsType = FsType(0x6573_5546);
    /// overlayfs (container root filesystems).
    pub const OVERLAYFS: FsType = FsType(0x794C_7630);
    /// NFS.
    pub const NFS: FsType = FsType(0x6969);
    /// ZFS (OpenZFS).
    pub const ZFS: FsType = FsType(0x2FC1_2FC1);
}

/// One entry of a directory listing (never `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirEntry {
    /// The entry's name within its directory.
    pub name: std::ffi::OsString,
    /// Its type, without following symlinks.
    pub kind: FileKind,
}

/// An open, writable file.
///
/// Dropping the handle closes the file; nothing is flushed implicitly.
pub trait VfsFile: Send {
    /// The path the file was opened at.
    fn path(&self) -> &Path;
    /// Appends all of `buf` at the current position (retrying short writes).
    fn write_all(&mut self, buf: &[u8]) -> Result<()>;
    /// `fsync(2)`: data and metadata of this file reach stable storage.
    /// Does not make the file's directory entry durable.
    fn fsync(&mut self) -> Result<()>;
    /// `fdatasync(2)`: data (and the size) of this file reach stable storage.
    fn fdatasync(&mut self) -> Result<()>;
    /// Starts write-back of dirty pages without waiting for the device and
    /// without a cache flush (`sync_file_range(SYNC_FILE_RANGE_WRITE)`).
    /// Guarantees nothing about durability on its own.
    fn start_writeout(&mut self) -> Result<()>;
    /// Takes an exclusive advisory lock (`flock(2)`) on the open file without
    /// waiting; false if another open file description holds one. The lock
    /// goes with the handle, and with the process when it dies. A filesystem
    /// model with a single process (`SimFs`) always grants it.
    fn try_flock(&mut self) -> Result<bool> {
        Ok(true)
    }
    /// Sets this process's POSIX record lock (`fcntl(F_SETLK)`) on the
    /// file's first byte without waiting: a shared read lock, an exclusive
    /// write lock, or none. False if another process holds a conflicting
    /// lock; the process's previous lock on the byte is then unchanged.
    /// The lock belongs to the process, not to the handle: a process never
    /// conflicts with itself, changing between read and write is atomic, and
    /// closing ANY descriptor of the file in the process drops it (as does
    /// the process's death). The file must be open for reading and writing.
    /// A filesystem model with a single process (`SimFs`) always grants it.
    fn record_lock(&mut self, lock: RecordLock) -> Result<bool> {
        let _ = lock;
        Ok(true)
    }
}

/// A POSIX record lock to set with [`VfsFile::record_lock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordLock {
    /// Shared: any number of processes may hold it together.
    Read,
    /// Exclusive: granted only while no other process holds any lock.
    Write,
    /// Releases the process's lock.
    Unlock,
}

/// The filesystem, as refstore uses it.
///
/// Implementations: [`crate::real::RealFs`] (the operating system) and
/// `crate::sim::SimFs` (in memory, with a crash model). The trait is object
/// safe; storage code holds an `Arc<dyn Vfs>`.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Creates a new file for writing with `O_CREAT | O_EXCL` (mode 0666
    /// before umask). Fails with `AlreadyExists` if the path exists, which is
    /// what makes lockfiles work.
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>>;
    /// Opens a file for appending, creating it if missing (reflogs).
    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>>;
    /// Opens an existing file for reading and writing, without creating it
    /// (`NotFound` if it is missing): a file whose record locks are used.
    fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.stat(path)?;
        self.open_append(path)
    }
    /// Reads a whole file.
    fn read(&self, path: &Path) -> Result<Vec<u8>>;
    /// Reads a whole file that is only ever replaced by rename, never
    /// written in place: large ones may be mapped into memory instead of
    /// copied.
    fn read_mapped(&self, path: &Path) -> Result<Mapped> {
        self.read(path).map(Mapped::from)
    }
    /// Reads the target of a symbolic link.
    fn read_link(&self, path: &Path) -> Result<PathBuf>;
    /// `rename(2)`: atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// `link(2)`: makes `to` a new name of `from`; fails with
    /// `AlreadyExists` rather than replacing an existing `to`.
    fn link(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file (not a directory).
    fn unlink(&self, path: &Path) -> Result<()>;
    /// Creates one directory (mode 0777 before umask); the parent must exist.
    fn mkdir(&self, path: &Path) -> Result<()>;
    /// Removes an empty directory.
    fn rmdir(&self, path: &Path) -> Result<()>;
    /// Lists a directory, in no particular order.
    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>>;
    /// `lstat(2)`.
    fn stat(&self, path: &Path) -> Result<Metadata>;
    /// Makes the entries of a directory (creations, renames, removals in it)
    /// durable.
    fn fsync_dir(&self, path: &Path) -> Result<()>;
    /// `syncfs(2)` on the filesystem holding `path`: everything written to
    /// that filesystem so far, data and metadata, reaches stable storage.
    fn syncfs(&self, path: &Path) -> Result<()>;
    /// `statfs(2)`: the kind of filesystem that holds `path`.
    fn filesystem_type(&self, path: &Path) -> Result<FsType>;
    /// Sets access and modification time of a file to now (`futimens`), as
    /// git does to freshen an object it would otherwise have written again.
    fn touch(&self, path: &Path) -> Result<()>;
    /// Cuts a file back to its first `len` bytes (`truncate(2)`), for
    /// taking back lines a failed transaction appended to a log.
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;

    /// Creates `path` and any missing parents.
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        match self.mkdir(path) {
            Ok(()) => Ok(()),
            Err(e) if e.is_already_exists() => match self.stat(path) {
                Ok(m) if m.kind == FileKind::Dir => Ok(()),
                _ => Err(e),
            },
            Err(e) if e.is_not_found() => {
                let parent = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => return Err(e),
                };
                self.create_dir_all(parent)?;
                match self.mkdir(path) {
                    Err(e) if e.is_already_exists() => Ok(()),
                    other => other,
                }
            }
            Err(e) => Err(e),
        }
    }

    /// True if something (of any kind) exists at `path`.
    fn exists(&self, path: &Path) -> bool {
        self.stat(path).is_ok()
    }

    /// Waits about `d` before trying again an operation that another
    /// process is in the way of (it holds a lock file). The operating
    /// system sleeps for 75% to 125% of `d`, so that competing writers
    /// drift apart; a filesystem under the interleaving explorer
    /// ([`crate::sim::explore`]) lets the other actors run instead.
    fn pause(&self, d: Duration) {
        std::thread::sleep(spread(d));
    }

    /// The clock that retries measure their deadlines on: real time, or the
    /// explorer's virtual time.
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// The process this view of the filesystem belongs to, for what the
    /// kernel keeps per process (POSIX record locks, and which lock files
    /// the process holds): this process, or an actor of the interleaving
    /// explorer, each of which plays a process of its own.
    fn process(&self) -> u64 {
        u64::from(std::process::id())
    }
}

/// Spreads retries of competing writers apart: 75% to 125% of `d`.
fn spread(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    let factor = 0.75 + f64::from(nanos % 1000) / 2000.0;
    d.mul_f64(factor)
}

//! [`RealFs`]: the operating system's filesystem, through `rustix`.
//!
//! Flushes retry on `EINTR` and on nothing else: after a failed `fsync` the
//! kernel may already have dropped the dirty pages, so a second `fsync` that
//! succeeds would report durability for data that is gone. The error is
//! returned and the caller's transaction fails.

use crate::mapped::MAP_THRESHOLD;
use crate::vfs::{
    DirEntry, Error, FileKind, FsType, Metadata, Op, RecordLock, Result, Vfs, VfsFile,
};
use crate::Mapped;
use rustix::fd::OwnedFd;
use rustix::fs::{FileType, Mode, OFlags, Timestamps, CWD};
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl RealFs {
    /// A handle to the real filesystem.
    pub fn new() -> Self {
        RealFs
    }
}

fn err(op: Op, path: &Path, e: Errno) -> Error {
    Error::new(op, path, std::io::Error::from(e))
}

/// Runs a syscall, retrying while it is interrupted by a signal.
fn retry_eintr<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    loop {
        match call() {
            Err(Errno::INTR) => continue,
            other => return other,
        }
    }
}

fn open(path: &Path, flags: OFlags, op: Op) -> Result<OwnedFd> {
    retry_eintr(|| rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::from_raw_mode(0o666)))
        .map_err(|e| err(op, path, e))
}

fn kind_of(file_type: FileType) -> FileKind {
    match file_type {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

struct RealFile {
    fd: OwnedFd,
    path: PathBuf,
}

impl VfsFile for RealFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_all(&mut self, mut buf: &[u8]) -> Result<()> {
        while !buf.is_empty() {
            let n = retry_eintr(|| rustix::io::write(&self.fd, buf))
                .map_err(|e| err(Op::Write, &self.path, e))?;
            if n == 0 {
                return Err(Error::new(
                    Op::Write,
                    &self.path,
                    std::io::ErrorKind::WriteZero.into(),
                ));
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    fn fsync(&mut self) -> Result<()> {
        retry_eintr(|| rustix::fs::fsync(&self.fd)).map_err(|e| err(Op::Fsync, &self.path, e))
    }

    fn fdatasync(&mut self) -> Result<()> {
        retry_eintr(|| rustix::fs::fdatasync(&self.fd))
            .map_err(|e| err(Op::Fdatasync, &self.path, e))
    }

    fn start_writeout(&mut self) -> Result<()> {
        start_writeout(&self.fd).map_err(|e| err(Op::StartWriteout, &self.path, e))
    }

    fn try_flock(&mut self) -> Result<bool> {
        match retry_eintr(|| {
            rustix::fs::flock(
                &self.fd,
                rustix::fs::FlockOperation::NonBlockingLockExclusive,
            )
        }) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
            Err(e) => Err(err(Op::Flock, &self.path, e)),
        }
    }

    fn record_lock(&mut self, lock: RecordLock) -> Result<bool> {
        match retry_eintr(|| set_record_lock(&self.fd, lock)) {
            Ok(()) => Ok(true),
            Err(Errno::AGAIN | Errno::ACCESS) => Ok(false),
            Err(e) => Err(err(Op::RecordLock, &self.path, e)),
        }
    }
}

/// `fcntl(F_SETLK)` on byte 0 of the file. Process-associated POSIX locks,
/// not open file description locks: rustix wraps only the latter (and
/// `flock`), whose holder is the descriptor rather than the process.
#[allow(unsafe_code)]
fn set_record_lock(fd: &OwnedFd, lock: RecordLock) -> rustix::io::Result<()> {
    use rustix::fd::AsRawFd;
    let kind = match lock {
        RecordLock::Read => libc::F_RDLCK,
        RecordLock::Write => libc::F_WRLCK,
        RecordLock::Unlock => libc::F_UNLCK,
    };
    // SAFETY: an all-zero `flock` is a valid value of the plain C struct.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = kind as libc::c_short;
    range.l_whence = libc::SEEK_SET as libc::c_short;
    range.l_start = 0;
    range.l_len = 1;
    // SAFETY: the descriptor is owned and open for the whole call; the
    // kernel reads `range`, which lives until the call returns.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLK, &range) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
    }
}

/// `sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)`: queue the file's dirty
/// pages for write-back without waiting and without a device cache flush.
/// rustix does not wrap this call. Where the kernel or filesystem lacks it,
/// nothing is done: it is only a head start for a later flush.
#[allow(unsafe_code)]
fn start_writeout(fd: &OwnedFd) -> rustix::io::Result<()> {
    use rustix::fd::AsRawFd;
    retry_eintr(|| {
        // SAFETY: the descriptor is owned and open for the whole call; the
        // call reads no memory of ours.
        let rc =
            unsafe { libc::sync_file_range(fd.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        if rc == 0 {
            Ok(())
        } else {
            Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
        }
    })
    .or_else(|e| match e {
        Errno::NOSYS | Errno::INVAL | Errno::OPNOTSUPP => Ok(()),
        other => Err(other),
    })
}

impl Vfs for RealFs {
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        let fd = open(
            path,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY,
            Op::CreateExclusive,
        )?;
        Ok(Box::new(RealFile {
            fd,
            path: path.to_owned(),
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        let fd = open(
            path,
            OFlags::CREATE | OFlags::APPEND | OFlags::WRONLY,
            Op::OpenAppend,
        )?;
        Ok(Box::new(RealFile {
            fd,
            path: path.to_owned(),
        }))
    }

    fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        let fd = open(path, OFlags::RDWR, Op::Open)?;
        Ok(Box::new(RealFile {
            fd,
            path: path.to_owned(),
        }))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| Error::new(Op::Read, path, e))
    }

    fn read_mapped(&self, path: &Path) -> Result<Mapped> {
        let fd = open(path, OFlags::RDONLY, Op::Read)?;
        let size = rustix::fs::fstat(&fd)
            .map_err(|e| err(Op::Read, path, e))?
            .st_size;
        match u64::try_from(size) {
            Ok(len) if len >= MAP_THRESHOLD => {
                let len = usize::try_from(len).map_err(|_| err(Op::Read, path, Errno::FBIG))?;
                Mapped::map(&fd, len).map_err(|e| err(Op::Read, path, e))
            }
            _ => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes)
                    .map_err(|e| Error::new(Op::Read, path, e))?;
                Ok(Mapped::owned(bytes))
            }
        }
    }

    fn read_link(&self, path: &Path) -> Result<PathBuf> {
        std::fs::read_link(path).map_err(|e| Error::new(Op::ReadLink, path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        retry_eintr(|| rustix::fs::rename(from, to)).map_err(|e| err(Op::Rename, from, e))
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        retry_eintr(|| rustix::fs::link(from, to)).map_err(|e| err(Op::Link, to, e))
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        retry_eintr(|| rustix::fs::unlink(path)).map_err(|e| err(Op::Unlink, path, e))
    }

    fn mkdir(&self, path: &Path) -> Result<()> {
        retry_eintr(|| rustix::fs::mkdir(path, Mode::from_raw_mode(0o777)))
            .map_err(|e| err(Op::Mkdir, path, e))
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        retry_eintr(|| rustix::fs::rmdir(path)).map_err(|e| err(Op::Rmdir, path, e))
    }

    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let map = |e| Error::new(Op::ReadDir, path, e);
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path).map_err(map)? {
            let entry = entry.map_err(map)?;
            let ft = entry.file_type().map_err(map)?;
            let kind = if ft.is_file() {
                FileKind::File
            } else if ft.is_dir() {
                FileKind::Dir
            } else if ft.is_symlink() {
                FileKind::Symlink
            } else {
                FileKind::Other
            };
            entries.push(DirEntry {
                name: entry.file_name(),
                kind,
            });
        }
        Ok(entries)
    }

    fn stat(&self, path: &Path) -> Result<Metadata> {
        let st = retry_eintr(|| rustix::fs::lstat(path)).map_err(|e| err(Op::Stat, path, e))?;
        let modified = UNIX_EPOCH
            + Duration::new(
                st.st_mtime.max(0) as u64,
                st.st_mtime_nsec.clamp(0, 999_999_999) as u32,
            );
        Ok(Metadata {
            kind: kind_of(FileType::from_raw_mode(st.st_mode)),
            len: st.st_size.max(0) as u64,
            modified,
        })
    }

    fn fsync_dir(&self, path: &Path) -> Result<()> {
        let fd = open(path, OFlags::RDONLY | OFlags::DIRECTORY, Op::FsyncDir)?;
        retry_eintr(|| rustix::fs::fsync(&fd)).map_err(|e| err(Op::FsyncDir, path, e))
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        let fd = open(path, OFlags::RDONLY, Op::Syncfs)?;
        retry_eintr(|| rustix::fs::syncfs(&fd)).map_err(|e| err(Op::Syncfs, path, e))
    }

    fn filesystem_type(&self, path: &Path) -> Result<FsType> {
        let st = retry_eintr(|| rustix::fs::statfs(path)).map_err(|e| err(Op::Statfs, path, e))?;
        // Magic numbers are 32 bits; `f_type`'s C type differs between
        // architectures (signed on some), so only the low 32 bits count.
        Ok(FsType(st.f_type as u32))
    }

    fn touch(&self, path: &Path) -> Result<()> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let ts = rustix::fs::Timespec {
            tv_sec: now.as_secs() as i64,
            tv_nsec: now.subsec_nanos() as _,
        };
        let times = Timestamps {
            last_access: ts,
            last_modification: ts,
        };
        retry_eintr(|| rustix::fs::utimensat(CWD, path, &times, rustix::fs::AtFlags::empty()))
            .map_err(|e| err(Op::SetTimes, path, e))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let map = |e| Error::new(Op::Truncate, path, e);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(map)?;
        file.set_len(len).map_err(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &RealFs, path: &Path, data: &[u8]) {
        let mut f = fs.create_exclusive(path).unwrap();
        f.write_all(data).unwrap();
        f.fsync().unwrap();
    }

    #[test]
    fn exclusive_create_refuses_an_existing_file() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let p = tmp.path().join("a");
        write(&fs, &p, b"one");
        let e = fs.create_exclusive(&p).err().unwrap();
        assert!(e.is_already_exists());
        assert_eq!(e.op, Op::CreateExclusive);
        assert!(e.to_string().starts_with("cannot create '"), "{e}");
        assert!(e.to_string().contains(&*p.to_string_lossy()), "{e}");
        assert_eq!(fs.read(&p).unwrap(), b"one");
    }

    #[test]
    fn rename_replaces_and_link_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        write(&fs, &a, b"new");
        write(&fs, &b, b"old");
        write(&fs, &c, b"other");
        let e = fs.link(&a, &c).unwrap_err();
        assert!(e.is_already_exists());
        assert_eq!(fs.read(&c).unwrap(), b"other");
        fs.rename(&a, &b).unwrap();
        assert_eq!(fs.read(&b).unwrap(), b"new");
        assert!(fs.stat(&a).unwrap_err().is_not_found());
    }

    #[test]
    fn directories_listing_and_kinds() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let deep = tmp.path().join("x/y/z");
        fs.create_dir_all(&deep).unwrap();
        fs.create_dir_all(&deep).unwrap();
        write(&fs, &tmp.path().join("x/file"), b"1");
        std::os::unix::fs::symlink("file", tmp.path().join("x/link")).unwrap();
        let mut names: Vec<_> = fs
            .read_dir(&tmp.path().join("x"))
            .unwrap()
            .into_iter()
            .map(|e| (e.name.into_string().unwrap(), e.kind))
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                ("file".into(), FileKind::File),
                ("link".into(), FileKind::Symlink),
                ("y".into(), FileKind::Dir)
            ]
        );
        assert_eq!(fs.stat(&tmp.path().join("x/file")).unwrap().len, 1);
        assert_eq!(
            fs.read_link(&tmp.path().join("x/link")).unwrap(),
            Path::new("file")
        );
        let e = fs.rmdir(&tmp.path().join("x/y")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY));
        fs.rmdir(&deep).unwrap();
        fs.rmdir(&tmp.path().join("x/y")).unwrap();
        fs.fsync_dir(&tmp.path().join("x")).unwrap();
        fs.syncfs(tmp.path()).unwrap();
    }

    #[test]
    fn filesystem_type_matches_the_mount_table() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let kind = fs.filesystem_type(tmp.path()).unwrap();
        // The mount table names the filesystem of the longest mount point
        // that holds the directory; its statfs magic must agree.
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let (_, fstype) = mounts
            .lines()
            .filter_map(|l| {
                let mut f = l.split(' ');
                let (_, point, fstype) = (f.next()?, f.next()?, f.next()?);
                dir.starts_with(point)
                    .then(|| (point.len(), fstype.to_owned()))
            })
            .max()
            .unwrap();
        let expected = match fstype.as_str() {
            "ext2" | "ext3" | "ext4" => Some(FsType::EXT4),
            "xfs" => Some(FsType::XFS),
            "btrfs" => Some(FsType::BTRFS),
            "tmpfs" => Some(FsType::TMPFS),
            "overlay" => Some(FsType::OVERLAYFS),
            _ => None,
        };
        if let Some(expected) = expected {
            assert_eq!(kind, expected, "{} is on {fstype}", dir.display());
        }
        let missing = fs.filesystem_type(&tmp.path().join("missing")).unwrap_err();
        assert!(
            missing.is_not_found() && missing.op == Op::Statfs,
            "{missing}"
        );
    }

    #[test]
    fn append_and_writeout_and_touch() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = RealFs::new();
        let p = tmp.path().join("log");
        for line in [&b"a\n"[..], b"b\n"] {
            let mut f = fs.open_append(&p).unwrap();
            f.write_all(line).unwrap();
            f.start_writeout().unwrap();
            f.fdatasync().unwrap();
        }
        assert_eq!(fs.read(&p).unwrap(), b"a\nb\n");
        // Dated an hour back, so that touching it must move the time
        // forward whatever the clock's and the filesystem's resolution.
        let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        let before = fs.stat(&p).unwrap().modified;
        assert!(before <= an_hour_ago + Duration::from_secs(1), "{before:?}");
        fs.touch(&p).unwrap();
        let touched = fs.stat(&p).unwrap().modified;
        assert!(
            touched > before + Duration::from_secs(3000),
            "{before:?} -> {touched:?}"
        );
        assert!(fs
            .touch(&tmp.path().join("missing"))
            .unwrap_err()
            .is_not_found());
        fs.truncate(&p, 2).unwrap();
        assert_eq!(fs.read(&p).unwrap(), b"a\n");
        let err = fs.truncate(&tmp.path().join("missing"), 0).unwrap_err();
        assert!(err.is_not_found() && err.op == Op::Truncate, "{err}");
    }
}

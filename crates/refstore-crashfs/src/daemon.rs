//! The FUSE daemon: kernel requests applied to the [`Model`], with a count
//! of every flush request the kernel forwards.
//!
//! Files are opened without a handle of their own (reads and writes go by
//! inode) and without the kernel's write-back cache, so every `write(2)`
//! reaches the model at once: what the model calls cached is exactly what
//! the processes wrote.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::model::{Content, CrashMode, Ino, Model, Node};

/// How long the kernel may cache names and attributes. Only this kernel
/// changes the filesystem while it is mounted, so its caches stay right; a
/// crash remounts, which drops them.
const TTL: Duration = Duration::from_secs(1);

/// How many requests of each kind the daemon received (all mounts of one
/// [`Shared`] together).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// `FUSE_FSYNC` without the data-only flag (`fsync(2)` on a file).
    pub fsync: u64,
    /// `FUSE_FSYNC` with the data-only flag (`fdatasync(2)`).
    pub fdatasync: u64,
    /// `FUSE_FSYNCDIR` (`fsync(2)` or `fdatasync(2)` on a directory).
    pub fsyncdir: u64,
    /// `FUSE_WRITE`.
    pub write: u64,
    /// `FUSE_RENAME`/`FUSE_RENAME2`.
    pub rename: u64,
    /// `FUSE_CREATE`, `FUSE_MKNOD`, `FUSE_MKDIR`, `FUSE_SYMLINK`, `FUSE_LINK`.
    pub create: u64,
    /// `FUSE_UNLINK` and `FUSE_RMDIR`.
    pub unlink: u64,
}

impl Stats {
    /// Every request that makes something durable.
    pub fn flushes(&self) -> u64 {
        self.fsync + self.fdatasync + self.fsyncdir
    }
}

#[derive(Default)]
struct Counters {
    fsync: AtomicU64,
    fdatasync: AtomicU64,
    fsyncdir: AtomicU64,
    write: AtomicU64,
    rename: AtomicU64,
    create: AtomicU64,
    unlink: AtomicU64,
}

/// The state one filesystem keeps across its mounts: the model and the
/// counters. A crash replaces the model and starts a new generation; a
/// request arriving through an older mount is refused.
#[derive(Default)]
pub struct Shared {
    model: Mutex<Model>,
    counters: Counters,
    generation: AtomicU64,
}

impl Shared {
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::SeqCst);
        Stats {
            fsync: get(&c.fsync),
            fdatasync: get(&c.fdatasync),
            fsyncdir: get(&c.fsyncdir),
            write: get(&c.write),
            rename: get(&c.rename),
            create: get(&c.create),
            unlink: get(&c.unlink),
        }
    }

    /// Makes everything durable now.
    pub fn checkpoint(&self) {
        self.lock().checkpoint();
    }

    /// Replaces the filesystem by what a power loss now leaves, and retires
    /// the current generation of mounts. Returns the new generation.
    pub fn crash(&self, mode: CrashMode) -> u64 {
        let mut model = self.lock();
        *model = model.after_crash(mode);
        self.generation.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, Model> {
        // A panic inside one request leaves the model as consistent as any
        // other state of it; keep serving.
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One mount's daemon.
pub struct Daemon {
    shared: Arc<Shared>,
    generation: u64,
}

impl Daemon {
    pub fn new(shared: Arc<Shared>) -> Daemon {
        let generation = shared.generation();
        Daemon { shared, generation }
    }

    /// The model, unless a crash retired this mount.
    fn model(&self) -> Result<MutexGuard<'_, Model>, Errno> {
        let model = self.shared.lock();
        if self.shared.generation() != self.generation {
            return Err(Errno::EIO);
        }
        Ok(model)
    }

    fn count(&self, counter: impl Fn(&Counters) -> &AtomicU64) {
        counter(&self.shared.counters).fetch_add(1, Ordering::SeqCst);
    }
}

fn errno(e: i32) -> Errno {
    Errno::from_i32(e)
}

fn attr(ino: Ino, node: &Node) -> FileAttr {
    let kind = match node.content {
        Content::File { .. } => FileType::RegularFile,
        Content::Dir { .. } => FileType::Directory,
        Content::Symlink { .. } => FileType::Symlink,
    };
    let size = node.size();
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: node.atime,
        mtime: node.mtime,
        ctime: node.ctime,
        crtime: node.ctime,
        kind,
        perm: node.perm,
        nlink: node.nlink,
        uid: node.uid,
        gid: node.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn perm(mode: u32, umask: u32) -> u16 {
    (mode & !umask & 0o7777) as u16
}

impl Daemon {
    fn entry(&self, result: Result<(Ino, FileAttr), Errno>, reply: ReplyEntry) {
        match result {
            Ok((_, a)) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn with_new(
        &self,
        make: impl FnOnce(&mut Model) -> Result<Ino, i32>,
    ) -> Result<(Ino, FileAttr), Errno> {
        let mut m = self.model()?;
        let ino = make(&mut m).map_err(errno)?;
        let a = attr(ino, m.node(ino).map_err(errno)?);
        Ok((ino, a))
    }

    fn empty(&self, op: impl FnOnce(&mut Model) -> Result<(), i32>, reply: ReplyEmpty) {
        match self.model().and_then(|mut m| op(&mut m).map_err(errno)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

impl Filesystem for Daemon {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = self.model().and_then(|m| {
            let ino = m.lookup(parent.0, name).map_err(errno)?;
            Ok((ino, attr(ino, m.node(ino).map_err(errno)?)))
        });
        self.entry(result, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self
            .model()
            .and_then(|m| m.node(ino.0).map(|n| attr(ino.0, n)).map_err(errno))
        {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = self.model().and_then(|mut m| {
            if let Some(size) = size {
                m.truncate(ino.0, size).map_err(errno)?;
            }
            let node = m.node_mut(ino.0).map_err(errno)?;
            let time = |t: TimeOrNow| match t {
                TimeOrNow::SpecificTime(t) => t,
                TimeOrNow::Now => SystemTime::now(),
            };
            if let Some(mode) = mode {
                node.perm = (mode & 0o7777) as u16;
            }
            if let Some(uid) = uid {
                node.uid = uid;
            }
            if let Some(gid) = gid {
                node.gid = gid;
            }
            if let Some(t) = atime {
                node.atime = time(t);
            }
            if let Some(t) = mtime {
                node.mtime = time(t);
            }
            node.ctime = SystemTime::now();
            Ok(attr(ino.0, node))
        });
        match result {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.model().and_then(|m| m.readlink(ino.0).map_err(errno)) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            reply.error(Errno::EPERM);
            return;
        }
        self.count(|c| &c.create);
        let result = self
            .with_new(|m| m.create_file(parent.0, name, perm(mode, umask), req.uid(), req.gid()));
        self.entry(result, reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.count(|c| &c.create);
        let result =
            self.with_new(|m| m.mkdir(parent.0, name, perm(mode, umask), req.uid(), req.gid()));
        self.entry(result, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.count(|c| &c.unlink);
        self.empty(|m| m.unlink(parent.0, name), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.count(|c| &c.unlink);
        self.empty(|m| m.rmdir(parent.0, name), reply);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        use std::os::unix::ffi::OsStrExt;
        self.count(|c| &c.create);
        let result = self.with_new(|m| {
            m.symlink(
                parent.0,
                link_name,
                target.as_os_str().as_bytes(),
                req.uid(),
                req.gid(),
            )
        });
        self.entry(result, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        self.count(|c| &c.rename);
        if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
            reply.error(Errno::EINVAL);
            return;
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        self.empty(
            |m| m.rename(parent.0, name, newparent.0, newname, noreplace),
            reply,
        );
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.count(|c| &c.create);
        let result = self.with_new(|m| m.link(ino.0, newparent.0, newname).map(|()| ino.0));
        self.entry(result, reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self
            .model()
            .and_then(|m| m.node(ino.0).map(|_| ()).map_err(errno))
        {
            Ok(()) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self
            .model()
            .and_then(|m| m.read(ino.0, offset, size).map_err(errno))
        {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.count(|c| &c.write);
        match self
            .model()
            .and_then(|mut m| m.write(ino.0, offset, data).map_err(errno))
        {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2): makes nothing durable.
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if datasync {
            self.count(|c| &c.fdatasync);
        } else {
            self.count(|c| &c.fsync);
        }
        self.empty(|m| m.flush(ino.0), reply);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let listing = self.model().and_then(|m| {
            let mut all = vec![
                (".".into(), ino.0, FileType::Directory),
                ("..".into(), ino.0, FileType::Directory),
            ];
            for (name, child) in m.list(ino.0).map_err(errno)? {
                let kind = match m.node(child).map(|n| &n.content) {
                    Ok(Content::Dir { .. }) => FileType::Directory,
                    Ok(Content::Symlink { .. }) => FileType::Symlink,
                    _ => FileType::RegularFile,
                };
                all.push((name, child, kind));
            }
            Ok(all)
        });
        match listing {
            Ok(all) => {
                for (i, (name, child, kind)) in all.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(child), (i + 1) as u64, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.count(|c| &c.fsyncdir);
        self.empty(|m| m.flush(ino.0), reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Room enough for any test; the kernel reports f_type FUSE itself.
        reply.statfs(1 << 24, 1 << 23, 1 << 23, 1 << 20, 1 << 19, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.count(|c| &c.create);
        let result = self.model().and_then(|mut m| {
            let ino = match m.lookup(parent.0, name) {
                Ok(_) if flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Ok(ino) => {
                    if flags & libc::O_TRUNC != 0 {
                        m.truncate(ino, 0).map_err(errno)?;
                    }
                    ino
                }
                Err(_) => m
                    .create_file(parent.0, name, perm(mode, umask), req.uid(), req.gid())
                    .map_err(errno)?,
            };
            Ok(attr(ino, m.node(ino).map_err(errno)?))
        });
        match result {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }
}

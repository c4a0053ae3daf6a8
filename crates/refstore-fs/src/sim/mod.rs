//! `SimFs`: an in-memory filesystem with a crash model, for testing that
//! storage code keeps its promises at every instant.
//!
//! # The model
//!
//! Every file and directory keeps, next to its current state (what a running
//! program sees: the page cache), its *durable* state (what survives power
//! loss). Pessimistic POSIX without a journal, as on ext4 mounted without
//! one:
//!
//! - `fsync`/`fdatasync` of a file make its *content* durable, not its name;
//! - `fsync` of a directory makes its *entries* durable (creations, removals,
//!   renames in it), not the content of the files they name;
//! - `syncfs` makes everything durable, except in the FUSE mode
//!   ([`SimFs::fuse`]), where it makes nothing durable: the kernel writes the
//!   page cache back to the FUSE daemon but asks it to flush nothing (FUSE
//!   sends `FSYNC`/`FSYNCDIR` requests for `fsync`, `fdatasync` and directory
//!   `fsync`, and no request at all for `syncfs`, except on virtiofs), so a
//!   daemon that keeps written data in a volatile cache loses it in a crash;
//! - `start_writeout` (`sync_file_range`) makes nothing durable;
//! - everything else changes only the current state.
//!
//! After a crash each change that was not made durable may or may not have
//! reached the disk, independently: a directory entry comes back as its
//! durable or its current value (so half of a cross-directory rename can
//! survive), and file content as the durable content, the current content,
//! empty, or zero-filled to the current length (metadata written, data not).
//! See [`crash`](self) internals for how states are chosen: exhaustively when
//! there are few uncertain items, otherwise the extreme states plus a seeded
//! sample.
//!
//! Limitations: no symbolic links, permissions or hard-link counts; a write
//! is atomic in the live view; crashes happen between operations, never in
//! the middle of one (a torn write is modelled by the zero-filled and empty
//! outcomes instead).
//!
//! # Crash testing
//!
//! Record a workload, mark the moments it reported success with
//! [`SimFs::acknowledge`], then check an invariant on every crash state after
//! every operation:
//!
//! ```
//! use refstore_fs::sim::{CrashOptions, SimFs};
//! use refstore_fs::Vfs;
//! use std::path::Path;
//!
//! let sim = SimFs::new();
//! sim.create_dir_all(Path::new("/repo"))?;
//! let mut f = sim.create_exclusive(Path::new("/repo/ref"))?;
//! f.write_all(b"old\n")?;
//! drop(f);
//! sim.sync_all();
//! sim.start_recording();
//!
//! // Replace the file the safe way: flush data, rename, flush the directory.
//! let mut f = sim.create_exclusive(Path::new("/repo/ref.lock"))?;
//! f.write_all(b"new\n")?;
//! f.fsync()?;
//! drop(f);
//! sim.rename(Path::new("/repo/ref.lock"), Path::new("/repo/ref"))?;
//! sim.fsync_dir(Path::new("/repo"))?;
//! sim.acknowledge("ref updated");
//!
//! let report = sim.check_crashes(&CrashOptions::default(), |crashed| {
//!     let content = crashed.fs.read(Path::new("/repo/ref")).map_err(|e| e.to_string())?;
//!     match (content.as_slice(), crashed.acknowledged.is_empty()) {
//!         (b"new\n", _) | (b"old\n", true) => Ok(()),
//!         (other, _) => Err(format!("ref reads {other:?}")),
//!     }
//! });
//! assert!(report.is_ok(), "{}", report.unwrap_err());
//! # Ok::<(), refstore_fs::Error>(())
//! ```

mod crash;
pub mod explore;
mod fault;
mod state;

pub use fault::Fault;

use crate::vfs::{DirEntry, Error, FileKind, FsType, Metadata, Op, Result, Vfs, VfsFile};
use state::{errno, Ino, Node, State};
use state::{EEXIST, EINVAL, EISDIR, ENOENT, ENOTDIR, ENOTEMPTY, EPERM};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

/// `ENOSPC`, for [`Fault::errno`]: no space left on device.
pub const ENOSPC: i32 = state::ENOSPC;
/// `EIO`, for [`Fault::errno`]: input/output error.
pub const EIO: i32 = state::EIO;

/// The in-memory, crash-simulating filesystem. Cheap to clone: clones share
/// one filesystem.
#[derive(Clone, Default)]
pub struct SimFs {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    state: State,
    recording: Option<Recording>,
    faults: Vec<Fault>,
    ops: usize,
    /// Every operation since [`SimFs::start_tracing`], if tracing.
    trace: Option<Vec<(Op, PathBuf)>>,
    /// What `statfs` reports and how `syncfs` behaves.
    kind: Kind,
}

/// The filesystem a [`SimFs`] pretends to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    fs_type: FsType,
    /// Whether `syncfs` makes everything durable (false on FUSE).
    syncfs_durable: bool,
}

impl Kind {
    const EXT4: Kind = Kind {
        fs_type: FsType::EXT4,
        syncfs_durable: true,
    };
    const FUSE: Kind = Kind {
        fs_type: FsType::FUSE,
        syncfs_durable: false,
    };
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            state: State::new(),
            recording: None,
            faults: Vec::new(),
            ops: 0,
            trace: None,
            kind: Kind::EXT4,
        }
    }
}

/// The history of a recorded workload: the state before it, after each
/// changing operation, and the acknowledgements in between.
#[derive(Debug)]
struct Recording {
    initial: State,
    steps: Vec<(String, State)>,
    acknowledged: Vec<(usize, String)>,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFs").finish_non_exhaustive()
    }
}

/// How many crash states to try per crash point.
#[derive(Debug, Clone)]
pub struct CrashOptions {
    /// Enumerate every combination when there are at most this many.
    pub exhaustive_limit: usize,
    /// Otherwise: this many random states besides the extreme ones.
    pub samples: usize,
    /// Seed of the random choice, so a failure reproduces.
    pub seed: u64,
}

impl Default for CrashOptions {
    fn default() -> Self {
        CrashOptions {
            exhaustive_limit: 256,
            samples: 32,
            seed: 0x5eed,
        }
    }
}

/// One crash state handed to an invariant check.
#[derive(Debug)]
pub struct Crashed {
    /// The filesystem as it came back after the crash (everything durable).
    pub fs: SimFs,
    /// Acknowledgements the workload made before the crash.
    pub acknowledged: Vec<String>,
    /// Number of changing operations completed before the crash.
    pub point: usize,
}

impl Crashed {
    /// The crashed filesystem as a `Vfs` to reopen a store on.
    pub fn vfs(&self) -> Arc<dyn Vfs> {
        Arc::new(self.fs.clone())
    }
}

/// An invariant that failed on some crash state.
#[derive(Debug)]
pub struct Violation {
    /// Changing operations completed before the crash.
    pub point: usize,
    /// Those operations, in order.
    pub ops: Vec<String>,
    /// Which uncertain changes reached the disk in the failing state.
    pub state: String,
    /// What the check said.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "invariant violated after a crash following {} operations: {}",
            self.point, self.message
        )?;
        writeln!(f, "operations:")?;
        for (i, op) in self.ops.iter().enumerate() {
            writeln!(f, "  {:>4} {op}", i + 1)?;
        }
        writeln!(f, "state after the crash:")?;
        for line in self.state.lines() {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Violation {}

/// What a crash test covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashReport {
    /// Crash points tried (changing operations + 1).
    pub points: usize,
    /// Crash states checked in all.
    pub states: usize,
}

impl SimFs {
    /// An empty filesystem holding only `/`. It reports itself as ext4
    /// and its `syncfs` makes everything durable.
    pub fn new() -> Self {
        SimFs::default()
    }

    /// An empty FUSE filesystem: it reports FUSE's `f_type` (0x65735546),
    /// `fsync`, `fdatasync` and directory `fsync` work as on [`SimFs::new`],
    /// and `syncfs` makes nothing durable. Crash states of it are FUSE
    /// filesystems too.
    pub fn fuse() -> Self {
        let fs = SimFs::default();
        fs.lock().kind = Kind::FUSE;
        fs
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn from_state(state: State, kind: Kind) -> Self {
        SimFs {
            inner: Arc::new(Mutex::new(Inner {
                state,
                kind,
                ..Inner::default()
            })),
        }
    }

    /// Makes everything durable (as `syncfs` does where it flushes), without
    /// recording it: for setting up the state before a workload.
    pub fn sync_all(&self) {
        self.lock().state.make_all_durable();
    }

    /// Starts recording: the current state is the one before the workload;
    /// every changing operation from now on is a crash point.
    pub fn start_recording(&self) {
        let mut inner = self.lock();
        let initial = inner.state.clone();
        inner.recording = Some(Recording {
            initial,
            steps: Vec::new(),
            acknowledged: Vec::new(),
        });
    }

    /// Marks that the workload reported success for `label` here: crash
    /// states after this point must show its effect.
    pub fn acknowledge(&self, label: impl Into<String>) {
        let mut inner = self.lock();
        if let Some(rec) = &mut inner.recording {
            let point = rec.steps.len();
            rec.acknowledged.push((point, label.into()));
        }
    }

    /// Changing operations recorded since [`start_recording`](Self::start_recording):
    /// the crash point that follows them. A workload that notes it when an
    /// operation of its own starts and ends can tell, for each crash point,
    /// which of its operations had ended and which were under way.
    pub fn changes(&self) -> usize {
        self.lock()
            .recording
            .as_ref()
            .map_or(0, |rec| rec.steps.len())
    }

    /// Adds a fault rule (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// Operations of any kind performed so far (for placing faults).
    pub fn op_count(&self) -> usize {
        self.lock().ops
    }

    /// Starts (or restarts) keeping a list of every operation from now on,
    /// faulted ones included, so that a test can place a fault of the right
    /// kind at each of them and tell what failed.
    pub fn start_tracing(&self) {
        self.lock().trace = Some(Vec::new());
    }

    /// The operations since [`start_tracing`](Self::start_tracing), in
    /// order, each with the path it was applied to (for a rename: the
    /// source); the `n`-th is the one [`Fault::nth_op`] `(n, _)` fails
    /// when injected at the same moment.
    pub fn traced_ops(&self) -> Vec<(Op, PathBuf)> {
        self.lock().trace.clone().unwrap_or_default()
    }

    /// Every regular file and its current content, by absolute path.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        self.lock().state.files()
    }

    /// Every directory, by absolute path.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.lock().state.dirs()
    }

    /// Runs `check` on every crash state after every recorded operation (and
    /// before the first). Stops at the first violation.
    pub fn check_crashes(
        &self,
        options: &CrashOptions,
        mut check: impl FnMut(&Crashed) -> std::result::Result<(), String>,
    ) -> std::result::Result<CrashReport, Violation> {
        let inner = self.lock();
        let rec = inner
            .recording
            .as_ref()
            .expect("check_crashes needs start_recording() before the workload");
        let mut report = CrashReport {
            points: 0,
            states: 0,
        };
        let points = std::iter::once(&rec.initial).chain(rec.steps.iter().map(|(_, s)| s));
        for (point, snapshot) in points.enumerate() {
            report.points += 1;
            let acknowledged: Vec<String> = rec
                .acknowledged
                .iter()
                .filter(|(p, _)| *p <= point)
                .map(|(_, l)| l.clone())
                .collect();
            let seed = options.seed ^ (point as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
            for crashed in
                crash::crash_states(snapshot, options.exhaustive_limit, options.samples, seed)
            {
                report.states += 1;
                let view = Crashed {
                    fs: SimFs::from_state(crashed.state, inner.kind),
                    acknowledged: acknowledged.clone(),
                    point,
                };
                if let Err(message) = check(&view) {
                    return Err(Violation {
                        point,
                        ops: rec.steps[..point].iter().map(|(d, _)| d.clone()).collect(),
                        state: crashed.description,
                        message,
                    });
                }
            }
        }
        Ok(report)
    }

    /// Runs one operation: counts it, applies fault rules, and records the
    /// resulting state if it changed anything.
    fn run<T>(
        &self,
        op: Op,
        path: &Path,
        changes: bool,
        describe: impl FnOnce() -> String,
        apply: impl FnOnce(&mut State) -> std::io::Result<T>,
    ) -> Result<T> {
        let mut inner = self.lock();
        inner.ops += 1;
        if let Some(trace) = &mut inner.trace {
            trace.push((op, path.to_owned()));
        }
        let mut tripped = None;
        for (i, fault) in inner.faults.iter_mut().enumerate() {
            if fault.trips(op, path) && tripped.is_none() {
                tripped = Some(i);
            }
        }
        if let Some(i) = tripped {
            let fault = inner.faults.remove(i);
            return Err(Error::new(op, path, errno(fault.errno)));
        }
        let value = apply(&mut inner.state).map_err(|e| Error::new(op, path, e))?;
        if changes {
            let snapshot = inner.state.clone();
            if let Some(rec) = &mut inner.recording {
                rec.steps.push((describe(), snapshot));
            }
        }
        Ok(value)
    }
}

/// An open file of a [`SimFs`]; writes go to its inode, wherever it is named.
struct SimFile {
    fs: SimFs,
    ino: Ino,
    path: PathBuf,
}

impl VfsFile for SimFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let ino = self.ino;
        self.fs.run(
            Op::Write,
            &self.path,
            true,
            || format!("write {} bytes to {}", buf.len(), self.path.display()),
            |s| {
                let t = s.tick();
                s.inodes[ino].mtime = t;
                match &mut s.inodes[ino].node {
                    Node::File { current, .. } => {
                        current.extend_from_slice(buf);
                        Ok(())
                    }
                    Node::Dir { .. } => Err(errno(EISDIR)),
                }
            },
        )
    }

    fn fsync(&mut self) -> Result<()> {
        let ino = self.ino;
        self.fs.run(
            Op::Fsync,
            &self.path,
            true,
            || format!("fsync {}", self.path.display()),
            |s| {
                s.make_durable(ino);
                Ok(())
            },
        )
    }

    fn fdatasync(&mut self) -> Result<()> {
        let ino = self.ino;
        self.fs.run(
            Op::Fdatasync,
            &self.path,
            true,
            || format!("fdatasync {}", self.path.display()),
            |s| {
                s.make_durable(ino);
                Ok(())
            },
        )
    }

    fn start_writeout(&mut self) -> Result<()> {
        self.fs.run(
            Op::StartWriteout,
            &self.path,
            false,
            String::new,
            |_| Ok(()),
        )
    }
}

fn new_file(s: &mut State, path: &Path, exclusive: bool) -> std::io::Result<Ino> {
    let (dir, name) = s.parent(path)?;
    if let Some(&existing) = s.entries(dir)?.get(&name) {
        if exclusive {
            return Err(errno(EEXIST));
        }
        if s.is_dir(existing) {
            return Err(errno(EISDIR));
        }
        return Ok(existing);
    }
    let ino = s.new_inode(Node::File {
        current: Vec::new(),
        durable: Vec::new(),
    });
    s.entries_mut(dir)?.insert(name, ino);
    Ok(ino)
}

impl Vfs for SimFs {
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        let ino = self.run(
            Op::CreateExclusive,
            path,
            true,
            || format!("create {}", path.display()),
            |s| new_file(s, path, true),
        )?;
        Ok(Box::new(SimFile {
            fs: self.clone(),
            ino,
            path: path.to_owned(),
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        let ino = self.run(
            Op::OpenAppend,
            path,
            true,
            || format!("open for appending {}", path.display()),
            |s| new_file(s, path, false),
        )?;
        Ok(Box::new(SimFile {
            fs: self.clone(),
            ino,
            path: path.to_owned(),
        }))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.run(Op::Read, path, false, String::new, |s| {
            match &s.inodes[s.lookup(path)?].node {
                Node::File { current, .. } => Ok(current.clone()),
                Node::Dir { .. } => Err(errno(EISDIR)),
            }
        })
    }

    fn read_link(&self, path: &Path) -> Result<PathBuf> {
        self.run(Op::ReadLink, path, false, String::new, |s| {
            s.lookup(path)?;
            Err(errno(EINVAL))
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.run(
            Op::Rename,
            from,
            true,
            || format!("rename {} -> {}", from.display(), to.display()),
            |s| {
                let (from_dir, from_name) = s.parent(from)?;
                let ino = *s
                    .entries(from_dir)?
                    .get(&from_name)
                    .ok_or_else(|| errno(ENOENT))?;
                let (to_dir, to_name) = s.parent(to)?;
                if let Some(&existing) = s.entries(to_dir)?.get(&to_name) {
                    if existing == ino {
                        return Ok(());
                    }
                    match (s.is_dir(ino), s.is_dir(existing)) {
                        (false, true) => return Err(errno(EISDIR)),
                        (true, false) => return Err(errno(ENOTDIR)),
                        (true, true) if !s.entries(existing)?.is_empty() => {
                            return Err(errno(ENOTEMPTY))
                        }
                        _ => {}
                    }
                }
                if s.is_dir(ino)
                    && crate::sim::state::components(to)
                        .starts_with(&crate::sim::state::components(from))
                {
                    return Err(errno(EINVAL));
                }
                s.entries_mut(from_dir)?.remove(&from_name);
                s.entries_mut(to_dir)?.insert(to_name, ino);
                Ok(())
            },
        )
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.run(
            Op::Link,
            to,
            true,
            || format!("link {} -> {}", from.display(), to.display()),
            |s| {
                let ino = s.lookup(from)?;
                if s.is_dir(ino) {
                    return Err(errno(EPERM));
                }
                let (dir, name) = s.parent(to)?;
                if s.entries(dir)?.contains_key(&name) {
                    return Err(errno(EEXIST));
                }
                s.entries_mut(dir)?.insert(name, ino);
                Ok(())
            },
        )
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        self.run(
            Op::Unlink,
            path,
            true,
            || format!("unlink {}", path.display()),
            |s| {
                let (dir, name) = s.parent(path)?;
                let ino = *s.entries(dir)?.get(&name).ok_or_else(|| errno(ENOENT))?;
                if s.is_dir(ino) {
                    return Err(errno(EISDIR));
                }
                s.entries_mut(dir)?.remove(&name);
                Ok(())
            },
        )
    }

    fn mkdir(&self, path: &Path) -> Result<()> {
        self.run(
            Op::Mkdir,
            path,
            true,
            || format!("mkdir {}", path.display()),
            |s| {
                let (dir, name) = s.parent(path)?;
                if s.entries(dir)?.contains_key(&name) {
                    return Err(errno(EEXIST));
                }
                let ino = s.new_inode(Node::Dir {
                    current: BTreeMap::new(),
                    durable: BTreeMap::new(),
                });
                s.entries_mut(dir)?.insert(name, ino);
                Ok(())
            },
        )
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        self.run(
            Op::Rmdir,
            path,
            true,
            || format!("rmdir {}", path.display()),
            |s| {
                let (dir, name) = s.parent(path)?;
                let ino = *s.entries(dir)?.get(&name).ok_or_else(|| errno(ENOENT))?;
                if !s.entries(ino)?.is_empty() {
                    return Err(errno(ENOTEMPTY));
                }
                s.entries_mut(dir)?.remove(&name);
                Ok(())
            },
        )
    }

    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        self.run(Op::ReadDir, path, false, String::new, |s| {
            let dir = s.lookup(path)?;
            Ok(s.entries(dir)?
                .iter()
                .map(|(name, &ino)| DirEntry {
                    name: name.clone(),
                    kind: if s.is_dir(ino) {
                        FileKind::Dir
                    } else {
                        FileKind::File
                    },
                })
                .collect())
        })
    }

    fn stat(&self, path: &Path) -> Result<Metadata> {
        self.run(Op::Stat, path, false, String::new, |s| {
            let ino = s.lookup(path)?;
            let inode = &s.inodes[ino];
            let (kind, len) = match &inode.node {
                Node::File { current, .. } => (FileKind::File, current.len() as u64),
                Node::Dir { .. } => (FileKind::Dir, 0),
            };
            Ok(Metadata {
                kind,
                len,
                modified: UNIX_EPOCH + Duration::from_secs(inode.mtime),
            })
        })
    }

    fn fsync_dir(&self, path: &Path) -> Result<()> {
        self.run(
            Op::FsyncDir,
            path,
            true,
            || format!("fsync directory {}", path.display()),
            |s| {
                let ino = s.lookup(path)?;
                s.entries(ino)?;
                s.make_durable(ino);
                Ok(())
            },
        )
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        let durable = self.lock().kind.syncfs_durable;
        self.run(
            Op::Syncfs,
            path,
            true,
            || match durable {
                true => "syncfs".to_string(),
                false => "syncfs (flushes nothing on FUSE)".to_string(),
            },
            |s| {
                s.lookup(path)?;
                if durable {
                    s.make_all_durable();
                }
                Ok(())
            },
        )
    }

    fn filesystem_type(&self, path: &Path) -> Result<FsType> {
        let fs_type = self.lock().kind.fs_type;
        self.run(Op::Statfs, path, false, String::new, |s| {
            s.lookup(path)?;
            Ok(fs_type)
        })
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.run(
            Op::Truncate,
            path,
            true,
            || format!("truncate {} to {len} bytes", path.display()),
            |s| {
                let ino = s.lookup(path)?;
                let t = s.tick();
                s.inodes[ino].mtime = t;
                match &mut s.inodes[ino].node {
                    Node::File { current, .. } => {
                        let len = usize::try_from(len).map_err(|_| errno(EINVAL))?;
                        current.resize(len, 0);
                        Ok(())
                    }
                    Node::Dir { .. } => Err(errno(EISDIR)),
                }
            },
        )
    }

    fn touch(&self, path: &Path) -> Result<()> {
        self.run(
            Op::SetTimes,
            path,
            true,
            || format!("touch {}", path.display()),
            |s| {
                let ino = s.lookup(path)?;
                let t = s.tick();
                s.inodes[ino].mtime = t;
                Ok(())
            },
        )
    }
}

//! One actor's view of the shared filesystem (a [`crate::sim::SimFs`], or
//! the operating system's on a directory of the run's own): every
//! operation first waits for the actor's turn, so the controller decides
//! how the actors' operations interleave. Retries wait in virtual time,
//! and POSIX record locks belong to the actor, as they belong to a
//! process. Directory listings come sorted by name, whatever order the
//! base filesystem gives, so that a schedule replays the same run.

use super::scheduler::{Point, Scheduler};
use crate::vfs::{DirEntry, Error, FsType, Metadata, Op, RecordLock, Result, Vfs, VfsFile};
use crate::Mapped;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The actors holding a read lock on a file, and the one holding its
/// write lock.
type Holders = (BTreeSet<usize>, Option<usize>);

/// Who holds the record lock of each file, by path.
#[derive(Debug, Default)]
pub(crate) struct RecordLocks {
    held: Mutex<HashMap<PathBuf, Holders>>,
}

impl RecordLocks {
    fn set(&self, path: &Path, actor: usize, lock: RecordLock) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (readers, writer) = held.entry(path.to_owned()).or_default();
        let others_read = readers.iter().any(|&a| a != actor);
        let other_writes = writer.is_some_and(|w| w != actor);
        match lock {
            RecordLock::Read if other_writes => false,
            RecordLock::Write if other_writes || others_read => false,
            RecordLock::Read => {
                *writer = None;
                readers.insert(actor);
                true
            }
            RecordLock::Write => {
                readers.remove(&actor);
                *writer = Some(actor);
                true
            }
            RecordLock::Unlock => {
                readers.remove(&actor);
                if *writer == Some(actor) {
                    *writer = None;
                }
                true
            }
        }
    }

    /// Drops every record lock of `actor`, as the kernel does for a
    /// process that dies.
    fn release_all(&self, actor: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for (readers, writer) in held.values_mut() {
            readers.remove(&actor);
            if *writer == Some(actor) {
                *writer = None;
            }
        }
    }
}

/// Whether an actor still lives, and how many more operations it makes if
/// it is to die (see [`super::Actor::die_after`]).
#[derive(Debug, Default)]
pub(crate) struct Life {
    state: Mutex<(Option<u64>, bool)>,
}

impl Life {
    /// The actor dies once it has made `ops` more operations.
    pub(crate) fn die_after(&self, ops: u64) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = Some(ops);
    }

    /// Waits for the actor's turn before an operation; an error if it is
    /// dead, or dies now (its record locks go with it). A dead actor waits
    /// for no turn: what it does no longer reaches the filesystem.
    fn turn(&self, scheduler: &Scheduler, actor: usize, record_locks: &RecordLocks) -> bool {
        if self.state.lock().unwrap_or_else(|e| e.into_inner()).1 {
            return false;
        }
        scheduler.wait_turn(actor, Point::Op);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut state.0 {
            Some(0) => {
                state.1 = true;
                record_locks.release_all(actor);
                false
            }
            Some(left) => {
                *left -= 1;
                true
            }
            None => true,
        }
    }

    pub(crate) fn dead(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

/// The error of every operation of a dead actor.
fn killed(op: Op, path: &Path) -> Error {
    Error::new(
        op,
        path,
        std::io::Error::other("the process was killed (interleaving explorer)"),
    )
}

/// The filesystem as one actor sees it.
pub(crate) struct ScheduledFs {
    /// The filesystem the actors share.
    pub(crate) base: Arc<dyn Vfs>,
    pub(crate) scheduler: Arc<Scheduler>,
    pub(crate) actor: usize,
    /// The process the actor plays, for [`Vfs::process`].
    pub(crate) process: u64,
    pub(crate) record_locks: Arc<RecordLocks>,
    /// Where virtual time starts.
    pub(crate) epoch: Instant,
    /// The time this actor has spent waiting to retry.
    pub(crate) waited: Mutex<Duration>,
    pub(crate) life: Arc<Life>,
}

impl fmt::Debug for ScheduledFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledFs")
            .field("actor", &self.actor)
            .finish_non_exhaustive()
    }
}

impl ScheduledFs {
    fn turn(&self, op: Op, path: &Path) -> Result<()> {
        match self
            .life
            .turn(&self.scheduler, self.actor, &self.record_locks)
        {
            true => Ok(()),
            false => Err(killed(op, path)),
        }
    }

    fn file(&self, file: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        Box::new(ScheduledFile {
            file,
            scheduler: self.scheduler.clone(),
            actor: self.actor,
            record_locks: self.record_locks.clone(),
            life: self.life.clone(),
        })
    }
}

impl Vfs for ScheduledFs {
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn(Op::CreateExclusive, path)?;
        self.base.create_exclusive(path).map(|f| self.file(f))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn(Op::OpenAppend, path)?;
        self.base.open_append(path).map(|f| self.file(f))
    }
    fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn(Op::Open, path)?;
        self.base.open_existing(path).map(|f| self.file(f))
    }
    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.turn(Op::Read, path)?;
        self.base.read(path)
    }
    fn read_mapped(&self, path: &Path) -> Result<Mapped> {
        self.turn(Op::Read, path)?;
        self.base.read_mapped(path)
    }
    fn read_link(&self, path: &Path) -> Result<PathBuf> {
        self.turn(Op::ReadLink, path)?;
        self.base.read_link(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.turn(Op::Rename, from)?;
        self.base.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.turn(Op::Link, from)?;
        self.base.link(from, to)
    }
    fn unlink(&self, path: &Path) -> Result<()> {
        self.turn(Op::Unlink, path)?;
        self.base.unlink(path)
    }
    fn mkdir(&self, path: &Path) -> Result<()> {
        self.turn(Op::Mkdir, path)?;
        self.base.mkdir(path)
    }
    fn rmdir(&self, path: &Path) -> Result<()> {
        self.turn(Op::Rmdir, path)?;
        self.base.rmdir(path)
    }
    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        self.turn(Op::ReadDir, path)?;
        let mut entries = self.base.read_dir(path)?;
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
    fn stat(&self, path: &Path) -> Result<Metadata> {
        self.turn(Op::Stat, path)?;
        self.base.stat(path)
    }
    fn fsync_dir(&self, path: &Path) -> Result<()> {
        self.turn(Op::FsyncDir, path)?;
        self.base.fsync_dir(path)
    }
    fn syncfs(&self, path: &Path) -> Result<()> {
        self.turn(Op::Syncfs, path)?;
        self.base.syncfs(path)
    }
    fn filesystem_type(&self, path: &Path) -> Result<FsType> {
        self.base.filesystem_type(path)
    }
    fn touch(&self, path: &Path) -> Result<()> {
        self.turn(Op::SetTimes, path)?;
        self.base.touch(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.turn(Op::Truncate, path)?;
        self.base.truncate(path, len)
    }

    fn pause(&self, d: Duration) {
        *self.waited.lock().unwrap_or_else(|e| e.into_inner()) += d;
        if !self.life.dead() {
            self.scheduler.wait_turn(self.actor, Point::Pause);
        }
    }

    fn now(&self) -> Instant {
        self.epoch + *self.waited.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn process(&self) -> u64 {
        self.process
    }
}

/// A file one actor opened: writes and flushes wait for the actor's turn.
struct ScheduledFile {
    file: Box<dyn VfsFile>,
    scheduler: Arc<Scheduler>,
    actor: usize,
    record_locks: Arc<RecordLocks>,
    life: Arc<Life>,
}

impl ScheduledFile {
    fn turn(&self, op: Op) -> Result<()> {
        match self
            .life
            .turn(&self.scheduler, self.actor, &self.record_locks)
        {
            true => Ok(()),
            false => Err(killed(op, self.file.path())),
        }
    }
}

impl VfsFile for ScheduledFile {
    fn path(&self) -> &Path {
        self.file.path()
    }
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.turn(Op::Write)?;
        self.file.write_all(buf)
    }
    fn fsync(&mut self) -> Result<()> {
        self.turn(Op::Fsync)?;
        self.file.fsync()
    }
    fn fdatasync(&mut self) -> Result<()> {
        self.turn(Op::Fdatasync)?;
        self.file.fdatasync()
    }
    fn start_writeout(&mut self) -> Result<()> {
        self.turn(Op::StartWriteout)?;
        self.file.start_writeout()
    }
    fn try_flock(&mut self) -> Result<bool> {
        self.turn(Op::Flock)?;
        self.file.try_flock()
    }
    fn record_lock(&mut self, lock: RecordLock) -> Result<bool> {
        self.turn(Op::RecordLock)?;
        Ok(self.record_locks.set(self.file.path(), self.actor, lock))
    }
}

impl Drop for ScheduledFile {
    fn drop(&mut self) {
        // Closing any descriptor of a file drops the process's record lock
        // on it.
        self.record_locks
            .set(self.file.path(), self.actor, RecordLock::Unlock);
    }
}

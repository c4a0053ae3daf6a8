//! One actor's view of the shared [`SimFs`]: every operation first waits
//! for the actor's turn, so the controller decides how the actors'
//! operations interleave. Retries wait in virtual time, and POSIX record
//! locks belong to the actor, as they belong to a process.

use super::scheduler::{Point, Scheduler};
use crate::sim::SimFs;
use crate::vfs::{DirEntry, FsType, Metadata, RecordLock, Result, Vfs, VfsFile};
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
}

/// The filesystem as one actor sees it.
pub(crate) struct ScheduledFs {
    pub(crate) sim: SimFs,
    pub(crate) scheduler: Arc<Scheduler>,
    pub(crate) actor: usize,
    pub(crate) record_locks: Arc<RecordLocks>,
    /// Where virtual time starts.
    pub(crate) epoch: Instant,
    /// The time this actor has spent waiting to retry.
    pub(crate) waited: Mutex<Duration>,
}

impl fmt::Debug for ScheduledFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledFs")
            .field("actor", &self.actor)
            .finish_non_exhaustive()
    }
}

impl ScheduledFs {
    fn turn(&self) {
        self.scheduler.wait_turn(self.actor, Point::Op);
    }

    fn file(&self, file: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        Box::new(ScheduledFile {
            file,
            scheduler: self.scheduler.clone(),
            actor: self.actor,
            record_locks: self.record_locks.clone(),
        })
    }
}

impl Vfs for ScheduledFs {
    fn create_exclusive(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn();
        self.sim.create_exclusive(path).map(|f| self.file(f))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn();
        self.sim.open_append(path).map(|f| self.file(f))
    }
    fn open_existing(&self, path: &Path) -> Result<Box<dyn VfsFile>> {
        self.turn();
        self.sim.open_existing(path).map(|f| self.file(f))
    }
    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.turn();
        self.sim.read(path)
    }
    fn read_mapped(&self, path: &Path) -> Result<Mapped> {
        self.turn();
        self.sim.read_mapped(path)
    }
    fn read_link(&self, path: &Path) -> Result<PathBuf> {
        self.turn();
        self.sim.read_link(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.turn();
        self.sim.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.turn();
        self.sim.link(from, to)
    }
    fn unlink(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.unlink(path)
    }
    fn mkdir(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.mkdir(path)
    }
    fn rmdir(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.rmdir(path)
    }
    fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        self.turn();
        self.sim.read_dir(path)
    }
    fn stat(&self, path: &Path) -> Result<Metadata> {
        self.turn();
        self.sim.stat(path)
    }
    fn fsync_dir(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.fsync_dir(path)
    }
    fn syncfs(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.syncfs(path)
    }
    fn filesystem_type(&self, path: &Path) -> Result<FsType> {
        self.sim.filesystem_type(path)
    }
    fn touch(&self, path: &Path) -> Result<()> {
        self.turn();
        self.sim.touch(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.turn();
        self.sim.truncate(path, len)
    }

    fn pause(&self, d: Duration) {
        *self.waited.lock().unwrap_or_else(|e| e.into_inner()) += d;
        self.scheduler.wait_turn(self.actor, Point::Pause);
    }

    fn now(&self) -> Instant {
        self.epoch + *self.waited.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A file one actor opened: writes and flushes wait for the actor's turn.
struct ScheduledFile {
    file: Box<dyn VfsFile>,
    scheduler: Arc<Scheduler>,
    actor: usize,
    record_locks: Arc<RecordLocks>,
}

impl ScheduledFile {
    fn turn(&self) {
        self.scheduler.wait_turn(self.actor, Point::Op);
    }
}

impl VfsFile for ScheduledFile {
    fn path(&self) -> &Path {
        self.file.path()
    }
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.turn();
        self.file.write_all(buf)
    }
    fn fsync(&mut self) -> Result<()> {
        self.turn();
        self.file.fsync()
    }
    fn fdatasync(&mut self) -> Result<()> {
        self.turn();
        self.file.fdatasync()
    }
    fn start_writeout(&mut self) -> Result<()> {
        self.turn();
        self.file.start_writeout()
    }
    fn try_flock(&mut self) -> Result<bool> {
        self.turn();
        self.file.try_flock()
    }
    fn record_lock(&mut self, lock: RecordLock) -> Result<bool> {
        self.turn();
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

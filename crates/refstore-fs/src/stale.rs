//! Recovering lock files left behind by processes that are gone.
//!
//! A writer killed between creating `<file>.lock` and renaming it leaves the
//! lock in place, and with git's protocol every later writer of that file
//! fails ("Unable to create '…lock': File exists") until someone removes it
//! by hand. A store must not stay unwritable, so a repository can opt in
//! ([`recover_stale_locks`]) to having such locks removed when they are
//! provably abandoned.
//!
//! A lock file's content is the new value (git's protocol), so its holder
//! cannot be written into it. Instead each repository has one long-lived
//! *holder file*, `<repository>/refstore-lock-holders/holders`, and the
//! kernel's POSIX record locks (`fcntl(F_SETLK)` on its first byte) say who
//! is at work. They belong to the process and vanish when it dies, however
//! it dies:
//!
//! - a refstore process holds a read lock on the holder file for as long as
//!   it holds (or is about to create) any lock file in the repository. It
//!   takes it when its first lock there is about to be created and drops it
//!   when its last one is renamed or removed; in between it keeps exactly
//!   one descriptor of the holder file open, as closing any descriptor of it
//!   would drop the process's lock. In the steady state that costs an `open`
//!   of the existing file and one `fcntl` per process, and changes nothing
//!   on disk;
//! - a recoverer takes a write lock without waiting. It is granted only
//!   while no other process holds a read lock: no other live refstore
//!   process holds a lock file in the repository. A process's own locks
//!   never conflict with each other and turning its read lock into a write
//!   lock and back is atomic, so a writer in the middle of a transaction can
//!   recover a lock a dead process left without giving up its own.
//!
//! A lock file is stale, and removed by a recoverer holding the write lock,
//! when all of these hold:
//!
//! 1. it is older than the repository's minimum age (`refstore.staleLockAge`):
//!    git does not take the holder file's lock, and git gives up waiting on
//!    a lock after at most a second (`core.filesRefLockTimeout`,
//!    `core.packedRefsTimeout`, `reftable.lockTimeout`), so a lock that old
//!    is not a git writer at work unless it runs a transaction of a size
//!    git itself would not wait for;
//! 2. this process does not hold it, and no other thread of this process is
//!    between creating a lock file and recording that it holds it;
//! 3. the write lock was granted: no other process holds a read lock.
//!
//! Removal is race-free: while the write lock is held no other refstore
//! process holds or creates a lock file in the repository (a writer takes
//! its read lock before it creates a lock file and waits for it while a
//! recoverer is at work, up to a bound, then fails with an error naming the
//! holder file), so the lock file checked is the one removed, and
//! recoverers exclude each other. Removing a lock only ever undoes an
//! update that never happened: nothing is renamed into place by its
//! removal.
//!
//! Earlier versions kept one record file per process in the same directory
//! (`<pid>-<n>`, flocked while it held locks, and a `recovery` file); such
//! files are ignored. A writer of such a version still at work during an
//! upgrade is protected by the lock's age alone, as git is.

use crate::vfs::{Error, Op, RecordLock, Result, Vfs, VfsFile};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

/// Directory of the holder file, inside the repository: a name space of
/// refstore's own.
const HOLDERS_DIR: &str = "refstore-lock-holders";
/// The holder file, inside [`HOLDERS_DIR`].
const HOLDERS_FILE: &str = "holders";
/// How long a writer waits for a recoverer to finish.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);

/// The default minimum age of a stale lock (`refstore.staleLockAge`).
pub const DEFAULT_STALE_LOCK_AGE: Duration = Duration::from_secs(60);

/// Where stale locks are recovered: a repository directory and the age a
/// lock must reach there before it may be considered abandoned.
#[derive(Debug, Clone)]
struct Policy {
    repository: PathBuf,
    /// `<repository>/refstore-lock-holders/holders`.
    holders: PathBuf,
    min_age: Duration,
    /// The sides of the holder file, shared by every policy for it.
    sides: Arc<Sides>,
}

/// Each process's side of one holder file. The processes are few (one,
/// but for the interleaving explorer's actors), so a list searched by
/// process id: every lock taken looks its side up, and hashing an owned
/// path key cost more than the rest of taking the lock.
#[derive(Debug, Default)]
struct Sides(Mutex<Vec<(u64, Arc<Mutex<Holders>>)>>);

impl Sides {
    fn of(&self, process: u64) -> Arc<Mutex<Holders>> {
        let mut sides = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, side)) = sides.iter().find(|(p, _)| *p == process) {
            return side.clone();
        }
        let side = Arc::new(Mutex::new(Holders::default()));
        sides.push((process, side.clone()));
        side
    }

    fn forget(&self, process: u64) {
        let mut sides = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sides.retain(|(p, _)| *p != process);
    }
}

/// This process's side of one repository's holder file.
#[derive(Default)]
struct Holders {
    /// The process's only open descriptor of the holder file: open while
    /// `count > 0` (holding the read lock) or while this process recovers.
    file: Option<Box<dyn VfsFile>>,
    /// Holds taken: lock files held plus lock files about to be created.
    count: usize,
    /// Holds whose lock file is not created, or not yet recorded in `held`.
    pending: usize,
    /// The lock files this process holds in the repository, keyed by their
    /// bytes: hashing a `Path` walks its components, which a transaction
    /// taking thousands of locks would pay for every one.
    held: HashSet<OsString>,
}

impl std::fmt::Debug for Holders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holders")
            .field("count", &self.count)
            .field("pending", &self.pending)
            .finish()
    }
}

/// The repositories that opted in, and this process's side of each holder
/// file. Process-wide, as record locks and process liveness are: keyed by
/// the holder file, then by [`Vfs::process`] (the interleaving explorer
/// runs several processes in one). A repository's [`Holders`] outlive a
/// change of its policy: a second one would open a second descriptor of
/// the holder file.
#[derive(Default)]
struct Registry {
    policies: Vec<Arc<Policy>>,
    sides: HashMap<PathBuf, Arc<Sides>>,
}

fn lock_registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn lock_state(state: &Mutex<Holders>) -> MutexGuard<'_, Holders> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lets lock files under `repository` (its common directory: the lock files
/// of refs, `packed-refs` and `reftable/tables.list` are all below it) be
/// recovered once they are older than `min_age` and their holder is gone.
/// Calling it again for the same repository updates the age.
pub fn recover_stale_locks(repository: &Path, min_age: Duration) {
    let mut registry = lock_registry();
    let holders = repository.join(HOLDERS_DIR).join(HOLDERS_FILE);
    let sides = registry.sides.entry(holders.clone()).or_default().clone();
    registry.policies.retain(|p| p.repository != repository);
    registry.policies.push(Arc::new(Policy {
        repository: repository.to_owned(),
        holders,
        min_age,
        sides,
    }));
}

/// Forgets the side of every holder file of `process`, which has ended:
/// for the interleaving explorer, whose actors play processes that end
/// while the test process goes on (their descriptors close, which drops
/// their record locks).
pub fn process_ended(process: u64) {
    for sides in lock_registry().sides.values() {
        sides.forget(process);
    }
}

/// The side of `policy`'s holder file of the process `vfs` belongs to.
fn state_for(vfs: &Arc<dyn Vfs>, policy: &Policy) -> Arc<Mutex<Holders>> {
    policy.sides.of(vfs.process())
}

fn policy_for(lock_path: &Path) -> Option<Arc<Policy>> {
    let registry = lock_registry();
    registry
        .policies
        .iter()
        .filter(|p| lock_path.starts_with(&p.repository))
        .max_by_key(|p| p.repository.as_os_str().len())
        .cloned()
}

/// This process's read lock on a repository's holder file, on behalf of one
/// lock file: taken before the lock file is created, given up after it is
/// renamed or removed (or was never created).
pub(crate) struct Hold {
    state: Arc<Mutex<Holders>>,
    /// The lock file, once created; `None` while it is about to be.
    lock_path: Option<PathBuf>,
}

impl Hold {
    /// Records that the lock file at `lock_path` was created and is held.
    pub(crate) fn created(&mut self, lock_path: &Path) {
        let mut state = lock_state(&self.state);
        state.pending -= 1;
        state.held.insert(lock_path.as_os_str().to_owned());
        self.lock_path = Some(lock_path.to_owned());
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        match &self.lock_path {
            Some(path) => {
                state.held.remove(path.as_os_str());
            }
            None => state.pending -= 1,
        }
        state.count -= 1;
        if state.count == 0 {
            // Closing the only descriptor drops the read lock.
            state.file = None;
        }
    }
}

/// Before creating `lock_path`: when its repository recovers stale locks,
/// makes sure this process holds its read lock on the holder file, and
/// returns the hold (`None` otherwise). A holder file that cannot be opened
/// or locked (a read-only repository, a filesystem without record locks)
/// only means this lock is protected by its age alone; a recoverer that
/// keeps the write lock longer than a writer waits is an error.
pub(crate) fn before_create(vfs: &Arc<dyn Vfs>, lock_path: &Path) -> Result<Option<Hold>> {
    let Some(policy) = policy_for(lock_path) else {
        return Ok(None);
    };
    let shared = state_for(vfs, &policy);
    let mut state = lock_state(&shared);
    if state.count == 0 {
        let Ok(mut file) = open_holders(vfs, &policy.holders) else {
            return Ok(None);
        };
        match read_lock_within(vfs, &mut *file, RECOVERY_WAIT) {
            Ok(true) => state.file = Some(file),
            Ok(false) => {
                return Err(Error::new(
                    Op::RecordLock,
                    &policy.holders,
                    std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        format!(
                            "a recovery of stale locks kept it locked for more than {} s",
                            RECOVERY_WAIT.as_secs()
                        ),
                    ),
                ))
            }
            Err(_) => return Ok(None),
        }
    }
    state.count += 1;
    state.pending += 1;
    drop(state);
    Ok(Some(Hold {
        state: shared.clone(),
        lock_path: None,
    }))
}

/// Opens the holder file, creating it and its directory only when missing.
fn open_holders(vfs: &Arc<dyn Vfs>, holders: &Path) -> Result<Box<dyn VfsFile>> {
    match vfs.open_existing(holders) {
        Err(e) if e.is_not_found() => {}
        opened => return opened,
    }
    if let Some(dir) = holders.parent() {
        match vfs.mkdir(dir) {
            Err(e) if !e.is_already_exists() => return Err(e),
            _ => {}
        }
    }
    // Created write-only, then opened again for the read lock, which needs
    // a descriptor open for reading. Only called while this process has no
    // descriptor of the holder file open, so closing this one loses no lock.
    match vfs.create_exclusive(holders) {
        Err(e) if !e.is_already_exists() => return Err(e),
        _ => {}
    }
    vfs.open_existing(holders)
}

/// Takes the read lock on `file`, waiting up to `wait` while a recoverer
/// holds the write lock; false if it kept it that long.
fn read_lock_within(vfs: &Arc<dyn Vfs>, file: &mut dyn VfsFile, wait: Duration) -> Result<bool> {
    let deadline = vfs.now() + wait;
    loop {
        if file.record_lock(RecordLock::Read)? {
            return Ok(true);
        }
        if vfs.now() >= deadline {
            return Ok(false);
        }
        vfs.pause(Duration::from_millis(1));
    }
}

/// Called when `lock_path` exists: removes it if it is stale (see the module
/// docs) and says whether it is gone, so the caller can try again at once.
/// `hold` is the caller's own hold for creating it, if any.
pub(crate) fn recover(vfs: &Arc<dyn Vfs>, lock_path: &Path, hold: Option<&Hold>) -> Result<bool> {
    let Some(policy) = policy_for(lock_path) else {
        return Ok(false);
    };
    if !old_enough(vfs, lock_path, policy.min_age)? {
        return Ok(false);
    }
    let own_pending = usize::from(hold.is_some_and(|h| h.lock_path.is_none()));
    let shared = state_for(vfs, &policy);
    let mut state = lock_state(&shared);
    if state.held.contains(lock_path.as_os_str()) || state.pending > own_pending {
        return Ok(false);
    }
    let mut file = match state.file.take() {
        Some(file) => file,
        None => open_holders(vfs, &policy.holders)?,
    };
    let outcome = match file.record_lock(RecordLock::Write) {
        Ok(true) => {
            let removed = remove_if_old(vfs, lock_path, policy.min_age);
            // Back to the read lock this process held, or to none.
            let restored = match state.count {
                0 => Ok(true),
                _ => file.record_lock(RecordLock::Read),
            };
            removed.and_then(|removed| restored.map(|_| removed))
        }
        other => other.map(|_| false),
    };
    if state.count > 0 {
        state.file = Some(file);
    }
    outcome
}

/// Under the write lock: removes `lock_path` if it is still old enough.
fn remove_if_old(vfs: &Arc<dyn Vfs>, lock_path: &Path, min_age: Duration) -> Result<bool> {
    // Checked again: another recoverer may have replaced it meanwhile.
    let age = match vfs.stat(lock_path) {
        Ok(meta) => age_of(meta.modified),
        Err(e) if e.is_not_found() => return Ok(true),
        Err(e) => return Err(e),
    };
    if age < min_age {
        return Ok(false);
    }
    match vfs.unlink(lock_path) {
        Ok(()) => {}
        Err(e) if e.is_not_found() => return Ok(true),
        Err(e) => return Err(e),
    }
    eprintln!(
        "warning: removed stale lock '{}' left {} s ago by a process that is gone",
        lock_path.display(),
        age.as_secs()
    );
    Ok(true)
}

fn age_of(modified: SystemTime) -> Duration {
    SystemTime::now()
        .duration_since(modified)
        .unwrap_or(Duration::ZERO)
}

fn old_enough(vfs: &Arc<dyn Vfs>, lock_path: &Path, min_age: Duration) -> Result<bool> {
    match vfs.stat(lock_path) {
        Ok(meta) => Ok(age_of(meta.modified) >= min_age),
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) => Err(e),
    }
}

/// Removes `lock_path` if it is stale (see the module docs) under the policy
/// [`recover_stale_locks`] registered for its repository, and says whether
/// it is gone. Housekeeping looks for abandoned locks with it instead of
/// waiting for a writer to trip over them; without a policy nothing is
/// removed.
pub fn remove_if_stale(vfs: &Arc<dyn Vfs>, lock_path: &Path) -> Result<bool> {
    recover(vfs, lock_path, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{lock_path_for, LockFile};
    use crate::real::RealFs;
    use std::os::unix::fs::MetadataExt;

    /// The POSIX record lock ("READ" or "WRITE") this process holds on
    /// `path`, as the kernel lists it in `/proc/locks`.
    fn own_record_lock(path: &Path) -> Option<String> {
        let inode = std::fs::metadata(path).ok()?.ino();
        let pid = std::process::id().to_string();
        std::fs::read_to_string("/proc/locks")
            .unwrap()
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .find(|f| {
                f.len() >= 6
                    && f[1] == "POSIX"
                    && f[4] == pid
                    && f[5].rsplit(':').next() == Some(&inode.to_string())
            })
            .map(|f| f[3].to_owned())
    }

    fn aged(path: &Path, by: Duration) {
        std::fs::write(path, "").unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    fn repository() -> (tempfile::TempDir, Arc<dyn Vfs>, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        recover_stale_locks(tmp.path(), Duration::from_secs(60));
        let holders = tmp.path().join(HOLDERS_DIR).join(HOLDERS_FILE);
        (tmp, Arc::new(RealFs::new()), holders)
    }

    #[test]
    fn a_writer_holding_a_lock_recovers_a_stale_one_and_keeps_its_own() {
        let (tmp, vfs, holders) = repository();
        let own = LockFile::acquire(&vfs, tmp.path().join("a"), Duration::ZERO).unwrap();
        assert_eq!(own_record_lock(&holders).as_deref(), Some("READ"));
        // Left by a process that is gone, and old.
        let stale = lock_path_for(&tmp.path().join("b"));
        aged(&stale, Duration::from_secs(7200));
        let mut taken = LockFile::acquire(&vfs, tmp.path().join("b"), Duration::ZERO).unwrap();
        taken.write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read(&stale).unwrap(), b"new\n");
        // Back to the read lock, and its own lock is never stale.
        assert_eq!(own_record_lock(&holders).as_deref(), Some("READ"));
        aged(own.lock_path(), Duration::from_secs(7200));
        assert!(!remove_if_stale(&vfs, own.lock_path()).unwrap());
        assert!(own.lock_path().exists());
        drop(taken);
        assert_eq!(own_record_lock(&holders).as_deref(), Some("READ"));
        drop(own);
        assert_eq!(own_record_lock(&holders), None);
    }

    #[test]
    fn a_recoverer_holding_no_lock_lets_go_of_the_holder_file() {
        let (tmp, vfs, holders) = repository();
        let stale = lock_path_for(&tmp.path().join("packed-refs"));
        aged(&stale, Duration::from_secs(30));
        assert!(!remove_if_stale(&vfs, &stale).unwrap());
        assert!(stale.exists());
        aged(&stale, Duration::from_secs(7200));
        assert!(remove_if_stale(&vfs, &stale).unwrap());
        assert!(!stale.exists());
        assert_eq!(own_record_lock(&holders), None);
    }

    #[test]
    fn holding_changes_nothing_in_the_holder_directory_once_it_exists() {
        let (tmp, vfs, holders) = repository();
        let names = || {
            std::fs::read_dir(holders.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>()
        };
        LockFile::acquire(&vfs, tmp.path().join("a"), Duration::ZERO)
            .unwrap()
            .rollback()
            .unwrap();
        let inode = std::fs::metadata(&holders).unwrap().ino();
        let dir_modified = std::fs::metadata(holders.parent().unwrap())
            .unwrap()
            .modified()
            .unwrap();
        for name in ["a", "b"] {
            LockFile::acquire(&vfs, tmp.path().join(name), Duration::ZERO)
                .unwrap()
                .rollback()
                .unwrap();
        }
        assert_eq!(names(), [OsString::from(HOLDERS_FILE)]);
        assert_eq!(std::fs::metadata(&holders).unwrap().ino(), inode);
        assert_eq!(
            std::fs::metadata(holders.parent().unwrap())
                .unwrap()
                .modified()
                .unwrap(),
            dir_modified
        );
    }
}

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
//! cannot be written into it. Instead every refstore process that holds a
//! lock in a repository keeps a *holder record*: a file
//! `<repository>/refstore-lock-holders/<pid>-<n>` on which it holds an
//! exclusive `flock(2)` for as long as it holds any lock there. The kernel
//! drops the flock when the process dies, however it dies. A lock file is
//! stale when all of these hold:
//!
//! 1. it is older than the repository's minimum age (`refstore.staleLockAge`):
//!    git does not keep holder records, and git gives up waiting on a lock
//!    after at most a second (`core.filesRefLockTimeout`,
//!    `core.packedRefsTimeout`, `reftable.lockTimeout`), so a lock that old
//!    is not a git writer at work unless it runs a transaction of a size
//!    git itself would not wait for;
//! 2. this process does not hold it;
//! 3. no other process holds a holder record in the repository (every
//!    record found either is flocked — a live refstore writer, so nothing is
//!    removed — or can be flocked, and belongs to a dead process: it is
//!    removed).
//!
//! Removal is race-free: recoverers serialise on an exclusive flock of
//! `refstore-lock-holders/recovery` and check the conditions under it; a
//! new lock cannot appear at the stale lock's path while the stale file is
//! there (`O_EXCL`), and a live refstore writer publishes its holder record
//! (written under a temporary name, flocked, then renamed into place) before
//! it creates any lock, so a recoverer either sees the record or the writer
//! has not created its lock yet. Removing a lock only ever undoes an update
//! that never happened: nothing is renamed into place by its removal.

use crate::vfs::{Result, Vfs, VfsFile};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime};

/// Directory of holder records, inside the repository.
const HOLDERS_DIR: &str = "refstore-lock-holders";
/// The file recoverers flock to take turns.
const RECOVERY_FILE: &str = "recovery";
/// How long a recoverer waits for another one to finish.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);

/// The default minimum age of a stale lock (`refstore.staleLockAge`).
pub const DEFAULT_STALE_LOCK_AGE: Duration = Duration::from_secs(60);

/// Where stale locks are recovered: a repository directory and the age a
/// lock must reach there before it may be considered abandoned.
#[derive(Debug, Clone)]
struct Policy {
    repository: PathBuf,
    /// `<repository>/refstore-lock-holders`.
    holders: PathBuf,
    min_age: Duration,
}

/// The repositories that opted in, and this process's holder records and
/// held locks. Process-wide, as flocks and process liveness are. Paths are
/// keyed by their bytes: hashing a `Path` walks its components, which a
/// transaction taking thousands of locks would pay for every one.
#[derive(Default)]
struct Registry {
    policies: Vec<Arc<Policy>>,
    holders: HashMap<OsString, Weak<HolderRecord>>,
    held: HashSet<OsString>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn lock_registry() -> std::sync::MutexGuard<'static, Registry> {
    registry().lock().unwrap_or_else(|e| e.into_inner())
}

/// Lets lock files under `repository` (its common directory: the lock files
/// of refs, `packed-refs` and `reftable/tables.list` are all below it) be
/// recovered once they are older than `min_age` and their holder is gone.
/// Calling it again for the same repository updates the age.
pub fn recover_stale_locks(repository: &Path, min_age: Duration) {
    let mut registry = lock_registry();
    registry.policies.retain(|p| p.repository != repository);
    registry.policies.push(Arc::new(Policy {
        repository: repository.to_owned(),
        holders: repository.join(HOLDERS_DIR),
        min_age,
    }));
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

/// This process's record of holding locks in one repository: removed when
/// the last lock there is released, or by a recoverer after a crash.
pub(crate) struct HolderRecord {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    /// Holds the flock; a mutex only so the record can be shared.
    _file: Mutex<Box<dyn VfsFile>>,
}

impl Drop for HolderRecord {
    fn drop(&mut self) {
        let _ = self.vfs.unlink(&self.path);
    }
}

/// What a lock file under a recovering repository carries while it is held.
pub(crate) struct Holding {
    lock_path: PathBuf,
    _record: Arc<HolderRecord>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        lock_registry().held.remove(self.lock_path.as_os_str());
    }
}

/// Before creating `lock_path`: publishes this process's holder record in
/// the repository when it recovers stale locks (`None` otherwise).
pub(crate) fn before_create(
    vfs: &Arc<dyn Vfs>,
    lock_path: &Path,
) -> Result<Option<Arc<HolderRecord>>> {
    let Some(policy) = policy_for(lock_path) else {
        return Ok(None);
    };
    let holders = &policy.holders;
    let mut registry = lock_registry();
    if let Some(record) = registry
        .holders
        .get(holders.as_os_str())
        .and_then(Weak::upgrade)
    {
        return Ok(Some(record));
    }
    let record = Arc::new(publish_record(vfs, holders)?);
    registry
        .holders
        .insert(holders.as_os_str().to_owned(), Arc::downgrade(&record));
    Ok(Some(record))
}

/// After `lock_path` was created: remembers that this process holds it.
pub(crate) fn after_create(lock_path: &Path, record: Arc<HolderRecord>) -> Holding {
    lock_registry()
        .held
        .insert(lock_path.as_os_str().to_owned());
    Holding {
        lock_path: lock_path.to_owned(),
        _record: record,
    }
}

fn publish_record(vfs: &Arc<dyn Vfs>, holders: &Path) -> Result<HolderRecord> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    match vfs.mkdir(holders) {
        Err(e) if !e.is_already_exists() => return Err(e),
        _ => {}
    }
    let name = format!(
        "{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    );
    let temporary = holders.join(format!("{name}.tmp"));
    let path = holders.join(&name);
    let mut file = vfs.create_exclusive(&temporary)?;
    // A recoverer may hold the new file's flock for a moment (it takes
    // every unflocked record for a dead one's) and unlink it: then the
    // rename fails and a record under the next name is published instead.
    // The record must never be named while this process does not hold it.
    let published = flock_within(&mut *file, RECOVERY_WAIT).and_then(|held| match held {
        true => vfs.rename(&temporary, &path),
        false => Err(crate::vfs::Error::new(
            crate::vfs::Op::Flock,
            &temporary,
            std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "another process kept the lock holder record locked",
            ),
        )),
    });
    match published {
        Ok(()) => {}
        Err(e) if e.is_not_found() => return publish_record(vfs, holders),
        Err(e) => {
            let _ = vfs.unlink(&temporary);
            return Err(e);
        }
    }
    Ok(HolderRecord {
        vfs: vfs.clone(),
        path,
        _file: Mutex::new(file),
    })
}

/// Takes `file`'s exclusive flock, waiting up to `wait` for another holder
/// to let go; false if it did not.
fn flock_within(file: &mut dyn VfsFile, wait: Duration) -> Result<bool> {
    let deadline = Instant::now() + wait;
    loop {
        if file.try_flock()? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Called when `lock_path` exists: removes it if it is stale (see the module
/// docs) and says whether it is gone, so the caller can try again at once.
pub(crate) fn recover(vfs: &Arc<dyn Vfs>, lock_path: &Path) -> Result<bool> {
    let Some(policy) = policy_for(lock_path) else {
        return Ok(false);
    };
    if lock_registry().held.contains(lock_path.as_os_str())
        || !old_enough(vfs, lock_path, policy.min_age)?
    {
        return Ok(false);
    }
    let holders = &policy.holders;
    let Some(_turn) = take_turn(vfs, holders)? else {
        return Ok(false);
    };
    // Checked again under the turn: another recoverer may have replaced it.
    let age = match vfs.stat(lock_path) {
        Ok(meta) => age_of(meta.modified),
        Err(e) if e.is_not_found() => return Ok(true),
        Err(e) => return Err(e),
    };
    if age < policy.min_age || lock_registry().held.contains(lock_path.as_os_str()) {
        return Ok(false);
    }
    if other_live_holder(vfs, holders)? {
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

/// The exclusive flock recoverers take turns with; `None` if another
/// recoverer kept it longer than [`RECOVERY_WAIT`].
fn take_turn(vfs: &Arc<dyn Vfs>, holders: &Path) -> Result<Option<Box<dyn VfsFile>>> {
    match vfs.mkdir(holders) {
        Err(e) if !e.is_already_exists() => return Err(e),
        _ => {}
    }
    let mut file = vfs.open_append(&holders.join(RECOVERY_FILE))?;
    let deadline = Instant::now() + RECOVERY_WAIT;
    loop {
        if file.try_flock()? {
            return Ok(Some(file));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// True if another process holds a holder record; records of processes that
/// are gone are removed on the way.
fn other_live_holder(vfs: &Arc<dyn Vfs>, holders: &Path) -> Result<bool> {
    let own = format!("{}-", std::process::id());
    let holding_here = lock_registry()
        .holders
        .get(holders.as_os_str())
        .is_some_and(|record| record.strong_count() > 0);
    for entry in vfs.read_dir(holders)? {
        let name = entry.name.to_string_lossy();
        if name == RECOVERY_FILE {
            continue;
        }
        // This process's own records: its live locks are known by path.
        if name.starts_with(&own) && holding_here {
            continue;
        }
        let path = holders.join(&*entry.name);
        let mut file = match vfs.open_append(&path) {
            Ok(file) => file,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        if !file.try_flock()? {
            return Ok(true);
        }
        let _ = vfs.unlink(&path);
    }
    Ok(false)
}

/// Removes `lock_path` if it is stale (see the module docs) under the policy
/// [`recover_stale_locks`] registered for its repository, and says whether
/// it is gone. Housekeeping looks for abandoned locks with it instead of
/// waiting for a writer to trip over them; without a policy nothing is
/// removed.
pub fn remove_if_stale(vfs: &Arc<dyn Vfs>, lock_path: &Path) -> Result<bool> {
    recover(vfs, lock_path)
}

//! Exclusion from git's housekeeping, held for a whole run:
//!
//! - `objects/maintenance.lock`, the lock `git maintenance run` takes
//!   (created exclusively; git skips its run with a warning while it
//!   exists, and so does refstore). git writes it empty; refstore writes
//!   `refstore maintenance <pid> on <host>` into it, so that one left by a
//!   crashed refstore is recognised and removed, while one of git's is
//!   respected.
//! - `gc.pid` in the common directory, as `git gc` keeps it: `<pid> <host>`,
//!   written under `gc.pid.lock`. `git gc` does not start while it names a
//!   live process on this host (and is younger than 12 hours); refstore
//!   does not start while a `git gc` holds it either.
//!
//! Both lock files appear with their content: it is written to a
//! temporary file first, which then gets the lock's name with `link(2)`
//! (which, like an exclusive create, fails if the name exists). A process
//! killed at any moment thus leaves either no lock or one naming it, never
//! an empty one that would look like git's and block every later run.

use crate::error::MaintError;
use crate::process;
use crate::repo::Repo;
use refstore_fs::Vfs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// git gives up on a `gc.pid` this old.
const GC_PID_MAX_AGE: Duration = Duration::from_secs(12 * 3600);

/// Both locks, released when dropped.
#[derive(Debug)]
pub struct MaintenanceLock {
    vfs: Arc<dyn Vfs>,
    maintenance: PathBuf,
    gc_pid: Option<(PathBuf, Vec<u8>)>,
}

impl MaintenanceLock {
    /// Takes both locks; `None` (with a warning) if git or another
    /// refstore holds either.
    pub fn acquire(repo: &Repo) -> Result<Option<MaintenanceLock>, MaintError> {
        let vfs = &repo.vfs;
        let host = process::hostname();
        let path = repo.objects_dir().join("maintenance.lock");
        let content = format!("refstore maintenance {} on {host}\n", std::process::id());
        let mut attempts = 0;
        loop {
            attempts += 1;
            match create_with(repo, &path, content.as_bytes())? {
                true => break,
                false if attempts == 1 => {
                    if abandoned_by_refstore(vfs.as_ref(), &path, &host) {
                        let _ = vfs.unlink(&path);
                        continue;
                    }
                    eprintln!(
                        "warning: lock file '{}' exists, skipping maintenance",
                        path.display()
                    );
                    return Ok(None);
                }
                false => {
                    eprintln!(
                        "warning: lock file '{}' exists, skipping maintenance",
                        path.display()
                    );
                    return Ok(None);
                }
            }
        }
        let mut lock = MaintenanceLock {
            vfs: vfs.clone(),
            maintenance: path,
            gc_pid: None,
        };
        match take_gc_pid(repo, &host)? {
            Some(held) => lock.gc_pid = Some(held),
            None => return Ok(None),
        }
        Ok(Some(lock))
    }
}

/// True if the maintenance lock was written by a refstore process on this
/// host that is gone.
fn abandoned_by_refstore(vfs: &dyn Vfs, path: &Path, host: &str) -> bool {
    let Ok(content) = vfs.read(path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&content);
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["refstore", "maintenance", pid, "on", on] if *on == host => {
            pid.parse().is_ok_and(|pid| !process::is_alive(pid))
        }
        _ => false,
    }
}

/// Writes `gc.pid` as `git gc` does, unless a live gc holds it.
fn take_gc_pid(repo: &Repo, host: &str) -> Result<Option<(PathBuf, Vec<u8>)>, MaintError> {
    let vfs = &repo.vfs;
    let path = repo.common_dir().join("gc.pid");
    let lock_path = repo.common_dir().join("gc.pid.lock");
    let content = format!("{} {host}", std::process::id()).into_bytes();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match create_with(repo, &lock_path, &content)? {
            true => break,
            false => {
                // git writes `<pid> <host>` into it as well: one naming a
                // process of this host that is gone is abandoned.
                if attempts == 1 && names_dead_process(vfs.as_ref(), &lock_path, host) {
                    let _ = vfs.unlink(&lock_path);
                    continue;
                }
                eprintln!(
                    "warning: '{}' exists: a gc is starting, skipping maintenance",
                    lock_path.display()
                );
                return Ok(None);
            }
        }
    }
    let held_by_live_gc = match (vfs.read(&path), vfs.stat(&path)) {
        (Ok(content), Ok(meta)) => {
            let young = SystemTime::now()
                .duration_since(meta.modified)
                .map_or(true, |age| age < GC_PID_MAX_AGE);
            let text = String::from_utf8_lossy(&content);
            let mut words = text.split_whitespace();
            let pid = words.next().and_then(|p| p.parse::<u32>().ok());
            let on = words.next();
            young
                && on == Some(host)
                && pid.is_some_and(|pid| pid != std::process::id() && process::is_alive(pid))
        }
        _ => false,
    };
    if held_by_live_gc {
        let _ = vfs.unlink(&lock_path);
        eprintln!("warning: gc is already running on this machine, skipping maintenance");
        return Ok(None);
    }
    if let Err(e) = vfs.rename(&lock_path, &path) {
        let _ = vfs.unlink(&lock_path);
        return Err(e.into());
    }
    Ok(Some((path, content)))
}

/// Creates `path` holding `content`; false if it exists. Never visible
/// without its content.
fn create_with(repo: &Repo, path: &Path, content: &[u8]) -> Result<bool, MaintError> {
    let vfs = repo.vfs.as_ref();
    let (temp, mut file) = refstore_fs::temp::create(vfs, repo.objects_dir(), "tmp_lock_")?;
    let linked = file.write_all(content).and_then(|_| {
        drop(file);
        vfs.link(&temp, path)
    });
    let _ = vfs.unlink(&temp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.is_already_exists() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// True if the lock at `path` holds `<pid> <host>` naming a process of
/// this host that is gone.
fn names_dead_process(vfs: &dyn Vfs, path: &Path, host: &str) -> bool {
    let Ok(content) = vfs.read(path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&content);
    match text.split_whitespace().collect::<Vec<_>>().as_slice() {
        [pid, on] if *on == host => pid.parse().is_ok_and(|pid| !process::is_alive(pid)),
        _ => false,
    }
}

impl Drop for MaintenanceLock {
    fn drop(&mut self) {
        if let Some((path, content)) = &self.gc_pid {
            // Only our own record: a git gc may have taken over a stale one.
            if self.vfs.read(path).is_ok_and(|c| &c == content) {
                let _ = self.vfs.unlink(path);
            }
        }
        let _ = self.vfs.unlink(&self.maintenance);
    }
}

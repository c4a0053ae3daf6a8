//! The `cleanup` task: removing what crashed processes leave behind, and
//! nothing that a live one still uses.
//!
//! - `tmp_*` files in `objects/`, its fan-out directories and
//!   `objects/pack/` (refstore and git name every temporary object, pack,
//!   index and reverse index so), and `tmp_objdir-*` quarantine
//!   directories of receive-packs, once older than
//!   `refstore.cleanupExpire`: a writer keeps writing its temporary file
//!   until it renames it, so one untouched that long has no writer.
//! - `.keep` files written by a receive-pack (`receive-pack <pid> on
//!   <host>`; refstore writes `refstore` as the host) whose process is
//!   gone: whether the push updated its refs or not, the pack needs no
//!   protection any more (its objects are referenced, or unreachable and
//!   left to pruning). A `.keep` of unknown origin is kept while its pack
//!   exists, and removed with the pack gone once older than the expiry.
//! - Pack files without an index (a pack is named before its index, so a
//!   crash in between leaves one) once older than the expiry, but for
//!   rolled-up packs waiting to expire ([`crate::rolled_up`]), which
//!   `incremental-repack` deletes.
//! - Lock files under `refs/`, `packed-refs.lock`, `HEAD.lock` and
//!   `reftable/tables.list.lock` that are stale by refstore's rule
//!   ([`refstore_fs::stale`]: older than `refstore.staleLockAge` and no
//!   live holder), and `multi-pack-index.lock` / `commit-graph.lock` /
//!   `commit-graph-chain.lock` older than the expiry (they are written in
//!   well under that), with the temporary layers of a commit-graph chain.

use crate::error::MaintError;
use crate::process::{self, KeepHolder};
use crate::repo::Repo;
use refstore_fs::{FileKind, Vfs};
use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What the task removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Cleaned {
    /// Temporary files.
    pub temp_files: usize,
    /// Quarantine directories.
    pub quarantines: usize,
    /// `.keep` files.
    pub keeps: usize,
    /// Pack files without an index.
    pub orphans: usize,
    /// Lock files.
    pub locks: usize,
}

impl fmt::Display for Cleaned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "removed {} temporary files, {} quarantine directories, {} .keep files, \
             {} pack files without index, {} stale locks",
            self.temp_files, self.quarantines, self.keeps, self.orphans, self.locks
        )
    }
}

/// Runs the task.
pub fn run(repo: &Repo) -> Result<Cleaned, MaintError> {
    let mut cleaned = Cleaned::default();
    let expiry = repo.maint.cleanup_expire;
    let now = SystemTime::now();
    let old = |vfs: &dyn Vfs, path: &Path| -> bool {
        let Some(expiry) = expiry else { return false };
        vfs.stat(path)
            .is_ok_and(|meta| now.duration_since(meta.modified).unwrap_or(Duration::ZERO) >= expiry)
    };
    let vfs = repo.vfs.as_ref();
    let objects = repo.objects_dir();
    for entry in list(vfs, objects)? {
        let name = entry.name.to_string_lossy();
        let path = objects.join(&entry.name);
        if name.starts_with("tmp_objdir-") && entry.kind == FileKind::Dir {
            // Untouched as a whole: a receive-pack writes below it.
            if expiry.is_some_and(|expiry| {
                newest(vfs, &path)
                    .is_some_and(|t| now.duration_since(t).unwrap_or_default() >= expiry)
            }) {
                remove_tree(vfs, &path)?;
                cleaned.quarantines += 1;
            }
        } else if name.starts_with("tmp_") && entry.kind == FileKind::File {
            if old(vfs, &path) && removed(vfs, &path)? {
                cleaned.temp_files += 1;
            }
        } else if name.len() == 2 && entry.kind == FileKind::Dir && is_hex(&name) {
            for file in list(vfs, &path)? {
                let file_path = path.join(&file.name);
                if file.name.to_string_lossy().starts_with("tmp_")
                    && old(vfs, &file_path)
                    && removed(vfs, &file_path)?
                {
                    cleaned.temp_files += 1;
                }
            }
        }
    }
    clean_pack_dir(repo, &mut cleaned, &old)?;
    for lock in ["commit-graph.lock", "refstore-redundant-packs.lock"] {
        let path = objects.join("info").join(lock);
        if old(vfs, &path) && removed(vfs, &path)? {
            cleaned.locks += 1;
        }
    }
    let graphs = objects.join("info").join("commit-graphs");
    for entry in list(vfs, &graphs)? {
        let name = entry.name.to_string_lossy();
        let path = graphs.join(&entry.name);
        if !old(vfs, &path) {
            continue;
        }
        if name.starts_with("tmp_") && removed(vfs, &path)? {
            cleaned.temp_files += 1;
        } else if name == "commit-graph-chain.lock" && removed(vfs, &path)? {
            cleaned.locks += 1;
        }
    }
    clean_ref_locks(repo, &mut cleaned)?;
    clean_packed_new(repo, &mut cleaned)?;
    Ok(cleaned)
}

/// `packed-refs.new`, which only a holder of `packed-refs.lock` writes
/// (refstore and git alike) and renames before letting the lock go: found
/// while the lock can be taken, it was left by a process that died, and
/// git's next rewrite of `packed-refs` would fail on it.
fn clean_packed_new(repo: &Repo, cleaned: &mut Cleaned) -> Result<(), MaintError> {
    let new = repo.common_dir().join("packed-refs.new");
    if !repo.vfs.exists(&new) {
        return Ok(());
    }
    let packed = repo.common_dir().join("packed-refs");
    let Ok(lock) = refstore_fs::lock::LockFile::acquire(&repo.vfs, packed, Duration::ZERO) else {
        return Ok(());
    };
    if removed(repo.vfs.as_ref(), &new)? {
        cleaned.temp_files += 1;
    }
    lock.rollback()?;
    Ok(())
}

fn clean_pack_dir(
    repo: &Repo,
    cleaned: &mut Cleaned,
    old: &dyn Fn(&dyn Vfs, &Path) -> bool,
) -> Result<(), MaintError> {
    let vfs = repo.vfs.as_ref();
    let dir = repo.pack_dir();
    let entries = list(vfs, &dir)?;
    let names: std::collections::HashSet<String> = entries
        .iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    // Rolled-up packs waiting to expire have no index by design; the
    // repack that hid them deletes them.
    let waiting = crate::rolled_up::read(vfs, repo.objects_dir())?;
    let host = process::hostname();
    for name in &names {
        let path = dir.join(name);
        if name.starts_with("tmp_") {
            if old(vfs, &path) && removed(vfs, &path)? {
                cleaned.temp_files += 1;
            }
            continue;
        }
        if name == "multi-pack-index.lock" {
            if old(vfs, &path) && removed(vfs, &path)? {
                cleaned.locks += 1;
            }
            continue;
        }
        let Some((base, ext)) = name.rsplit_once('.') else {
            continue;
        };
        if !base.starts_with("pack-") {
            continue;
        }
        let has = |ext: &str| names.contains(&format!("{base}.{ext}"));
        match ext {
            "keep" => {
                let content = match vfs.read(&path) {
                    Ok(content) => content,
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e.into()),
                };
                let remove = match process::keep_holder(&content, &host) {
                    KeepHolder::Gone => true,
                    KeepHolder::Alive => false,
                    KeepHolder::Unknown => !has("pack") && !has("idx") && old(vfs, &path),
                };
                if remove && removed(vfs, &path)? {
                    cleaned.keeps += 1;
                }
            }
            // Named before the index, so without one it may be a pack
            // being stored right now: only an old one is a leftover.
            "pack" | "rev" | "bitmap" | "mtimes" | "promisor"
                if !has("idx")
                    && !waiting.contains_key(base)
                    && old(vfs, &path)
                    && removed(vfs, &path)? =>
            {
                cleaned.orphans += 1;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Stale lock files of the ref store.
fn clean_ref_locks(repo: &Repo, cleaned: &mut Cleaned) -> Result<(), MaintError> {
    let Some(age) = repo.settings.stale_lock_age else {
        return Ok(());
    };
    refstore_fs::stale::recover_stale_locks(repo.common_dir(), age);
    let mut locks = Vec::new();
    for name in ["packed-refs.lock", "HEAD.lock"] {
        locks.push(repo.common_dir().join(name));
    }
    locks.push(repo.common_dir().join("reftable").join("tables.list.lock"));
    find_locks(
        repo.vfs.as_ref(),
        &repo.common_dir().join("refs"),
        &mut locks,
    )?;
    for lock in locks {
        if !repo.vfs.exists(&lock) {
            continue;
        }
        if refstore_fs::stale::remove_if_stale(&repo.vfs, &lock)? {
            cleaned.locks += 1;
        }
    }
    Ok(())
}

fn find_locks(
    vfs: &dyn Vfs,
    dir: &Path,
    out: &mut Vec<std::path::PathBuf>,
) -> Result<(), MaintError> {
    for entry in list(vfs, dir)? {
        let path = dir.join(&entry.name);
        match entry.kind {
            FileKind::Dir => find_locks(vfs, &path, out)?,
            FileKind::File if entry.name.to_string_lossy().ends_with(".lock") => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

fn list(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<refstore_fs::DirEntry>, MaintError> {
    match vfs.read_dir(dir) {
        Ok(entries) => Ok(entries),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Removes a file; false if it was already gone.
fn removed(vfs: &dyn Vfs, path: &Path) -> Result<bool, MaintError> {
    match vfs.unlink(path) {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn remove_tree(vfs: &dyn Vfs, dir: &Path) -> Result<(), MaintError> {
    for entry in list(vfs, dir)? {
        let path = dir.join(&entry.name);
        if entry.kind == FileKind::Dir {
            remove_tree(vfs, &path)?;
        } else {
            removed(vfs, &path)?;
        }
    }
    match vfs.rmdir(dir) {
        Err(e) if !e.is_not_found() => Err(e.into()),
        _ => Ok(()),
    }
}

/// The newest modification time in a tree (`None` if it cannot be read).
fn newest(vfs: &dyn Vfs, path: &Path) -> Option<SystemTime> {
    let meta = vfs.stat(path).ok()?;
    let mut newest = meta.modified;
    if meta.kind == FileKind::Dir {
        for entry in vfs.read_dir(path).ok()? {
            newest = newest.max(self::newest(vfs, &path.join(&entry.name))?);
        }
    }
    Some(newest)
}

fn is_hex(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_hexdigit())
}

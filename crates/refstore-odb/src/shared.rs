//! Stores and pack sets shared by the requests of one process while a
//! repository's pack directory stays as it was.
//!
//! Opening gix's store lists `objects/pack` (twice: to size its table of
//! indexes, then to load it), and opening [`Packs`] lists it again and
//! maps every index. A server answering a fetch did this for each HTTP
//! request of it, and a directory that held many packs once (ext4 does
//! not shrink a directory) is costly to read even when it holds few now.
//! Here the first request opens them and later requests reuse them, as
//! long as the pack directory is unchanged.
//!
//! Unchanged means its signature (modification and change times, inode,
//! size) is the one it had when they were opened, and that signature was
//! not racy: a pack stored or deleted, a `multi-pack-index` or bitmap
//! replaced, renames an entry in or out of the directory and so moves
//! its modification time, unless that happens within the timestamp tick
//! of the signature itself. So a signature is only trusted when the
//! directory's modification time was at least [`RACY`] older than the
//! moment it was read, as git trusts an index entry's stat data only when
//! the file is older than the index. What is reused is then exactly what
//! opening anew would find. Objects stored since are found as before:
//! gix's store looks again when an id is not found, and readers of
//! [`Packs`] fall back to it.
//!
//! A repository with alternates is not shared: their pack directories
//! would need signatures too, and forks are rarely hot. Entries unused for
//! [`IDLE`] are dropped (with them the mappings of packs deleted since),
//! and [`forget`] drops one at once, for housekeeping that deleted packs.

use crate::{OdbError, Packs};
use refstore_hash::ObjectFormat;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// How much older than the moment it is read a pack directory's
/// modification time must be for its signature to be trusted: more than
/// the timestamp granularity of any filesystem a repository lives on.
pub const RACY: Duration = Duration::from_secs(1);

/// How long an entry no request used is kept.
pub const IDLE: Duration = Duration::from_secs(30);

/// At most this many repositories are kept; the least recently used goes
/// first.
const CAPACITY: usize = 256;

/// What identifies the contents of a pack directory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Signature {
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
    device: u64,
    size: u64,
}

struct Entry {
    format: ObjectFormat,
    signature: Signature,
    store: Option<Arc<gix_odb::Store>>,
    packs: Option<Arc<Packs>>,
    used: Instant,
}

static SHARED: Mutex<Option<HashMap<PathBuf, Entry>>> = Mutex::new(None);

fn shared() -> MutexGuard<'static, Option<HashMap<PathBuf, Entry>>> {
    SHARED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// gix's store on the object database at `objects_dir`: the one opened
/// for an earlier request while the pack directory is unchanged, else a
/// new one (kept for later requests when the directory's signature can
/// be trusted).
pub fn shared_store(
    objects_dir: &Path,
    format: ObjectFormat,
) -> Result<Arc<gix_odb::Store>, OdbError> {
    reuse_or_open(
        objects_dir,
        format,
        |e| &mut e.store,
        || crate::odb::open_store(objects_dir, format),
    )
}

/// The packs of the object database at `objects_dir`, as
/// [`Packs::open`] opens them: those opened for an earlier request while
/// the pack directory is unchanged, else opened now (and kept when the
/// directory's signature can be trusted).
pub fn shared_packs(objects_dir: &Path, format: ObjectFormat) -> Result<Arc<Packs>, OdbError> {
    reuse_or_open(
        objects_dir,
        format,
        |e| &mut e.packs,
        || Packs::open(objects_dir, format),
    )
}

/// What `slot` of the entry of `objects_dir` holds, if the pack
/// directory's trusted signature is still the entry's; else `open`ed
/// now and kept there when the signature can be trusted.
fn reuse_or_open<T>(
    objects_dir: &Path,
    format: ObjectFormat,
    slot: fn(&mut Entry) -> &mut Option<Arc<T>>,
    open: impl FnOnce() -> Result<T, OdbError>,
) -> Result<Arc<T>, OdbError> {
    let Some(signature) = trusted_signature(objects_dir) else {
        return Ok(Arc::new(open()?));
    };
    if let Some(kept) = with_entry(objects_dir, format, signature, |e| slot(e).clone()) {
        return Ok(kept);
    }
    // Opened after the signature was read, so at least as new as what it
    // names; had the directory changed meanwhile, its signature moved on
    // and no later request matches this one.
    let opened = Arc::new(open()?);
    keep(objects_dir, format, signature, |e| {
        slot(e).get_or_insert_with(|| opened.clone());
    });
    Ok(opened)
}

/// Drops what is kept for the object database at `objects_dir`, so that
/// the packs it maps are let go of now (housekeeping deleted some).
pub fn forget(objects_dir: &Path) {
    let dropped = shared()
        .as_mut()
        .and_then(|entries| entries.remove(objects_dir));
    // Unmapped outside the lock.
    drop(dropped);
}

/// The signature of the pack directory at `objects_dir`, if it can be
/// trusted: the directory is there, older than [`RACY`], and the database
/// has no alternates.
fn trusted_signature(objects_dir: &Path) -> Option<Signature> {
    if objects_dir.join("info/alternates").exists() {
        return None;
    }
    let now = SystemTime::now();
    let meta = std::fs::metadata(objects_dir.join("pack")).ok()?;
    let age = now.duration_since(meta.modified().ok()?).ok()?;
    if age < RACY {
        return None;
    }
    Some(Signature {
        modified: (meta.mtime(), meta.mtime_nsec()),
        changed: (meta.ctime(), meta.ctime_nsec()),
        inode: meta.ino(),
        device: meta.dev(),
        size: meta.size(),
    })
}

/// `take` of the entry of `objects_dir`, if it has `signature` and
/// `format`; an entry with another signature is dropped.
fn with_entry<T>(
    objects_dir: &Path,
    format: ObjectFormat,
    signature: Signature,
    take: impl FnOnce(&mut Entry) -> Option<T>,
) -> Option<T> {
    let mut guard = shared();
    let entries = guard.get_or_insert_with(HashMap::new);
    let entry = entries.get_mut(objects_dir)?;
    if entry.signature == signature && entry.format == format {
        entry.used = Instant::now();
        return take(entry);
    }
    let stale = entries.remove(objects_dir);
    drop(guard);
    // Unmapped outside the lock.
    drop(stale);
    None
}

/// Keeps what `fill` puts in the entry of `objects_dir` for `signature`,
/// making the entry if there is none, and drops idle entries.
fn keep(
    objects_dir: &Path,
    format: ObjectFormat,
    signature: Signature,
    fill: impl FnOnce(&mut Entry),
) {
    let mut guard = shared();
    let entries = guard.get_or_insert_with(HashMap::new);
    let now = Instant::now();
    let mut dropped = Vec::new();
    let idle: Vec<PathBuf> = entries
        .iter()
        .filter(|(_, e)| now.duration_since(e.used) >= IDLE)
        .map(|(dir, _)| dir.clone())
        .collect();
    dropped.extend(idle.iter().filter_map(|dir| entries.remove(dir)));
    if !entries.contains_key(objects_dir) && entries.len() >= CAPACITY {
        let oldest = entries
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(dir, _)| dir.clone());
        dropped.extend(oldest.and_then(|dir| entries.remove(&dir)));
    }
    if entries
        .get(objects_dir)
        .is_some_and(|e| e.signature != signature || e.format != format)
    {
        dropped.extend(entries.remove(objects_dir));
    }
    let entry = entries
        .entry(objects_dir.to_owned())
        .or_insert_with(|| Entry {
            format,
            signature,
            store: None,
            packs: None,
            used: now,
        });
    entry.used = now;
    fill(entry);
    drop(guard);
    // Unmapped outside the lock.
    drop(dropped);
}

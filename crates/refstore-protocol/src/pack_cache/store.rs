//! The cache directory: finished entries (`<key>.pack`), entries being
//! written (`tmp_packcache_<key>_<suffix>`), looking an entry up, and the
//! bounds (size, age; least recently used out first).
//!
//! A finished entry is the pack's bytes followed by a footer: a magic
//! string, the key, the pack's length and its CRC32. An entry is served
//! only when the footer names the entry's own key and the CRC32 of the
//! bytes read matches: a file cut short or damaged on disk is removed and
//! the pack computed afresh (see `lookup.rs`). Entries are never written in place: a new one
//! is written under a temporary name and renamed once its pack's trailing
//! checksum is verified, so a reader sees a whole entry or none.

use super::inflight::{Inflight, Outcome};
use super::key::CacheKey;
use super::reader::EntryReader;
use refstore_fs::{FileKind, Vfs};
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What a finished entry ends with.
pub(crate) const MAGIC: &[u8; 8] = b"RSPCACH1";
/// Magic, key, pack length, CRC32.
pub(crate) const FOOTER_LEN: u64 = 8 + 32 + 8 + 4;
/// What the names of entries being written start with.
pub(crate) const TEMP_PREFIX: &str = "tmp_packcache_";

/// How large and how old the cache may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes of finished entries at most; a pack larger than this is not
    /// kept.
    pub max_size: u64,
    /// Entries not used for this long are removed.
    pub max_age: Duration,
}

/// One cache directory, shared by every request of the process that
/// uses it.
#[derive(Debug)]
pub struct PackCache {
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) dir: PathBuf,
    bounds: Mutex<Bounds>,
    pub(crate) inflight: Mutex<HashMap<CacheKey, Arc<Inflight>>>,
}

impl PackCache {
    /// Opens (creating it if needed) the cache at `dir` and removes what
    /// writers that died left there: entries being written that no live
    /// process holds.
    pub fn open(vfs: Arc<dyn Vfs>, dir: &Path, bounds: Bounds) -> refstore_fs::Result<Self> {
        vfs.create_dir_all(dir)?;
        let cache = PackCache {
            vfs,
            dir: dir.to_owned(),
            bounds: Mutex::new(bounds),
            inflight: Mutex::new(HashMap::new()),
        };
        cache.remove_leftovers()?;
        cache.enforce_bounds();
        Ok(cache)
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bounds now in force.
    pub fn bounds(&self) -> Bounds {
        *self.bounds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the bounds (they come from configuration, read per request).
    pub fn set_bounds(&self, bounds: Bounds) {
        *self.bounds.lock().unwrap_or_else(|e| e.into_inner()) = bounds;
    }

    pub(crate) fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.pack", key.to_hex()))
    }

    pub(crate) fn lock_inflight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Arc<Inflight>>> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A reader of the entry being written for `key`, if one is.
    pub(super) fn follow(
        &self,
        inflight: &HashMap<CacheKey, Arc<Inflight>>,
        key: &CacheKey,
    ) -> Option<EntryReader> {
        let entry = inflight.get(key)?;
        let mut state = entry.lock();
        if state.outcome != Outcome::Writing {
            return None;
        }
        let file = std::fs::File::open(&entry.temp).ok()?;
        state.followers += 1;
        drop(state);
        Some(EntryReader::growing(file, entry.clone()))
    }

    /// Opens the finished entry at `path` and checks it whole: `None` if
    /// it is gone or too old (then removed), `Err` if it is damaged.
    pub(super) fn open_finished(
        &self,
        key: &CacheKey,
        path: &Path,
    ) -> Result<Option<EntryReader>, String> {
        let Ok(file) = std::fs::File::open(path) else {
            return Ok(None);
        };
        let metadata = file.metadata().map_err(|e| e.to_string())?;
        let age = metadata
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .unwrap_or_default();
        if age > self.bounds().max_age {
            if self.vfs.unlink(path).is_ok() {
                count_evictions(1, metadata.len());
            }
            return Ok(None);
        }
        let pack_len = check_entry(&file, metadata.len(), key)?;
        Ok(Some(EntryReader::finished(file, pack_len)))
    }

    /// Removes entries being written that no live writer holds (a writer
    /// keeps an exclusive `flock` on its file while it writes).
    fn remove_leftovers(&self) -> refstore_fs::Result<()> {
        for entry in self.vfs.read_dir(&self.dir)? {
            let name = entry.name.to_string_lossy();
            if entry.kind != FileKind::File || !name.starts_with(TEMP_PREFIX) {
                continue;
            }
            let path = self.dir.join(&entry.name);
            let Ok(mut file) = self.vfs.open_existing(&path) else {
                continue;
            };
            if file.try_flock().unwrap_or(false) {
                tracing::info!("pack cache: removing {} left by a writer that died", name);
                let _ = self.vfs.unlink(&path);
            }
        }
        Ok(())
    }

    /// Removes entries unused for longer than the age bound, then the
    /// least recently used until the rest fit in the size bound.
    pub fn enforce_bounds(&self) {
        let bounds = self.bounds();
        let Ok(listing) = self.vfs.read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for entry in listing {
            let name = entry.name.to_string_lossy();
            let is_entry = name
                .strip_suffix(".pack")
                .is_some_and(|hex| CacheKey::from_hex(hex).is_some());
            if entry.kind != FileKind::File || !is_entry {
                continue;
            }
            let path = self.dir.join(&entry.name);
            if let Ok(metadata) = self.vfs.stat(&path) {
                entries.push((metadata.modified, metadata.len, path));
            }
        }
        entries.sort();
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        let (mut removed, mut removed_bytes) = (0, 0);
        for (modified, len, path) in entries {
            let aged = now.duration_since(modified).unwrap_or_default() > bounds.max_age;
            if !aged && total <= bounds.max_size {
                continue;
            }
            if self.vfs.unlink(&path).is_ok() {
                removed += 1;
                removed_bytes += len;
            }
            total -= len;
        }
        count_evictions(removed, removed_bytes);
    }
}

fn count_evictions(entries: u64, bytes: u64) {
    if entries == 0 {
        return;
    }
    if let Some(observer) = refstore_fs::observe::observer() {
        observer.pack_cache_evicted(entries, bytes);
    }
}

/// Checks a finished entry of `len` bytes whole: its footer names `key`
/// and its pack's CRC32 matches. The pack's length.
fn check_entry(file: &std::fs::File, len: u64, key: &CacheKey) -> Result<u64, String> {
    if len < FOOTER_LEN + 12 {
        return Err(format!("{len} bytes is too short for an entry"));
    }
    let mut footer = [0u8; FOOTER_LEN as usize];
    file.read_exact_at(&mut footer, len - FOOTER_LEN)
        .map_err(|e| e.to_string())?;
    if &footer[..8] != MAGIC || footer[8..40] != key.0 {
        return Err("the footer does not name this entry".into());
    }
    let pack_len = u64::from_be_bytes(footer[40..48].try_into().expect("8 bytes"));
    let crc = u32::from_be_bytes(footer[48..52].try_into().expect("4 bytes"));
    if pack_len != len - FOOTER_LEN {
        return Err(format!(
            "the footer says {pack_len} pack bytes, the file holds {}",
            len - FOOTER_LEN
        ));
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut reader = std::io::Read::take(file, pack_len);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    if hasher.finalize() != crc {
        return Err("its CRC32 does not match".into());
    }
    Ok(pack_len)
}

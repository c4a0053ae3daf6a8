//! Looking a pack up: an entry being written is followed, a finished
//! one checked and sent, and otherwise the caller computes the pack into
//! a new entry.

use super::fill::Fill;
use super::key::CacheKey;
use super::reader::EntryReader;
use super::store::PackCache;
use refstore_hash::ObjectFormat;
use std::sync::Arc;

/// What a lookup found.
pub enum Lookup {
    /// A finished entry, checked.
    Hit(EntryReader),
    /// An entry another request is writing: read it as it grows.
    Follow(EntryReader),
    /// Nothing: compute the pack and write it into the entry.
    Miss(Box<Fill>),
    /// Nothing, and no entry can be written (the directory is not
    /// writable): compute the pack for this request alone.
    Uncached,
}

impl PackCache {
    /// Finds the entry of `key`: finished, being written, or neither (the
    /// caller then writes it, a pack hashed with `hash`).
    pub fn lookup(self: &Arc<Self>, key: CacheKey, hash: ObjectFormat) -> Lookup {
        let path = self.entry_path(&key);
        let mut inflight = self.lock_inflight();
        if let Some(reader) = self.follow(&inflight, &key) {
            return Lookup::Follow(reader);
        }
        if self.vfs.exists(&path) {
            drop(inflight);
            match self.open_finished(&key, &path) {
                Ok(Some(reader)) => {
                    // Its use makes it the most recently used.
                    let _ = self.vfs.touch(&path);
                    return Lookup::Hit(reader);
                }
                Ok(None) => {}
                Err(reason) => {
                    tracing::warn!("pack cache entry {}: {reason}; removed", path.display());
                    if let Some(observer) = refstore_fs::observe::observer() {
                        observer.pack_cache_lookup("corrupt");
                    }
                    let _ = self.vfs.unlink(&path);
                }
            }
            inflight = self.lock_inflight();
            if let Some(reader) = self.follow(&inflight, &key) {
                return Lookup::Follow(reader);
            }
        }
        match Fill::start(self.clone(), key, hash) {
            Ok((fill, entry)) => {
                inflight.insert(key, entry);
                Lookup::Miss(Box::new(fill))
            }
            Err(e) => {
                tracing::warn!("pack cache {}: {e}", self.dir.display());
                Lookup::Uncached
            }
        }
    }
}

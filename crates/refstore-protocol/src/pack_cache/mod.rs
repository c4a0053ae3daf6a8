//! The pack cache: one computation for many identical fetches (a CI
//! system's fifty jobs cloning the same commit within seconds).
//!
//! # What a pack is a function of
//!
//! upload-pack computes a fetch's pack from its walk's inputs and the
//! choices of how to write it. The key ([`key`]) is a digest over exactly
//! those, which upload-pack has settled by the time the pack starts:
//!
//! - the repository (its resolved git directory) and its object format;
//! - the wants, with the parents of deepened shallow commits;
//! - the common commits negotiation settled on, with the client's shallow
//!   commits that gain their parents (`edges`, kept apart too: the walk
//!   treats them differently);
//! - the shallow boundary the walk applies (`grafts`): what the client's
//!   `shallow` lines and `deepen`, `deepen-since`, `deepen-not` and
//!   `deepen-relative` came to (so two spellings of one boundary share
//!   an entry, and `deepen-not <ref>` is keyed by what the ref named);
//! - the annotated tags offered to `include-tag`, and whether it is on;
//! - the filter, encoded canonically (a `sparse:oid=` filter, whose
//!   patterns come from a blob the request may name through a ref, is
//!   not cached);
//! - whether the pack may be thin, and whether its deltas may name their
//!   base by offset (`ofs-delta`; without it they name it by id).
//!
//! Sets are sorted and deduplicated: the order of a client's lines does
//! not change the objects sent, only perhaps their order, and any pack
//! of the same objects is a right answer. Not in the key: progress
//! (`no-progress`) and the side-band mode,
//! which frame the pack per connection: the cache holds the pack's bytes
//! alone, and each request frames them for its client. The refs are not
//! in it either: by the time the pack starts, everything taken from them
//! (wants, tags, `deepen-not`) is an id in the key.
//!
//! # Why the object store's state may change under a key
//!
//! Objects are named by their content, so the set of objects reachable
//! from the wants and not from the common commits is the same whatever
//! else the repository holds. What may differ between two computations is
//! how they are written: new packs (a push, a repack) change which stored
//! deltas are reused. Either pack is correct; the cache serves the first.
//! Pruning cannot make a cached pack wrong: the pack is self-contained
//! (every delta base is in it, or on the client for a thin pack), and a
//! fetch reaches the cache only after its wants were judged against the
//! repository as it is now, so an object that is gone is refused before
//! any lookup. A want is also the only way into an entry: an entry is
//! served only to a request whose wants the repository accepted, and a
//! want's id determines everything its pack holds.
//!
//! # Entries
//!
//! See [`store`] for the files and bounds and [`fill`] for how the first
//! request writes an entry while others read it. Entries are written
//! through [`refstore_fs::Vfs`]; reads use plain files (read-only).
//!
//! # Configuration
//!
//! `refstore.packCache.enabled`, `.path`, `.maxSize`, `.maxAge` (see
//! docs/configuration.md), read per request from the repository's
//! configuration, over the process's defaults ([`set_defaults`]:
//! `refstore serve` turns the cache on with a directory of its own).

mod fill;
mod inflight;
pub mod key;
mod lookup;
mod reader;
pub mod store;

pub use fill::{Fill, Tee};
pub use lookup::Lookup;
pub use reader::{CopyError, EntryReader};
pub use store::{Bounds, PackCache};

use refstore_fs::config::Config;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// `refstore.packCache.maxSize`'s default: 1 GiB.
pub const DEFAULT_MAX_SIZE: u64 = 1 << 30;
/// `refstore.packCache.maxAge`'s default: 5 minutes.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);

/// What a process uses where configuration says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Defaults {
    /// Whether the cache is on.
    pub enabled: bool,
    /// The cache's directory (`None`: `refstore-pack-cache` in the
    /// repository's git directory).
    pub path: Option<PathBuf>,
}

static DEFAULTS: OnceLock<Defaults> = OnceLock::new();
static CACHES: OnceLock<Mutex<HashMap<PathBuf, Arc<PackCache>>>> = OnceLock::new();

/// Sets the process's defaults (once; false if they were set).
pub fn set_defaults(defaults: Defaults) -> bool {
    DEFAULTS.set(defaults).is_ok()
}

/// The settings of the cache for one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `refstore.packCache.enabled`.
    pub enabled: bool,
    /// `refstore.packCache.path`, relative to the git directory.
    pub path: PathBuf,
    /// `refstore.packCache.maxSize` and `refstore.packCache.maxAge`.
    pub bounds: Bounds,
}

impl Settings {
    /// The settings `config` gives a repository at `git_dir`, over
    /// `defaults`.
    pub fn read(config: &Config, git_dir: &Path, defaults: &Defaults) -> Result<Settings, String> {
        let enabled = config
            .bool("refstore.packCache.enabled")
            .map_err(|e| e.to_string())?
            .unwrap_or(defaults.enabled);
        let path = match config.string("refstore.packCache.path") {
            Some(path) if !path.is_empty() => git_dir.join(path),
            _ => defaults
                .path
                .clone()
                .unwrap_or_else(|| git_dir.join("refstore-pack-cache")),
        };
        let positive = |key: &str, default: u64| -> Result<u64, String> {
            match config.int(key).map_err(|e| e.to_string())? {
                None => Ok(default),
                Some(v) if v > 0 => Ok(v as u64),
                Some(v) => Err(format!(
                    "bad numeric config value '{v}' for '{key}': not positive"
                )),
            }
        };
        Ok(Settings {
            enabled,
            path,
            bounds: Bounds {
                max_size: positive("refstore.packCache.maxSize", DEFAULT_MAX_SIZE)?,
                max_age: Duration::from_secs(positive(
                    "refstore.packCache.maxAge",
                    DEFAULT_MAX_AGE.as_secs(),
                )?),
            },
        })
    }
}

/// The cache a repository's fetches use, if it is on: opened (and
/// cleaned of a dead writer's leftovers) on first use in the process,
/// then shared.
pub fn for_repository(repo: &crate::Repository) -> Option<Arc<PackCache>> {
    let defaults = DEFAULTS.get().cloned().unwrap_or_default();
    open_shared(
        repo.vfs.clone(),
        Settings::read(&repo.config, &repo.location.git_dir, &defaults),
    )
}

/// Opens the process's default cache as `config` (without a repository's)
/// sets it, so that a server cleans what a crash left there when it
/// starts rather than at its first fetch. `git_dir_base` stands for the
/// git directory a relative `refstore.packCache.path` is taken from.
pub fn open_at_start(
    vfs: Arc<dyn refstore_fs::Vfs>,
    config: &Config,
    git_dir_base: &Path,
) -> Option<Arc<PackCache>> {
    let defaults = DEFAULTS.get().cloned().unwrap_or_default();
    if config
        .string("refstore.packCache.path")
        .is_some_and(|path| Path::new(&path).is_relative())
    {
        // Relative to each repository: nothing to open for the process.
        return None;
    }
    open_shared(vfs, Settings::read(config, git_dir_base, &defaults))
}

fn open_shared(
    vfs: Arc<dyn refstore_fs::Vfs>,
    settings: Result<Settings, String>,
) -> Option<Arc<PackCache>> {
    let settings = match settings {
        Ok(settings) => settings,
        Err(e) => {
            tracing::warn!("pack cache off: {e}");
            return None;
        }
    };
    if !settings.enabled {
        return None;
    }
    let mut caches = CACHES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(cache) = caches.get(&settings.path) {
        cache.set_bounds(settings.bounds);
        return Some(cache.clone());
    }
    match PackCache::open(vfs, &settings.path, settings.bounds) {
        Ok(cache) => {
            let cache = Arc::new(cache);
            caches.insert(settings.path, cache.clone());
            Some(cache)
        }
        Err(e) => {
            tracing::warn!("pack cache {} off: {e}", settings.path.display());
            None
        }
    }
}

#[cfg(test)]
mod tests;

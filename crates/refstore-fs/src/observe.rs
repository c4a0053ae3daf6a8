//! Where a long-running process (the server) learns what the storage
//! layers did, for its metrics: flush points, ref-transaction commits,
//! packs sent, pushes, a cluster's stale reads and etcd housekeeping. One observer per process, installed once; without
//! one every report is a load of an unset `OnceLock` and nothing more.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Receives reports from the storage and protocol layers. Every method
/// has an empty default, so an observer implements only what it counts.
/// Reports arrive on whatever thread did the work: implementations must be
/// quick and must not block.
pub trait Observer: Send + Sync {
    /// A flush point completed with `mechanism` (a name of
    /// `FlushMethod`/`BatchMechanism`: `fsync`, `syncfs`, `fdatasync`, ...).
    fn flushed(&self, _mechanism: &'static str, _took: Duration) {}
    /// A ref transaction of `refs` updates committed (durably, as
    /// configured), `took` from preparing to the last rename.
    fn transaction_committed(&self, _refs: usize, _took: Duration) {}
    /// A pack of `objects` objects and `bytes` bytes was sent to a client.
    fn pack_sent(&self, _objects: u64, _bytes: u64) {}
    /// A push ended; `refs_updated` refs were changed (0 if refused).
    fn push_received(&self, _refs_updated: usize) {}
    /// A cluster node that could not reach etcd answered a read from its
    /// copy of the refs, as its configuration allows (`stale_reads`).
    fn stale_read(&self) {}
    /// A cluster node's repair pass ended: `still_below` of its packs
    /// are held by fewer than `object_copies` members, after it sent
    /// `copied` packs to members lacking them.
    fn copies_checked(&self, _still_below: u64, _copied: u64) {}
    /// A cluster node's etcd housekeeping round ended: whether the node
    /// `leads` the housekeeping now, and etcd's current `revision`.
    fn etcd_round(&self, _leads: bool, _revision: i64) {}
    /// The housekeeping leader deleted `records` expired reflog records.
    fn etcd_reflog_expired(&self, _records: u64) {}
    /// The housekeeping leader compacted etcd's history to `revision`.
    fn etcd_compacted(&self, _revision: i64) {}
    /// The housekeeping leader defragmented an etcd member (`ok`) or
    /// failed to.
    fn etcd_defragmented(&self, _ok: bool) {}
    /// An etcd member's database file is `db_size` bytes, `in_use` of
    /// them in use (the rest is space a defragmentation gives back).
    fn etcd_db_size(&self, _db_size: i64, _in_use: i64) {}
    /// A fetch looked its pack up in the pack cache: `hit` (a finished
    /// entry), `follow` (an entry another request is writing), `miss`
    /// (computed and written into a new entry), or `corrupt` (an entry
    /// that failed its check, removed).
    fn pack_cache_lookup(&self, _outcome: &'static str) {}
    /// `bytes` of a cached pack were sent to a client.
    fn pack_cache_served(&self, _bytes: u64) {}
    /// `entries` cache entries of `bytes` bytes in all were removed by the
    /// cache's size or age bound.
    fn pack_cache_evicted(&self, _entries: u64, _bytes: u64) {}
}

static OBSERVER: OnceLock<Arc<dyn Observer>> = OnceLock::new();

/// Installs the process's observer; false if one is installed already
/// (the first stays).
pub fn install(observer: Arc<dyn Observer>) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// The installed observer, if any.
pub fn observer() -> Option<&'static dyn Observer> {
    OBSERVER.get().map(|o| o.as_ref())
}

//! Pruning a cluster node's packed objects: which packs hold objects old
//! and unreachable enough to drop, for `incremental-repack` to rewrite
//! without them.
//!
//! A cluster keeps every push as a pack, so its orphans (a force-pushed-
//! over or deleted branch's history) are packed, not loose. An object's
//! age is its pack's modification time, as git judges packed objects: a
//! pack younger than the grace period is whole a root of reachability
//! ([`crate::reach`]), so every object that may be dropped is in an old
//! pack, and every object a rewrite keeps is reachable. Objects moved into
//! a new pack are thereby never made to look older than they are; a
//! reachable one that turns orphan later only starts its grace again from
//! the new pack's time, which delays pruning and never hastens it.
//!
//! Such a pack is rolled up with the geometric ones into one new pack of
//! its reachable objects; the old pack becomes redundant and is deleted
//! `refstore.redundantPackExpire` later like any rolled-up pack, readers
//! still finding the dropped objects in it until then. A run that cannot
//! judge (objects missing here) leaves such a pack redundant without
//! deleting it: rolling it back in would give its orphans a new pack's
//! age and another grace period.

use crate::error::MaintError;
use crate::inventory::{Inventory, PackInfo};
use crate::reach::ClusterReach;
use crate::repo::Repo;
use std::collections::HashSet;

/// What a cluster copy's `incremental-repack` drops.
pub(crate) struct PackPrune {
    reach: ClusterReach,
    /// Packs past the grace period.
    old: HashSet<String>,
    /// Old packs holding an unreachable object: to be rewritten.
    pub to_rewrite: HashSet<String>,
}

impl PackPrune {
    /// Whether a rewrite keeps the object `id`.
    pub fn keeps(&self, id: &[u8]) -> bool {
        self.reach.reachable.contains(id)
    }

    /// Whether the object `id` of pack `pack` was dropped by pruning, so
    /// that the pack is redundant without it being anywhere else.
    pub fn dropped(&self, pack: &str, id: &[u8]) -> bool {
        self.old.contains(pack) && !self.keeps(id)
    }
}

/// The pruning of a cluster copy's packs (`packs`, those not kept by a
/// `.keep`); `None` when nothing may be pruned (not a cluster copy,
/// `gc.pruneExpire=never`, or objects missing here; see
/// [`crate::reach::cluster`]).
pub(crate) fn plan(repo: &Repo, packs: &[PackInfo]) -> Result<Option<PackPrune>, MaintError> {
    if !repo.cluster_copy {
        return Ok(None);
    }
    let Some(reach) = crate::reach::cluster(repo)? else {
        return Ok(None);
    };
    let hash_len = repo.object_format().raw_len();
    let mut old = HashSet::new();
    let mut to_rewrite = HashSet::new();
    for pack in packs.iter().filter(|p| !p.keep) {
        let pack_file = repo.pack_dir().join(format!("{}.pack", pack.name));
        match repo.vfs.stat(&pack_file) {
            Ok(meta) if reach.is_old(meta.modified) => {}
            _ => continue,
        }
        old.insert(pack.name.clone());
        let index = match repo.vfs.read_mapped(&Inventory::index_path(repo, pack)) {
            Ok(index) => index,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        let entries = crate::idx::read(&index, hash_len)?;
        if (0..entries.len()).any(|n| !reach.reachable.contains(entries.id(n))) {
            to_rewrite.insert(pack.name.clone());
        }
    }
    Ok(Some(PackPrune {
        reach,
        old,
        to_rewrite,
    }))
}

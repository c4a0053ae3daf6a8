//! What is reachable, for pruning: the walk from a set of roots over the
//! objects the repository holds ([`walk`]), and the roots a cluster
//! node's copy judges by ([`cluster`]).
//!
//! A cluster node's copy holds only part of the cluster's objects until
//! it catches up, and pushes through other nodes are not seen here, so
//! its judgement ([`ClusterReach`]) is:
//!
//! - reachable from etcd's refs, listed at one revision, and `HEAD`;
//! - or reachable from an object younger than the grace period (a loose
//!   object's file, a packed object's pack): a push in flight, through
//!   this node or another, may be about to name what it brought, and what
//!   that reaches; pushes that landed after the listing are covered the
//!   same way, their packs being young;
//! - and nothing at all is unreachable when the walk met an object this
//!   node lacks: what lies behind it (held by other nodes) could reach
//!   objects this node has, which would then look orphaned. Catching up
//!   brings the missing objects, and the next run judges again.
//!
//! The grace is `gc.pruneExpire`, raised to `refstore.clusterPruneFloor`
//! (the longest a push may take between its pack reaching a node and its
//! refs committing in etcd; see [`crate::MaintSettings`]).

use crate::error::MaintError;
use crate::inventory::Inventory;
use crate::repo::Repo;
use refstore_odb::ObjectKind;
use refstore_refs::backend::Backend;
use refstore_refs::{ObjectId, RefName};
use std::collections::HashSet;
use std::time::{Duration, SystemTime};

/// What a walk found.
pub(crate) struct Reached {
    /// Raw ids of every object reached (missing ones included).
    pub ids: HashSet<Vec<u8>>,
    /// How many of them the repository lacks.
    pub missing: usize,
}

/// A cluster copy's judgement of reachability, for pruning.
pub(crate) struct ClusterReach {
    /// Raw ids of the objects that must be kept.
    pub reachable: HashSet<Vec<u8>>,
    /// Objects younger than this are never pruned.
    pub grace: Duration,
    /// When the judgement was made; ages are measured from it.
    pub now: SystemTime,
}

impl ClusterReach {
    /// True if a file modified at `modified` is past the grace period.
    pub fn is_old(&self, modified: SystemTime) -> bool {
        self.now.duration_since(modified).unwrap_or_default() >= self.grace
    }
}

/// The grace period of a cluster copy; `None` when nothing may be pruned
/// (`gc.pruneExpire=never`).
pub(crate) fn cluster_grace(repo: &Repo) -> Option<Duration> {
    let expire = repo.maint.prune_expire?;
    Some(expire.max(repo.maint.cluster_prune_floor))
}

/// The ids every ref of `refs` and `HEAD` name, from one listing.
pub(crate) fn ref_tips(refs: &dyn Backend) -> Result<Vec<ObjectId>, MaintError> {
    let listing = refs
        .list(b"")
        .map_err(|e| MaintError::Refs(e.to_string()))?;
    let mut tips: Vec<ObjectId> = Vec::new();
    for r in &listing.refs {
        if let refstore_refs::value::Target::Object(id) = &r.target {
            tips.push(*id);
        }
    }
    if let Ok(head) = RefName::new("HEAD") {
        let resolved = refs
            .resolve(&head)
            .map_err(|e| MaintError::Refs(e.to_string()))?;
        tips.extend(resolved.and_then(|r| r.id));
    }
    Ok(tips)
}

/// The judgement of a cluster copy whose refs are `repo.refs`; `None`
/// when nothing may be pruned (no refs, pruning off, nothing older than
/// the grace period, or the walk met an object this node lacks).
pub(crate) fn cluster(repo: &Repo) -> Result<Option<ClusterReach>, MaintError> {
    let (Some(grace), Some(refs)) = (cluster_grace(repo), &repo.refs) else {
        return Ok(None);
    };
    let now = SystemTime::now();
    let young = |modified: SystemTime| now.duration_since(modified).unwrap_or_default() < grace;
    // One listing: etcd's refs at one revision.
    let mut roots = ref_tips(refs.as_ref())?;
    // Young objects are roots too. Their files are looked at after the
    // refs were listed, so a push that committed after the listing is
    // young here. A pack gone since the listing is no root; one whose
    // age cannot be read is taken for young.
    let mut any_old = false;
    for object in crate::loose_files::list(repo)? {
        match repo.vfs.stat(&object.path) {
            Ok(meta) if !young(meta.modified) => any_old = true,
            Ok(_) => roots.extend(ObjectId::from_raw(&object.id)),
            Err(_) => {}
        }
    }
    let mut young_packs = Vec::new();
    for pack in Inventory::read(repo)?.packs {
        let pack_file = repo.pack_dir().join(format!("{}.pack", pack.name));
        match repo.vfs.stat(&pack_file) {
            Ok(meta) if !young(meta.modified) => any_old |= !pack.keep,
            Err(e) if e.is_not_found() => {}
            _ => young_packs.push(pack),
        }
    }
    // Only objects older than the grace period can go: without any, the
    // walk over the whole history is spared. Under sustained pushes it
    // would run on every housekeeping run, each slower than the last as
    // packs pile up while it reads.
    if !any_old {
        return Ok(None);
    }
    let hash_len = repo.object_format().raw_len();
    for pack in young_packs {
        let index = match repo.vfs.read_mapped(&Inventory::index_path(repo, &pack)) {
            Ok(index) => index,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        let entries = crate::idx::read(&index, hash_len)?;
        roots.extend((0..entries.len()).filter_map(|n| ObjectId::from_raw(entries.id(n))));
    }
    let reached = walk(repo, roots)?;
    if reached.missing > 0 {
        tracing::info!(
            missing = reached.missing,
            "not pruning: objects the cluster's refs reach are missing here until it catches up"
        );
        return Ok(None);
    }
    Ok(Some(ClusterReach {
        reachable: reached.ids,
        grace,
        now,
    }))
}

/// Every object reachable from `roots`. Commits, trees and tags are read
/// (a tree entry's mode says it names a blob, whose presence only is
/// looked up); submodule commits are in other repositories.
pub(crate) fn walk(repo: &Repo, roots: Vec<ObjectId>) -> Result<Reached, MaintError> {
    let odb = repo.objects()?;
    let format = repo.object_format();
    let hash_len = format.raw_len();
    let mut ids: HashSet<Vec<u8>> = HashSet::new();
    let mut missing = 0;
    let mut queue = roots;
    while let Some(id) = queue.pop() {
        if !ids.insert(id.as_bytes().to_vec()) {
            continue;
        }
        let Some((kind, data)) = odb.read(&id)? else {
            missing += 1;
            continue;
        };
        match kind {
            ObjectKind::Blob => {}
            ObjectKind::Commit | ObjectKind::Tag => {
                for line in data.split(|&b| b == b'\n') {
                    if line.is_empty() {
                        break;
                    }
                    let named = line
                        .strip_prefix(b"tree ")
                        .or_else(|| line.strip_prefix(b"parent "))
                        .or_else(|| line.strip_prefix(b"object "));
                    if let Some(id) = named.and_then(|hex| ObjectId::from_hex_in(hex, format).ok())
                    {
                        queue.push(id);
                    }
                }
            }
            ObjectKind::Tree => {
                let mut rest = &data[..];
                while let Some(nul) = rest.iter().position(|&b| b == 0) {
                    let mode = rest.split(|&b| b == b' ').next().unwrap_or_default();
                    let Some(raw) = rest.get(nul + 1..nul + 1 + hash_len) else {
                        break;
                    };
                    rest = &rest[nul + 1 + hash_len..];
                    if mode == b"160000" {
                        continue;
                    }
                    let Some(id) = ObjectId::from_raw(raw) else {
                        break;
                    };
                    if mode.starts_with(b"4") {
                        queue.push(id);
                    } else if ids.insert(raw.to_vec()) && !odb.contains(&id) {
                        missing += 1;
                    }
                }
            }
        }
    }
    Ok(Reached { ids, missing })
}

//! Keeping every object on `object_copies` members after one was lost,
//! replaced or removed.
//!
//! A push is acknowledged once `object_copies` nodes hold its pack, and
//! background catch-up copies every peer's objects to every node, so
//! copies usually return to the number of members on their own. This
//! makes the guarantee explicit and measurable: in each repair pass, after
//! a repository caught up (so this node holds every object its reachable
//! peers hold), each of this node's packs is checked against the other
//! members, and a pack holding an object that fewer than `object_copies`
//! members (this one included) hold is sent to members lacking it until
//! enough do.
//!
//! What is counted: packs of this node (objects in packs; in cluster
//! mode every push is kept as a pack and maintenance packs what is loose),
//! judged object by object, since packs differ between nodes once
//! maintenance repacks them. A peer holds an object if it lists a pack of
//! the same name (packs are named by their content) or one whose index
//! names the object; only the indexes of peers' packs whose names this
//! node lacks are downloaded (a few bytes per object). A member that does
//! not answer holds nothing: copies on a node that cannot be reached do
//! not count. Each node checks its own packs, so with every member
//! running its passes every object any member holds is checked.

use crate::packs::{self, PackFile};
use crate::Replica;
use refstore_protocol::Repository;
use refstore_refs::ObjectId;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

/// One repository's check: packs found below `object_copies`, packs sent
/// to members, and packs still below after that.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopiesCheck {
    /// Packs holding an object fewer than `object_copies` members held.
    pub found_below: usize,
    /// Sends of a pack to a member that lacked some of its objects.
    pub copied: usize,
    /// Packs still below `object_copies` afterwards.
    pub still_below: usize,
}

/// A peer's objects, as far as this check needs them.
struct PeerObjects {
    base: String,
    /// Names of the peer's packs.
    packs: HashSet<String>,
    /// The objects of the peer's packs that this node has no pack of the
    /// same name of.
    others: HashSet<ObjectId>,
}

impl PeerObjects {
    fn holds_all(&self, pack: &str, ids: &[ObjectId]) -> bool {
        self.packs.contains(pack) || ids.iter().all(|id| self.others.contains(id))
    }
}

impl Replica {
    /// Checks that every object of this node's packs of `repo` (named
    /// `name` on every node) is on `object_copies` members, and sends the
    /// packs that are not to members lacking them.
    pub fn restore_copies(&self, repo: &Repository, name: &str) -> Result<CopiesCheck, String> {
        let copies = self.peers.object_copies;
        let mut check = CopiesCheck::default();
        if copies <= 1 {
            return Ok(check);
        }
        let own: Vec<String> = packs::list(repo)?.into_iter().map(|(p, _)| p).collect();
        let mut own_ids: HashMap<String, Vec<ObjectId>> = HashMap::new();
        for pack in &own {
            let Some(index) = packs::read(repo, pack, PackFile::Index)? else {
                continue; // rolled up by maintenance since the listing
            };
            let ids = crate::idx::object_ids(&index, repo.object_format())
                .map_err(|e| format!("{pack}.idx: {e}"))?;
            own_ids.insert(pack.clone(), ids);
        }
        let mut peers = Vec::new();
        for (node, base) in self.others() {
            match self.peer_objects(repo, name, &base, &own_ids) {
                Ok(objects) => peers.push(objects),
                Err(e) => tracing::warn!(node, repo = name, "copies not counted on a peer: {e}"),
            }
        }
        for (pack, ids) in &own_ids {
            let lacking: Vec<&PeerObjects> =
                peers.iter().filter(|p| !p.holds_all(pack, ids)).collect();
            let mut holders = 1 + peers.len() - lacking.len();
            if holders >= copies {
                continue;
            }
            check.found_below += 1;
            let Some(bytes) = packs::read(repo, pack, PackFile::Pack)? else {
                continue;
            };
            for peer in lacking {
                if holders >= copies {
                    break;
                }
                match self.client.send(&peer.base, name, &bytes) {
                    Ok(_) => {
                        holders += 1;
                        check.copied += 1;
                    }
                    Err(e) => tracing::warn!(repo = name, pack, "cannot restore a copy: {e}"),
                }
            }
            if holders < copies {
                check.still_below += 1;
            }
        }
        if check.found_below > 0 {
            tracing::info!(
                repo = name,
                below = check.found_below,
                copied = check.copied,
                still_below = check.still_below,
                "restored object_copies"
            );
        }
        Ok(check)
    }

    fn peer_objects(
        &self,
        repo: &Repository,
        name: &str,
        base: &str,
        own: &HashMap<String, Vec<ObjectId>>,
    ) -> Result<PeerObjects, String> {
        let mut objects = PeerObjects {
            base: base.to_owned(),
            packs: HashSet::new(),
            others: HashSet::new(),
        };
        for (pack, _) in self.client.list(base, name)? {
            if !packs::is_pack_name(repo, &pack) {
                continue;
            }
            if !own.contains_key(&pack) {
                match self.client.download(base, name, &format!("{pack}.idx")) {
                    Ok(index) => {
                        let ids = crate::idx::object_ids(&index, repo.object_format())
                            .map_err(|e| format!("{pack}.idx: {e}"))?;
                        objects.others.extend(ids);
                    }
                    // Rolled up by the peer's maintenance since its listing:
                    // its objects are in a pack the listing names too.
                    Err(e) => tracing::debug!(repo = name, pack, "a peer's pack vanished: {e}"),
                }
            }
            objects.packs.insert(pack);
        }
        Ok(objects)
    }

    /// Records the end of a repair pass that left `still_below` packs
    /// under `object_copies` after copying `copied`.
    pub(crate) fn copies_pass_done(&self, still_below: u64, copied: u64) {
        self.copies
            .below_copies
            .store(still_below, Ordering::Relaxed);
        self.copies
            .packs_copied
            .fetch_add(copied, Ordering::Relaxed);
        if let Some(observer) = refstore_fs::observe::observer() {
            observer.copies_checked(still_below, copied);
        }
    }
}

//! Catching up from peers: the packs a peer has that hold objects this
//! node needs are downloaded and indexed durably here.
//!
//! In a cluster ([`Replica::judge_by`] gave the cluster's refs), what a
//! node needs is what etcd's refs reach and it lacks ([`crate::closure`]):
//! the walk from the refs over the node's objects names the missing
//! objects, the peers' packs whose indexes hold them are copied, and the
//! walk goes on through what arrived, until nothing is missing or no peer
//! has the rest. An orphan a node pruned (a deleted branch's history) is
//! thereby not brought back merely because a peer has not pruned it yet.
//! A peer's consolidated pack holding a needed object and orphans brings
//! those orphans too, until the peer prunes them as well; the copy's pack
//! is as old as the copy, so the orphans wait out one more grace period
//! here and then go. That converges: once every node pruned, no pack
//! offers them. A node that is up to date walks only from the tips that
//! changed since its last complete walk, and asks the peers for nothing.
//!
//! Without the cluster's refs (nodes given by `--replicate-*` flags, whose
//! copies prune nothing) a peer's pack is copied when it holds any object
//! this node lacks, and a fetch's catch-up likewise.
//!
//! Packs are compared by name, then by content: a pack whose name is
//! unknown here is judged by its index (a few bytes per object). Packs
//! differ between nodes once maintenance repacks them, each node its own
//! way. A peer's pack that maintenance rolled up can vanish between the
//! listing and its download: it is skipped and the others are still
//! tried, the error reported once all were.

use crate::closure::Closure;
use crate::packs;
use crate::tips::ClusterTips;
use crate::Replica;
use refstore_protocol::Repository;
use refstore_refs::ObjectId;
use std::collections::HashSet;

/// One pack the peers offer: its name, the peers that listed it, and its
/// object ids once its index was read.
struct Offer {
    pack: String,
    bases: Vec<String>,
    ids: Option<HashSet<ObjectId>>,
    /// Copied here or found unusable: not offered again.
    done: bool,
}

impl Replica {
    /// Judges what this node needs by the cluster's refs from now on.
    pub fn judge_by(&self, tips: std::sync::Arc<dyn ClusterTips>) {
        let _ = self.tips.set(tips);
    }

    /// Brings `repo` (named `name` on every node) up to what it needs of
    /// its peers' packs; returns how many packs were added. Peers that
    /// cannot be reached are skipped (and logged).
    pub fn catch_up(&self, repo: &Repository, name: &str) -> usize {
        let added = match self.tips.get() {
            Some(tips) => tips.tips(repo, name).and_then(|roots| {
                self.complete_from(repo, name, tips.as_ref(), roots, Stops::Replace)
            }),
            None => Ok(self.catch_up_any_lacking(repo, name)),
        };
        let added = added.unwrap_or_else(|e| {
            tracing::warn!(repo = name, "cannot catch up: {e}");
            0
        });
        if added > 0 {
            tracing::info!(repo = name, packs = added, "caught up from peers");
        }
        added
    }

    /// Makes `repo` hold everything a fetch's `wants` reach before the
    /// fetch is answered, copying what it lacks from the peers; how many
    /// packs were added. A want being here is not enough: a node that
    /// missed one push can hold the next one's commit but not its parent.
    /// The walk stops where the last complete walk ended, so a fetch of
    /// what was verified reads nothing and asks no peer; without the
    /// cluster's refs, the wants this node lacks are caught up as before.
    pub fn complete_wants(&self, repo: &Repository, name: &str, wants: &[ObjectId]) -> usize {
        let added = match self.tips.get() {
            Some(tips) => self.complete_from(repo, name, tips.as_ref(), wants.to_vec(), Stops::Add),
            None if wants.iter().all(|id| repo.objects.contains(id)) => Ok(0),
            None => Ok(self.catch_up_any_lacking(repo, name)),
        };
        let added = added.unwrap_or_else(|e| {
            tracing::warn!(repo = name, "cannot bring in what a fetch wants: {e}");
            0
        });
        if added > 0 {
            tracing::info!(repo = name, packs = added, "copied from peers for a fetch");
        }
        added
    }

    /// Walks from `roots` over this node's objects, copying the peers'
    /// packs that hold what is missing until nothing is; the roots then
    /// become (`stops`) where later walks stop.
    fn complete_from(
        &self,
        repo: &Repository,
        name: &str,
        tips: &dyn ClusterTips,
        roots: Vec<ObjectId>,
        stops: Stops,
    ) -> Result<usize, String> {
        let key = format!("{name}\0{}", tips.incarnation(repo).unwrap_or_default());
        let complete = lock(&self.complete).get(&key).cloned().unwrap_or_default();
        let mut closure = Closure::new(repo.object_format(), complete);
        closure.walk(&repo.objects, roots.clone())?;
        let mut offers: Option<Vec<Offer>> = None;
        let mut added = 0;
        while !closure.missing().is_empty() {
            let offers = offers.get_or_insert_with(|| self.offers(repo, name));
            let needed: HashSet<ObjectId> = closure.missing().iter().copied().collect();
            let copied = self.copy_holding(repo, name, &needed, offers);
            if copied == 0 {
                break;
            }
            added += copied;
            closure.resume(&repo.objects)?;
        }
        tracing::debug!(repo = name, read = closure.read, "catch-up walk");
        if closure.missing().is_empty() {
            let mut complete = lock(&self.complete);
            match stops {
                Stops::Replace => {
                    complete.insert(key, roots.into_iter().collect());
                }
                Stops::Add => complete.entry(key).or_default().extend(roots),
            }
        } else {
            tracing::warn!(
                repo = name,
                missing = closure.missing().len(),
                "objects the cluster's refs reach are on no reachable peer"
            );
        }
        Ok(added)
    }

    /// The packs the peers list that this node has no pack of that name
    /// of; a peer that cannot be reached is skipped.
    fn offers(&self, repo: &Repository, name: &str) -> Vec<Offer> {
        let mut offers: Vec<Offer> = Vec::new();
        for (node, base) in self.others() {
            let listed = match self.client.list(&base, name) {
                Ok(listed) => listed,
                Err(e) => {
                    tracing::warn!(node, repo = name, "cannot list a peer's packs: {e}");
                    continue;
                }
            };
            for (pack, _) in listed {
                if !packs::is_pack_name(repo, &pack) || packs::has(repo, &pack) {
                    continue;
                }
                match offers.iter_mut().find(|o| o.pack == pack) {
                    Some(offer) => offer.bases.push(base.to_owned()),
                    None => offers.push(Offer {
                        pack,
                        bases: vec![base.to_owned()],
                        ids: None,
                        done: false,
                    }),
                }
            }
        }
        offers
    }

    /// Copies the offered packs whose indexes hold objects of `needed`,
    /// one pack per needed object at most; how many were copied.
    fn copy_holding(
        &self,
        repo: &Repository,
        name: &str,
        needed: &HashSet<ObjectId>,
        offers: &mut [Offer],
    ) -> usize {
        let mut needed = needed.clone();
        let mut copied = 0;
        for offer in offers.iter_mut().filter(|o| !o.done) {
            if needed.is_empty() {
                break;
            }
            if offer.ids.is_none() {
                offer.ids = self.index_of(repo, name, offer);
            }
            let Some(ids) = &offer.ids else {
                offer.done = true;
                continue;
            };
            if !holds_needed(ids, &needed) {
                continue;
            }
            offer.done = true;
            if packs::has(repo, &offer.pack) || self.copy(repo, name, offer) {
                needed.retain(|id| !ids.contains(id));
                copied += 1;
            }
        }
        copied
    }

    /// The ids of an offered pack's index, from the first peer that gives
    /// it.
    fn index_of(&self, repo: &Repository, name: &str, offer: &Offer) -> Option<HashSet<ObjectId>> {
        let file = format!("{}.idx", offer.pack);
        for base in &offer.bases {
            let read = self.client.download(base, name, &file).and_then(|index| {
                crate::idx::object_ids(&index, repo.object_format())
                    .map_err(|e| format!("{file}: {e}"))
            });
            match read {
                Ok(ids) => return Some(ids.into_iter().collect()),
                Err(e) => tracing::warn!(repo = name, "a peer's pack index: {e}"),
            }
        }
        None
    }

    /// Downloads and indexes an offered pack, from the first peer that
    /// gives it; true if it is here now.
    fn copy(&self, repo: &Repository, name: &str, offer: &Offer) -> bool {
        let file = format!("{}.pack", offer.pack);
        for base in &offer.bases {
            let stored = self
                .client
                .download(base, name, &file)
                .and_then(|bytes| packs::index(repo, &bytes).map_err(|e| format!("{file}: {e}")));
            match stored {
                Ok(stored) => {
                    if stored != offer.pack {
                        tracing::warn!(
                            repo = name,
                            pack = offer.pack,
                            stored,
                            "a peer's pack was stored under another name"
                        );
                    }
                    return true;
                }
                Err(e) => tracing::warn!(repo = name, "cannot copy a peer's pack: {e}"),
            }
        }
        false
    }
}

/// Whether a pack of `ids` holds an object of `needed`: the one test that
/// decides a cluster's copy, never "an object this node lacks", which
/// would bring back what it pruned.
pub(crate) fn holds_needed(ids: &HashSet<ObjectId>, needed: &HashSet<ObjectId>) -> bool {
    if ids.len() < needed.len() {
        ids.iter().any(|id| needed.contains(id))
    } else {
        needed.iter().any(|id| ids.contains(id))
    }
}

/// What a complete walk's roots do to the set of walks' stops.
enum Stops {
    /// Become the set: a walk from every ref.
    Replace,
    /// Join it: a fetch's wants, until the next walk from every ref.
    Add,
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> ObjectId {
        let mut raw = [0u8; 20];
        raw[..4].copy_from_slice(&n.to_be_bytes());
        ObjectId::from_raw(&raw).unwrap()
    }

    /// Generated packs and needs: a pack is chosen exactly when it holds
    /// a needed object, so a pack of orphans this node pruned (objects it
    /// lacks and does not need) is never chosen.
    #[test]
    fn a_pack_is_chosen_for_what_is_needed_never_for_what_is_lacking() {
        let mut seed = 0x5eed_u64;
        let mut next = |below: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(below)) as u32
        };
        for _ in 0..200 {
            let needed: HashSet<ObjectId> = (0..next(5)).map(|_| id(next(50))).collect();
            let pack: HashSet<ObjectId> = (0..next(20)).map(|_| id(next(100))).collect();
            let expected = pack.iter().any(|o| needed.contains(o));
            assert_eq!(holds_needed(&pack, &needed), expected);
        }
        // The case that matters: the pack's only object is an orphan
        // this node lacks (it pruned it); nothing is needed of it.
        let orphans: HashSet<ObjectId> = [id(1), id(2)].into();
        assert!(!holds_needed(&orphans, &[id(3)].into()));
        assert!(!holds_needed(&orphans, &HashSet::new()));
        assert!(holds_needed(&[id(1), id(3)].into(), &[id(3)].into()));
    }
}

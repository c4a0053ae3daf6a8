//! Catching up from peers: the packs a peer has and this node lacks are
//! downloaded and indexed durably here.
//!
//! Packs are compared by name, then by content: a pack whose name is
//! unknown here is judged by its index (a few bytes per object), and
//! downloaded only if it holds an object this node lacks. Packs differ
//! between nodes once maintenance repacks them, each node its own way;
//! what matters is that every object is here, so a peer's repacked pack
//! of objects this node already has is not copied. A peer's pack that
//! maintenance rolled up can vanish between the listing and its download
//! (it is deleted some time after the pack holding its objects is
//! written, which the listing names too): that pack is skipped and the
//! others are still copied, the error reported once all were tried.

use crate::packs;
use crate::Replica;
use refstore_protocol::Repository;

impl Replica {
    /// Brings `repo` (named `name` on every node) up to the union of its
    /// peers' packs; returns how many packs were added. Peers that cannot
    /// be reached are skipped (and logged).
    pub fn catch_up(&self, repo: &Repository, name: &str) -> usize {
        let mut added = 0;
        for (node, base) in self.others() {
            match self.catch_up_from(repo, name, &base) {
                Ok(n) => added += n,
                Err(e) => tracing::warn!(node, repo = name, "cannot catch up from a peer: {e}"),
            }
        }
        if added > 0 {
            tracing::info!(repo = name, packs = added, "caught up from peers");
        }
        added
    }

    fn catch_up_from(&self, repo: &Repository, name: &str, base: &str) -> Result<usize, String> {
        let mut added = 0;
        let mut first_error = None;
        for (pack, _) in self.client.list(base, name)? {
            if !packs::is_pack_name(repo, &pack) || packs::has(repo, &pack) {
                continue;
            }
            match self.copy_if_needed(repo, name, base, &pack) {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if added == 0 => Err(e),
            Some(e) => {
                tracing::warn!(repo = name, "some of a peer's packs were not copied: {e}");
                Ok(added)
            }
            None => Ok(added),
        }
    }

    /// Copies the peer's pack `pack` if it holds an object this node
    /// lacks; true if it was copied.
    fn copy_if_needed(
        &self,
        repo: &Repository,
        name: &str,
        base: &str,
        pack: &str,
    ) -> Result<bool, String> {
        let index = self.client.download(base, name, &format!("{pack}.idx"))?;
        let ids = crate::idx::object_ids(&index, repo.object_format())
            .map_err(|e| format!("{pack}.idx: {e}"))?;
        if ids.iter().all(|id| repo.objects.contains(id)) {
            return Ok(false);
        }
        let bytes = self.client.download(base, name, &format!("{pack}.pack"))?;
        let stored = packs::index(repo, &bytes).map_err(|e| format!("{pack}: {e}"))?;
        if stored != pack {
            tracing::warn!(
                repo = name,
                pack,
                stored,
                "a peer's pack was stored under another name"
            );
        }
        Ok(true)
    }
}

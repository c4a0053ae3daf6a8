//! Catching up without the cluster's refs (nodes given by `--replicate-*`
//! flags, whose copies prune nothing): a peer's pack is copied whole when
//! its index holds any object this node lacks.

use crate::packs;
use crate::Replica;
use refstore_protocol::Repository;

impl Replica {
    /// Copies every peer's pack holding an object this node lacks; how
    /// many were added.
    pub(crate) fn catch_up_any_lacking(&self, repo: &Repository, name: &str) -> usize {
        let mut added = 0;
        for (node, base) in self.others() {
            match self.catch_up_from(repo, name, &base) {
                Ok(n) => added += n,
                Err(e) => tracing::warn!(node, repo = name, "cannot catch up from a peer: {e}"),
            }
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
            match self.copy_if_lacking(repo, name, base, &pack) {
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
    fn copy_if_lacking(
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

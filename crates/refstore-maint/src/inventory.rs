//! What `objects/pack` holds: the packs readers can see (an `.idx` with
//! its `.pack`), their object counts and `.keep` files, and the current
//! `multi-pack-index`.

use crate::error::MaintError;
use crate::midx::Midx;
use crate::repo::Repo;
use std::collections::HashSet;
use std::path::PathBuf;

/// One visible pack.
#[derive(Debug, Clone)]
pub struct PackInfo {
    /// `pack-<hash>`.
    pub name: String,
    /// Objects in it (from its index).
    pub objects: u32,
    /// A `.keep` file protects it (or it is a cruft or promisor pack):
    /// never rolled up nor deleted.
    pub keep: bool,
}

impl PackInfo {
    /// `pack-<hash>.idx`.
    pub fn index_name(&self) -> String {
        format!("{}.idx", self.name)
    }
}

/// The packs of a repository.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// Every visible pack, sorted by name.
    pub packs: Vec<PackInfo>,
    /// The multi-pack-index, if there is a readable one.
    pub midx: Option<Midx>,
}

impl Inventory {
    /// Lists `objects/pack`.
    pub fn read(repo: &Repo) -> Result<Inventory, MaintError> {
        let vfs = &repo.vfs;
        let dir = repo.pack_dir();
        let entries = match vfs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let names: HashSet<String> = entries
            .iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        let mut packs = Vec::new();
        for file in &names {
            let Some(name) = file.strip_suffix(".idx") else {
                continue;
            };
            if !name.starts_with("pack-") || !names.contains(&format!("{name}.pack")) {
                continue;
            }
            let index_path = dir.join(file);
            let index = match vfs.read_mapped(&index_path) {
                Ok(index) => index,
                // Removed by a concurrent repack: not a pack any more.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            };
            packs.push(PackInfo {
                name: name.to_owned(),
                objects: crate::idx::object_count(&index)?,
                // Cruft packs (their `.mtimes` date unreachable objects for
                // pruning) and promisor packs have meaning a plain pack
                // would lose: left alone like kept ones.
                keep: ["keep", "mtimes", "promisor"]
                    .iter()
                    .any(|ext| names.contains(&format!("{name}.{ext}"))),
            });
        }
        packs.sort_by(|a, b| a.name.cmp(&b.name));
        let midx = match vfs.read_mapped(&dir.join("multi-pack-index")) {
            Ok(bytes) => match Midx::parse(&bytes, repo.object_format().raw_len()) {
                Ok(midx) => Some(midx),
                Err(e) => {
                    tracing::warn!("ignoring the multi-pack-index: {e}");
                    None
                }
            },
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Inventory { packs, midx })
    }

    /// The index path of a pack.
    pub fn index_path(repo: &Repo, pack: &PackInfo) -> PathBuf {
        repo.pack_dir().join(pack.index_name())
    }

    /// Packs the multi-pack-index does not name.
    pub fn outside_midx(&self) -> Vec<&PackInfo> {
        let named: HashSet<&str> = self
            .midx
            .iter()
            .flat_map(|m| m.packs.iter().map(String::as_str))
            .collect();
        self.packs
            .iter()
            .filter(|p| !named.contains(p.index_name().as_str()))
            .collect()
    }
}

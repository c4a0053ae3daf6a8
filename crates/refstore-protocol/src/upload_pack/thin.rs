//! Thin packs, for clients that ask for them (`thin-pack`): deltas against
//! objects the client has and the pack leaves out. The client completes the
//! pack from its own objects (`git index-pack --fix-thin`).
//!
//! The bases tried are git's "preferred bases": the versions of the sent
//! trees and blobs at the same path in the trees of the boundary commits,
//! the commits the client has that are parents of sent commits. They are
//! found by pairing each sent commit's root tree with each boundary root
//! tree and descending, in step, only into subtrees that differ: the cost
//! follows what changed, not the size of the trees.
//!
//! A stored delta whose base the client has is sent as it is, as a
//! reference delta; [`ThinBases::client_has`] says which objects are known
//! to be there.

use super::graph::Graph;
use super::walk::{IdSet, PackContents, NO_PATH};
use super::UploadPackError;
use gix_hash::{oid, ObjectId};
use gix_object::Find;
use std::collections::HashMap;

/// git's limit on the number of boundary trees it takes bases from (its
/// delta window): more would cost reads for little gain.
const MAX_BOUNDARY_TREES: usize = 10;

/// The objects a thin pack may use as bases.
#[derive(Default)]
pub(crate) struct ThinBases {
    /// By slot of a sent tree or blob: the object at the same path in a
    /// boundary tree.
    by_slot: HashMap<u32, ObjectId>,
    /// Objects known to be on the client (see [`PackContents::client_has`]).
    client_has: IdSet,
}

/// A tree entry: its name, id and whether it is a tree.
type Entry = (Vec<u8>, ObjectId, bool);

impl ThinBases {
    /// No thin bases: the pack is self-contained.
    pub fn none() -> Self {
        ThinBases::default()
    }

    /// The bases for the trees and blobs of `contents`, which gives up
    /// what it knows the client has.
    pub fn find(graph: &Graph, contents: &mut PackContents) -> Result<Self, UploadPackError> {
        let client_has = std::mem::take(&mut contents.client_has);
        let mut bases = ThinBases {
            by_slot: HashMap::new(),
            client_has,
        };
        if contents.boundary.is_empty() {
            return Ok(bases);
        }
        let mut reader = Reader {
            handle: graph.handle(),
            hash: graph.hash_kind(),
            buf: Vec::new(),
        };
        let mut boundary_trees = Vec::new();
        for commit in contents.boundary.iter().take(MAX_BOUNDARY_TREES) {
            if let Some(tree) = reader.commit_tree(commit)? {
                boundary_trees.push(tree);
            }
        }
        // Pairs of a sent tree and a boundary tree at the same path.
        let mut pairs = Vec::new();
        for (slot, id) in contents.ids.iter().enumerate() {
            if contents.paths[slot] != NO_PATH {
                continue;
            }
            let Some(tree) = reader.commit_tree(id)? else {
                continue; // a tag
            };
            if let Some(&tree_slot) = contents.slots.get(&tree) {
                for boundary in &boundary_trees {
                    if *boundary != tree {
                        pairs.push((tree_slot, *boundary));
                    }
                }
            }
        }
        // Each sent tree is descended once, with the first boundary tree
        // it is paired with.
        while let Some((slot, base)) = pairs.pop() {
            if bases.by_slot.contains_key(&slot) {
                continue;
            }
            bases.by_slot.insert(slot, base);
            let base_entries: HashMap<Vec<u8>, (ObjectId, bool)> = reader
                .tree(&base)?
                .into_iter()
                .map(|(name, id, is_tree)| (name, (id, is_tree)))
                .collect();
            let sent = contents.ids[slot as usize];
            for (name, id, is_tree) in reader.tree(&sent)? {
                let Some(&(base_id, base_is_tree)) = base_entries.get(&name) else {
                    continue;
                };
                if base_id == id || base_is_tree != is_tree {
                    continue;
                }
                let Some(&entry_slot) = contents.slots.get(&id) else {
                    continue;
                };
                if is_tree {
                    pairs.push((entry_slot, base_id));
                } else {
                    bases.by_slot.entry(entry_slot).or_insert(base_id);
                }
            }
        }
        Ok(bases)
    }

    /// The preferred base of the tree or blob in `slot`, if any.
    pub fn base_for(&self, slot: u32) -> Option<&ObjectId> {
        self.by_slot.get(&slot)
    }

    /// True if `id` is known to be on the client.
    pub fn client_has(&self, id: &oid) -> bool {
        self.client_has.contains(id)
    }
}

/// Reads commits and trees through the object database.
struct Reader {
    handle: gix_odb::HandleArc,
    hash: gix_hash::Kind,
    buf: Vec<u8>,
}

impl Reader {
    /// The root tree of `id`, or `None` if it is not a commit.
    fn commit_tree(&mut self, id: &ObjectId) -> Result<Option<ObjectId>, UploadPackError> {
        let read = self
            .handle
            .try_find(id, &mut self.buf)
            .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
        match read {
            Some(data) if data.kind == gix_object::Kind::Commit => {
                gix_object::CommitRefIter::from_bytes(data.data, self.hash)
                    .tree_id()
                    .map(Some)
                    .map_err(|e| UploadPackError::objects(&format!("corrupt commit {id}"), e))
            }
            Some(_) => Ok(None),
            None => Err(UploadPackError::Objects(format!(
                "the object {id} is missing: the repository is incomplete"
            ))),
        }
    }

    /// The entries of tree `id` that are trees or blobs.
    fn tree(&mut self, id: &ObjectId) -> Result<Vec<Entry>, UploadPackError> {
        let read = self
            .handle
            .try_find(id, &mut self.buf)
            .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
        let Some(data) = read.filter(|data| data.kind == gix_object::Kind::Tree) else {
            return Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            )));
        };
        let mut entries = Vec::new();
        for entry in gix_object::TreeRefIter::from_bytes(data.data, self.hash) {
            let entry =
                entry.map_err(|e| UploadPackError::objects(&format!("corrupt tree {id}"), e))?;
            if !entry.mode.is_commit() {
                entries.push((
                    entry.filename.to_vec(),
                    entry.oid.to_owned(),
                    entry.mode.is_tree(),
                ));
            }
        }
        Ok(entries)
    }
}

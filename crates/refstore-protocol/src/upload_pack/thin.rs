//! Thin packs, for clients that ask for them (`thin-pack`): deltas against
//! objects the client has and the pack leaves out. The client completes the
//! pack from its own objects (`git index-pack --fix-thin`).
//!
//! The bases tried are git's "preferred bases": the versions of the sent
//! trees and blobs at the same path in the trees of the boundary commits,
//! the commits the client has that are parents of sent commits. The walk
//! finds them when it compares the sent trees with the boundary's
//! (`sparse.rs`); otherwise they are found here the same way, by pairing
//! each sent commit's root tree with each boundary root tree and
//! descending, in step, only into subtrees that differ: the cost follows
//! what changed, not the size of the trees.
//!
//! A stored delta whose base the client has is sent as it is, as a
//! reference delta; [`ThinBases::client_has`] says which objects are known
//! to be there.

use super::contents::{IdSet, PackContents, NO_PATH};
use super::graph::{read_loose, Graph};
use super::sparse::tree_order;
use super::UploadPackError;
use gix_object::Find;
use refstore_hash::ObjectFormat;
use refstore_refs::ObjectId;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

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

impl ThinBases {
    /// No thin bases: the pack is self-contained.
    pub fn none() -> Self {
        ThinBases::default()
    }

    /// The bases for the trees and blobs of `contents`, which gives up
    /// what it knows the client has.
    pub fn find(graph: &Graph, contents: &mut PackContents) -> Result<Self, UploadPackError> {
        let client_has = std::mem::take(&mut contents.client_has);
        if let Some(by_slot) = contents.client_versions.take() {
            // The walk compared the sent trees with the boundary's.
            return Ok(ThinBases {
                by_slot,
                client_has,
            });
        }
        let mut bases = ThinBases {
            by_slot: HashMap::new(),
            client_has,
        };
        if contents.boundary.is_empty() {
            return Ok(bases);
        }
        let mut reader = ObjectReader::new(graph);
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
        let mut base_trees: HashMap<ObjectId, Rc<Vec<u8>>> = HashMap::new();
        let mut sent_tree = Vec::new();
        let mut differing = Vec::new();
        while let Some((slot, base)) = pairs.pop() {
            if bases.by_slot.contains_key(&slot) {
                continue;
            }
            bases.by_slot.insert(slot, base);
            // A boundary tree serves every version of its path.
            let base_tree = match base_trees.get(&base) {
                Some(tree) => tree.clone(),
                None => {
                    let tree = Rc::new(reader.tree(&base)?.to_vec());
                    base_trees.insert(base, tree.clone());
                    tree
                }
            };
            let sent = contents.ids[slot as usize];
            sent_tree.clear();
            sent_tree.extend_from_slice(reader.tree(&sent)?);
            differing.clear();
            same_path_pairs(&sent_tree, &base_tree, reader.format, &mut differing).map_err(
                |e| UploadPackError::objects(&format!("corrupt tree {sent} or {base}"), e),
            )?;
            for &(id, base_id, is_tree) in &differing {
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
    pub fn client_has(&self, id: &ObjectId) -> bool {
        self.client_has.contains(id)
    }
}

/// Reads objects the way the walk does: from the packs as stored, with a
/// cache of delta bases, and through the object database for anything
/// else (loose objects, bases in another pack).
pub(crate) struct ObjectReader<'g> {
    packs: &'g refstore_odb::Packs,
    objects_dir: &'g std::path::Path,
    handle: gix_odb::HandleArc,
    format: ObjectFormat,
    cache: refstore_odb::DeltaBaseCache,
    buf: Vec<u8>,
}

impl<'g> ObjectReader<'g> {
    pub fn new(graph: &'g Graph) -> Self {
        ObjectReader {
            packs: graph.packs(),
            objects_dir: graph.objects_dir(),
            handle: graph.handle(),
            format: graph.object_format(),
            // Boundary trees are read once each, their delta chains
            // resolved through this cache.
            cache: refstore_odb::DeltaBaseCache::new(1024, 16 << 20),
            buf: Vec::new(),
        }
    }

    /// The kind and content of `id`, or `None` if it is missing; the
    /// content is valid until the next read.
    pub fn read(
        &mut self,
        id: &ObjectId,
    ) -> Result<Option<(gix_object::Kind, &[u8])>, UploadPackError> {
        let failed = |e: &dyn std::fmt::Display| {
            UploadPackError::objects(&format!("cannot read object {id}"), e)
        };
        if let Some(at) = self.packs.locate(id) {
            let read = self
                .packs
                .read_held(at, &mut self.cache, &mut self.buf)
                .map_err(|e| failed(&e))?;
            if let Some((kind, held)) = read {
                let data = match held {
                    refstore_odb::Held::Cached(n) => self.cache.held(n),
                    refstore_odb::Held::Out => &self.buf,
                };
                return Ok(Some((kind.to_gix(), data)));
            }
        }
        if let Some(kind) = read_loose(self.objects_dir, self.format, id, &mut self.buf)? {
            return Ok(Some((kind, &self.buf)));
        }
        let found = self
            .handle
            .try_find(id.as_gix(), &mut self.buf)
            .map_err(|e| failed(&e))?;
        Ok(found.map(|data| (data.kind, data.data)))
    }

    /// The root tree of `id`, or `None` if it is not a commit.
    fn commit_tree(&mut self, id: &ObjectId) -> Result<Option<ObjectId>, UploadPackError> {
        let hash = self.format.gix_kind();
        match self.read(id)? {
            Some((gix_object::Kind::Commit, data)) => {
                gix_object::CommitRefIter::from_bytes(data, hash)
                    .tree_id()
                    .map(|tree| Some(ObjectId::from_gix(&tree)))
                    .map_err(|e| UploadPackError::objects(&format!("corrupt commit {id}"), e))
            }
            Some(_) => Ok(None),
            None => Err(UploadPackError::Objects(format!(
                "the object {id} is missing: the repository is incomplete"
            ))),
        }
    }

    /// The content of tree `id`, valid until the next read.
    fn tree(&mut self, id: &ObjectId) -> Result<&[u8], UploadPackError> {
        match self.read(id)? {
            Some((gix_object::Kind::Tree, data)) => Ok(data),
            _ => Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            ))),
        }
    }
}

/// The entries of `sent` whose name and type are those of an entry of
/// `base` with another id, as `(id, id in base, is_tree)` (submodule
/// entries left out). Both trees are sorted in git's order (a tree's name
/// compares as if it ended with `/`), so one pass over both finds them.
fn same_path_pairs(
    sent: &[u8],
    base: &[u8],
    format: ObjectFormat,
    out: &mut Vec<(ObjectId, ObjectId, bool)>,
) -> Result<(), String> {
    let mut base_entries = gix_object::TreeRefIter::from_bytes(base, format.gix_kind());
    let mut next = move || base_entries.next().transpose().map_err(|e| e.to_string());
    let mut next_base = next()?;
    for entry in gix_object::TreeRefIter::from_bytes(sent, format.gix_kind()) {
        let entry = entry.map_err(|e| e.to_string())?;
        let is_tree = entry.mode.is_tree();
        while let Some(b) = next_base {
            match tree_order(b.filename, b.mode.is_tree(), entry.filename, is_tree) {
                Ordering::Less => next_base = next()?,
                Ordering::Equal => {
                    if b.oid != entry.oid && !entry.mode.is_commit() && !b.mode.is_commit() {
                        out.push((
                            ObjectId::from_gix(entry.oid),
                            ObjectId::from_gix(b.oid),
                            is_tree,
                        ));
                    }
                    next_base = next()?;
                    break;
                }
                Ordering::Greater => break,
            }
        }
    }
    Ok(())
}

//! Adding the trees and blobs of the sent commits, path by path against
//! the trees of the boundary commits (git's "sparse" walk,
//! `pack.useSparse`): an entry of a sent tree is left out when a boundary
//! tree has the same object at the same path, and only subtrees that
//! differ are read. The cost follows what changed, not the size of the
//! boundary trees, which a walk of everything the client has would read
//! whole (thousands of trees for one new commit in a large project).
//!
//! Objects the client has only at another path (a file moved, a version
//! brought back) are sent again, which costs bytes but never correctness:
//! git's sparse walk makes the same trade.
//!
//! On the way it records what a thin pack needs: for each sent tree and
//! blob, the object at its path in a boundary tree (its version on the
//! client), and every boundary object met (known to be on the client).

use super::graph::{Graph, IdHasher};
use super::walk::{path_hash, IdSet, PackContents, ROOT};
use super::UploadPackError;
use gix_hash::ObjectId;
use std::collections::HashMap;
use std::rc::Rc;

/// More boundary commits than this are not walked path by path: each
/// sent tree would be compared with too many trees.
pub(crate) const MAX_BOUNDARY: usize = 16;

/// A boundary tree's entries by name hash and kind (tree or not).
type BaseTree = HashMap<(u64, bool), ObjectId, IdHasher>;

/// One entry of a sent tree: its id, whether it is a tree, the hash of its
/// name and of its path.
type Entry = (ObjectId, bool, u64, u64);

/// Adds `roots` (the root trees of the sent commits, newest first) and
/// what they hold to `contents`, leaving out what `boundary_roots` hold at
/// the same paths; fills `contents.client_versions` and
/// `contents.client_has`.
pub(crate) fn add_trees(
    graph: &mut Graph,
    roots: &[ObjectId],
    boundary_roots: &[ObjectId],
    contents: &mut PackContents,
) -> Result<(), UploadPackError> {
    let mut walk = Sparse {
        graph,
        base_trees: HashMap::default(),
        client_has: IdSet::default(),
        versions: HashMap::new(),
        entries: Vec::new(),
    };
    let mut bases: Vec<ObjectId> = boundary_roots.to_vec();
    bases.sort_unstable();
    bases.dedup();
    for &root in roots {
        walk.add_tree(root, bases.clone(), contents)?;
    }
    contents.client_versions = Some(walk.versions);
    contents.client_has = walk.client_has;
    Ok(())
}

struct Sparse<'g> {
    graph: &'g mut Graph,
    /// Boundary trees read so far: one serves every version of its path.
    base_trees: HashMap<ObjectId, Rc<BaseTree>, IdHasher>,
    client_has: IdSet,
    versions: HashMap<u32, ObjectId>,
    entries: Vec<Entry>,
}

impl Sparse<'_> {
    /// Adds `tree` (at the root) and what it holds, against `bases`, the
    /// boundary trees at the same path.
    fn add_tree(
        &mut self,
        tree: ObjectId,
        bases: Vec<ObjectId>,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        if bases.contains(&tree) {
            self.client_has.insert(tree);
            return Ok(());
        }
        if !self.add(tree, ROOT, &bases, contents) {
            return Ok(());
        }
        let mut stack = vec![(tree, ROOT, bases)];
        let mut child_bases = Vec::new();
        while let Some((tree, path, bases)) = stack.pop() {
            let base_trees = bases
                .iter()
                .map(|base| self.base_tree(base))
                .collect::<Result<Vec<_>, _>>()?;
            self.read_entries(&tree, path)?;
            let entries = std::mem::take(&mut self.entries);
            for &(id, is_tree, name, entry_path) in &entries {
                child_bases.clear();
                for base in &base_trees {
                    if let Some(&base_id) = base.get(&(name, is_tree)) {
                        if !child_bases.contains(&base_id) {
                            child_bases.push(base_id);
                        }
                    }
                }
                if child_bases.contains(&id) {
                    self.client_has.insert(id);
                    continue;
                }
                if !self.add(id, entry_path, &child_bases, contents) {
                    continue;
                }
                if is_tree {
                    stack.push((id, entry_path, child_bases.clone()));
                }
            }
            self.entries = entries;
        }
        Ok(())
    }

    /// Adds `id`, met at `path`, unless it is added: false if it was.
    /// Its versions on the client are `bases`.
    fn add(
        &mut self,
        id: ObjectId,
        path: u64,
        bases: &[ObjectId],
        contents: &mut PackContents,
    ) -> bool {
        let slot = contents.ids.len() as u32;
        if !contents.add(id, path) {
            return false;
        }
        if let Some(&base) = bases.first() {
            self.versions.insert(slot, base);
            self.client_has.extend(bases.iter().copied());
        }
        true
    }

    /// The entries of the boundary tree `id`.
    fn base_tree(&mut self, id: &ObjectId) -> Result<Rc<BaseTree>, UploadPackError> {
        if let Some(tree) = self.base_trees.get(id) {
            return Ok(tree.clone());
        }
        self.read_entries(id, ROOT)?;
        let tree: BaseTree = self
            .entries
            .iter()
            .map(|&(id, is_tree, name, _)| ((name, is_tree), id))
            .collect();
        let tree = Rc::new(tree);
        self.base_trees.insert(*id, tree.clone());
        Ok(tree)
    }

    /// Reads the entries of tree `id`, met at `path`, into `self.entries`
    /// (submodule commits belong to other repositories and are left out).
    fn read_entries(&mut self, id: &ObjectId, path: u64) -> Result<(), UploadPackError> {
        self.entries.clear();
        let hash = self.graph.hash_kind();
        let Some((gix_object::Kind::Tree, data)) = self.graph.read(id)? else {
            return Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            )));
        };
        for entry in gix_object::TreeRefIter::from_bytes(data, hash) {
            let entry =
                entry.map_err(|e| UploadPackError::objects(&format!("corrupt tree {id}"), e))?;
            if entry.mode.is_commit() {
                continue;
            }
            self.entries.push((
                entry.oid.to_owned(),
                entry.mode.is_tree(),
                path_hash(ROOT, entry.filename),
                path_hash(path, entry.filename),
            ));
        }
        Ok(())
    }
}

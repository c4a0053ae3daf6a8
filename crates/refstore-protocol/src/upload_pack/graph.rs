//! Object access for negotiation and counting: commits parsed once and
//! remembered (a negotiation visits the same commits round after round),
//! trees and tags read on demand.
//!
//! It holds its own gix-odb handle on the repository's object store,
//! which the pack writer clones to read objects it compresses afresh, and
//! the repository's packs as stored ([`refstore_odb::Packs`]), whose
//! entries the pack writer copies.
//!
//! Where git's commit-graph covers a commit, its tree, parents and time come
//! from there and the commit is not inflated. The reachability bitmap is
//! opened on first use (only counting needs it). A commit-graph or bitmap
//! that cannot be used is left aside with a warning, as git does: commits
//! are then read and objects walked.

use super::UploadPackError;
use gix_object::Find;
use refstore_hash::{IdHasher, ObjectFormat, ObjectId};
use std::collections::HashMap;
use std::rc::Rc;

/// What negotiation and counting need of a commit.
#[derive(Debug)]
pub(crate) struct Commit {
    /// Its root tree.
    pub tree: ObjectId,
    /// Its parents, in order.
    pub parents: Vec<ObjectId>,
    /// Its committer time, seconds since the epoch: walks visit newer
    /// commits first.
    pub time: i64,
}

/// The repository's objects, seen as a graph.
pub(crate) struct Graph {
    handle: gix_odb::HandleArc,
    /// The repository's filesystem, for streaming large loose objects.
    vfs: std::sync::Arc<dyn refstore_fs::Vfs>,
    /// The packs as stored, for copying their entries.
    packs: std::sync::Arc<refstore_odb::Packs>,
    objects_dir: std::path::PathBuf,
    format: ObjectFormat,
    commits: HashMap<ObjectId, Rc<Commit>, IdHasher>,
    /// Inflated delta bases of packed objects read so far.
    cache: refstore_odb::DeltaBaseCache,
    buf: Vec<u8>,
    /// What annotated tags peel to, as the refs say (`include-tag` need
    /// not read a tag whose target is not sent).
    peeled: HashMap<ObjectId, ObjectId, IdHasher>,
    /// git's commit-graph, if the repository has a usable one.
    commit_graph: Option<refstore_odb::CommitGraph>,
    /// The reachability bitmap: `None` until first asked for.
    bitmap: Option<Option<std::sync::Arc<refstore_odb::BitmapIndex>>>,
    /// Commits seen without parents: the boundary of a shallow clone.
    grafted: std::collections::HashSet<ObjectId, IdHasher>,
}

impl Graph {
    /// The repository's objects, `objects`, seen through a handle of the
    /// graph's own on their shared store; `packs` are its packs as stored.
    pub fn open(
        vfs: std::sync::Arc<dyn refstore_fs::Vfs>,
        objects: &refstore_odb::Odb,
        packs: std::sync::Arc<refstore_odb::Packs>,
    ) -> Result<Graph, UploadPackError> {
        let objects_dir = objects.objects_dir();
        let format = objects.format();
        let mut handle = objects.store().to_cache_arc();
        // The pack writer copies entries by their pack location: packs must
        // stay mapped while it runs, even if a repack removes them.
        handle.prevent_pack_unload();
        // Trees are stored as long delta chains: without a cache of their
        // bases, each read would resolve its chain from the start.
        handle.set_pack_cache(|| Box::new(refstore_odb::DeltaBaseCache::default()));
        let commit_graph = refstore_odb::CommitGraph::open(vfs.as_ref(), objects_dir, format)
            .unwrap_or_else(|e| {
                tracing::warn!("ignoring the commit-graph: {e}");
                None
            });
        Ok(Graph {
            handle,
            vfs,
            packs,
            objects_dir: objects_dir.to_owned(),
            format,
            commits: HashMap::default(),
            cache: refstore_odb::DeltaBaseCache::new(1 << 16, 64 << 20),
            buf: Vec::new(),
            peeled: HashMap::default(),
            commit_graph,
            bitmap: None,
            grafted: Default::default(),
        })
    }

    /// Records that the tag `tag` peels to `target`, as its ref says.
    pub fn know_peeled(&mut self, tag: ObjectId, target: ObjectId) {
        self.peeled.insert(tag, target);
    }

    /// What the tag `tag` peels to, if its ref said.
    pub fn peeled_hint(&self, tag: &ObjectId) -> Option<&ObjectId> {
        self.peeled.get(tag)
    }

    /// The reachability bitmap of the packs, if there is a usable one.
    /// None while shallow grafts cut the history short: a stored bitmap
    /// holds whole histories (git, too, counts shallow requests by walking).
    pub fn bitmap(&mut self) -> Option<std::sync::Arc<refstore_odb::BitmapIndex>> {
        if !self.grafted.is_empty() {
            return None;
        }
        if self.bitmap.is_none() {
            let opened =
                refstore_odb::BitmapIndex::open(self.vfs.as_ref(), &self.objects_dir, &self.packs)
                    .unwrap_or_else(|e| {
                        tracing::warn!("ignoring the reachability bitmap: {e}");
                        None
                    });
            self.bitmap = Some(opened.map(std::sync::Arc::new));
        }
        self.bitmap.clone().flatten()
    }

    /// The commit `id` as the commit-graph records it, if it does.
    fn commit_from_graph(&mut self, id: &ObjectId) -> Option<Commit> {
        let graph = self.commit_graph.as_ref()?;
        let position = graph.lookup(id)?;
        match graph.commit(position) {
            Ok(commit) => Some(Commit {
                tree: commit.tree,
                parents: commit
                    .parents
                    .iter()
                    .map(|&parent| graph.id(parent))
                    .collect(),
                time: commit.time,
            }),
            Err(e) => {
                tracing::warn!("ignoring the commit-graph: {e}");
                self.commit_graph = None;
                None
            }
        }
    }

    /// From now on, the commits `ids` have no parents: they are the
    /// boundary of a shallow client's history (git's shallow grafts).
    pub fn graft_shallow(&mut self, ids: impl IntoIterator<Item = ObjectId>) {
        for id in ids {
            self.commits.remove(&id);
            self.grafted.insert(id);
        }
    }

    /// The object format of its ids.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// A handle on the object database.
    pub fn handle(&self) -> gix_odb::HandleArc {
        self.handle.clone()
    }

    /// The packs, as stored.
    pub fn packs(&self) -> &refstore_odb::Packs {
        &self.packs
    }

    /// The repository's filesystem.
    pub fn vfs(&self) -> &dyn refstore_fs::Vfs {
        self.vfs.as_ref()
    }

    /// The object directory.
    pub fn objects_dir(&self) -> &std::path::Path {
        &self.objects_dir
    }

    /// The kind of `id`, or `None` if it is missing.
    pub fn kind(&mut self, id: &ObjectId) -> Result<Option<gix_object::Kind>, UploadPackError> {
        if self.commits.contains_key(id) {
            return Ok(Some(gix_object::Kind::Commit));
        }
        if let Some(at) = self.packs.locate(id) {
            let kind = self
                .packs
                .kind(at)
                .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
            if let Some(kind) = kind {
                return Ok(Some(kind.to_gix()));
            }
        }
        Ok(self.read(id)?.map(|(kind, _)| kind))
    }

    /// Drops the parsed commits, cached delta bases and the bitmap (with
    /// its decoded entries; it is read again if asked for): once the walk
    /// is done, the pack writer needs none of them, and a full clone's
    /// walk holds a hundred megabytes in them.
    pub fn forget_walk(&mut self) {
        self.commits = HashMap::default();
        self.cache = refstore_odb::DeltaBaseCache::new(1, 0);
        self.bitmap = None;
    }

    /// The object's kind and content, or `None` if it is missing. The
    /// content is valid until the next read.
    pub fn read(
        &mut self,
        id: &ObjectId,
    ) -> Result<Option<(gix_object::Kind, &[u8])>, UploadPackError> {
        if let Some(at) = self.packs.locate(id) {
            let read = self
                .packs
                .read_held(at, &mut self.cache, &mut self.buf)
                .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
            if let Some((kind, held)) = read {
                let data = match held {
                    refstore_odb::Held::Cached(n) => self.cache.held(n),
                    refstore_odb::Held::Out => &self.buf,
                };
                return Ok(Some((kind.to_gix(), data)));
            }
        }
        if let Some(kind) = read_loose(&self.objects_dir, self.format, id, &mut self.buf)? {
            return Ok(Some((kind, &self.buf)));
        }
        let found = self
            .handle
            .try_find(id.as_gix(), &mut self.buf)
            .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
        Ok(found.map(|data| (data.kind, data.data)))
    }

    /// The commit `id`, or `None` if it is missing or not a commit.
    pub fn commit(&mut self, id: &ObjectId) -> Result<Option<Rc<Commit>>, UploadPackError> {
        if let Some(commit) = self.commits.get(id) {
            return Ok(Some(commit.clone()));
        }
        if let Some(mut commit) = self.commit_from_graph(id) {
            if self.grafted.contains(id) {
                commit.parents.clear();
            }
            let commit = Rc::new(commit);
            self.commits.insert(*id, commit.clone());
            return Ok(Some(commit));
        }
        let hash = self.format.gix_kind();
        let grafted = self.grafted.contains(id);
        let Some((gix_object::Kind::Commit, data)) = self.read(id)? else {
            return Ok(None);
        };
        let corrupt = |e| UploadPackError::objects(&format!("corrupt commit {id}"), e);
        let tree = gix_object::CommitRefIter::from_bytes(data, hash)
            .tree_id()
            .map(|tree| ObjectId::from_gix(&tree))
            .map_err(corrupt)?;
        let parents = match grafted {
            true => Vec::new(),
            false => gix_object::CommitRefIter::from_bytes(data, hash)
                .parent_ids()
                .map(|parent| ObjectId::from_gix(&parent))
                .collect(),
        };
        let time = gix_object::CommitRefIter::from_bytes(data, hash)
            .committer()
            .map(|signature| signature.seconds())
            .map_err(corrupt)?;
        let commit = Rc::new(Commit {
            tree,
            parents,
            time,
        });
        self.commits.insert(*id, commit.clone());
        Ok(Some(commit))
    }

    /// The object an annotated tag points at, or `None` if `id` is not a
    /// tag.
    pub fn tag_target(&mut self, id: &ObjectId) -> Result<Option<ObjectId>, UploadPackError> {
        let hash = self.format.gix_kind();
        let Some((gix_object::Kind::Tag, data)) = self.read(id)? else {
            return Ok(None);
        };
        gix_object::TagRefIter::from_bytes(data, hash)
            .target_id()
            .map(|target| Some(ObjectId::from_gix(&target)))
            .map_err(|e| UploadPackError::objects(&format!("corrupt tag {id}"), e))
    }

    /// Follows tags from `id` to the first object that is not a tag; the
    /// tags passed on the way are given to `visit_tag`. `None` if the chain
    /// ends at a missing object.
    pub fn peel(
        &mut self,
        id: &ObjectId,
        mut visit_tag: impl FnMut(ObjectId),
    ) -> Result<Option<(ObjectId, gix_object::Kind)>, UploadPackError> {
        let mut current = *id;
        // A tag's id hashes its content, which names its target: chains
        // cannot loop, so this ends.
        loop {
            match self.kind(&current)? {
                None => return Ok(None),
                Some(gix_object::Kind::Tag) => {
                    visit_tag(current);
                    match self.tag_target(&current)? {
                        Some(target) => current = target,
                        None => return Ok(None),
                    }
                }
                Some(kind) => return Ok(Some((current, kind))),
            }
        }
    }

    /// Calls `visit` with each entry of tree `id`, read in place.
    pub fn scan_tree(
        &mut self,
        id: &ObjectId,
        visit: impl FnMut(super::tree_scan::TreeEntry<'_>),
    ) -> Result<(), UploadPackError> {
        let format = self.format;
        let data = self.tree_data(id)?;
        super::tree_scan::scan_tree(data, format, visit)
            .map_err(|e| UploadPackError::Objects(format!("corrupt tree {id}: {e}")))
    }

    /// The content of tree `id`, valid until the next read.
    pub fn tree_data(&mut self, id: &ObjectId) -> Result<&[u8], UploadPackError> {
        match self.read(id)? {
            Some((gix_object::Kind::Tree, data)) => Ok(data),
            _ => Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            ))),
        }
    }

    /// The entries of tree `id` that are trees or blobs (submodule commits
    /// belong to other repositories), as `(id, is_tree, name)`, into
    /// `entries` (cleared first); `name_hash` makes a number of each name.
    pub fn tree_entries(
        &mut self,
        id: &ObjectId,
        name_hash: impl Fn(&[u8]) -> u64,
        entries: &mut Vec<(ObjectId, bool, u64)>,
    ) -> Result<(), UploadPackError> {
        entries.clear();
        self.each_tree_entry(id, |entry, is_tree, name| {
            entries.push((entry, is_tree, name_hash(name)))
        })
    }

    /// Calls `each` with `(id, is_tree, name)` for every entry of tree `id`
    /// that is a tree or a blob (submodule commits belong to other
    /// repositories); an error if the tree is missing or corrupt.
    pub fn each_tree_entry(
        &mut self,
        id: &ObjectId,
        mut each: impl FnMut(ObjectId, bool, &[u8]),
    ) -> Result<(), UploadPackError> {
        let hash = self.format.gix_kind();
        let Some((gix_object::Kind::Tree, data)) = self.read(id)? else {
            return Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            )));
        };
        for entry in gix_object::TreeRefIter::from_bytes(data, hash) {
            let entry =
                entry.map_err(|e| UploadPackError::objects(&format!("corrupt tree {id}"), e))?;
            if !entry.mode.is_commit() {
                each(
                    ObjectId::from_gix(entry.oid),
                    entry.mode.is_tree(),
                    entry.filename,
                );
            }
        }
        Ok(())
    }
}

/// Reads the loose object `id` of `objects_dir` into `buf` (the object
/// database handle would first load every pack index it has not loaded,
/// a large one costing more than a small fetch); `None` if there is none
/// (it may be in an alternate).
pub(crate) fn read_loose(
    objects_dir: &std::path::Path,
    format: ObjectFormat,
    id: &ObjectId,
    buf: &mut Vec<u8>,
) -> Result<Option<gix_object::Kind>, UploadPackError> {
    gix_odb::loose::Store::at(objects_dir, format.gix_kind())
        .try_find(id.as_gix(), buf)
        .map(|found| found.map(|data| data.kind))
        .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))
}

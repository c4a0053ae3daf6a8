//! Counting the objects of a pack with git's reachability bitmaps, as
//! git's pack-objects does when the repository has one.
//!
//! The set to send is everything reachable from the wants less everything
//! reachable from the common commits, each a bit set over the bitmap's
//! pack. A commit with a stored bitmap contributes it whole; from any
//! other, commits are walked (newest first) back to commits with one, then
//! the trees of the walked commits, stopping at objects already in the
//! set; objects the bitmap does not number (newer packs, loose objects)
//! get bits after its own. Unlike
//! the plain walk, which leaves out only the trees of the boundary commits,
//! this leaves out everything the client has through the common commits.
//!
//! The objects are then listed in pack order (the order the bitmap numbers
//! them), so stored entries are copied in the order they are stored; their
//! kinds come from the type bitmaps and their path-name hashes from the
//! bitmap's cache, for the delta search of objects compressed afresh.

use super::contents::{include_tags, path_hash, PackContents, NO_PATH, ROOT};
use super::graph::Graph;
use super::UploadPackError;
use refstore_hash::IdHasher;
use refstore_odb::ewah::Bitmap;
use refstore_odb::{BitmapIndex, ObjectKind};
use refstore_refs::ObjectId;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

/// The objects for `wants` when the client has `common`, counted with the
/// reachability bitmap; `None` if the repository has no usable one (the
/// caller walks instead). See `walk::pack_contents` for the arguments.
pub(crate) fn pack_contents(
    graph: &mut Graph,
    wants: &[ObjectId],
    common: &[ObjectId],
    tags_to_include: &[ObjectId],
) -> Result<Option<PackContents>, UploadPackError> {
    let Some(index) = graph.bitmap() else {
        return Ok(None);
    };
    let mut counter = Counter {
        index: index.clone(),
        extended: HashMap::default(),
        extra: Vec::new(),
    };
    let mut haves = Bitmap::new();
    if !common.is_empty() {
        match counter.reachable(graph, common, None, false) {
            Ok(Some(set)) => haves = set,
            Ok(None) => return Ok(None),
            // Below a commit the client has, history may be missing (a
            // cluster node that missed a push holds the next one's commit
            // without its parent): no set of what the client has can be
            // counted, and the plain walk, which ends where history is
            // missing as git's does, answers instead.
            Err(UploadPackError::Objects(e)) => {
                tracing::debug!("counting what the client has without the bitmap: {e}");
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    let Some(mut send) = counter.reachable(graph, wants, Some(&haves), true)? else {
        return Ok(None);
    };
    send.and_not_assign(&haves);

    let packs = graph.packs();
    let objects = index.objects();
    let file = index.file();
    let mut contents = PackContents::default();
    let count = send.count();
    contents.ids.reserve(count);
    contents.paths.reserve(count);
    contents.slots.reserve(count);
    contents.located.reserve(count);
    for bit in send.ones() {
        let (id, path) = if bit < objects {
            let at = index.at_bit(bit);
            contents.located.push(Some(at));
            let id = packs.id(at);
            let path = if file.of_kind(ObjectKind::Commit).get(bit)
                || file.of_kind(ObjectKind::Tag).get(bit)
            {
                NO_PATH
            } else {
                // git's name hash, kept apart from NO_PATH.
                index.name_hash(bit).map_or(NO_PATH, u64::from)
            };
            (id, path)
        } else {
            contents.located.push(None);
            counter.extra[bit - objects]
        };
        contents.slots.insert(id, contents.ids.len() as u32);
        contents.ids.push(id);
        contents.paths.push(path);
    }
    include_tags(graph, tags_to_include, &mut contents)?;
    if !common.is_empty() {
        contents.boundary = boundary(graph, &contents, &haves, &counter)?;
    }
    graph.forget_walk();
    Ok(Some(contents))
}

/// Most sent commits whose parents are looked at for the boundary: a
/// fetch of more history than this gets no thin bases (a clone has none).
const MAX_BOUNDARY_SCAN: usize = 1000;

/// The boundary of the count for thin packs: parents of sent commits that
/// the client has (their bits are in `haves`).
fn boundary(
    graph: &mut Graph,
    contents: &PackContents,
    haves: &Bitmap,
    counter: &Counter,
) -> Result<Vec<ObjectId>, UploadPackError> {
    let mut edges = Vec::new();
    let mut scanned = 0;
    for id in &contents.ids {
        if scanned >= MAX_BOUNDARY_SCAN {
            break;
        }
        let Some(commit) = graph.commit(id)? else {
            continue;
        };
        scanned += 1;
        for parent in &commit.parents {
            let has = !contents.contains(parent)
                && counter
                    .known_bit(graph, parent)
                    .is_some_and(|bit| haves.get(bit));
            if has && !edges.contains(parent) {
                edges.push(*parent);
            }
        }
    }
    Ok(edges)
}

/// Bit numbers for one count.
struct Counter {
    index: Arc<BitmapIndex>,
    /// The bits of objects the bitmap does not number.
    extended: HashMap<ObjectId, usize, IdHasher>,
    /// By extended bit (less the pack's objects): the object and the path
    /// hash it was met at ([`NO_PATH`] for commits and tags).
    extra: Vec<(ObjectId, u64)>,
}

impl Counter {
    /// The bit of `id` if it has one already.
    fn known_bit(&self, graph: &Graph, id: &ObjectId) -> Option<usize> {
        graph
            .packs()
            .locate_all(id)
            .find_map(|at| self.index.bit_of(at))
            .or_else(|| self.extended.get(id).copied())
    }

    /// The bit of `id`, given one if the bitmap does not number it.
    fn bit(&mut self, graph: &Graph, id: &ObjectId, path: u64) -> usize {
        if let Some(bit) = graph
            .packs()
            .locate_all(id)
            .find_map(|at| self.index.bit_of(at))
        {
            return bit;
        }
        let next = self.index.objects() + self.extra.len();
        *self.extended.entry(*id).or_insert_with(|| {
            self.extra.push((*id, path));
            next
        })
    }

    /// Everything reachable from `roots` that is not in `known` (which is
    /// closed under reachability); `None` if the bitmap turns out to be
    /// unusable. With `tags`, the tags met peeling the roots are included.
    fn reachable(
        &mut self,
        graph: &mut Graph,
        roots: &[ObjectId],
        known: Option<&Bitmap>,
        tags: bool,
    ) -> Result<Option<Bitmap>, UploadPackError> {
        let empty = Bitmap::new();
        let known = known.unwrap_or(&empty);
        let mut set = Bitmap::new();
        let mut commits = BinaryHeap::new();
        // Trees and blobs to add once the commits are done, with their
        // path hashes.
        let mut pending: Vec<(ObjectId, bool, u64)> = Vec::new();
        for root in roots {
            let mut met = Vec::new();
            let peeled = graph.peel(root, |tag| met.push(tag))?;
            if tags {
                for tag in met {
                    let bit = self.bit(graph, &tag, NO_PATH);
                    set.set(bit);
                }
            }
            match peeled {
                Some((id, gix_object::Kind::Commit)) => {
                    commits.push((commit_time(graph, &id)?, id));
                }
                Some((id, kind)) => {
                    pending.push((id, kind == gix_object::Kind::Tree, path_hash(ROOT, b"")));
                }
                None => {
                    return Err(UploadPackError::Objects(format!(
                        "the object {root} or an object it names is missing: \
                         the repository is incomplete"
                    )))
                }
            }
        }

        let mut walked = Vec::new();
        while let Some((_, id)) = commits.pop() {
            let bit = self.bit(graph, &id, NO_PATH);
            if set.get(bit) || known.get(bit) {
                continue;
            }
            if bit < self.index.objects() {
                match self.index.reachable_from(bit) {
                    Ok(Some(stored)) => {
                        set.or_assign(&stored);
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!("ignoring the reachability bitmap: {e}");
                        return Ok(None);
                    }
                }
            }
            set.set(bit);
            let commit = graph
                .commit(&id)?
                .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
            walked.push(commit.tree);
            for parent in &commit.parents {
                commits.push((commit_time(graph, parent)?, *parent));
            }
        }

        for tree in walked {
            pending.push((tree, true, ROOT));
        }
        let mut entries = Vec::new();
        while let Some((id, is_tree, path)) = pending.pop() {
            let bit = self.bit(graph, &id, path);
            if set.get(bit) || known.get(bit) {
                continue;
            }
            set.set(bit);
            if is_tree {
                graph.tree_entries(&id, |name| path_hash(path, name), &mut entries)?;
                pending.extend(entries.iter().copied());
            }
        }
        Ok(Some(set))
    }
}

fn commit_time(graph: &mut Graph, id: &ObjectId) -> Result<i64, UploadPackError> {
    graph
        .commit(id)?
        .map(|commit| commit.time)
        .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))
}

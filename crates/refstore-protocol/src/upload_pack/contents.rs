//! What a pack holds: its objects in pack order with the paths they were
//! met at, shared by the walks that fill it (`walk.rs`, `bitmap_walk.rs`,
//! `filtered_walk.rs`, `sparse.rs`) and by the code that writes it; the
//! path hashes; and adding the annotated tags a client asked to follow.

use super::graph::Graph;
use super::UploadPackError;
use refstore_hash::IdHasher;
use refstore_refs::ObjectId;
use std::collections::{hash_map, HashMap, HashSet};

/// The path of commits and tags, which have none.
pub(crate) const NO_PATH: u64 = u64::MAX;

/// The objects to send, in pack order: commits newest first, then tags,
/// then trees and blobs in the order a tree walk meets them.
#[derive(Default)]
pub(crate) struct PackContents {
    /// The objects, in order: their slots in the pack.
    pub ids: Vec<ObjectId>,
    /// By slot: for trees and blobs, a hash of the path they were first
    /// met at (versions of one path make good delta pairs); [`NO_PATH`]
    /// for commits and tags.
    pub paths: Vec<u64>,
    /// The slot of each object.
    pub slots: HashMap<ObjectId, u32, IdHasher>,
    /// The boundary of the walk: commits the client has that are parents
    /// of sent commits. Their trees hold the previous versions of what is
    /// sent, the bases of a thin pack.
    pub boundary: Vec<ObjectId>,
    /// Trees and blobs known to be on the client (reachable from the
    /// boundary); may be empty when the enumeration does not know them.
    pub client_has: IdSet,
    /// By slot of a sent tree or blob: the object at its path in a
    /// boundary tree, when the enumeration compared them (`None`: not
    /// known, a thin pack finds them itself).
    pub client_versions: Option<HashMap<u32, ObjectId>>,
    /// By slot, where known (a count with bitmaps knows it): where the
    /// object is stored, so the pack writer need not look it up.
    pub located: Vec<Option<refstore_odb::PackedAt>>,
}

impl PackContents {
    /// Adds `id`, met at `path`, unless it is added: false if it was.
    pub(crate) fn add(&mut self, id: ObjectId, path: u64) -> bool {
        match self.slots.entry(id) {
            hash_map::Entry::Occupied(_) => false,
            hash_map::Entry::Vacant(vacant) => {
                vacant.insert(self.ids.len() as u32);
                self.ids.push(id);
                self.paths.push(path);
                true
            }
        }
    }

    /// Adds `id` unless it is added, at the path `path` computes (only
    /// for an object not met before): the path, or `None` if it was added.
    pub(crate) fn add_new(&mut self, id: ObjectId, path: impl FnOnce() -> u64) -> Option<u64> {
        match self.slots.entry(id) {
            hash_map::Entry::Occupied(_) => None,
            hash_map::Entry::Vacant(vacant) => {
                let path = path();
                vacant.insert(self.ids.len() as u32);
                self.ids.push(id);
                self.paths.push(path);
                Some(path)
            }
        }
    }

    /// Frees what only choosing how to send each object needs (the map of
    /// ids to slots, the known locations, the client's objects): the pack
    /// writer goes by slot, and a clone's map alone is tens of megabytes.
    pub(crate) fn forget_lookups(&mut self) {
        self.slots = HashMap::default();
        self.located = Vec::new();
        self.client_has = IdSet::default();
    }

    /// True if `id` is sent.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.slots.contains_key(id)
    }
}

pub(crate) type IdSet = HashSet<ObjectId, IdHasher>;

/// The hash of the root's path.
pub(crate) const ROOT: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of the path `name` below the path whose hash is `parent`.
pub(crate) fn path_hash(parent: u64, name: &[u8]) -> u64 {
    std::iter::once(&b'/').chain(name).fold(parent, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Adds each tag of `tags` (with the tags its chain passes) whose final
/// target is sent.
pub(crate) fn include_tags(
    graph: &mut Graph,
    tags: &[ObjectId],
    contents: &mut PackContents,
) -> Result<(), UploadPackError> {
    for tag in tags {
        if contents.contains(tag)
            || graph
                .peeled_hint(tag)
                .is_some_and(|target| !contents.contains(target))
        {
            continue;
        }
        let mut chain = Vec::new();
        if let Some((target, _)) = graph.peel(tag, |t| chain.push(t))? {
            if contents.contains(&target) {
                for t in chain {
                    contents.add(t, NO_PATH);
                }
            }
        }
    }
    Ok(())
}

//! What a node needs of its peers: the objects the cluster's refs reach
//! that it lacks. The walk goes from the refs over the objects the node
//! has; an object named but missing is needed, and once a peer's pack
//! brought it, the walk goes on through it ([`Closure::resume`]).
//!
//! A walk of a whole history at every repair pass would cost a node that
//! is up to date as much as one that is behind, so the walk stops at the
//! commits found complete by an earlier walk (the tips verified then,
//! [`Closure::new`]) when they are still here. That is sound because
//! nothing takes part of a present object's history away: pruning keeps
//! every object a kept object reaches (`refstore_maint`'s reachability).

use refstore_odb::{ObjectKind, Odb};
use refstore_refs::{ObjectFormat, ObjectId};
use std::collections::HashSet;

/// A walk of what the cluster's refs reach, over the objects this node
/// has.
#[derive(Debug)]
pub(crate) struct Closure {
    format: ObjectFormat,
    /// Commits whose whole history was found here before.
    complete: HashSet<ObjectId>,
    seen: HashSet<ObjectId>,
    /// Objects named but not here, each once.
    missing: Vec<ObjectId>,
    /// How many objects were read.
    pub read: usize,
}

impl Closure {
    /// A walk that stops at `complete`, commits whose whole history an
    /// earlier walk found here.
    pub fn new(format: ObjectFormat, complete: HashSet<ObjectId>) -> Closure {
        Closure {
            format,
            complete,
            seen: HashSet::new(),
            missing: Vec::new(),
            read: 0,
        }
    }

    /// The objects named and not here.
    pub fn missing(&self) -> &[ObjectId] {
        &self.missing
    }

    /// Walks from `roots`.
    pub fn walk(&mut self, objects: &Odb, roots: Vec<ObjectId>) -> Result<(), String> {
        let mut queue = roots;
        while let Some(id) = queue.pop() {
            if !self.seen.insert(id) {
                continue;
            }
            if self.complete.contains(&id) && objects.contains(&id) {
                continue;
            }
            let Some((kind, data)) = objects.read(&id).map_err(|e| e.to_string())? else {
                self.missing.push(id);
                continue;
            };
            self.read += 1;
            match kind {
                ObjectKind::Blob => {}
                ObjectKind::Commit | ObjectKind::Tag => self.headers(&data, &mut queue),
                ObjectKind::Tree => self.entries(objects, &data, &mut queue),
            }
        }
        Ok(())
    }

    /// Goes on through the missing objects that are here now (a peer's
    /// pack brought them); those still missing stay so.
    pub fn resume(&mut self, objects: &Odb) -> Result<(), String> {
        let (arrived, still): (Vec<ObjectId>, Vec<ObjectId>) = std::mem::take(&mut self.missing)
            .into_iter()
            .partition(|id| objects.contains(id));
        self.missing = still;
        for id in &arrived {
            self.seen.remove(id);
        }
        self.walk(objects, arrived)
    }

    /// The tree, parents and tagged object of a commit or tag.
    fn headers(&self, data: &[u8], queue: &mut Vec<ObjectId>) {
        for line in data.split(|&b| b == b'\n') {
            if line.is_empty() {
                break;
            }
            let named = line
                .strip_prefix(b"tree ")
                .or_else(|| line.strip_prefix(b"parent "))
                .or_else(|| line.strip_prefix(b"object "));
            if let Some(id) = named.and_then(|hex| ObjectId::from_hex_in(hex, self.format).ok()) {
                queue.push(id);
            }
        }
    }

    /// A tree's subtrees are walked; its blobs only looked up (a blob
    /// names nothing); submodule commits are in other repositories.
    fn entries(&mut self, objects: &Odb, data: &[u8], queue: &mut Vec<ObjectId>) {
        let hash_len = self.format.raw_len();
        let mut rest = data;
        while let Some(nul) = rest.iter().position(|&b| b == 0) {
            let mode = rest.split(|&b| b == b' ').next().unwrap_or_default();
            let Some(raw) = rest.get(nul + 1..nul + 1 + hash_len) else {
                break;
            };
            rest = &rest[nul + 1 + hash_len..];
            let Some(id) = ObjectId::from_raw(raw) else {
                break;
            };
            if mode == b"160000" {
                continue;
            }
            if mode.starts_with(b"4") {
                queue.push(id);
            } else if self.seen.insert(id) && !objects.contains(&id) {
                self.missing.push(id);
            }
        }
    }
}

//! Computing one chosen commit's reachability bitmap: everything
//! reachable from it, as bits in the multi-pack-index's pseudo-pack order.
//!
//! The history is walked newest first (by generation) from the commit;
//! where the walk meets a commit whose bitmap is already known, that set
//! is added whole instead of walked. Chosen commits are done oldest
//! first, so each walk stops at the chosen commits right below it. A tree already in the set is not
//! read again: a set only ever holds complete trees.

use crate::bitmap_file::Entry;
use crate::commit::Commit;
use crate::error::MaintError;
use crate::midx::Midx;
use crate::repo::Repo;
use refstore_odb::ewah::Bitmap;
use refstore_odb::{ObjectKind, Odb};
use refstore_refs::ObjectId;
use std::collections::{BinaryHeap, HashMap};

/// Bits of objects by id.
pub struct Numbering<'a> {
    /// The index.
    pub midx: &'a Midx,
    /// The bit of each index position.
    pub bit_of: &'a [u32],
}

impl Numbering<'_> {
    /// The bit of `id`, if the index has it.
    pub fn bit(&self, id: &[u8]) -> Option<usize> {
        self.midx
            .position(id)
            .map(|p| self.bit_of[p as usize] as usize)
    }
}

/// The name hash of each object (by index position) at the first path a
/// walk found it at, for the bitmap's name-hash cache.
pub struct NameHashes {
    /// By index position; 0 where none was found (commits, tags, objects
    /// no chosen commit reaches), as git leaves them.
    pub hashes: Vec<u32>,
    known: Bitmap,
}

impl NameHashes {
    /// No name known yet for any of `objects` objects.
    pub fn new(objects: usize) -> NameHashes {
        NameHashes {
            hashes: vec![0; objects],
            known: Bitmap::new(),
        }
    }

    fn found(&mut self, position: u32, path: &[u8]) {
        let position = position as usize;
        if !self.known.get(position) {
            self.known.set(position);
            self.hashes[position] = crate::bitmap_file::name_hash(path);
        }
    }
}

/// What a walk from one commit found.
pub enum Reached<'c> {
    /// Everything reachable from it.
    All(Bitmap),
    /// It reaches this commit, whose own objects (itself, its tree, its
    /// parents) are not all in the index: neither it nor anything above it
    /// can have a bitmap.
    Incomplete(&'c [u8]),
}

/// What computing one commit's set needs.
pub struct Walk<'a> {
    /// The repository.
    pub repo: &'a Repo,
    /// Its objects.
    pub odb: &'a Odb,
    /// The history of the refs.
    pub commits: &'a HashMap<Vec<u8>, Commit>,
    /// The generation of each commit of it.
    pub generation: &'a HashMap<&'a [u8], u32>,
    /// Bits of objects.
    pub numbering: &'a Numbering<'a>,
}

impl<'a> Walk<'a> {
    /// Everything reachable from `commit`, or the commit of its history
    /// whose objects are not all in the index. `stored` gives the place in
    /// `entries` of each commit whose set is known; `names` learns the
    /// paths of the trees and blobs walked.
    pub fn reachable<'c>(
        &self,
        commit: &'c [u8],
        stored: &HashMap<&[u8], usize>,
        entries: &[Entry],
        names: &mut NameHashes,
    ) -> Result<Reached<'c>, MaintError>
    where
        'a: 'c,
    {
        let mut set = Bitmap::new();
        let mut queue: BinaryHeap<(u32, &'c [u8])> = BinaryHeap::new();
        queue.push((self.generation[commit], commit));
        while let Some((_, id)) = queue.pop() {
            let Some(bit) = self.numbering.bit(id) else {
                return Ok(Reached::Incomplete(id));
            };
            if set.get(bit) {
                continue;
            }
            if id != commit {
                if let Some(&n) = stored.get(id) {
                    set.or_assign(&entries[n].reachable);
                    continue;
                }
            }
            set.set(bit);
            let commits: &'a HashMap<Vec<u8>, Commit> = self.commits;
            let Some(found) = commits.get(id) else {
                return Ok(Reached::Incomplete(id));
            };
            if !self.add_tree(&found.tree, &mut set, names)? {
                return Ok(Reached::Incomplete(id));
            }
            for parent in &found.parents {
                let Some(&level) = self.generation.get(parent.as_slice()) else {
                    return Ok(Reached::Incomplete(id));
                };
                queue.push((level, parent));
            }
        }
        Ok(Reached::All(set))
    }

    /// Adds `tree` and everything in it to `set`, recording the paths
    /// met in `names`; false if something in it is outside the index or
    /// cannot be read.
    fn add_tree(
        &self,
        tree: &[u8],
        set: &mut Bitmap,
        names: &mut NameHashes,
    ) -> Result<bool, MaintError> {
        let hash_len = self.repo.object_format().raw_len();
        let midx = self.numbering.midx;
        let mut stack: Vec<(Vec<u8>, Vec<u8>)> = vec![(tree.to_vec(), Vec::new())];
        while let Some((id, path)) = stack.pop() {
            let Some(position) = midx.position(&id) else {
                return Ok(false);
            };
            let bit = self.numbering.bit_of[position as usize] as usize;
            if set.get(bit) {
                continue;
            }
            let Some(oid) = ObjectId::from_raw(&id) else {
                return Ok(false);
            };
            let Some((ObjectKind::Tree, data)) = self.odb.read(&oid)? else {
                return Ok(false);
            };
            set.set(bit);
            names.found(position, &path);
            let mut rest = &data[..];
            while let Some(nul) = rest.iter().position(|&b| b == 0) {
                let (mode, name) = match rest[..nul].iter().position(|&b| b == b' ') {
                    Some(space) => (&rest[..space], &rest[space + 1..nul]),
                    None => return Ok(false),
                };
                let Some(raw) = rest.get(nul + 1..nul + 1 + hash_len) else {
                    return Ok(false);
                };
                rest = &rest[nul + 1 + hash_len..];
                // A submodule's commit lives in another repository.
                if mode == b"160000" {
                    continue;
                }
                let mut entry_path = path.clone();
                if !entry_path.is_empty() {
                    entry_path.push(b'/');
                }
                entry_path.extend_from_slice(name);
                if mode.starts_with(b"4") {
                    stack.push((raw.to_vec(), entry_path));
                } else {
                    let Some(position) = midx.position(raw) else {
                        return Ok(false);
                    };
                    set.set(self.numbering.bit_of[position as usize] as usize);
                    names.found(position, &entry_path);
                }
            }
        }
        Ok(true)
    }
}

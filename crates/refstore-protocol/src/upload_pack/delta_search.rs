//! Choosing deltas for objects compressed afresh (loose objects, stored
//! deltas whose base is not sent, and, in thin packs, stored whole objects
//! that have a base on the client): each tree or blob is tried against the
//! previous version of its path compressed afresh in the same pack (an
//! offset delta) and, in a thin pack, against the version of its path the
//! client has (a reference delta against an object the pack leaves out,
//! see `thin.rs`). The smaller delta wins, if it is less than half the
//! object's size.
//!
//! The walk meets newer versions first, so a chain runs from the newest
//! version, sent whole or against the client's version, back through
//! history, as in git's packs. Chains are cut at [`MAX_DEPTH`] so the
//! client never resolves very long ones; a delta's depth counts the stored
//! deltas that will be sent against it too.
//! Entries copied from a stored pack keep their form and are no candidates:
//! that would mean inflating them.

use refstore_odb::delta::DeltaIndex;
use refstore_refs::ObjectId;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// The longest delta chain written (git's `pack.depth` default).
pub(crate) const MAX_DEPTH: u8 = 50;
/// Objects smaller than this are sent whole: a delta would save nothing.
const MIN_SIZE: usize = 64;
/// Objects larger than this are sent whole and kept as no candidate, so
/// that a large file costs no memory beyond itself.
pub(crate) const MAX_SIZE: usize = 8 << 20;
/// The most bytes of the client's objects kept inflated for reuse as
/// bases (the same base serves every sent version of its path).
const EXTERNAL_CACHE: usize = 64 << 20;
/// The most bytes of candidates kept: a clone of one commit meets every
/// path once, and keeping each file's content for a next version that
/// never comes would hold the whole tree. The candidates met longest ago
/// go first.
const CANDIDATES_CAP: usize = 16 << 20;

/// The previous version of a path: a possible delta base.
struct Candidate {
    /// Its slot in the pack.
    slot: u32,
    /// How many deltas lead to it.
    depth: u8,
    data: Vec<u8>,
}

/// What a delta is against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// The object in this slot of the pack.
    Slot(u32),
    /// An object the client has, left out of the pack.
    Client(ObjectId),
}

/// A delta found for an object.
pub(crate) struct Found {
    pub base: Base,
    /// The delta.
    pub delta: Vec<u8>,
    /// The depth of the object once sent as this delta.
    pub depth: u8,
}

/// The candidates met so far.
#[derive(Default)]
pub(crate) struct DeltaSearch {
    /// The last candidate per object kind and path.
    candidates: HashMap<(gix_object::Kind, u64), Candidate>,
    /// The candidates in the order they were remembered (entries replaced
    /// since are skipped when met), for dropping the oldest.
    remembered: VecDeque<((gix_object::Kind, u64), u32)>,
    /// The bytes of data the candidates hold.
    candidate_bytes: usize,
    /// Inflated objects of the client's, by id.
    external: HashMap<ObjectId, Rc<Vec<u8>>>,
    external_bytes: usize,
}

impl DeltaSearch {
    /// The smallest delta for `data` (of `kind`, met at `path`) against
    /// the previous version of its path and against `client_base` (an
    /// object the client has, with its content), if one is small enough.
    /// `height` is the longest chain of stored deltas that will be sent
    /// against the object: the delta's depth plus it stays within
    /// [`MAX_DEPTH`].
    pub fn find(
        &self,
        kind: gix_object::Kind,
        path: Option<u64>,
        data: &[u8],
        client_base: Option<(ObjectId, &[u8])>,
        height: u8,
    ) -> Option<Found> {
        if data.len() < MIN_SIZE || data.len() > MAX_SIZE {
            return None;
        }
        // A delta must beat the whole object by a margin, as git requires,
        // or it only costs the client work.
        let mut limit = data.len() / 2;
        let mut best = None;
        let previous = path
            .and_then(|path| self.candidates.get(&(kind, path)))
            .filter(|base| u32::from(base.depth) + 1 + u32::from(height) <= u32::from(MAX_DEPTH));
        if let Some(base) = previous {
            if let Some(delta) = DeltaIndex::new(&base.data).delta(data, limit) {
                limit = delta.len();
                best = Some(Found {
                    base: Base::Slot(base.slot),
                    delta,
                    depth: base.depth + 1,
                });
            }
        }
        if let Some((id, base)) = client_base.filter(|_| height < MAX_DEPTH) {
            if let Some(delta) = DeltaIndex::new(base).delta(data, limit) {
                best = Some(Found {
                    base: Base::Client(id),
                    delta,
                    depth: 1,
                });
            }
        }
        best
    }

    /// The content of the client's object `id`, read by `read` unless it
    /// was read before.
    pub fn client_object(
        &mut self,
        id: ObjectId,
        read: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<Rc<Vec<u8>>> {
        if let Some(data) = self.external.get(&id) {
            return Some(data.clone());
        }
        let data = Rc::new(read()?);
        if data.len() > MAX_SIZE {
            return None;
        }
        if self.external_bytes + data.len() > EXTERNAL_CACHE {
            self.external.clear();
            self.external_bytes = 0;
        }
        self.external_bytes += data.len();
        self.external.insert(id, data.clone());
        Some(data)
    }

    /// Records `data`, sent in `slot` at chain depth `depth`, as the
    /// candidate for the next version of `path`.
    pub fn remember(
        &mut self,
        kind: gix_object::Kind,
        path: u64,
        slot: u32,
        depth: u8,
        data: Vec<u8>,
    ) {
        let key = (kind, path);
        if let Some(old) = self.candidates.remove(&key) {
            self.candidate_bytes -= old.data.len();
        }
        if data.len() > MAX_SIZE {
            return;
        }
        self.candidate_bytes += data.len();
        self.candidates.insert(key, Candidate { slot, depth, data });
        self.remembered.push_back((key, slot));
        while self.candidate_bytes > CANDIDATES_CAP {
            let Some((key, slot)) = self.remembered.pop_front() else {
                break;
            };
            if self.candidates.get(&key).is_some_and(|c| c.slot == slot) {
                let old = self.candidates.remove(&key).expect("just found");
                self.candidate_bytes -= old.data.len();
            }
        }
        // Replaced candidates leave stale entries behind: compact the
        // queue when they outnumber the live ones.
        if self.remembered.len() > 2 * self.candidates.len() + 1024 {
            let candidates = &self.candidates;
            self.remembered
                .retain(|(key, slot)| candidates.get(key).is_some_and(|c| c.slot == *slot));
        }
    }

    /// The bytes of data the candidates hold.
    #[cfg(test)]
    pub fn candidate_bytes(&self) -> usize {
        self.candidate_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_capped_and_the_newest_stay() {
        let mut search = DeltaSearch::default();
        let version = |path: u64| -> Vec<u8> {
            (0..1usize << 20)
                .map(|i| (i as u64 * 31 + path) as u8)
                .collect()
        };
        for path in 0..40u64 {
            search.remember(gix_object::Kind::Blob, path, path as u32, 0, version(path));
            assert!(search.candidate_bytes() <= CANDIDATES_CAP);
        }
        // The last path remembered is still a base for its next version;
        // the first is gone.
        let mut next = version(39);
        next.extend_from_slice(b"one more line");
        let found = search
            .find(gix_object::Kind::Blob, Some(39), &next, None, 0)
            .expect("a delta against the newest candidate");
        assert_eq!(found.base, Base::Slot(39));
        let mut first = version(0);
        first.extend_from_slice(b"one more line");
        assert!(search
            .find(gix_object::Kind::Blob, Some(0), &first, None, 0)
            .is_none());
    }
}

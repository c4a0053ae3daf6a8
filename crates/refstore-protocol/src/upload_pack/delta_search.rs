//! Choosing deltas for objects compressed afresh (loose objects, and
//! stored deltas whose base is not sent): each tree or blob is tried
//! against the previous version of its path compressed afresh in the same
//! pack, and sent as an offset delta when that is less than half its size.
//!
//! The walk meets newer versions first, so a chain runs from the newest
//! version, sent whole, back through history, as in git's packs. Chains are
//! cut at [`MAX_DEPTH`] so the client never resolves very long ones.
//! Entries copied from a stored pack keep their form and are no candidates:
//! that would mean inflating them.

use super::delta::DeltaIndex;
use std::collections::HashMap;

/// The longest delta chain written (git's `pack.depth` default).
const MAX_DEPTH: u8 = 50;
/// Objects smaller than this are sent whole: a delta would save nothing.
const MIN_SIZE: usize = 64;
/// Objects larger than this are sent whole and kept as no candidate, so
/// that a large file costs no memory beyond itself.
pub(crate) const MAX_SIZE: usize = 8 << 20;

/// The previous version of a path: a possible delta base.
struct Candidate {
    /// Its slot in the pack.
    slot: u32,
    /// How many deltas lead to it.
    depth: u8,
    data: Vec<u8>,
}

/// A delta found for an object.
pub(crate) struct Found {
    /// The slot of its base.
    pub base: u32,
    /// The delta.
    pub delta: Vec<u8>,
}

/// The candidates met so far.
#[derive(Default)]
pub(crate) struct DeltaSearch {
    /// The last candidate per object kind and path.
    candidates: HashMap<(gix_object::Kind, u64), Candidate>,
}

impl DeltaSearch {
    /// A delta for `data` (of `kind`, met at `path`) against the previous
    /// version of its path, if one is small enough.
    pub fn find(&self, kind: gix_object::Kind, path: u64, data: &[u8]) -> Option<Found> {
        if data.len() < MIN_SIZE || data.len() > MAX_SIZE {
            return None;
        }
        let base = self
            .candidates
            .get(&(kind, path))
            .filter(|base| base.depth < MAX_DEPTH)?;
        // A delta must beat the whole object by a margin, as git requires,
        // or it only costs the client work.
        let delta = DeltaIndex::new(&base.data).delta(data, data.len() / 2)?;
        Some(Found {
            base: base.slot,
            delta,
        })
    }

    /// The depth of a delta against the candidate in `slot`.
    pub fn depth_after(&self, kind: gix_object::Kind, path: u64) -> u8 {
        self.candidates
            .get(&(kind, path))
            .map_or(0, |c| c.depth.saturating_add(1))
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
        if data.len() > MAX_SIZE {
            self.candidates.remove(&(kind, path));
            return;
        }
        self.candidates
            .insert((kind, path), Candidate { slot, depth, data });
    }
}

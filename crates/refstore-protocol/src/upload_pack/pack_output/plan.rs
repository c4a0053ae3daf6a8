//! Planning a pack: where each object to send is stored and how it is
//! sent (its stored entry copied whole or as a delta, or compressed
//! afresh), the delta chains copied, and which objects are worth keeping
//! as delta bases. Only entry headers are read, and not those of the
//! entries sent as stored ([`super::reuse`]), whose headers were read
//! choosing them.

use super::request::PackRequest;
use super::reuse::{self, Reuse};
use crate::upload_pack::contents::{PackContents, NO_PATH};
use crate::upload_pack::delta_search::MAX_DEPTH;
use crate::upload_pack::graph::Graph;
use crate::upload_pack::thin::ThinBases;
use crate::upload_pack::UploadPackError;
use refstore_hash::IdHasher;
use refstore_odb::{PackedAt, StoredKind};
use refstore_refs::ObjectId;

/// A slot not (yet) known: no object.
const NONE: u32 = u32::MAX;

/// How many entry headers are read between two releases.
const RELEASE_HEADERS_EVERY: usize = 1 << 16;

/// How a stored object is sent.
#[derive(Debug, Clone, Copy)]
pub(super) enum How {
    /// Its whole stored entry is copied.
    Whole,
    /// Its stored delta is copied, against the object in this slot.
    Delta(u32),
    /// Its stored delta is copied, against an object the client has (a
    /// thin pack's reference delta); the entry names the base. (The id
    /// is not kept here: a plan has an entry per object sent, and an id
    /// would triple its size.)
    ClientDelta,
    /// It is inflated and compressed afresh.
    Fresh,
}

/// Where each object of the pack comes from, by slot (its position in
/// the walk's order).
pub(super) struct Plan {
    /// The stored entry and how it is sent; `None` for objects no pack
    /// holds (loose ones).
    pub(super) stored: Vec<Option<(PackedAt, How)>>,
    /// By slot: the longest chain of stored deltas copied against the
    /// object (deltas of deltas count), so that making the object itself a
    /// delta keeps chains within [`MAX_DEPTH`].
    pub(super) height: Vec<u8>,
    /// The bases on the client, for a thin pack.
    pub(super) thin: ThinBases,
    /// Objects compressed afresh that may become deltas.
    pub(super) fresh_for_delta: usize,
    /// By slot: a later object of the same path is searched for a delta,
    /// so this one is worth keeping as its candidate base (a clone of one
    /// commit meets each path once: keeping every file for nothing would
    /// hold the whole tree in memory).
    pub(super) base_wanted: Vec<bool>,
    /// The entries sent as stored, written first; their entries in
    /// `stored` are planned as whole objects.
    pub(super) reuse: Reuse,
}

pub(super) fn damaged(e: refstore_odb::OdbError) -> UploadPackError {
    UploadPackError::objects("cannot read a stored pack entry", e)
}

/// Finds every object's stored entry and decides what can be copied;
/// only entry headers are read. With `thin`, the bases on the client are
/// found too (`contents` gives up what it knows the client has).
pub(super) fn plan(
    graph: &Graph,
    contents: &mut PackContents,
    request: PackRequest,
) -> Result<Plan, UploadPackError> {
    let thin = match request.thin {
        true => ThinBases::find(graph, contents)?,
        false => ThinBases::none(),
    };
    let contents = &*contents;
    // Entries sent as stored include offset deltas, which only a client
    // that asked for them reads.
    let reuse = match request.ofs_delta {
        true => reuse::select(graph, contents, &thin),
        false => Reuse::default(),
    };
    let packs = graph.packs();
    let ids = &contents.ids;
    // The slot of each sent object, by pack and index position: a stored
    // delta names its base by offset, which leads to a position.
    let mut slot_at: Vec<Vec<u32>> = vec![Vec::new(); packs.len()];
    let mut located = Vec::with_capacity(ids.len());
    for (slot, id) in ids.iter().enumerate() {
        let known = contents.located.get(slot).copied().flatten();
        let at = known.or_else(|| packs.locate(id));
        if let Some(at) = at {
            let table = &mut slot_at[at.pack as usize];
            if table.is_empty() {
                table.resize(packs.objects_in(at.pack) as usize, NONE);
            }
            table[at.position as usize] = slot as u32;
        }
        located.push(at);
    }
    // Reference deltas and bases stored in another pack than the one
    // chosen for them are found by id.
    let slot_of_id = |id: &ObjectId| -> Option<u32> { contents.slots.get(id).copied() };
    let mut stored = Vec::with_capacity(ids.len());
    let mut fresh_for_delta = 0;
    let mut searched = vec![false; ids.len()];
    for (slot, at) in located.into_iter().enumerate() {
        let Some(at) = at else {
            if contents.paths[slot] != NO_PATH {
                fresh_for_delta += 1;
                searched[slot] = true;
            }
            stored.push(None);
            continue;
        };
        if reuse.holds(slot) {
            stored.push(Some((at, How::Whole)));
            continue;
        }
        if slot % RELEASE_HEADERS_EVERY == RELEASE_HEADERS_EVERY - 1 {
            // Reading every entry's header touches nearly every page of a
            // pack: give them back as it goes.
            for pack in 0..packs.len() as u32 {
                packs.release_pages(pack);
            }
        }
        let entry = packs.entry(at).map_err(damaged)?;
        let (base, base_id) = match entry.kind {
            StoredKind::Whole(_) => {
                if thin.base_for(slot as u32).is_some() {
                    fresh_for_delta += 1;
                    searched[slot] = true;
                }
                stored.push(Some((at, How::Whole)));
                continue;
            }
            StoredKind::OfsDelta { base_offset } => match packs.at_offset(at.pack, base_offset) {
                Some(base) => {
                    let id = packs.id(base);
                    let slot = match slot_at[base.pack as usize][base.position as usize] {
                        NONE => slot_of_id(&id),
                        slot => Some(slot),
                    };
                    (slot, Some(id))
                }
                None => (None, None),
            },
            StoredKind::RefDelta { base } => (slot_of_id(&base), Some(base)),
        };
        let how = match (base, base_id) {
            (Some(base), _) if base as usize != slot => How::Delta(base),
            (None, Some(base_id)) if thin.client_has(&base_id) => How::ClientDelta,
            _ => {
                if contents.paths[slot] != NO_PATH {
                    fresh_for_delta += 1;
                    searched[slot] = true;
                }
                How::Fresh
            }
        };
        stored.push(Some((at, how)));
    }
    Ok(Plan {
        height: heights(&stored),
        stored,
        thin,
        fresh_for_delta,
        base_wanted: bases_wanted(&contents.paths, &searched),
        reuse,
    })
}

/// By slot: whether a later slot of the same path is `searched` for a
/// delta. Fresh entries are written in slot order (only stored bases are
/// pulled ahead of their deltas), so "later" is "written later".
fn bases_wanted(paths: &[u64], searched: &[bool]) -> Vec<bool> {
    let mut later = std::collections::HashSet::<u64, IdHasher>::default();
    let mut wanted = vec![false; paths.len()];
    for slot in (0..paths.len()).rev() {
        if searched[slot] {
            wanted[slot] = !later.insert(paths[slot]);
        }
    }
    wanted
}

/// For each slot, the longest chain of copied stored deltas that leads to
/// it (0 for an object nothing is copied against). A cycle of deltas
/// (an object stored in two packs, each a delta against the other) gets
/// [`MAX_DEPTH`]: it is cut when written, and nothing is added to it.
fn heights(stored: &[Option<(PackedAt, How)>]) -> Vec<u8> {
    const UNKNOWN: u32 = u32::MAX;
    let n = stored.len();
    let base_of = |slot: usize| match stored[slot] {
        Some((_, How::Delta(base))) => Some(base as usize),
        _ => None,
    };
    // The depth of each copied delta below its chain's first object, and
    // that object.
    let mut depth = vec![UNKNOWN; n];
    let mut root = vec![0usize; n];
    let mut seen_in = vec![usize::MAX; n];
    let mut chain = Vec::new();
    for slot in 0..n {
        chain.clear();
        let mut at = slot;
        let cyclic = loop {
            if depth[at] != UNKNOWN {
                break false;
            }
            let Some(base) = base_of(at) else {
                depth[at] = 0;
                root[at] = at;
                break false;
            };
            if seen_in[at] == slot {
                break true;
            }
            seen_in[at] = slot;
            chain.push(at);
            at = base;
        };
        if cyclic {
            for &c in &chain {
                depth[c] = u32::from(MAX_DEPTH);
                root[c] = c;
            }
            continue;
        }
        let (top, top_root) = (depth[at], root[at]);
        for (i, &c) in chain.iter().rev().enumerate() {
            depth[c] = top + 1 + i as u32;
            root[c] = top_root;
        }
    }
    let mut height = vec![0u8; n];
    for slot in 0..n {
        let r = root[slot];
        let d = depth[slot].min(u32::from(u8::MAX)) as u8;
        height[r] = height[r].max(d);
    }
    // An object inside a chain is compressed afresh only when its stored
    // entry is damaged: its chain's height bounds what hangs on it.
    (0..n).map(|slot| height[root[slot]]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_entry_stays_small() {
        // One per object sent: a million for a large clone.
        assert!(std::mem::size_of::<Option<(PackedAt, How)>>() <= 16);
    }

    #[test]
    fn heights_count_the_chains_copied_against_an_object() {
        let at = PackedAt {
            pack: 0,
            position: 0,
        };
        let plan = [
            Some((at, How::Whole)),    // 0: two deltas deep below it
            Some((at, How::Delta(0))), // 1
            Some((at, How::Delta(1))), // 2
            None,                      // 3: nothing against it
            Some((at, How::Delta(5))), // 4 and 5: a cycle
            Some((at, How::Delta(4))),
            Some((at, How::Fresh)), // 6: one delta below it
            Some((at, How::Delta(6))),
        ];
        assert_eq!(heights(&plan), [2, 2, 2, 0, MAX_DEPTH, MAX_DEPTH, 1, 1]);
    }

    #[test]
    fn only_objects_with_a_later_version_searched_are_kept_as_bases() {
        let paths = [7, 7, 8, 7, 9, 8, NO_PATH];
        let searched = [true, true, true, false, true, false, false];
        // Slot 0 serves slot 1; slot 1's next version (3) is copied as
        // stored; 2's (5) too; 4 is alone.
        assert_eq!(
            bases_wanted(&paths, &searched),
            [true, false, false, false, false, false, false]
        );
    }
}

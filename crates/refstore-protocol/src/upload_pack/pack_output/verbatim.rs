//! Sending a leading stretch of a stored pack as one piece, as git's
//! pack-objects does when it reuses a pack verbatim.
//!
//! When the objects to send begin with the first entries of one pack in
//! the order they are stored (a count with the reachability bitmap lists
//! them in the bitmap's order, which is pack order for a pack's bitmap and
//! the preferred pack first for a multi-pack index's), those entries keep
//! their offsets in the new pack: the header is as long as the stored
//! one, so every offset delta among them still finds its base at the same
//! distance. Their bytes are copied as stored, without reading their
//! headers one by one; the remaining objects are written after them the
//! usual way.
//!
//! Each copied entry is checked against the CRC32 the pack's `.idx`
//! records for it. The stretch ends before the first entry that is
//! damaged or a reference delta (its base may not precede it): from there
//! on, the entries of the stretch are planned as any other ([`replan`]),
//! so a damaged one is sent from another copy or fails the fetch.
//!
//! When the pack is sent whole with exactly its objects, the new pack is
//! the stored one byte for byte: its checksum is the stored trailer (once
//! checked against the one the `.idx` records), and nothing is hashed.

use super::plan::{How, Plan};
use crate::upload_pack::contents::PackContents;
use crate::upload_pack::delta_search::MAX_DEPTH;
use crate::upload_pack::graph::Graph;
use crate::upload_pack::pack_writer::PackWriter;
use refstore_odb::{PackedAt, Packs, StoredKind, StoredOrder};
use std::ops::Range;

/// The entry type of a reference delta, which is never copied as part of
/// a stretch.
const REF_DELTA: u8 = 7;

/// The entry type of an offset delta.
const OFS_DELTA: u8 = 6;

/// How many bytes are checked and written at a time.
const CHUNK: u64 = 1 << 20;

/// How many bytes are copied between two releases of the pack's
/// resident pages.
const RELEASE_EVERY: u64 = 32 << 20;

/// Slots `0..objects` are the first `objects` entries of `pack` in stored
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stretch {
    pub(super) pack: u32,
    pub(super) objects: usize,
}

impl Stretch {
    /// True if the stretch is all of the pack and all that is sent.
    pub(super) fn is_whole_pack(&self, packs: &Packs, objects_sent: usize) -> bool {
        let order = packs.stored_order(self.pack);
        self.objects == order.len() && self.objects == objects_sent
    }
}

/// The longest leading run of `contents` that is the first entries of the
/// pack of its first object, in stored order; `None` if there is none.
/// Only the locations are compared: no entry is read.
pub(super) fn find(graph: &Graph, contents: &PackContents) -> Option<Stretch> {
    let first = contents.located.first().copied().flatten()?;
    let order = graph.packs().stored_order(first.pack);
    // Objects added after the count (tags to include) have no location.
    let limit = order
        .len()
        .min(contents.ids.len())
        .min(contents.located.len());
    let objects = (0..limit)
        .take_while(|&rank| {
            contents.located[rank]
                == Some(PackedAt {
                    pack: first.pack,
                    position: order.position(rank),
                })
        })
        .count();
    (objects > 0).then_some(Stretch {
        pack: first.pack,
        objects,
    })
}

/// What [`copy`] sent.
pub(super) struct Copied {
    /// The entries copied: slots `0..objects`.
    pub(super) objects: usize,
    /// Of those, deltas.
    pub(super) deltas: usize,
}

/// Copies the entries of `stretch` into `pack`, which has written its
/// header only, up to the first that is damaged or a reference delta.
pub(super) fn copy(
    packs: &Packs,
    stretch: Stretch,
    pack: &mut PackWriter<'_>,
) -> std::io::Result<Copied> {
    let order = packs.stored_order(stretch.pack);
    let mut copied = Copied {
        objects: 0,
        deltas: 0,
    };
    let mut since_release = 0;
    while copied.objects < stretch.objects {
        let start = copied.objects;
        let from = order.offset(start);
        let mut end = start;
        while end < stretch.objects && order.offset(end) - from < CHUNK {
            match order.type_id(end) {
                Some(REF_DELTA) | None => break,
                Some(kind) if order.crc_matches(end) => {
                    copied.deltas += usize::from(kind == OFS_DELTA);
                    end += 1;
                }
                Some(_) => break,
            }
        }
        if end == start {
            break;
        }
        let to = order.offset(end);
        let bytes = order
            .bytes(from, to)
            .ok_or_else(|| std::io::Error::other("a pack entry is beyond the end of its pack"))?;
        pack.write(bytes)?;
        copied.objects = end;
        since_release += to - from;
        if since_release >= RELEASE_EVERY {
            since_release = 0;
            packs.release_pages(stretch.pack);
        }
    }
    Ok(copied)
}

/// The bytes [`copy`] wrote for its first `objects` entries, after the
/// header: for hashing them afterwards.
pub(super) fn copied_bytes(packs: &Packs, stretch: Stretch, objects: usize) -> Option<&[u8]> {
    let order = packs.stored_order(stretch.pack);
    order.bytes(order.offset(0), order.offset(objects))
}

/// Plans `slots` of the stretch (left out by [`copy`]) as the pack
/// writer sends any stored entry: a whole object or a delta against
/// another slot of the stretch is copied (checked then), anything else is
/// compressed afresh. Their chains are counted as full, so none of them
/// becomes a new delta.
pub(super) fn replan(packs: &Packs, stretch: Stretch, plan: &mut Plan, slots: Range<usize>) {
    let order = packs.stored_order(stretch.pack);
    let in_stretch = |rank: usize, slot: usize| rank < stretch.objects && rank != slot;
    for slot in slots {
        let at = PackedAt {
            pack: stretch.pack,
            position: order.position(slot),
        };
        let how = match packs.entry(at).map(|entry| entry.kind) {
            Ok(StoredKind::Whole(_)) => How::Whole,
            Ok(StoredKind::OfsDelta { base_offset }) => order
                .rank_at(base_offset)
                .filter(|&rank| in_stretch(rank, slot))
                .map_or(How::Fresh, |rank| How::Delta(rank as u32)),
            Ok(StoredKind::RefDelta { base }) => packs
                .locate_all(&base)
                .filter(|base| base.pack == stretch.pack)
                .find_map(|base| order_rank(&order, packs, base))
                .filter(|&rank| in_stretch(rank, slot))
                .map_or(How::Fresh, |rank| How::Delta(rank as u32)),
            Err(_) => How::Fresh,
        };
        plan.stored[slot] = Some((at, how));
        plan.height[slot] = MAX_DEPTH;
    }
}

/// The rank of the entry at `at` in its pack's stored order.
fn order_rank(order: &StoredOrder<'_>, packs: &Packs, at: PackedAt) -> Option<usize> {
    order.rank_at(packs.offset_of(at))
}

//! Sending leading stretches of stored packs as one piece each, as git's
//! pack-objects does when it reuses packs verbatim.
//!
//! When the objects to send begin with the first entries of a pack in the
//! order they are stored (a count with the reachability bitmap lists them
//! in the bitmap's order: pack order for a pack's bitmap; for a
//! multi-pack index's, its packs one after the other, the preferred pack
//! first), those entries are copied as stored, without reading their
//! headers one by one; so are the first entries of the pack that follows,
//! and so on. Within a stretch, entries keep their distances from each
//! other, and an offset delta's base is always an earlier entry of its
//! pack: every offset delta of a stretch still finds its base. The
//! remaining objects are written after the stretches the usual way.
//!
//! Each copied entry is checked against the CRC32 the pack's `.idx`
//! records for it. Copying stops before the first entry that is damaged
//! or a reference delta (its base may not precede it): from there on, the
//! entries of the stretches are planned as any other (by the pack writer), so a
//! damaged one is sent from another copy or fails the fetch.
//!
//! When one pack is sent whole with exactly its objects, the new pack is
//! the stored one byte for byte: its checksum is the stored trailer (once
//! checked against the one the `.idx` records), and nothing is hashed.

use crate::upload_pack::contents::PackContents;
use crate::upload_pack::graph::Graph;
use crate::upload_pack::pack_writer::PackWriter;
use refstore_odb::{PackedAt, Packs, StoredOrder};

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

/// Slots `first_slot..first_slot + objects` are the first `objects`
/// entries of `pack` in stored order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stretch {
    pub(super) pack: u32,
    pub(super) first_slot: usize,
    pub(super) objects: usize,
}

/// The stretches the objects begin with, one after the other from slot 0.
pub(super) type Stretches = Vec<Stretch>;

/// The slots the stretches cover: `0..end`.
pub(super) fn end(stretches: &[Stretch]) -> usize {
    stretches.last().map_or(0, |s| s.first_slot + s.objects)
}

/// The pack sent whole with exactly its objects, if the stretches are one
/// pack's every entry and nothing else is sent.
pub(super) fn whole_pack(packs: &Packs, stretches: &[Stretch], objects_sent: usize) -> Option<u32> {
    match stretches {
        [only]
            if only.objects == objects_sent
                && only.objects == packs.stored_order(only.pack).len() =>
        {
            Some(only.pack)
        }
        _ => None,
    }
}

/// The longest leading run of `contents` made of packs' first entries in
/// stored order, pack after pack (a multi-pack index's bitmap numbers its
/// packs one after the other); empty if there is none. Only the locations
/// are compared: no entry is read.
pub(super) fn find(graph: &Graph, contents: &PackContents) -> Stretches {
    let packs = graph.packs();
    // Objects added after the count (tags to include) have no location.
    let located = &contents.located[..contents.located.len().min(contents.ids.len())];
    let mut stretches = Stretches::new();
    let mut slot = 0;
    while let Some(&Some(first)) = located.get(slot) {
        let order = packs.stored_order(first.pack);
        let starts_pack = !order.is_empty() && order.position(0) == first.position;
        if !starts_pack || stretches.iter().any(|s| s.pack == first.pack) {
            break;
        }
        let limit = order.len().min(located.len() - slot);
        let objects = (0..limit)
            .take_while(|&rank| {
                located[slot + rank]
                    == Some(PackedAt {
                        pack: first.pack,
                        position: order.position(rank),
                    })
            })
            .count();
        stretches.push(Stretch {
            pack: first.pack,
            first_slot: slot,
            objects,
        });
        slot += objects;
    }
    stretches
}

/// What [`copy`] sent.
pub(super) struct Copied {
    /// The slots copied: `0..objects`.
    pub(super) objects: usize,
    /// Of those, deltas.
    pub(super) deltas: usize,
}

/// Copies the entries of `stretches` into `pack`, which has written its
/// header only, up to the first that is damaged or a reference delta;
/// `offsets` gets each copied slot's offset in the new pack. Within a
/// stretch, entries keep their distances, so its offset deltas stay right.
pub(super) fn copy(
    packs: &Packs,
    stretches: &[Stretch],
    pack: &mut PackWriter<'_>,
    offsets: &mut [u64],
) -> std::io::Result<Copied> {
    let mut copied = Copied {
        objects: 0,
        deltas: 0,
    };
    for stretch in stretches {
        let order = packs.stored_order(stretch.pack);
        let (start_in_pack, start_out) = (order.offset(0), pack.offset());
        let ranks = copy_one(packs, *stretch, pack, &mut copied.deltas)?;
        for rank in 0..ranks {
            offsets[stretch.first_slot + rank] = start_out + order.offset(rank) - start_in_pack;
        }
        copied.objects += ranks;
        if ranks < stretch.objects {
            break;
        }
    }
    Ok(copied)
}

/// Copies the entries of `stretch` up to the first that cannot be copied;
/// how many it copied. Deltas are counted in `deltas`.
fn copy_one(
    packs: &Packs,
    stretch: Stretch,
    pack: &mut PackWriter<'_>,
    deltas: &mut usize,
) -> std::io::Result<usize> {
    let order = packs.stored_order(stretch.pack);
    let mut copied = 0;
    let mut since_release = 0;
    while copied < stretch.objects {
        let from = order.offset(copied);
        let mut end = copied;
        while end < stretch.objects && order.offset(end) - from < CHUNK {
            match order.type_id(end) {
                Some(REF_DELTA) | None => break,
                Some(kind) if order.crc_matches(end) => {
                    *deltas += usize::from(kind == OFS_DELTA);
                    end += 1;
                }
                Some(_) => break,
            }
        }
        if end == copied {
            break;
        }
        let to = order.offset(end);
        let bytes = order
            .bytes(from, to)
            .ok_or_else(|| std::io::Error::other("a pack entry is beyond the end of its pack"))?;
        pack.write(bytes)?;
        copied = end;
        since_release += to - from;
        if since_release >= RELEASE_EVERY {
            since_release = 0;
            packs.release_pages(stretch.pack);
        }
    }
    Ok(copied)
}

/// The bytes [`copy`] wrote for the first `objects` entries of `stretch`:
/// for hashing them afterwards.
pub(super) fn copied_bytes(packs: &Packs, stretch: Stretch, objects: usize) -> Option<&[u8]> {
    let order = packs.stored_order(stretch.pack);
    order.bytes(order.offset(0), order.offset(objects))
}

/// The rank of the entry at `at` in its pack's stored order.
pub(super) fn order_rank(order: &StoredOrder<'_>, packs: &Packs, at: PackedAt) -> Option<usize> {
    order.rank_at(packs.offset_of(at))
}

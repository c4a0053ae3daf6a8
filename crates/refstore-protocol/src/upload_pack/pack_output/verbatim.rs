//! Writing the stored entries [`super::reuse`] chose, as they are stored:
//! runs of consecutive entries copied in one piece, offset deltas whose
//! distance to their base changed with a new header before their stored
//! data.
//!
//! Each entry is checked against the CRC32 the pack's `.idx` records for
//! it before anything of it is written (over its stored bytes, also when
//! its header is rewritten). Copying stops before the first entry that is
//! damaged: the pieces' entries from there on are left to the pack writer,
//! which sends each its usual way (a damaged one from another copy, or
//! the fetch fails), never a damaged pack.

use super::reuse::{Piece, Reuse};
use crate::upload_pack::pack_writer::{PackWriter, OFS_DELTA};
use refstore_odb::{decode_entry_header, Packs, StoredOrder};

/// How many bytes are checked and written at a time.
const CHUNK: u64 = 1 << 20;

/// How many bytes of a pack are copied between two releases of its
/// resident pages.
const RELEASE_EVERY: u64 = 32 << 20;

/// What [`copy`] sent.
pub(super) struct Copied {
    /// Entries written.
    pub(super) objects: usize,
    /// Of those, deltas.
    pub(super) deltas: usize,
    /// The slot of the damaged entry copying stopped before, if it did.
    pub(super) stopped_at: Option<usize>,
}

/// Writes the pieces of `reuse` into `pack`, which has written its header
/// only; `offsets` gets each written slot's offset in the new pack.
pub(super) fn copy(
    packs: &Packs,
    reuse: &Reuse,
    pack: &mut PackWriter<'_>,
    offsets: &mut [u64],
) -> std::io::Result<Copied> {
    let mut copied = Copied {
        objects: 0,
        deltas: 0,
        stopped_at: None,
    };
    let mut since_release = 0;
    for &(piece, out) in &reuse.pieces {
        if pack.offset() != out {
            // The distances of the deltas after it would be wrong.
            return Err(std::io::Error::other(
                "a reused pack entry is not where it was placed",
            ));
        }
        let order = packs.stored_order(piece.pack());
        let stopped = match piece {
            Piece::Copy {
                first_rank,
                ranks,
                first_slot,
                ..
            } => {
                let ranks = first_rank as usize..(first_rank + ranks) as usize;
                copy_run(
                    &order,
                    ranks,
                    first_slot as usize,
                    pack,
                    offsets,
                    &mut copied,
                )?
            }
            Piece::Rewrite {
                rank,
                slot,
                base_slot,
                ..
            } => {
                if rewrite(&order, rank as usize, slot, base_slot, pack, offsets)? {
                    copied.objects += 1;
                    copied.deltas += 1;
                    None
                } else {
                    Some(slot as usize)
                }
            }
        };
        if stopped.is_some() {
            copied.stopped_at = stopped;
            break;
        }
        since_release += pack.offset() - out;
        if since_release >= RELEASE_EVERY {
            since_release = 0;
            packs.release_pages(piece.pack());
        }
    }
    Ok(copied)
}

/// Copies the entries of `ranks` (slots from `first_slot` on) up to the
/// first that is damaged; its slot if there is one.
fn copy_run(
    order: &StoredOrder<'_>,
    ranks: std::ops::Range<usize>,
    first_slot: usize,
    pack: &mut PackWriter<'_>,
    offsets: &mut [u64],
    copied: &mut Copied,
) -> std::io::Result<Option<usize>> {
    let mut rank = ranks.start;
    while rank < ranks.end {
        let from = order.offset(rank);
        let out = pack.offset();
        let mut end = rank;
        while end < ranks.end && order.offset(end) - from < CHUNK && order.crc_matches(end) {
            offsets[first_slot + end - ranks.start] = out + order.offset(end) - from;
            copied.deltas += usize::from(order.type_id(end) == Some(OFS_DELTA));
            end += 1;
        }
        if end > rank {
            pack.write(bytes(order, from, order.offset(end))?)?;
            copied.objects += end - rank;
        }
        if end < ranks.end && end - rank == 0 {
            return Ok(Some(first_slot + end - ranks.start));
        }
        rank = end;
    }
    Ok(None)
}

/// Writes the offset delta of rank `rank` (slot `slot`) with its distance
/// to the slot `base_slot`, written before it; false (nothing written) if
/// it is damaged.
fn rewrite(
    order: &StoredOrder<'_>,
    rank: usize,
    slot: u32,
    base_slot: u32,
    pack: &mut PackWriter<'_>,
    offsets: &mut [u64],
) -> std::io::Result<bool> {
    if !order.crc_matches(rank) {
        return Ok(false);
    }
    let raw = bytes(order, order.offset(rank), order.offset(rank + 1))?;
    let header = decode_entry_header(raw)
        .filter(|header| header.type_id == OFS_DELTA)
        .ok_or_else(|| std::io::Error::other("a reused offset delta's header is not one"))?;
    let out = pack.offset();
    offsets[slot as usize] = out;
    let distance = out - offsets[base_slot as usize];
    pack.entry_header(OFS_DELTA, header.size, Some(distance))?;
    pack.write(&raw[header.len..])?;
    Ok(true)
}

fn bytes<'a>(order: &StoredOrder<'a>, from: u64, to: u64) -> std::io::Result<&'a [u8]> {
    order
        .bytes(from, to)
        .ok_or_else(|| std::io::Error::other("a pack entry is beyond the end of its pack"))
}

/// The bytes [`copy`] wrote for the first `objects` entries of the pack
/// `pack`, its only piece: for hashing them afterwards.
pub(super) fn copied_bytes(packs: &Packs, pack: u32, objects: usize) -> Option<&[u8]> {
    let order = packs.stored_order(pack);
    order.bytes(order.offset(0), order.offset(objects))
}

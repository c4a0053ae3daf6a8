//! Choosing the stored entries that are sent as they are stored, holes
//! closed, as git's pack-objects does when it reuses packs
//! (`pack.allowPackReuse`), and laying them out in the new pack.
//!
//! A count with bitmaps lists the objects in the bitmap's order: pack
//! order for a pack's bitmap; for a multi-pack index's, its packs one
//! after the other, the preferred pack first, each in the order it stores
//! its entries. So the objects to send begin with one segment per pack,
//! each the entries of that pack the client wants, in stored order, with
//! holes where the pack holds objects the client does not want (hidden
//! refs, the other forks of a network). The wanted entries of each
//! segment are sent first, in that order, with the holes closed:
//!
//! - a whole object is sent as stored;
//! - an offset delta whose base is also sent this way is sent as stored
//!   when the holes between them leave the distance unchanged, else with
//!   its header rewritten for the new distance (which may be shorter, so
//!   everything after it moves up too);
//! - anything else (a reference delta, an offset delta whose base is not
//!   sent or is itself written another way, an entry that cannot be read)
//!   is left to the pack writer's usual path, after these entries, and
//!   so is, in a thin pack, a tree or blob with a version on the client
//!   (a delta against it is usually far smaller than the stored entry):
//!   there
//!   it is copied against a base written anywhere in the pack, a thin
//!   pack's base on the client, or compressed afresh.
//!
//! A delta's base always precedes it in its pack, so one pass in stored
//! order decides every entry, with the new offsets of the entries sent so
//! far kept as the few points where the gap closed so far changes.
//! Nothing is inflated, and only entry headers are read here; the copy
//! ([`super::verbatim`]) checks each entry against its `.idx` CRC32.

use crate::upload_pack::contents::PackContents;
use crate::upload_pack::graph::Graph;
use crate::upload_pack::pack_writer::OFS_DELTA;
use crate::upload_pack::thin::ThinBases;
use refstore_odb::{decode_entry_header, encode_entry_header, PackedAt, Packs, StoredOrder};

/// Where the first entry of a pack goes: after its 12-byte header.
const FIRST_ENTRY: u64 = 12;

/// A piece of the new pack made of stored entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// Entries of ranks `first_rank..first_rank + ranks` of `pack` (in
    /// stored order), copied as one piece: slots `first_slot..`.
    Copy {
        pack: u32,
        first_rank: u32,
        ranks: u32,
        first_slot: u32,
    },
    /// The offset delta of rank `rank` of `pack` (slot `slot`) with its
    /// header rewritten for the new distance to its base, the slot
    /// `base_slot`.
    Rewrite {
        pack: u32,
        rank: u32,
        slot: u32,
        base_slot: u32,
    },
}

impl Piece {
    pub(super) fn pack(&self) -> u32 {
        match *self {
            Piece::Copy { pack, .. } | Piece::Rewrite { pack, .. } => pack,
        }
    }

    /// The ranks of the piece's entries in their pack.
    fn ranks(&self) -> std::ops::Range<u32> {
        match *self {
            Piece::Copy {
                first_rank, ranks, ..
            } => first_rank..first_rank + ranks,
            Piece::Rewrite { rank, .. } => rank..rank + 1,
        }
    }

    /// The slot of the entry of rank `rank`, one of the piece's.
    fn slot_of(&self, rank: u32) -> u32 {
        match *self {
            Piece::Copy {
                first_rank,
                first_slot,
                ..
            } => first_slot + (rank - first_rank),
            Piece::Rewrite { slot, .. } => slot,
        }
    }
}

/// The stored entries sent as stored, in the order they are written.
#[derive(Debug, Default)]
pub(super) struct Reuse {
    /// The pieces, and where each starts in the new pack.
    pub(super) pieces: Vec<(Piece, u64)>,
    /// By pack with pieces, in the order they are written: the pack and
    /// the index of its first piece.
    packs: Vec<(u32, usize)>,
    /// By slot of the segments: sent as a piece's entry.
    reused: Vec<bool>,
    /// How many entries the pieces hold.
    pub(super) objects: usize,
    /// Of those, deltas.
    pub(super) deltas: usize,
}

impl Reuse {
    /// True if `slot` is sent as one of the pieces' entries.
    pub(super) fn holds(&self, slot: usize) -> bool {
        self.reused.get(slot).copied().unwrap_or(false)
    }

    /// The pack sent whole with exactly its objects, if the pieces are one
    /// pack's every entry and nothing else is sent.
    pub(super) fn whole_pack(&self, packs: &Packs, objects_sent: usize) -> Option<u32> {
        match self.pieces[..] {
            [(
                Piece::Copy {
                    pack,
                    first_rank: 0,
                    ranks,
                    ..
                },
                _,
            )] if ranks as usize == objects_sent
                && ranks as usize == packs.stored_order(pack).len() =>
            {
                Some(pack)
            }
            _ => None,
        }
    }

    /// The slot of the entry of rank `rank` of `pack`, if a piece holds
    /// it.
    pub(super) fn slot_at(&self, pack: u32, rank: u32) -> Option<u32> {
        let n = self.packs.iter().position(|&(p, _)| p == pack)?;
        let first = self.packs[n].1;
        let end = self
            .packs
            .get(n + 1)
            .map_or(self.pieces.len(), |&(_, end)| end);
        // A pack's pieces are in stored order.
        let pieces = &self.pieces[first..end];
        let (piece, _) = pieces.get(pieces.partition_point(|(p, _)| p.ranks().end <= rank))?;
        piece.ranks().contains(&rank).then(|| piece.slot_of(rank))
    }

    /// Gives up the pieces' entries from slot `from` on: the pack writer
    /// sends them its usual way.
    pub(super) fn release_from(&mut self, from: usize) {
        for reused in self.reused.iter_mut().skip(from) {
            *reused = false;
        }
    }

    /// Adds the entry of rank `rank` of `pack` (slot `slot`), copied as
    /// stored, to the last piece if it follows that piece's entries,
    /// else as a new piece starting at `out`.
    fn copy(&mut self, pack: u32, rank: u32, slot: u32, out: u64) {
        if let Some((
            Piece::Copy {
                pack: p,
                first_rank,
                ranks,
                first_slot,
            },
            _,
        )) = self.pieces.last_mut()
        {
            if *p == pack && *first_rank + *ranks == rank && *first_slot + *ranks == slot {
                *ranks += 1;
                return;
            }
        }
        self.push(
            Piece::Copy {
                pack,
                first_rank: rank,
                ranks: 1,
                first_slot: slot,
            },
            out,
        );
    }

    fn push(&mut self, piece: Piece, out: u64) {
        if self.packs.last().is_none_or(|&(p, _)| p != piece.pack()) {
            self.packs.push((piece.pack(), self.pieces.len()));
        }
        self.pieces.push((piece, out));
    }
}

/// Chooses the entries sent as stored for `contents` (see the module
/// documentation), leaving out the slots `thin` has a base on the client
/// for (in a thin pack, a delta against the client's version is usually
/// far smaller than the stored entry); none unless the count listed where
/// its objects are stored (a count with bitmaps).
pub(super) fn select(graph: &Graph, contents: &PackContents, thin: &ThinBases) -> Reuse {
    let packs = graph.packs();
    // Objects added after the count (tags to include) have no location.
    let located = &contents.located[..contents.located.len().min(contents.ids.len())];
    let mut reuse = Reuse::default();
    let mut layout = Layout {
        out: FIRST_ENTRY,
        marks: Vec::new(),
        header: Vec::with_capacity(32),
    };
    let mut done_packs = Vec::new();
    let mut slot = 0;
    while let Some(&Some(first)) = located.get(slot) {
        if done_packs.contains(&first.pack) {
            break;
        }
        done_packs.push(first.pack);
        layout.marks.clear();
        let segment = Segment {
            pack: first.pack,
            from: slot,
            thin,
        };
        slot = select_in(packs, segment, located, &mut layout, &mut reuse);
    }
    reuse
}

/// The new pack's layout so far.
struct Layout {
    /// Where the next entry sent as stored goes.
    out: u64,
    /// For the current pack: `(offset in the pack, offset in the new
    /// pack)` of the entries sent as stored where the gap closed so far
    /// changes; the entries after one, up to the next, moved by as much.
    marks: Vec<(u64, u64)>,
    header: Vec<u8>,
}

impl Layout {
    /// Where the entry at `offset` of the current pack, sent as stored,
    /// is in the new pack.
    fn new_offset(&self, offset: u64) -> Option<u64> {
        let after = self.marks.partition_point(|&(from, _)| from <= offset);
        let &(from, to) = self.marks.get(after.checked_sub(1)?)?;
        Some(to + (offset - from))
    }

    /// Places the entry at `offset`, `len` bytes in the new pack.
    fn place(&mut self, offset: u64, len: u64) {
        if self.new_offset(offset) != Some(self.out) {
            self.marks.push((offset, self.out));
        }
        self.out += len;
    }
}

/// A rank not sent as stored.
const NOT_SENT: u32 = u32::MAX;

/// Where a pack's segment starts.
struct Segment<'a> {
    pack: u32,
    /// Its first slot.
    from: usize,
    thin: &'a ThinBases,
}

/// Chooses among the slots from `segment.from` on that are entries of
/// its pack in stored order (the pack's segment); the end of the segment.
fn select_in(
    packs: &Packs,
    segment: Segment<'_>,
    located: &[Option<PackedAt>],
    layout: &mut Layout,
    reuse: &mut Reuse,
) -> usize {
    let Segment { pack, from, thin } = segment;
    let order = packs.stored_order(pack);
    // By rank: the slot of an entry sent as stored.
    let mut sent = vec![NOT_SENT; order.len()];
    let mut last = None;
    let mut slot = from;
    while let Some(&Some(at)) = located.get(slot) {
        let offset = packs.offset_of(at);
        if at.pack != pack || last.is_some_and(|last| last >= offset) {
            break;
        }
        last = Some(offset);
        // Segments follow each other from slot 0.
        debug_assert_eq!(reuse.reused.len(), slot);
        reuse.reused.push(false);
        let decided = order
            .rank_at(offset)
            .filter(|_| thin.base_for(slot as u32).is_none())
            .and_then(|rank| Some((rank, decide(&order, rank, &sent, layout)?)));
        if let Some((rank, how)) = decided {
            sent[rank] = slot as u32;
            reuse.reused[slot] = true;
            reuse.objects += 1;
            let len = order.offset(rank + 1) - offset;
            match how {
                Decided::AsStored { delta } => {
                    reuse.deltas += usize::from(delta);
                    reuse.copy(pack, rank as u32, slot as u32, layout.out);
                    layout.place(offset, len);
                }
                Decided::Rewritten {
                    base_rank,
                    header_len,
                    new_header_len,
                } => {
                    reuse.deltas += 1;
                    let piece = Piece::Rewrite {
                        pack,
                        rank: rank as u32,
                        slot: slot as u32,
                        base_slot: sent[base_rank],
                    };
                    reuse.push(piece, layout.out);
                    layout.place(offset, len - header_len + new_header_len);
                }
            }
        }
        slot += 1;
    }
    slot
}

/// How an entry is sent as stored.
enum Decided {
    /// Copied as it is stored; `delta` if it is an offset delta.
    AsStored { delta: bool },
    /// An offset delta whose distance to its base (of rank `base_rank`)
    /// changes: its header of `header_len` bytes becomes one of
    /// `new_header_len`.
    Rewritten {
        base_rank: usize,
        header_len: u64,
        new_header_len: u64,
    },
}

/// How the entry of rank `rank` is sent as stored, given the ranks `sent`
/// so; `None` if it is not.
fn decide(
    order: &StoredOrder<'_>,
    rank: usize,
    sent: &[u32],
    layout: &mut Layout,
) -> Option<Decided> {
    let offset = order.offset(rank);
    // A header is at most 10 bytes of size and 10 of distance.
    let end = order.offset(rank + 1).min(offset + 20);
    let header = decode_entry_header(order.bytes(offset, end)?)?;
    match (header.type_id, header.base_distance) {
        (1..=4, _) => Some(Decided::AsStored { delta: false }),
        (OFS_DELTA, Some(distance)) => {
            let base_offset = offset.checked_sub(distance).filter(|&b| b >= FIRST_ENTRY)?;
            let base_rank = order.rank_at(base_offset)?;
            if sent[base_rank] == NOT_SENT {
                return None;
            }
            let new_distance = layout.out - layout.new_offset(base_offset)?;
            if new_distance == distance {
                return Some(Decided::AsStored { delta: true });
            }
            encode_entry_header(
                &mut layout.header,
                OFS_DELTA,
                header.size,
                Some(new_distance),
            );
            Some(Decided::Rewritten {
                base_rank,
                header_len: header.len as u64,
                new_header_len: layout.header.len() as u64,
            })
        }
        _ => None,
    }
}

//! Packed objects as they are stored, for a pack writer that copies entries
//! instead of inflating them: where an object's entry is, what its header
//! says (kind, or the base it is a delta against), and its raw bytes, which
//! are checked against the CRC32 the pack's `.idx` (version 2) records for
//! them before they are sent anywhere.
//!
//! The packs are those gix-odb finds for the object directory (its own
//! `objects/pack` and those of its alternates). Where a `multi-pack-index`
//! covers packs, the `.idx` of each pack it names is read: git keeps them
//! next to it.
//!
//! Objects are addressed by [`PackedAt`]: a pack number and a position in
//! that pack's index, so a caller can keep per-pack arrays instead of maps
//! keyed by object ids.

use crate::{ObjectKind, OdbError};
use gix_pack::data::entry::Header;
use refstore_hash::{ObjectFormat, ObjectId};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where an object is stored in a [`Packs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PackedAt {
    /// The pack, numbered in [`Packs`].
    pub pack: u32,
    /// Its position in that pack's index (sorted by id).
    pub position: u32,
}

/// What a stored entry's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredKind {
    /// A whole object.
    Whole(ObjectKind),
    /// A delta against the entry at this offset of the same pack
    /// (`OFS_DELTA`).
    OfsDelta {
        /// The base's entry offset.
        base_offset: u64,
    },
    /// A delta against the object with this id (`REF_DELTA`).
    RefDelta {
        /// The base's id.
        base: ObjectId,
    },
}

/// One stored pack entry, borrowed from the mapped pack.
#[derive(Debug, Clone, Copy)]
pub struct StoredEntry<'a> {
    /// What the header says.
    pub kind: StoredKind,
    /// The size of the inflated data: the object, or the delta.
    pub size: u64,
    /// The whole entry: header, base reference, compressed data.
    pub raw: &'a [u8],
    /// Where the compressed data starts in `raw`.
    pub data_start: usize,
}

impl StoredEntry<'_> {
    /// The zlib stream of the entry.
    pub fn compressed(&self) -> &[u8] {
        &self.raw[self.data_start..]
    }
}

/// One pack: its index and its data, both mapped.
struct Pack {
    index: gix_pack::index::File,
    /// Where `index` is mapped.
    index_pages: crate::pack_index::IndexPages,
    data: gix_pack::data::File,
    /// Entry offsets in pack order with their index positions: built on
    /// first use.
    by_offset: OnceLock<ByOffset>,
}

/// A pack's entries in the order they are stored. Two arrays rather than
/// one of pairs: a pair would be padded to 16 bytes, and a large pack has
/// millions of entries.
struct ByOffset {
    /// Entry offsets, ascending, ending with the end of the entries.
    offsets: Vec<u64>,
    /// The index position of the entry at each offset.
    positions: Vec<u32>,
}

impl ByOffset {
    /// The rank of the entry starting at `offset`, if one does.
    fn find(&self, offset: u64) -> Option<usize> {
        self.offsets[..self.positions.len()]
            .binary_search(&offset)
            .ok()
    }
}

impl Pack {
    /// The index position of the object whose raw id is `id`, if the
    /// pack holds it.
    fn lookup(&self, id: &[u8]) -> Option<u32> {
        crate::idx_search::find(self.index.num_objects(), id, |position| {
            self.index.oid_at_index(position).as_bytes()
        })
    }

    /// The id at index position `position`.
    #[inline]
    fn id_at(&self, position: u32) -> ObjectId {
        ObjectId::from_gix(self.index.oid_at_index(position))
    }

    fn by_offset(&self) -> &ByOffset {
        self.by_offset.get_or_init(|| {
            // Sorted as pairs (the index is read once), then split.
            let mut pairs: Vec<(u64, u32)> = (0..self.index.num_objects())
                .map(|position| (self.index.pack_offset_at_index(position), position))
                .collect();
            pairs.sort_unstable();
            let mut offsets = Vec::with_capacity(pairs.len() + 1);
            offsets.extend(pairs.iter().map(|&(offset, _)| offset));
            offsets.push(self.data.pack_end() as u64);
            let positions = pairs.iter().map(|&(_, position)| position).collect();
            ByOffset { offsets, positions }
        })
    }
}

/// The packs of an object database, read as stored.
pub struct Packs {
    packs: Vec<Pack>,
    format: ObjectFormat,
}

impl std::fmt::Debug for Packs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packs")
            .field("packs", &self.packs.len())
            .finish()
    }
}

impl Packs {
    /// Opens every pack of the object database at `objects_dir` and of its
    /// alternates. Packs a concurrent repack deletes while they are being
    /// opened are looked for again ([`crate::pack_list`]).
    pub fn open(objects_dir: &Path, format: ObjectFormat) -> Result<Packs, OdbError> {
        crate::pack_list::open_fresh(objects_dir, format, |paths| {
            Self::open_indexes(paths, format)
        })
    }

    /// Opens the packs whose `.idx` files are `index_paths`, numbered in
    /// that order (for housekeeping, which rewrites chosen packs).
    pub fn open_indexes(index_paths: &[PathBuf], format: ObjectFormat) -> Result<Packs, OdbError> {
        let mut packs = Vec::with_capacity(index_paths.len());
        for index_path in index_paths {
            let (index, index_pages) = crate::pack_index::open_index(index_path, format)?;
            let pack_path = index_path.with_extension("pack");
            let data = gix_pack::data::File::at(&pack_path, format.gix_kind())
                .map_err(|e| OdbError::Pack(format!("cannot read {}: {e}", pack_path.display())))?;
            packs.push(Pack {
                index,
                index_pages,
                data,
                by_offset: OnceLock::new(),
            });
        }
        // Smaller packs first: they are usually the newest, holding the
        // objects a fetch asks for, and a lookup that misses in one costs
        // little; a miss in a large index costs page faults.
        packs.sort_by_key(|pack| pack.index.num_objects());
        Ok(Packs { packs, format })
    }

    /// How many packs there are.
    pub fn len(&self) -> usize {
        self.packs.len()
    }

    /// True if there are no packs.
    pub fn is_empty(&self) -> bool {
        self.packs.is_empty()
    }

    /// How many objects pack `pack` holds.
    pub fn objects_in(&self, pack: u32) -> u32 {
        self.packs[pack as usize].index.num_objects()
    }

    /// The path of pack `pack`'s data file.
    pub fn pack_path(&self, pack: u32) -> &Path {
        self.packs[pack as usize].data.path()
    }

    /// The checksum that ends pack `pack` (its name), as its index records it.
    pub fn pack_checksum(&self, pack: u32) -> ObjectId {
        ObjectId::from_gix(&self.packs[pack as usize].index.pack_checksum())
    }

    /// The index positions of pack `pack`'s objects in the order they are
    /// stored (by offset): the order git's bitmaps number them in.
    pub fn pack_order(&self, pack: u32) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.packs[pack as usize]
            .by_offset()
            .positions
            .iter()
            .copied()
    }

    /// Pack `pack` in the order its entries are stored, for a writer that
    /// copies a run of them as one piece.
    pub fn stored_order(&self, pack: u32) -> StoredOrder<'_> {
        let pack = &self.packs[pack as usize];
        StoredOrder {
            pack,
            by_offset: pack.by_offset(),
        }
    }

    /// The first stored entry of `id`, or `None` if no pack has it.
    pub fn locate(&self, id: &ObjectId) -> Option<PackedAt> {
        self.locate_all(id).next()
    }

    /// Every stored entry of `id`, pack by pack.
    pub fn locate_all<'a>(&'a self, id: &'a ObjectId) -> impl Iterator<Item = PackedAt> + 'a {
        let id = id.as_bytes();
        self.packs.iter().enumerate().filter_map(move |(n, pack)| {
            pack.lookup(id).map(|position| PackedAt {
                pack: n as u32,
                position,
            })
        })
    }

    /// The id of the object at `at`.
    #[inline]
    pub fn id(&self, at: PackedAt) -> ObjectId {
        self.packs[at.pack as usize].id_at(at.position)
    }

    /// Where the entry at `at` starts in its pack.
    pub fn offset_of(&self, at: PackedAt) -> u64 {
        self.packs[at.pack as usize]
            .index
            .pack_offset_at_index(at.position)
    }

    /// The object whose entry starts at `offset` of `pack`.
    pub fn at_offset(&self, pack: u32, offset: u64) -> Option<PackedAt> {
        let by_offset = self.packs[pack as usize].by_offset();
        let n = by_offset.find(offset)?;
        Some(PackedAt {
            pack,
            position: by_offset.positions[n],
        })
    }

    /// The stored entry at `at`, its header parsed; nothing is inflated.
    pub fn entry(&self, at: PackedAt) -> Result<StoredEntry<'_>, OdbError> {
        let pack = &self.packs[at.pack as usize];
        let offset = pack.index.pack_offset_at_index(at.position);
        let by_offset = pack.by_offset();
        let corrupt = |what: &str| {
            OdbError::Pack(format!(
                "{}: entry of {} at offset {offset}: {what}",
                pack.data.path().display(),
                pack.id_at(at.position)
            ))
        };
        let n = by_offset
            .find(offset)
            .ok_or_else(|| corrupt("offset not in the index"))?;
        let end = by_offset.offsets[n + 1];
        let raw = pack
            .data
            .entry_slice(offset..end)
            .ok_or_else(|| corrupt("beyond the end of the pack"))?;
        let entry = gix_pack::data::Entry::from_bytes(raw, offset, self.format.gix_kind())
            .map_err(|e| corrupt(&e.to_string()))?;
        let kind = match entry.header {
            Header::Commit => StoredKind::Whole(ObjectKind::Commit),
            Header::Tree => StoredKind::Whole(ObjectKind::Tree),
            Header::Blob => StoredKind::Whole(ObjectKind::Blob),
            Header::Tag => StoredKind::Whole(ObjectKind::Tag),
            Header::OfsDelta { base_distance } => StoredKind::OfsDelta {
                base_offset: offset
                    .checked_sub(base_distance)
                    .filter(|&base| base > 0)
                    .ok_or_else(|| corrupt("delta base offset before the pack's start"))?,
            },
            Header::RefDelta { base_id } => StoredKind::RefDelta {
                base: ObjectId::from_gix(&base_id),
            },
        };
        let data_start = (entry.data_offset - offset) as usize;
        if data_start > raw.len() {
            return Err(corrupt("truncated header"));
        }
        Ok(StoredEntry {
            kind,
            size: entry.decompressed_size,
            raw,
            data_start,
        })
    }

    /// Gives back the resident pages of pack `pack`'s data: a reader that
    /// has gone through much of it calls this now and then, so that a
    /// clone does not end up holding the whole pack in its resident
    /// memory. Pages read again come back from the page cache.
    pub fn release_pages(&self, pack: u32) {
        let data = &self.packs[pack as usize].data;
        if let Some(bytes) = data.entry_slice(0..data.data_len() as u64) {
            // SAFETY: gix maps pack data read-only, and a pack file is never
            // written once it has its name (git and refstore write packs
            // under a temporary name and rename them).
            #[allow(unsafe_code)]
            unsafe {
                refstore_fs::resident::release_pages(bytes)
            };
        }
    }

    /// Gives back the resident pages of every pack and index: for a
    /// request moving to a phase that reads other objects (from
    /// negotiating to counting and sending), whose pages would otherwise
    /// add to those the last phase left.
    pub fn release_all_pages(&self) {
        for (n, pack) in self.packs.iter().enumerate() {
            // SAFETY: the index is open for as long as `self` is.
            #[allow(unsafe_code)]
            unsafe {
                pack.index_pages.release()
            };
            self.release_pages(n as u32);
        }
    }

    /// True if the raw bytes of the entry at `at` have the CRC32 the index
    /// records for them (always false for a version 1 index, which records
    /// none: such entries are not copied).
    pub fn crc_matches(&self, at: PackedAt, entry: &StoredEntry<'_>) -> bool {
        let pack = &self.packs[at.pack as usize];
        pack.index
            .crc32_at_index(at.position)
            .is_some_and(|crc| crc32fast::hash(entry.raw) == crc)
    }

    /// Reads the object stored at `at` into `out`, resolving its delta
    /// chain within its pack; every object of the chain is kept in `cache`
    /// (bases too, which gix-pack's decoder does not keep), so that reading
    /// many versions of a tree inflates each stored entry about once.
    /// `None` if a reference delta's base is in another pack.
    pub fn read(
        &self,
        at: PackedAt,
        cache: &mut crate::DeltaBaseCache,
        out: &mut Vec<u8>,
    ) -> Result<Option<ObjectKind>, OdbError> {
        let read = self.read_held(at, cache, out)?;
        if let Some((_, crate::Held::Cached(n))) = read {
            out.clear();
            out.extend_from_slice(cache.held(n));
        }
        Ok(read.map(|(kind, _)| kind))
    }

    /// As [`read`](Self::read), but the object is left where it is made:
    /// in `cache` when it is kept there (borrow it with
    /// [`DeltaBaseCache::held`](crate::DeltaBaseCache::held)), else in
    /// `out`. Cached entries are moved, never copied: a walk reading every
    /// version of every tree would otherwise copy each one twice.
    pub fn read_held(
        &self,
        at: PackedAt,
        cache: &mut crate::DeltaBaseCache,
        out: &mut Vec<u8>,
    ) -> Result<Option<(ObjectKind, crate::Held)>, OdbError> {
        let pack = &self.packs[at.pack as usize];
        let offset = pack.index.pack_offset_at_index(at.position);
        let mut inflate = cache.inflate.take().unwrap_or_default();
        let mut chain = std::mem::take(&mut cache.chain);
        chain.clear();
        let result = self.read_chain(at, cache, out, &mut inflate, &mut chain, offset);
        cache.inflate = Some(inflate);
        cache.chain = chain;
        result
    }

    fn read_chain(
        &self,
        at: PackedAt,
        cache: &mut crate::DeltaBaseCache,
        out: &mut Vec<u8>,
        inflate: &mut gix_zlib::Inflate,
        chain: &mut Vec<u64>,
        mut offset: u64,
    ) -> Result<Option<(ObjectKind, crate::Held)>, OdbError> {
        let pack = &self.packs[at.pack as usize];
        let failed = |offset: u64, what: String| {
            OdbError::Pack(format!(
                "{}: cannot read the entry at offset {offset}: {what}",
                pack.data.path().display()
            ))
        };
        let inflate_entry = |entry: &gix_pack::data::Entry,
                             inflate: &mut gix_zlib::Inflate,
                             into: &mut Vec<u8>|
         -> Result<(), OdbError> {
            into.clear();
            into.resize(entry.decompressed_size as usize, 0);
            pack.data
                .decompress_entry(entry, inflate, into)
                .map(|_| ())
                .map_err(|e| failed(entry.pack_offset(), e.to_string()))
        };
        // The nearest version of the object the cache holds, or the whole
        // object the chain starts from.
        let (kind, mut data, from_cache) = loop {
            if let Some((kind, data)) = cache.take(at.pack, offset) {
                break (kind, data, true);
            }
            let entry = pack
                .data
                .entry(offset)
                .map_err(|e| failed(offset, e.to_string()))?;
            match entry.header {
                Header::OfsDelta { base_distance } => {
                    chain.push(offset);
                    offset = offset
                        .checked_sub(base_distance)
                        .ok_or_else(|| failed(offset, "bad delta base offset".into()))?;
                }
                Header::RefDelta { base_id } => {
                    let Some(position) = pack.lookup(base_id.as_bytes()) else {
                        return Ok(None);
                    };
                    chain.push(offset);
                    offset = pack.index.pack_offset_at_index(position);
                }
                header => {
                    let mut data = Vec::new();
                    inflate_entry(&entry, inflate, &mut data)?;
                    break (header.as_kind().expect("not a delta"), data, false);
                }
            }
            if chain.len() > 10_000 {
                return Err(failed(offset, "delta chain too long or cyclic".into()));
            }
        };
        if chain.is_empty() && !from_cache {
            // A whole object read for itself: no delta needs it yet.
            *out = data;
            return Ok(Some((ObjectKind::from_gix(kind), crate::Held::Out)));
        }
        let mut delta = std::mem::take(&mut cache.delta);
        while let Some(next) = chain.pop() {
            let entry = pack
                .data
                .entry(next)
                .map_err(|e| failed(next, e.to_string()))?;
            inflate_entry(&entry, inflate, &mut delta)?;
            let result = crate::delta::apply_delta(&data, &delta)
                .map_err(|e| failed(next, e.to_string()))?;
            // The base goes back (moved, not copied) for the next version.
            let _ = cache.keep(at.pack, offset, kind, std::mem::replace(&mut data, result));
            offset = next;
        }
        // A large delta's buffer is not kept: the cap bounds what the
        // cache holds.
        if delta.capacity() <= cache.cap() / 8 {
            cache.delta = delta;
        }
        let held = match cache.keep(at.pack, offset, kind, data) {
            Ok(n) => crate::Held::Cached(n),
            Err(data) => {
                *out = data;
                crate::Held::Out
            }
        };
        Ok(Some((ObjectKind::from_gix(kind), held)))
    }

    /// The kind of the object stored at `at`, from entry headers alone
    /// (following its delta chain to its base); `None` if a reference
    /// delta's base is in another pack.
    pub fn kind(&self, at: PackedAt) -> Result<Option<ObjectKind>, OdbError> {
        let pack = &self.packs[at.pack as usize];
        let mut offset = pack.index.pack_offset_at_index(at.position);
        for _ in 0..10_000 {
            let entry = pack.data.entry(offset).map_err(|e| {
                OdbError::Pack(format!(
                    "{}: cannot read the entry at offset {offset}: {e}",
                    pack.data.path().display()
                ))
            })?;
            offset = match entry.header {
                Header::OfsDelta { base_distance } => match offset.checked_sub(base_distance) {
                    Some(base) => base,
                    None => break,
                },
                Header::RefDelta { base_id } => match pack.lookup(base_id.as_bytes()) {
                    Some(position) => pack.index.pack_offset_at_index(position),
                    None => return Ok(None),
                },
                header => return Ok(header.as_kind().map(ObjectKind::from_gix)),
            };
        }
        Err(OdbError::Pack(format!(
            "{}: the delta chain at offset {offset} is broken or cyclic",
            pack.data.path().display()
        )))
    }

    /// Inflates the object stored at `at`, resolving deltas within its pack
    /// (bases found elsewhere are not looked for), into `out`; its kind.
    /// For reading a second copy of an object whose first one is damaged.
    pub fn decode(&self, at: PackedAt, out: &mut Vec<u8>) -> Result<ObjectKind, OdbError> {
        let pack = &self.packs[at.pack as usize];
        let failed = |e: gix_error::Error| {
            OdbError::Pack(format!(
                "{}: cannot decode {}: {e}",
                pack.data.path().display(),
                pack.id_at(at.position)
            ))
        };
        let entry = pack
            .data
            .entry(pack.index.pack_offset_at_index(at.position))
            .map_err(failed)?;
        let resolve = |id: &gix_hash::oid, _: &mut Vec<u8>| {
            Ok(pack.lookup(id.as_bytes()).and_then(|position| {
                pack.data
                    .entry(pack.index.pack_offset_at_index(position))
                    .ok()
                    .map(gix_pack::data::decode::entry::ResolvedBase::InPack)
            }))
        };
        let outcome = pack
            .data
            .decode_entry(
                entry,
                out,
                &mut gix_zlib::Inflate::default(),
                &resolve,
                &mut gix_pack::cache::Never,
            )
            .map_err(failed)?;
        Ok(ObjectKind::from_gix(outcome.kind))
    }
}

/// A pack's entries in the order they are stored, by rank (0 for the
/// first entry): where each starts, its CRC32 check, and the pack's raw
/// bytes, header and trailer.
#[derive(Clone, Copy)]
pub struct StoredOrder<'a> {
    pack: &'a Pack,
    by_offset: &'a ByOffset,
}

impl<'a> StoredOrder<'a> {
    /// How many entries the pack holds.
    pub fn len(&self) -> usize {
        self.by_offset.positions.len()
    }

    /// True if the pack holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the entry of rank `rank` starts; `len()` gives the end of the
    /// last entry.
    pub fn offset(&self, rank: usize) -> u64 {
        self.by_offset.offsets[rank]
    }

    /// The rank of the entry starting at `offset`, if one does.
    pub fn rank_at(&self, offset: u64) -> Option<usize> {
        self.by_offset.find(offset)
    }

    /// The index position of the entry of rank `rank`.
    pub fn position(&self, rank: usize) -> u32 {
        self.by_offset.positions[rank]
    }

    /// The pack's bytes from `from` up to `to`, if it has them.
    pub fn bytes(&self, from: u64, to: u64) -> Option<&'a [u8]> {
        self.pack.data.entry_slice(from..to)
    }

    /// The pack type of the entry of rank `rank` (1 to 4 for whole
    /// objects, 6 and 7 for offset and reference deltas), from the first
    /// byte of its header.
    pub fn type_id(&self, rank: usize) -> Option<u8> {
        let offset = self.offset(rank);
        self.bytes(offset, offset + 1).map(|b| (b[0] >> 4) & 7)
    }

    /// True if the raw bytes of the entry of rank `rank` have the CRC32
    /// the index records for them (false for a version 1 index, which
    /// records none).
    pub fn crc_matches(&self, rank: usize) -> bool {
        let Some(raw) = self.bytes(self.offset(rank), self.offset(rank + 1)) else {
            return false;
        };
        self.pack
            .index
            .crc32_at_index(self.position(rank))
            .is_some_and(|crc| crc32fast::hash(raw) == crc)
    }

    /// The pack's header: signature, version, number of entries.
    pub fn header(&self) -> Option<&'a [u8]> {
        self.bytes(0, 12)
    }

    /// The checksum that ends the pack, if it is the one its index
    /// records (a damaged trailer is `None`).
    pub fn trailer(&self) -> Option<&'a [u8]> {
        let data = &self.pack.data;
        let trailer = self.bytes(data.pack_end() as u64, data.data_len() as u64)?;
        (trailer == self.pack.index.pack_checksum().as_slice()).then_some(trailer)
    }
}

//! Writing a planned pack: the entries sent as stored copied first
//! ([`super::verbatim`]), then each object's stored entry copied
//! or its content compressed afresh (as a delta where one is found), bases
//! before their deltas, damaged entries replaced by another copy.

use super::plan::{damaged, How, Plan};
use super::request::PackRequest;
use super::verbatim;
use crate::pkt_line::sideband::SidebandMode;
use crate::upload_pack::contents::{PackContents, NO_PATH};
use crate::upload_pack::delta_search::{Base, DeltaSearch, Found, MAX_DEPTH, MAX_SIZE};
use crate::upload_pack::graph::Graph;
use crate::upload_pack::pack_writer::{type_id, DeflateInto, PackWriter, OFS_DELTA};
use crate::upload_pack::thin::ObjectReader;
use crate::upload_pack::UploadPackError;
use refstore_odb::{PackedAt, Packs, StoredKind};
use refstore_refs::ObjectId;
use std::io::Write;

/// What was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PackSummary {
    /// Objects in the pack.
    pub objects: usize,
    /// Of those, sent as deltas.
    pub deltas: usize,
    /// Objects whose stored entry was copied one by one.
    pub reused: usize,
    /// Of those, deltas.
    pub reused_deltas: usize,
    /// Objects copied in leading stretches of stored packs (git's
    /// "pack-reused"); not counted in `reused`.
    pub pack_reused: usize,
}

/// An offset not (yet) known: not written.
const UNWRITTEN: u64 = u64::MAX;

/// Writes the pack into `out`.
pub(super) fn write(
    graph: &Graph,
    contents: &PackContents,
    plan: Plan,
    request: PackRequest,
    out: &mut dyn Write,
) -> Result<PackSummary, UploadPackError> {
    let objects = contents.ids.len();
    let object_count = u32::try_from(objects).map_err(|_| {
        UploadPackError::Objects(format!("{objects} objects do not fit in one pack"))
    })?;
    // Entries arrive as many small writes (a header, then data): gather
    // them into full side-band packets.
    let mut buffered =
        std::io::BufWriter::with_capacity(SidebandMode::SideBand64k.max_content_len(), out);
    let packs = graph.packs();
    // A stored pack sent whole, with exactly its objects: the new pack is
    // that one, checksum included.
    let stored_trailer = plan.reuse.whole_pack(packs, objects).and_then(|whole| {
        let order = packs.stored_order(whole);
        let header = crate::upload_pack::pack_writer::pack_header(object_count);
        (order.header() == Some(&header[..]))
            .then(|| order.trailer())
            .flatten()
    });
    let mut pack = match stored_trailer {
        Some(trailer) => {
            PackWriter::start_stored(&mut buffered, graph.object_format(), object_count, trailer)
        }
        None => PackWriter::start(&mut buffered, graph.object_format(), object_count),
    }
    .map_err(io)?;
    let mut offsets = vec![UNWRITTEN; objects];
    let mut plan = plan;
    let copied = verbatim::copy(packs, &plan.reuse, &mut pack, &mut offsets).map_err(io)?;
    if let Some(stopped_at) = copied.stopped_at {
        // A damaged entry: from it on, the entries chosen to be sent as
        // stored are sent entry by entry.
        replan(packs, &mut plan, stopped_at);
        if let Some(whole) = stored_trailer.and(plan.reuse.whole_pack(packs, objects)) {
            // Not the stored pack after all: hash what it copied.
            let entries = verbatim::copied_bytes(packs, whole, copied.objects)
                .ok_or_else(|| io(std::io::Error::other("a copied pack entry is gone")))?;
            pack.hash_written(object_count, entries).map_err(io)?;
        }
    }
    let summary = PackSummary {
        objects,
        deltas: copied.deltas,
        pack_reused: copied.objects,
        ..PackSummary::default()
    };
    let mut writer = Writer {
        graph,
        contents,
        plan,
        ofs_delta: request.ofs_delta,
        reader: ObjectReader::new(graph),
        pack,
        offsets,
        pending: vec![false; objects],
        search: DeltaSearch::default(),
        summary,
        copied: Vec::new(),
    };
    for slot in 0..objects {
        if writer.offsets[slot] == UNWRITTEN {
            writer.emit(slot as u32)?;
        }
    }
    let summary = writer.summary;
    let bytes = writer.pack.finish().map_err(io)?;
    buffered.flush().map_err(io)?;
    if let Some(observer) = refstore_fs::observe::observer() {
        observer.pack_sent(objects as u64, bytes);
    }
    Ok(summary)
}

fn io(e: std::io::Error) -> UploadPackError {
    UploadPackError::Packet(e.into())
}

/// The state of one pack being written.
struct Writer<'a, 'w> {
    graph: &'a Graph,
    contents: &'a PackContents,
    plan: Plan,
    /// Deltas may name their base by offset; otherwise by id.
    ofs_delta: bool,
    /// Reads objects compressed afresh and the client's objects (the
    /// bases of a thin pack), one delta at a time through a capped cache.
    reader: ObjectReader<'a>,
    pack: PackWriter<'w>,
    /// Where each slot's entry starts, once written.
    offsets: Vec<u64>,
    /// Slots waiting for their base to be written.
    pending: Vec<bool>,
    search: DeltaSearch,
    summary: PackSummary,
    /// By pack: bytes copied since its pages were last given back.
    copied: Vec<usize>,
}

/// How many bytes of a pack are copied between two releases of its
/// resident pages.
const RELEASE_EVERY: usize = 32 << 20;

impl Writer<'_, '_> {
    /// Writes `slot` unless it is written, after the chain of stored bases
    /// it needs. A chain that leads back to itself (possible when an object
    /// is stored in two packs, a delta against each other) is cut by
    /// compressing its first object afresh.
    fn emit(&mut self, slot: u32) -> Result<(), UploadPackError> {
        let mut stack = vec![slot];
        self.pending[slot as usize] = true;
        while let Some(&top) = stack.last() {
            let t = top as usize;
            if self.offsets[t] == UNWRITTEN {
                if let Some((at, How::Delta(base))) = self.plan.stored[t] {
                    if self.offsets[base as usize] == UNWRITTEN {
                        if self.pending[base as usize] {
                            self.plan.stored[t] = Some((at, How::Fresh));
                        } else {
                            self.pending[base as usize] = true;
                            stack.push(base);
                            continue;
                        }
                    }
                }
                self.write_slot(top)?;
            }
            self.pending[t] = false;
            stack.pop();
        }
        Ok(())
    }

    fn write_slot(&mut self, slot: u32) -> Result<(), UploadPackError> {
        let s = slot as usize;
        let offset = self.pack.offset();
        self.offsets[s] = offset;
        let id = self.contents.ids[s];
        match self.plan.stored[s] {
            Some((at, how @ (How::Whole | How::Delta(_) | How::ClientDelta))) => {
                let packs = self.graph.packs();
                let entry = packs.entry(at).map_err(damaged)?;
                if !packs.crc_matches(at, &entry) {
                    let (kind, data) = self.other_copy(&id, at)?;
                    return self.write_fresh(slot, kind, data);
                }
                if let (StoredKind::Whole(kind), Some(_)) =
                    (entry.kind, self.plan.thin.base_for(slot))
                {
                    // A version of it is on the client: a delta against
                    // that may be far smaller than the whole object.
                    let mut data = Vec::new();
                    let kind = kind.to_gix();
                    if packs.decode(at, &mut data).is_ok() {
                        if let Some(found) = self.delta_for(slot, kind, &data) {
                            self.write_delta(slot, &found)?;
                            self.remember(slot, kind, found.depth, data);
                            return Ok(());
                        }
                        self.remember(slot, kind, 0, data);
                    }
                }
                match (entry.kind, how) {
                    (StoredKind::Whole(kind), _) => {
                        let kind = kind.to_gix();
                        self.pack
                            .entry_header(type_id(kind), entry.size, None)
                            .map_err(io)?;
                    }
                    (_, How::Delta(base)) => {
                        self.delta_header(slot, base, entry.size)?;
                        self.summary.deltas += 1;
                        self.summary.reused_deltas += 1;
                    }
                    (kind, How::ClientDelta) => {
                        let base = match kind {
                            StoredKind::RefDelta { base } => base,
                            StoredKind::OfsDelta { base_offset } => packs
                                .at_offset(at.pack, base_offset)
                                .map(|base| packs.id(base))
                                .ok_or_else(|| {
                                    UploadPackError::Objects(format!(
                                        "the delta base of {id} is not where its entry says"
                                    ))
                                })?,
                            StoredKind::Whole(_) => unreachable!("planned as a delta"),
                        };
                        self.pack.ref_delta_header(entry.size, &base).map_err(io)?;
                        self.summary.deltas += 1;
                        self.summary.reused_deltas += 1;
                    }
                    (_, _) => unreachable!("only deltas are planned as deltas"),
                }
                self.pack.write(entry.compressed()).map_err(io)?;
                self.copied(at.pack, entry.raw.len());
                self.summary.reused += 1;
                Ok(())
            }
            stored => {
                if stored.is_none() && self.stream_large_loose(&id)? {
                    return Ok(());
                }
                // Read one delta at a time through a capped cache of
                // bases: a stored chain may be thousands of deltas long.
                let mut data = Vec::new();
                let read = self.reader.read(&id).map(|found| {
                    found.map(|(kind, content)| {
                        data = content.to_vec();
                        kind
                    })
                });
                let kind = match (read, stored) {
                    (Ok(Some(kind)), _) => kind,
                    (Ok(None), _) => {
                        return Err(UploadPackError::Objects(format!(
                            "the object {id} is missing: the repository is incomplete"
                        )))
                    }
                    (Err(e), Some((at, _))) => match self.other_copy(&id, at) {
                        Ok((kind, copy)) => {
                            data = copy;
                            kind
                        }
                        Err(_) => return Err(e),
                    },
                    (Err(e), None) => return Err(e),
                };
                self.write_fresh(slot, kind, data)
            }
        }
    }

    /// Counts `bytes` copied from pack `pack`; after every
    /// [`RELEASE_EVERY`] bytes, the pack's pages go back (a clone would
    /// otherwise keep the whole pack resident).
    fn copied(&mut self, pack: u32, bytes: usize) {
        let pack = pack as usize;
        if self.copied.len() <= pack {
            self.copied.resize(pack + 1, 0);
        }
        self.copied[pack] += bytes;
        if self.copied[pack] >= RELEASE_EVERY {
            self.copied[pack] = 0;
            self.graph.packs().release_pages(pack as u32);
        }
    }

    /// Compresses `data` afresh into `slot`'s entry (already placed at the
    /// current offset), as a delta where one is found.
    fn write_fresh(
        &mut self,
        slot: u32,
        kind: gix_object::Kind,
        data: Vec<u8>,
    ) -> Result<(), UploadPackError> {
        let depth = match self.delta_for(slot, kind, &data) {
            Some(found) => {
                self.write_delta(slot, &found)?;
                found.depth
            }
            None => {
                self.pack
                    .entry_header(type_id(kind), data.len() as u64, None)
                    .map_err(io)?;
                deflate(&mut self.pack, &data)?;
                0
            }
        };
        self.remember(slot, kind, depth, data);
        Ok(())
    }

    /// The path of `slot` if it may be a delta (a tree or blob met at a
    /// path).
    fn path_of(&self, slot: u32, kind: gix_object::Kind) -> Option<u64> {
        match kind {
            gix_object::Kind::Tree | gix_object::Kind::Blob => {
                Some(self.contents.paths[slot as usize]).filter(|&path| path != NO_PATH)
            }
            _ => None,
        }
    }

    /// The best delta for `slot`, of `kind` and content `data`, against the
    /// previous version of its path or, in a thin pack, its version on the
    /// client.
    fn delta_for(&mut self, slot: u32, kind: gix_object::Kind, data: &[u8]) -> Option<Found> {
        let path = self.path_of(slot, kind)?;
        let client_base = match self.plan.thin.base_for(slot) {
            Some(&id) => {
                let reader = &mut self.reader;
                self.search
                    .client_object(id, || match reader.read(&id) {
                        Ok(Some((found, data))) if found == kind => Some(data.to_vec()),
                        _ => None,
                    })
                    .map(|data| (id, data))
            }
            None => None,
        };
        let height = self.plan.height[slot as usize];
        self.search.find(
            kind,
            Some(path),
            data,
            client_base
                .as_ref()
                .map(|(id, data)| (*id, data.as_slice())),
            height,
        )
    }

    /// Writes `found` as `slot`'s entry (already placed at the current
    /// offset).
    fn write_delta(&mut self, slot: u32, found: &Found) -> Result<(), UploadPackError> {
        let size = found.delta.len() as u64;
        match found.base {
            Base::Slot(base) => self.delta_header(slot, base, size)?,
            Base::Client(id) => self.pack.ref_delta_header(size, &id).map_err(io)?,
        }
        deflate(&mut self.pack, &found.delta)?;
        self.summary.deltas += 1;
        Ok(())
    }

    /// Writes the header of `slot`'s entry, a delta of `size` bytes
    /// against the slot `base` written before it: by offset where the
    /// client reads offset deltas, by id otherwise.
    fn delta_header(&mut self, slot: u32, base: u32, size: u64) -> Result<(), UploadPackError> {
        if self.ofs_delta {
            let distance = self.offsets[slot as usize] - self.offsets[base as usize];
            self.pack.entry_header(OFS_DELTA, size, Some(distance))
        } else {
            let id = self.contents.ids[base as usize];
            self.pack.ref_delta_header(size, &id)
        }
        .map_err(io)
    }

    /// Keeps `data` as the candidate base for the next version of `slot`'s
    /// path.
    fn remember(&mut self, slot: u32, kind: gix_object::Kind, depth: u8, data: Vec<u8>) {
        if !self.plan.base_wanted[slot as usize] {
            return;
        }
        if let Some(path) = self.path_of(slot, kind) {
            self.search.remember(kind, path, slot, depth, data);
        }
    }

    /// Sends the loose object `id` without holding it, inflated and
    /// compressed again in pieces, if it is larger than a delta candidate
    /// may be; false (nothing written) if it is smaller or not a loose
    /// object of this repository.
    fn stream_large_loose(&mut self, id: &ObjectId) -> Result<bool, UploadPackError> {
        use std::io::{BufRead, Read};
        let hex = id.to_hex();
        let path = self.graph.objects_dir().join(&hex[..2]).join(&hex[2..]);
        let Ok(mapped) = self.graph.vfs().read_mapped(&path) else {
            return Ok(false);
        };
        let corrupt = |what: &str| {
            UploadPackError::Objects(format!(
                "the loose object {id} is corrupt ({what}); run 'git fsck'"
            ))
        };
        let mut reader = std::io::BufReader::new(flate2::bufread::ZlibDecoder::new(&mapped[..]));
        let mut header = Vec::new();
        (&mut reader)
            .take(64)
            .read_until(0, &mut header)
            .map_err(|e| corrupt(&e.to_string()))?;
        let header = header
            .strip_suffix(b"\0")
            .ok_or_else(|| corrupt("no header"))?;
        let (kind, size) =
            refstore_odb::parse_loose_header(header).ok_or_else(|| corrupt("bad header"))?;
        if size <= MAX_SIZE as u64 {
            return Ok(false);
        }
        self.pack
            .entry_header(type_id(kind.to_gix()), size, None)
            .map_err(io)?;
        let mut deflate = DeflateInto::new(&mut self.pack);
        let copied = std::io::copy(&mut reader.take(size), &mut deflate)
            .map_err(|e| corrupt(&e.to_string()))?;
        if copied != size {
            return Err(corrupt("shorter than its header says"));
        }
        deflate.finish().map_err(io)?;
        Ok(true)
    }

    /// The object `id` read from a copy other than the damaged entry
    /// `damaged_at`: another pack, or a loose object; the content is
    /// checked against the id.
    fn other_copy(
        &self,
        id: &ObjectId,
        damaged_at: PackedAt,
    ) -> Result<(gix_object::Kind, Vec<u8>), UploadPackError> {
        let packs = self.graph.packs();
        let hash = self.graph.object_format().gix_kind();
        let matches = |kind: gix_object::Kind, data: &[u8]| {
            gix_object::compute_hash(hash, kind, data)
                .is_ok_and(|computed| ObjectId::from_gix(&computed) == *id)
        };
        let mut data = Vec::new();
        for at in packs.locate_all(id).filter(|&at| at != damaged_at) {
            if let Ok(kind) = packs.decode(at, &mut data) {
                let kind = kind.to_gix();
                if matches(kind, &data) {
                    return Ok((kind, data));
                }
            }
        }
        let loose = gix_odb::loose::Store::at(self.graph.objects_dir(), hash);
        if let Ok(Some(object)) = loose.try_find(id.as_gix(), &mut data) {
            let kind = object.kind;
            if matches(kind, &data) {
                return Ok((kind, data));
            }
        }
        Err(UploadPackError::Objects(format!(
            "object {id} is damaged in a pack (its bytes do not match the CRC32 of the \
             pack index) and no other copy of it exists; run 'git fsck'"
        )))
    }
}

fn deflate(pack: &mut PackWriter<'_>, data: &[u8]) -> Result<(), UploadPackError> {
    let mut deflate = DeflateInto::new(pack);
    deflate.write_all(data).map_err(io)?;
    deflate.finish().map_err(io)
}

/// Plans the slots chosen to be sent as stored from `from` on (those
/// [`verbatim::copy`] left out) as the pack writer sends any stored entry:
/// a whole object, or an offset delta against its base, another of those
/// slots, is copied (checked then); anything else is compressed afresh.
/// Their chains are counted as full, so none of them becomes a new delta.
fn replan(packs: &Packs, plan: &mut Plan, from: usize) {
    for slot in from..plan.stored.len() {
        if !plan.reuse.holds(slot) {
            continue;
        }
        let Some((at, _)) = plan.stored[slot] else {
            continue;
        };
        let how = match packs.entry(at).map(|entry| entry.kind) {
            Ok(StoredKind::Whole(_)) => How::Whole,
            Ok(StoredKind::OfsDelta { base_offset }) => packs
                .stored_order(at.pack)
                .rank_at(base_offset)
                .and_then(|rank| plan.reuse.slot_at(at.pack, rank as u32))
                .map_or(How::Fresh, How::Delta),
            _ => How::Fresh,
        };
        plan.stored[slot] = Some((at, how));
        plan.height[slot] = MAX_DEPTH;
    }
    plan.reuse.release_from(from);
}

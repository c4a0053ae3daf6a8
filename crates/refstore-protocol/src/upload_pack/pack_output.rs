//! Writing the pack for the chosen objects, streamed into side-band 1 with
//! progress on band 2 in git's words.
//!
//! Stored pack entries are sent as they are stored wherever that is valid:
//! a whole object always, a delta when its base is sent too (an offset
//! delta gets the distance of the new layout; a reference delta becomes
//! an offset delta). Their compressed bytes are copied without being
//! inflated, after checking them against the CRC32 the pack's `.idx`
//! records, as git's pack-objects does when it reuses; a damaged entry is
//! sent from another copy (another pack, a loose object) compressed afresh,
//! or the fetch fails with an error on band 3, never with a damaged pack.
//! A base is always written before its deltas, whatever order the walk
//! gave.
//!
//! Objects that are not stored in a pack (loose) and stored deltas whose
//! base is not sent are inflated and compressed afresh; trees and blobs
//! among them become deltas against an earlier version of their path where
//! that is smaller ([`DeltaSearch`]).
//!
//! A pack is thin only when the client asked for it (`thin-pack`): then a
//! stored delta whose base the client has is copied as a reference delta
//! against it, and trees and blobs with a version on the client (see
//! `thin.rs`), stored whole or compressed afresh, are also tried as deltas
//! against that version. Otherwise every base is in the pack.

use super::delta_search::{Base, DeltaSearch, Found, MAX_DEPTH};
use super::graph::Graph;
use super::pack_writer::{type_id, DeflateInto, PackWriter, OFS_DELTA};
use super::thin::{ObjectReader, ThinBases};
use super::walk::{PackContents, NO_PATH};
use super::UploadPackError;
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use crate::pkt_line::PacketWriter;
use gix_hash::{oid, ObjectId};
use refstore_odb::{PackedAt, StoredKind};
use std::io::Write;

/// How the client wants the pack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackRequest {
    /// Progress messages are sent on band 2 (no `no-progress`).
    pub progress: bool,
    /// The pack may be thin (`thin-pack`): deltas against objects the
    /// client has.
    pub thin: bool,
}

/// What was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PackSummary {
    /// Objects in the pack.
    pub objects: usize,
    /// Of those, sent as deltas.
    pub deltas: usize,
    /// Objects whose stored entry was copied.
    pub reused: usize,
    /// Of those, deltas.
    pub reused_deltas: usize,
}

/// Sends a pack of `contents` on side-band `mode` of `out`, with progress
/// unless `request` turns it off, and ends the stream with its flush-pkt. A
/// failure is also reported to the client on band 3.
pub(crate) fn send_pack<W: Write>(
    graph: &Graph,
    mut contents: PackContents,
    request: PackRequest,
    mode: SidebandMode,
    out: &mut PacketWriter<W>,
) -> Result<PackSummary, UploadPackError> {
    let mut band = SidebandWriter::new(out, mode);
    let result = plan(graph, &mut contents, request.thin).and_then(|plan| {
        contents.forget_lookups();
        if request.progress {
            let n = contents.ids.len();
            let mut message = format!(
                "Enumerating objects: {n}, done.\nCounting objects: 100% ({n}/{n}), done.\n"
            );
            if plan.fresh_for_delta > 0 {
                let f = plan.fresh_for_delta;
                message.push_str(&format!("Compressing objects: 100% ({f}/{f}), done.\n"));
            }
            band.write_progress(message.as_bytes())?;
        }
        write(graph, &contents, plan, &mut band)
    });
    match result {
        Ok(summary) => {
            if request.progress {
                let message = format!(
                    "Total {} (delta {}), reused {} (delta {}), pack-reused 0\n",
                    summary.objects, summary.deltas, summary.reused, summary.reused_deltas
                );
                band.write_progress(message.as_bytes())?;
            }
            band.finish()?;
            Ok(summary)
        }
        Err(err) => {
            // The client is reading a pack: only band 3 reaches it.
            let message = format!("{}\n", err.client_message());
            band.write_error(message.as_bytes())?;
            Err(err)
        }
    }
}

/// Sends a pack of `contents` unframed, for a client that asked for no
/// side-band: the pack is the last thing on the connection.
pub(crate) fn send_raw_pack(
    graph: &Graph,
    mut contents: PackContents,
    request: PackRequest,
    out: &mut dyn Write,
) -> Result<PackSummary, UploadPackError> {
    let plan = plan(graph, &mut contents, request.thin)?;
    contents.forget_lookups();
    write(graph, &contents, plan, out)
}

/// A slot not (yet) known: no object, not written.
const NONE: u32 = u32::MAX;
const UNWRITTEN: u64 = u64::MAX;

/// How a stored object is sent.
#[derive(Debug, Clone, Copy)]
enum How {
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
struct Plan {
    /// The stored entry and how it is sent; `None` for objects no pack
    /// holds (loose ones).
    stored: Vec<Option<(PackedAt, How)>>,
    /// By slot: the longest chain of stored deltas copied against the
    /// object (deltas of deltas count), so that making the object itself a
    /// delta keeps chains within [`MAX_DEPTH`].
    height: Vec<u8>,
    /// The bases on the client, for a thin pack.
    thin: ThinBases,
    /// Objects compressed afresh that may become deltas.
    fresh_for_delta: usize,
    /// By slot: a later object of the same path is searched for a delta,
    /// so this one is worth keeping as its candidate base (a clone of one
    /// commit meets each path once: keeping every file for nothing would
    /// hold the whole tree in memory).
    base_wanted: Vec<bool>,
}

fn damaged(e: refstore_odb::OdbError) -> UploadPackError {
    UploadPackError::objects("cannot read a stored pack entry", e)
}

/// Finds every object's stored entry and decides what can be copied;
/// only entry headers are read. With `thin`, the bases on the client are
/// found too (`contents` gives up what it knows the client has).
fn plan(graph: &Graph, contents: &mut PackContents, thin: bool) -> Result<Plan, UploadPackError> {
    let thin = match thin {
        true => ThinBases::find(graph, contents)?,
        false => ThinBases::none(),
    };
    let contents = &*contents;
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
    let slot_of_id = |id: &oid| -> Option<u32> { contents.slots.get(id).copied() };
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
                        NONE => slot_of_id(id),
                        slot => Some(slot),
                    };
                    (slot, Some(id.to_owned()))
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
    })
}

/// By slot: whether a later slot of the same path is `searched` for a
/// delta. Fresh entries are written in slot order (only stored bases are
/// pulled ahead of their deltas), so "later" is "written later".
fn bases_wanted(paths: &[u64], searched: &[bool]) -> Vec<bool> {
    let mut later = std::collections::HashSet::<u64, super::graph::IdHasher>::default();
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

/// Writes the pack into `out`.
fn write(
    graph: &Graph,
    contents: &PackContents,
    plan: Plan,
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
    let pack = PackWriter::start(&mut buffered, graph.hash_kind(), object_count).map_err(io)?;
    let mut writer = Writer {
        graph,
        contents,
        plan,
        reader: ObjectReader::new(graph),
        pack,
        offsets: vec![UNWRITTEN; objects],
        pending: vec![false; objects],
        search: DeltaSearch::default(),
        summary: PackSummary {
            objects,
            ..PackSummary::default()
        },
        copied: Vec::new(),
    };
    for slot in 0..objects {
        writer.emit(slot as u32)?;
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
/// How many entry headers are read between two releases.
const RELEASE_HEADERS_EVERY: usize = 1 << 16;

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
                        let distance = offset - self.offsets[base as usize];
                        self.pack
                            .entry_header(OFS_DELTA, entry.size, Some(distance))
                            .map_err(io)?;
                        self.summary.deltas += 1;
                        self.summary.reused_deltas += 1;
                    }
                    (kind, How::ClientDelta) => {
                        let base = match kind {
                            StoredKind::RefDelta { base } => base,
                            StoredKind::OfsDelta { base_offset } => packs
                                .at_offset(at.pack, base_offset)
                                .map(|base| packs.id(base).to_owned())
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
            Base::Slot(base) => {
                let distance = self.offsets[slot as usize] - self.offsets[base as usize];
                self.pack
                    .entry_header(OFS_DELTA, size, Some(distance))
                    .map_err(io)?;
            }
            Base::Client(id) => self.pack.ref_delta_header(size, &id).map_err(io)?,
        }
        deflate(&mut self.pack, &found.delta)?;
        self.summary.deltas += 1;
        Ok(())
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
        let hex = id.to_hex().to_string();
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
        if size <= super::delta_search::MAX_SIZE as u64 {
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
        let hash = self.graph.hash_kind();
        let matches = |kind: gix_object::Kind, data: &[u8]| {
            gix_object::compute_hash(hash, kind, data).is_ok_and(|computed| computed == *id)
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
        if let Ok(Some(object)) = loose.try_find(id, &mut data) {
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

//! Reading a pack stream object by object, with deltas resolved: what
//! `git unpack-objects` needs.
//!
//! Entries are read by [`crate::entries`], which also checks the pack's
//! trailing checksum. Deltas are resolved against objects earlier or
//! later in the same pack, and (for a thin pack) against objects already in
//! the repository. Resolved objects are handed to the caller in the order
//! they become complete; the checksum is verified before [`resolve_pack`]
//! returns, so a caller that keeps what it is given until then (as
//! [`crate::LooseWriter`] does until its commit) stores nothing from a
//! corrupt pack.
//!
//! Every object stays in memory until the end, as any of them may be a
//! delta base: this suits the small packs git unpacks into loose objects
//! (`transfer.unpackLimit`, 100 objects by default); large packs are better
//! kept as packs. Objects at or above `core.bigFileThreshold` are the
//! exception: they are handed out as [`ObjectData::Large`], to be read in
//! pieces, and are never delta bases (see [`crate::large`]). The entries
//! are admitted as [`crate::admit`] says: a pack that inflates beyond its
//! bound is refused as it is read.

use crate::admit::{stopped, Stop};
use crate::delta::apply_delta;
use crate::entries::PackEntries;
use crate::hash::object_id;
use crate::large::{hash_compressed, IngestLimits, LargeObject};
use crate::{ObjectKind, Odb, OdbError};
use flate2::read::ZlibDecoder;
use gix_pack::data::entry::Header;
use refstore_hash::{ObjectFormat, ObjectId};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read};
use std::rc::Rc;

/// One object of the pack, complete.
#[derive(Debug)]
pub struct PackObject<'a> {
    /// Its id.
    pub id: ObjectId,
    /// Its kind.
    pub kind: ObjectKind,
    /// Its content.
    pub data: ObjectData<'a>,
}

/// The content of an object of the pack.
#[derive(Debug, Clone, Copy)]
pub enum ObjectData<'a> {
    /// Below `core.bigFileThreshold`: all of it.
    Whole(&'a [u8]),
    /// At or above: to be read in pieces.
    Large(LargeObject<'a>),
}

/// What a pack held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackSummary {
    /// Objects in the pack.
    pub objects: u32,
    /// Of those, deltas whose base was not in the pack but in the repository.
    pub external_bases: u32,
    /// The pack's checksum (its trailer).
    pub checksum: ObjectId,
}

/// A delta waiting for its base.
struct Waiting {
    offset: u64,
    delta: Vec<u8>,
}

/// Resolution state: objects by pack offset, and deltas waiting for bases.
struct Resolver {
    format: ObjectFormat,
    resolved: HashMap<u64, (ObjectKind, Rc<Vec<u8>>)>,
    offset_of: HashMap<ObjectId, u64>,
    entry_offsets: HashSet<u64>,
    waiting_for_offset: HashMap<u64, Vec<Waiting>>,
    waiting_for_id: HashMap<ObjectId, Vec<Waiting>>,
}

/// Reads a pack from `input`, resolving deltas (against `repository` for a
/// thin pack's external bases), and calls `each` once per object.
///
/// Fails on a pack that is truncated, corrupt (bad zlib data, an unknown
/// entry type, a checksum mismatch), or has deltas whose base is nowhere,
/// and refuses ([`OdbError::Refused`]) one beyond `limits`.
pub fn resolve_pack(
    input: impl BufRead,
    format: ObjectFormat,
    repository: Option<&Odb>,
    limits: &IngestLimits,
    mut each: impl FnMut(PackObject<'_>) -> Result<(), OdbError>,
) -> Result<PackSummary, OdbError> {
    let stop = Stop::default();
    let entries = PackEntries::new(input, format, *limits, stop.clone())?;
    let objects = entries.announced();
    let mut resolver = Resolver {
        format,
        resolved: HashMap::new(),
        offset_of: HashMap::new(),
        entry_offsets: HashSet::new(),
        waiting_for_offset: HashMap::new(),
        waiting_for_id: HashMap::new(),
    };
    let mut checksum = None;
    for entry in entries {
        let entry = entry.map_err(|e| stopped(&stop, &e))?;
        let offset = entry.pack_offset;
        resolver.entry_offsets.insert(offset);
        checksum = entry.trailer.or(checksum);
        let large = entry
            .header
            .as_kind()
            .filter(|_| limits.is_big(entry.decompressed_size));
        if let Some(kind) = large {
            let kind = ObjectKind::from_gix(kind);
            let size = entry.decompressed_size;
            let compressed = entry.compressed.as_deref().unwrap_or_default();
            let id = hash_compressed(format, kind, size, compressed, offset)?;
            each(PackObject {
                id,
                kind,
                data: ObjectData::Large(LargeObject::new(size, compressed, offset)),
            })?;
            continue;
        }
        let data = inflate(
            entry.compressed.as_deref().unwrap_or_default(),
            entry.decompressed_size,
            offset,
        )?;
        match entry.header {
            Header::RefDelta { base_id } => {
                let base = ObjectId::from_gix(&base_id);
                let waiting = Waiting {
                    offset,
                    delta: data,
                };
                match resolver.offset_of.get(&base) {
                    Some(&base_offset) => resolver.apply(base_offset, waiting, &mut each)?,
                    None => resolver
                        .waiting_for_id
                        .entry(base)
                        .or_default()
                        .push(waiting),
                }
            }
            Header::OfsDelta { base_distance } => {
                let base_offset = Header::verified_base_pack_offset(offset, base_distance)
                    .filter(|b| resolver.entry_offsets.contains(b))
                    .ok_or_else(|| {
                        pack_error(format!("delta at offset {offset} has no base in the pack"))
                    })?;
                let waiting = Waiting {
                    offset,
                    delta: data,
                };
                if resolver.resolved.contains_key(&base_offset) {
                    resolver.apply(base_offset, waiting, &mut each)?;
                } else {
                    resolver
                        .waiting_for_offset
                        .entry(base_offset)
                        .or_default()
                        .push(waiting);
                }
            }
            header => {
                let kind = header
                    .as_kind()
                    .map(ObjectKind::from_gix)
                    .expect("non-delta entries have a kind");
                resolver.complete(offset, kind, Rc::new(data), &mut each)?;
            }
        }
    }
    let checksum = checksum.ok_or_else(|| pack_error("the pack has no checksum".into()))?;
    let external_bases = resolver.resolve_external(repository, &mut each)?;
    let unresolved: usize = resolver
        .waiting_for_id
        .values()
        .map(Vec::len)
        .sum::<usize>()
        + resolver
            .waiting_for_offset
            .values()
            .map(Vec::len)
            .sum::<usize>();
    if unresolved > 0 {
        return Err(pack_error(format!(
            "unresolved deltas left after unpacking: {unresolved} deltas have no base in the pack or the repository"
        )));
    }
    Ok(PackSummary {
        objects,
        external_bases,
        checksum: ObjectId::from_gix(&checksum),
    })
}

impl Resolver {
    /// Records a complete object, hands it out, and completes every delta
    /// that was waiting for it (and theirs, without recursion).
    fn complete(
        &mut self,
        offset: u64,
        kind: ObjectKind,
        data: Rc<Vec<u8>>,
        each: &mut impl FnMut(PackObject<'_>) -> Result<(), OdbError>,
    ) -> Result<(), OdbError> {
        let mut work = vec![(offset, kind, data)];
        while let Some((offset, kind, data)) = work.pop() {
            let id = object_id(self.format, kind.as_str().as_bytes(), &data)?;
            each(PackObject {
                id,
                kind,
                data: ObjectData::Whole(&data),
            })?;
            self.offset_of.entry(id).or_insert(offset);
            let mut children = self.waiting_for_offset.remove(&offset).unwrap_or_default();
            children.extend(self.waiting_for_id.remove(&id).unwrap_or_default());
            for child in children {
                let result = apply_delta(&data, &child.delta)
                    .map_err(|e| pack_error(format!("delta at offset {}: {e}", child.offset)))?;
                work.push((child.offset, kind, Rc::new(result)));
            }
            self.resolved.insert(offset, (kind, data));
        }
        Ok(())
    }

    /// Applies a delta whose base is already complete.
    fn apply(
        &mut self,
        base_offset: u64,
        waiting: Waiting,
        each: &mut impl FnMut(PackObject<'_>) -> Result<(), OdbError>,
    ) -> Result<(), OdbError> {
        let (kind, base) = self.resolved[&base_offset].clone();
        let result = apply_delta(&base, &waiting.delta)
            .map_err(|e| pack_error(format!("delta at offset {}: {e}", waiting.offset)))?;
        self.complete(waiting.offset, kind, Rc::new(result), each)
    }

    /// Completes deltas whose base is not in the pack but in the
    /// repository (a thin pack). Returns how many bases were used.
    fn resolve_external(
        &mut self,
        repository: Option<&Odb>,
        each: &mut impl FnMut(PackObject<'_>) -> Result<(), OdbError>,
    ) -> Result<u32, OdbError> {
        let Some(repository) = repository else {
            return Ok(0);
        };
        let mut used = 0;
        let bases: Vec<ObjectId> = self.waiting_for_id.keys().copied().collect();
        for base in bases {
            let Some((kind, data)) = repository.read(&base)? else {
                continue;
            };
            used += 1;
            for child in self.waiting_for_id.remove(&base).unwrap_or_default() {
                let result = apply_delta(&data, &child.delta)
                    .map_err(|e| pack_error(format!("delta at offset {}: {e}", child.offset)))?;
                self.complete(child.offset, kind, Rc::new(result), each)?;
            }
        }
        Ok(used)
    }
}

/// Decompresses one entry's data, which must be exactly `size` bytes.
fn inflate(compressed: &[u8], size: u64, offset: u64) -> Result<Vec<u8>, OdbError> {
    let mut out = Vec::new();
    ZlibDecoder::new(compressed)
        .take(size + 1)
        .read_to_end(&mut out)
        .map_err(|e| pack_error(format!("object at offset {offset} does not inflate: {e}")))?;
    if out.len() as u64 != size {
        return Err(pack_error(format!(
            "object at offset {offset} inflates to {} bytes, not {size}",
            out.len()
        )));
    }
    Ok(out)
}

fn pack_error(message: String) -> OdbError {
    OdbError::Pack(message)
}

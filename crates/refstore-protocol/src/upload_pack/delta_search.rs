//! Choosing deltas for objects the pack writer sends whole: each tree or
//! blob is tried against the previous version of its path sent in the same
//! pack, and stored as an offset delta when that is smaller.
//!
//! The walk meets newer versions first, so a chain runs from the newest
//! version, sent whole, back through history, as in git's packs. Chains are
//! cut at [`MAX_DEPTH`] so the client never resolves very long ones.
//! Entries the pack writer copied from a stored pack keep their form.

use super::delta::DeltaIndex;
use super::UploadPackError;
use gix_hash::ObjectId;
use gix_object::Find;
use gix_pack::data::output::{entry::Kind, Entry};
use std::collections::HashMap;
use std::io::Write;

/// The longest delta chain written (git's `pack.depth` default).
const MAX_DEPTH: u8 = 50;
/// Objects smaller than this are sent whole: a delta would save nothing.
const MIN_SIZE: usize = 64;

/// The previous version of a path: a possible delta base.
struct Candidate {
    /// Its position in the pack.
    index: usize,
    /// How many deltas lead to it.
    depth: u8,
    data: Vec<u8>,
}

/// Rewrites pack entries into deltas where that makes them smaller.
pub(crate) struct DeltaSearch<'a> {
    db: gix_odb::HandleArc,
    paths: &'a HashMap<ObjectId, u64>,
    /// The last candidate per object kind and path.
    candidates: HashMap<(gix_object::Kind, u64), Candidate>,
    /// The chain depth of every entry so far, by position.
    depths: Vec<u8>,
    /// Entries turned into deltas here.
    pub made: usize,
}

impl<'a> DeltaSearch<'a> {
    /// A search reading objects from `db`, pairing objects by `paths`.
    pub fn new(db: gix_odb::HandleArc, paths: &'a HashMap<ObjectId, u64>) -> Self {
        DeltaSearch {
            db,
            paths,
            candidates: HashMap::new(),
            depths: Vec::new(),
            made: 0,
        }
    }

    /// Processes the next entries of the pack, in pack order.
    pub fn process(&mut self, entries: &mut [Entry]) -> Result<(), UploadPackError> {
        for entry in entries {
            let depth = match entry.kind {
                _ if entry.is_invalid() => 0,
                Kind::Base(kind @ (gix_object::Kind::Blob | gix_object::Kind::Tree)) => {
                    self.try_delta(entry, kind)?
                }
                Kind::Base(_) | Kind::DeltaOid { .. } => 0,
                Kind::DeltaRef { object_index } => self.depths[object_index].saturating_add(1),
            };
            self.depths.push(depth);
        }
        Ok(())
    }

    /// Turns `entry` into a delta against the previous version of its path
    /// if that is smaller; returns its depth.
    fn try_delta(
        &mut self,
        entry: &mut Entry,
        kind: gix_object::Kind,
    ) -> Result<u8, UploadPackError> {
        let index = self.depths.len();
        let Some(&path) = self.paths.get(&entry.id) else {
            return Ok(0);
        };
        let mut data = Vec::new();
        let found = self.db.try_find(&entry.id, &mut data).map_err(|e| {
            UploadPackError::objects(&format!("cannot read object {}", entry.id), e)
        })?;
        if found.is_none() {
            return Ok(0);
        }
        let mut depth = 0;
        if data.len() >= MIN_SIZE {
            if let Some(base) = self
                .candidates
                .get(&(kind, path))
                .filter(|base| base.depth < MAX_DEPTH)
            {
                // A delta must beat the whole object by a margin, as git
                // requires, or it only costs the client work.
                let limit = data.len() / 2;
                if let Some(delta) = DeltaIndex::new(&base.data).delta(&data, limit) {
                    let compressed = deflate(&delta)?;
                    if compressed.len() < entry.compressed_data.len() {
                        entry.kind = Kind::DeltaRef {
                            object_index: base.index,
                        };
                        entry.decompressed_size = delta.len();
                        entry.compressed_data = compressed;
                        depth = base.depth + 1;
                        self.made += 1;
                    }
                }
            }
        }
        self.candidates
            .insert((kind, path), Candidate { index, depth, data });
        Ok(depth)
    }
}

fn deflate(data: &[u8]) -> Result<Vec<u8>, UploadPackError> {
    let failed = |e| UploadPackError::objects("cannot compress a delta", e);
    let mut out = gix_zlib::stream::deflate::Write::new(Vec::new(), gix_zlib::Compression::DEFAULT);
    out.write_all(data).map_err(failed)?;
    out.flush().map_err(failed)?;
    Ok(out.into_inner())
}

//! Writing a new pack (version 2) into a temporary file through the Vfs,
//! entry by entry: entries copied as stored (a header, possibly
//! rewritten, and the compressed data unchanged) or objects compressed
//! afresh. The writer hashes the stream for the trailing checksum and
//! records each entry's offset and CRC32 for the index.
//!
//! Entry headers: the type in bits 4-6 of the first byte and the inflated
//! size in base-128 little-endian pieces (four bits in the first byte);
//! an offset delta then names its base by the distance back to it, in
//! git's big-endian base-128 form where each continuation adds one.
//! (The upload-pack writer encodes headers the same way; it streams to a
//! client and keeps no index, so the two are separate.)

use crate::error::MaintError;
use crate::idx::Written;
use refstore_fs::{Vfs, VfsFile};
use refstore_odb::ObjectKind;
use refstore_refs::ObjectFormat;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The entry type of an offset delta.
pub const OFS_DELTA: u8 = 6;

/// Buffered output of this size is written to the file at once.
const BUFFER: usize = 1 << 20;

/// git's number for each kind of object.
pub fn type_id(kind: ObjectKind) -> u8 {
    match kind {
        ObjectKind::Commit => 1,
        ObjectKind::Tree => 2,
        ObjectKind::Blob => 3,
        ObjectKind::Tag => 4,
    }
}

/// A pack being written to a temporary file.
pub struct PackOut {
    file: Box<dyn VfsFile>,
    path: PathBuf,
    hasher: gix_hash::Hasher,
    buf: Vec<u8>,
    offset: u64,
    declared: u32,
    entries: Vec<Written>,
    header: Vec<u8>,
    deflated: Vec<u8>,
}

/// A finished pack: its temporary file (complete, not yet flushed), its
/// checksum and the entries written.
pub struct FinishedPack {
    /// The open temporary file, to be staged for the flush point.
    pub file: Box<dyn VfsFile>,
    /// Its path.
    pub temp_path: PathBuf,
    /// The trailing checksum, which names the pack.
    pub checksum: Vec<u8>,
    /// Every entry: id, offset, CRC32.
    pub entries: Vec<Written>,
}

impl PackOut {
    /// Starts a pack of exactly `objects` entries in a new `tmp_pack_*`
    /// file of `dir`.
    pub fn start(
        vfs: &Arc<dyn Vfs>,
        dir: &Path,
        format: ObjectFormat,
        objects: u32,
    ) -> Result<PackOut, MaintError> {
        let (path, file) = refstore_fs::temp::create(vfs.as_ref(), dir, "tmp_pack_")?;
        let mut out = PackOut {
            file,
            path,
            hasher: gix_hash::hasher(format.gix_kind()),
            buf: Vec::with_capacity(BUFFER),
            offset: 0,
            declared: objects,
            entries: Vec::with_capacity(objects as usize),
            header: Vec::with_capacity(32),
            deflated: Vec::new(),
        };
        let mut header = [0u8; 12];
        header[..4].copy_from_slice(b"PACK");
        header[4..8].copy_from_slice(&2u32.to_be_bytes());
        header[8..].copy_from_slice(&objects.to_be_bytes());
        out.put(&header)?;
        Ok(out)
    }

    /// The temporary file's path (removed by the caller on failure).
    pub fn temp_path(&self) -> &Path {
        &self.path
    }

    /// Where the next entry starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), MaintError> {
        self.hasher.update(bytes);
        self.offset += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= BUFFER {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Copies a stored entry unchanged (a whole object, or a reference
    /// delta whose base is in this pack too).
    pub fn copy_entry(&mut self, id: &[u8], raw: &[u8]) -> Result<(), MaintError> {
        let offset = self.offset;
        self.put(raw)?;
        self.entries.push(Written {
            id: id.to_vec(),
            offset,
            crc: crc32fast::hash(raw),
        });
        Ok(())
    }

    /// Writes an offset delta against the entry at `base_offset` of this
    /// pack, with its stored compressed data.
    pub fn ofs_delta(
        &mut self,
        id: &[u8],
        size: u64,
        base_offset: u64,
        compressed: &[u8],
    ) -> Result<(), MaintError> {
        let offset = self.offset;
        let mut header = std::mem::take(&mut self.header);
        refstore_odb::encode_entry_header(&mut header, OFS_DELTA, size, Some(offset - base_offset));
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        crc.update(compressed);
        self.put(&header)?;
        self.put(compressed)?;
        self.header = header;
        self.entries.push(Written {
            id: id.to_vec(),
            offset,
            crc: crc.finalize(),
        });
        Ok(())
    }

    /// Writes `delta` (instructions against the entry at `base_offset` of
    /// this pack), compressed, as an offset delta.
    pub fn delta(&mut self, id: &[u8], base_offset: u64, delta: &[u8]) -> Result<(), MaintError> {
        let mut deflated = std::mem::take(&mut self.deflated);
        deflated.clear();
        let mut encoder =
            flate2::write::ZlibEncoder::new(&mut deflated, flate2::Compression::default());
        encoder
            .write_all(delta)
            .and_then(|_| encoder.finish().map(|_| ()))
            .map_err(|e| MaintError::Format(format!("cannot compress a delta: {e}")))?;
        let written = self.ofs_delta(id, delta.len() as u64, base_offset, &deflated);
        self.deflated = deflated;
        written
    }

    /// Writes a whole object, compressed afresh.
    pub fn whole(&mut self, id: &[u8], kind: ObjectKind, data: &[u8]) -> Result<(), MaintError> {
        let offset = self.offset;
        let mut header = std::mem::take(&mut self.header);
        refstore_odb::encode_entry_header(&mut header, type_id(kind), data.len() as u64, None);
        let mut deflated = std::mem::take(&mut self.deflated);
        deflated.clear();
        let mut encoder =
            flate2::write::ZlibEncoder::new(&mut deflated, flate2::Compression::default());
        encoder
            .write_all(data)
            .and_then(|_| encoder.finish().map(|_| ()))
            .map_err(|e| MaintError::Format(format!("cannot compress an object: {e}")))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        crc.update(&deflated);
        self.put(&header)?;
        self.put(&deflated)?;
        self.header = header;
        self.deflated = deflated;
        self.entries.push(Written {
            id: id.to_vec(),
            offset,
            crc: crc.finalize(),
        });
        Ok(())
    }

    /// Ends the pack with its checksum.
    pub fn finish(mut self) -> Result<FinishedPack, MaintError> {
        if self.entries.len() != self.declared as usize {
            return Err(MaintError::Format(format!(
                "internal error: pack declared {} objects but {} were written",
                self.declared,
                self.entries.len()
            )));
        }
        let checksum = self
            .hasher
            .try_finalize()
            .map_err(|e| MaintError::Format(format!("hash collision detected: {e}")))?;
        self.buf.extend_from_slice(checksum.as_slice());
        self.file.write_all(&self.buf)?;
        Ok(FinishedPack {
            file: self.file,
            temp_path: self.path,
            checksum: checksum.as_slice().to_vec(),
            entries: self.entries,
        })
    }
}

//! The bytes of a pack (version 2): the header, entries, the trailing
//! checksum. Every byte goes through here, so the writer knows each
//! entry's offset (offset deltas name their base by distance) and hashes
//! the stream as it passes.
//!
//! Entry headers: the type in bits 4-6 of the first byte and the inflated
//! size in base-128 little-endian pieces (four bits in the first byte);
//! an offset delta then gives the distance back to its base in git's
//! big-endian base-128 form where each continuation adds one.

use refstore_hash::ObjectFormat;
use refstore_refs::ObjectId;
use std::io::Write;

/// Pack entry types.
pub(crate) const OFS_DELTA: u8 = 6;
const REF_DELTA: u8 = 7;

/// The number git's pack format gives each kind of object.
pub(crate) fn type_id(kind: gix_object::Kind) -> u8 {
    match kind {
        gix_object::Kind::Commit => 1,
        gix_object::Kind::Tree => 2,
        gix_object::Kind::Blob => 3,
        gix_object::Kind::Tag => 4,
    }
}

/// Writes a pack into `out`, hashing and counting.
pub(crate) struct PackWriter<'w> {
    out: &'w mut dyn Write,
    /// `None` while the pack is a stored one sent unchanged.
    hasher: Option<gix_hash::Hasher>,
    format: ObjectFormat,
    /// The checksum of the stored pack sent unchanged.
    known_trailer: Vec<u8>,
    offset: u64,
    header: Vec<u8>,
}

impl<'w> PackWriter<'w> {
    /// Starts a pack of `objects` entries.
    pub fn start(
        out: &'w mut dyn Write,
        format: ObjectFormat,
        objects: u32,
    ) -> std::io::Result<Self> {
        let mut writer = PackWriter {
            out,
            hasher: Some(gix_hash::hasher(format.gix_kind())),
            format,
            known_trailer: Vec::new(),
            offset: 0,
            header: Vec::with_capacity(32),
        };
        writer.write(&pack_header(objects))?;
        Ok(writer)
    }

    /// Starts a pack that is to be a stored pack byte for byte, whose
    /// checksum `trailer` is known: nothing is hashed, and
    /// [`PackWriter::finish`] writes `trailer`. Should the pack turn out
    /// different, [`PackWriter::hash_written`] must be given what was
    /// written before anything else is.
    pub fn start_stored(
        out: &'w mut dyn Write,
        format: ObjectFormat,
        objects: u32,
        trailer: &[u8],
    ) -> std::io::Result<Self> {
        let mut writer = PackWriter {
            out,
            hasher: None,
            format,
            known_trailer: trailer.to_vec(),
            offset: 0,
            header: Vec::with_capacity(32),
        };
        writer.write(&pack_header(objects))?;
        Ok(writer)
    }

    /// Hashes from here on, for a pack started with
    /// [`PackWriter::start_stored`] that turned out different from the
    /// stored one: `entries` are the bytes written after the header.
    pub fn hash_written(&mut self, objects: u32, entries: &[u8]) -> std::io::Result<()> {
        if self.hasher.is_some() {
            return Ok(());
        }
        if 12 + entries.len() as u64 != self.offset {
            return Err(std::io::Error::other(
                "the bytes to hash are not those written",
            ));
        }
        let mut hasher = gix_hash::hasher(self.format.gix_kind());
        hasher.update(&pack_header(objects));
        hasher.update(entries);
        self.hasher = Some(hasher);
        self.known_trailer.clear();
        Ok(())
    }

    /// Where the next entry starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Writes an entry header for an object of type `type_id` (1 to 4, or
    /// [`OFS_DELTA`] with `base_distance`) of `size` inflated bytes.
    pub fn entry_header(
        &mut self,
        type_id: u8,
        size: u64,
        base_distance: Option<u64>,
    ) -> std::io::Result<()> {
        let mut header = std::mem::take(&mut self.header);
        refstore_odb::encode_entry_header(&mut header, type_id, size, base_distance);
        let result = self.write(&header);
        self.header = header;
        result
    }

    /// Writes the header of a reference delta of `size` inflated bytes
    /// against `base`.
    pub fn ref_delta_header(&mut self, size: u64, base: &ObjectId) -> std::io::Result<()> {
        self.entry_header(REF_DELTA, size, None)?;
        self.write(base.as_bytes())
    }

    /// Writes entry data.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(bytes);
        }
        self.offset += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    /// Writes the checksum that ends the pack; returns the pack's length
    /// in bytes.
    pub fn finish(self) -> std::io::Result<u64> {
        let checksum = match self.hasher {
            Some(hasher) => hasher
                .try_finalize()
                .map_err(|e| std::io::Error::other(e.to_string()))?
                .as_slice()
                .to_vec(),
            None => self.known_trailer,
        };
        self.out.write_all(&checksum)?;
        self.out.flush()?;
        Ok(self.offset + checksum.len() as u64)
    }
}

/// The header of a version 2 pack of `objects` entries.
pub(crate) fn pack_header(objects: u32) -> [u8; 12] {
    let mut header = [0u8; 12];
    header[..4].copy_from_slice(b"PACK");
    header[4..8].copy_from_slice(&2u32.to_be_bytes());
    header[8..].copy_from_slice(&objects.to_be_bytes());
    header
}

/// An adapter that deflates what is written into it straight into a
/// [`PackWriter`], for objects compressed afresh: large ones are never held
/// compressed in memory.
pub(crate) struct DeflateInto<'p, 'w> {
    pack: &'p mut PackWriter<'w>,
    deflate: flate2::Compress,
    buf: Vec<u8>,
}

impl<'p, 'w> DeflateInto<'p, 'w> {
    pub fn new(pack: &'p mut PackWriter<'w>) -> Self {
        DeflateInto {
            pack,
            deflate: flate2::Compress::new(flate2::Compression::default(), true),
            buf: Vec::with_capacity(64 * 1024),
        }
    }

    fn run(&mut self, mut input: &[u8], flush: flate2::FlushCompress) -> std::io::Result<()> {
        loop {
            self.buf.clear();
            let before_in = self.deflate.total_in();
            let status = self
                .deflate
                .compress_vec(input, &mut self.buf, flush)
                .map_err(std::io::Error::other)?;
            let consumed = (self.deflate.total_in() - before_in) as usize;
            input = &input[consumed..];
            if !self.buf.is_empty() {
                let out = std::mem::take(&mut self.buf);
                self.pack.write(&out)?;
                self.buf = out;
            }
            let done = match flush {
                flate2::FlushCompress::Finish => status == flate2::Status::StreamEnd,
                _ => input.is_empty() && self.buf.len() < self.buf.capacity(),
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Writes everything written so far and ends the zlib stream.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.run(&[], flate2::FlushCompress::Finish)
    }
}

impl Write for DeflateInto<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.run(bytes, flate2::FlushCompress::None)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

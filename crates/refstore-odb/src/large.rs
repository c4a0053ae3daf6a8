//! Objects at or above `core.bigFileThreshold`, taken in without ever
//! being held whole, and the bound on what a received pack inflates to.
//!
//! A pack entry is inflated as it is read (that is how its end is found)
//! without keeping what it inflates to: what stays in memory is its
//! compressed bytes. The object of a non-delta entry at or above the
//! threshold is hashed from those bytes in pieces ([`hash_compressed`]),
//! and written or checked later the same way ([`LargeObject::reader`]),
//! never whole.
//!
//! Deltas are where git draws the same line: `git pack-objects`
//! deltifies nothing at or above the threshold, so a delta whose base or
//! result (or itself) is that large comes only from a broken or hostile
//! client. Such
//! a delta is refused ([`OdbError::Refused`]) before anything applies it,
//! rather than resolved by reading its base from the pack again.

use crate::hash::object_header;
use crate::{ObjectKind, OdbError};
use flate2::read::ZlibDecoder;
use refstore_hash::{ObjectFormat, ObjectId};
use std::io::Read;

/// git's default `core.bigFileThreshold`: 512 MiB.
pub const DEFAULT_BIG_FILE_THRESHOLD: u64 = 512 << 20;

/// How much of a large object is inflated at a time.
const PIECE: usize = 64 << 10;

/// What taking in a pack may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestLimits {
    /// Objects of this size or more are streamed, never held whole
    /// (`core.bigFileThreshold`).
    pub big_file_threshold: u64,
    /// The most the pack's objects may inflate to in total, each delta
    /// counted by the size of its result (`refstore.maxPushInflated` for
    /// a push); `None` for no bound.
    pub max_inflated: Option<u64>,
}

impl Default for IngestLimits {
    /// git's threshold, no bound.
    fn default() -> Self {
        IngestLimits {
            big_file_threshold: DEFAULT_BIG_FILE_THRESHOLD,
            max_inflated: None,
        }
    }
}

impl IngestLimits {
    /// Whether an object of `size` bytes is streamed.
    pub fn is_big(&self, size: u64) -> bool {
        size >= self.big_file_threshold
    }
}

/// `core.bigFileThreshold` as git reads it (a size with an optional `k`,
/// `m` or `g` suffix), [`DEFAULT_BIG_FILE_THRESHOLD`] when unset or not
/// positive.
pub fn big_file_threshold(config: &refstore_fs::config::Config) -> Result<u64, String> {
    let value = config
        .int("core.bigFileThreshold")
        .map_err(|e| e.to_string())?;
    Ok(value
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v > 0)
        .unwrap_or(DEFAULT_BIG_FILE_THRESHOLD))
}

/// An object at or above the threshold, as a pack holds it: its size and
/// its compressed bytes, from which it is read in pieces.
#[derive(Debug, Clone, Copy)]
pub struct LargeObject<'a> {
    size: u64,
    compressed: &'a [u8],
    offset: u64,
}

impl<'a> LargeObject<'a> {
    pub(crate) fn new(size: u64, compressed: &'a [u8], offset: u64) -> Self {
        LargeObject {
            size,
            compressed,
            offset,
        }
    }

    /// Inflates it a piece at a time (see [`for_each_piece`]).
    pub(crate) fn for_each_piece(
        &self,
        each: impl FnMut(&[u8]) -> Result<(), OdbError>,
    ) -> Result<u64, OdbError> {
        for_each_piece(self.compressed, self.size, self.offset, each)
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its content, inflated as it is read.
    pub fn reader(&self) -> impl Read + 'a {
        ZlibDecoder::new(self.compressed).take(self.size)
    }
}

/// The id of the object of `kind` and `size` whose zlib stream is
/// `compressed`, inflated a piece at a time; fails if the stream does not
/// inflate to exactly `size` bytes.
pub(crate) fn hash_compressed(
    format: ObjectFormat,
    kind: ObjectKind,
    size: u64,
    compressed: &[u8],
    offset: u64,
) -> Result<ObjectId, OdbError> {
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(&object_header(kind.as_str().as_bytes(), size as usize));
    let inflated = for_each_piece(compressed, size, offset, |piece| {
        hasher.update(piece);
        Ok(())
    })?;
    if inflated != size {
        return Err(OdbError::Pack(format!(
            "object at offset {offset} inflates to {inflated} bytes, not {size}"
        )));
    }
    let id = hasher
        .try_finalize()
        .map_err(|source| OdbError::Collision { source })?;
    Ok(ObjectId::from_gix(&id))
}

/// Inflates `compressed` a piece at a time, at most `size + 1` bytes, and
/// hands each piece to `each`. Returns how many bytes it inflated to.
pub(crate) fn for_each_piece(
    compressed: &[u8],
    size: u64,
    offset: u64,
    mut each: impl FnMut(&[u8]) -> Result<(), OdbError>,
) -> Result<u64, OdbError> {
    let mut reader = ZlibDecoder::new(compressed).take(size.saturating_add(1));
    let mut piece = vec![0u8; PIECE];
    let mut inflated = 0u64;
    loop {
        let n = reader.read(&mut piece).map_err(|e| {
            OdbError::Pack(format!("object at offset {offset} does not inflate: {e}"))
        })?;
        if n == 0 {
            return Ok(inflated);
        }
        inflated += n as u64;
        each(&piece[..n])?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn compress(data: &[u8]) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn hashes_in_pieces_as_whole() {
        let data = vec![7u8; 3 * PIECE + 5];
        let id = hash_compressed(
            ObjectFormat::Sha1,
            ObjectKind::Blob,
            data.len() as u64,
            &compress(&data),
            12,
        )
        .unwrap();
        let whole = crate::object_id(ObjectFormat::Sha1, b"blob", &data).unwrap();
        assert_eq!(id, whole);
    }

    #[test]
    fn refuses_a_stream_of_another_size() {
        let compressed = compress(&[1u8; 100]);
        for size in [99, 101] {
            let error =
                hash_compressed(ObjectFormat::Sha1, ObjectKind::Blob, size, &compressed, 12)
                    .unwrap_err();
            assert!(error.to_string().contains("inflates to"), "{error}");
        }
    }
}

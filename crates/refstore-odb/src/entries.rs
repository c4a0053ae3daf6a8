//! Reading a pack stream entry by entry, for both pack readers
//! ([`crate::store_pack`], [`crate::resolve_pack`]): each entry's header
//! is parsed (by gix-pack), the entry admitted by the size it announces
//! ([`crate::admit`]), then inflated a piece at a time to find where its
//! zlib stream ends, never beyond that size: what it inflates to is not
//! kept, only its compressed bytes, its CRC32 and (for a delta) the start
//! that announces its sizes. The pack's trailing checksum is verified
//! after the last entry.
//!
//! The entries are gix-pack's, so that its thin-pack completion and
//! indexer take them as they take its own reader's.

use crate::admit::{stop_with, Admission, Stop};
use crate::large::IngestLimits;
use crate::OdbError;
use flate2::{Decompress, FlushDecompress, Status};
use gix_pack::data::input::Entry;
use refstore_hash::ObjectFormat;
use std::io::{self, BufRead, Read};

/// How much is inflated at a time, into nothing kept.
const PIECE: usize = 64 << 10;

/// The longest start of a delta that announces its sizes.
const DELTA_PREFIX: usize = 20;

/// The entries of a pack stream.
pub(crate) struct PackEntries<R> {
    read: R,
    format: ObjectFormat,
    version: gix_pack::data::Version,
    count: u32,
    left: u32,
    offset: u64,
    hasher: Option<gix_hash::Hasher>,
    inflater: Decompress,
    scratch: Vec<u8>,
    admission: Admission,
    stop: Stop,
}

impl<R: BufRead> PackEntries<R> {
    /// Reads the pack's header from `read`.
    pub(crate) fn new(
        mut read: R,
        format: ObjectFormat,
        limits: IngestLimits,
        stop: Stop,
    ) -> Result<Self, OdbError> {
        let mut header = [0u8; gix_pack::data::header::SIZE];
        read.read_exact(&mut header).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => OdbError::Pack(format!("not a pack: {}", EARLY_EOF)),
            _ => OdbError::Pack(format!("not a pack: {e}")),
        })?;
        let (version, count) = gix_pack::data::header::decode(&header)
            .map_err(|e| OdbError::Pack(format!("not a pack: {}", crate::error::describe(&e))))?;
        let mut hasher = gix_hash::hasher(format.gix_kind());
        hasher.update(&header);
        Ok(PackEntries {
            read,
            format,
            version,
            count,
            left: count,
            offset: header.len() as u64,
            hasher: Some(hasher),
            inflater: Decompress::new(true),
            scratch: vec![0; PIECE],
            admission: Admission::new(limits),
            stop,
        })
    }

    /// The pack's version.
    pub(crate) fn version(&self) -> gix_pack::data::Version {
        self.version
    }

    /// The number of entries the header announces.
    pub(crate) fn announced(&self) -> u32 {
        self.count
    }

    fn entry(&mut self) -> Result<Entry, OdbError> {
        let offset = self.offset;
        let hasher = self.hasher.as_mut().expect("kept until the trailer");
        let mut crc = crc32fast::Hasher::new();
        let mut tee = Tee {
            read: &mut self.read,
            hasher,
            crc: &mut crc,
        };
        let parsed = gix_pack::data::Entry::from_read(&mut tee, offset, self.format.raw_len())
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => truncated(),
                _ => OdbError::Pack(format!("entry at offset {offset}: {e}")),
            })?;
        let announced = parsed.decompressed_size;
        self.admission.before(announced)?;
        let mut prefix = Vec::new();
        let mut compressed = Vec::new();
        let hasher = self.hasher.as_mut().expect("kept until the trailer");
        let inflated = inflate(
            &mut self.read,
            &mut self.inflater,
            &mut self.scratch,
            announced,
            offset,
            &mut |input, output| {
                crc.update(input);
                hasher.update(input);
                compressed.extend_from_slice(input);
                let room = DELTA_PREFIX.saturating_sub(prefix.len()).min(output.len());
                prefix.extend_from_slice(&output[..room]);
            },
        )?;
        if inflated != announced {
            return Err(OdbError::Pack(format!(
                "object at offset {offset} inflates to {inflated} bytes, not {announced}"
            )));
        }
        self.admission
            .after(&parsed.header, announced, &prefix, offset)?;
        let header_size = parsed.data_offset - offset;
        let compressed_size = compressed.len() as u64;
        self.offset = parsed.data_offset + compressed_size;
        self.left -= 1;
        let trailer = match self.left {
            0 => Some(self.trailer()?),
            _ => None,
        };
        Ok(Entry {
            header: parsed.header,
            header_size: header_size as u16,
            pack_offset: offset,
            compressed: Some(compressed),
            compressed_size,
            crc32: Some(crc.finalize()),
            decompressed_size: announced,
            trailer,
        })
    }

    /// Reads and verifies the pack's checksum.
    fn trailer(&mut self) -> Result<gix_hash::ObjectId, OdbError> {
        let mut trailer = vec![0u8; self.format.raw_len()];
        self.read
            .read_exact(&mut trailer)
            .map_err(|_| truncated())?;
        let hasher = self.hasher.take().expect("taken once");
        let actual = hasher
            .try_finalize()
            .map_err(|source| OdbError::Collision { source })?;
        if actual.as_bytes() != trailer.as_slice() {
            return Err(OdbError::Pack(
                "the pack's checksum does not match its content: it is corrupt".into(),
            ));
        }
        Ok(actual)
    }
}

impl<R: BufRead> Iterator for PackEntries<R> {
    type Item = gix_error::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        match self.entry() {
            Ok(entry) => Some(Ok(entry)),
            Err(e) => {
                // Nothing after an error is read.
                self.left = 0;
                Some(Err(stop_with(&self.stop, e)))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

/// git's words for input that ends too soon.
const EARLY_EOF: &str = "early EOF: the pack is truncated";

fn truncated() -> OdbError {
    OdbError::Pack(EARLY_EOF.into())
}

/// Input that cannot be read (a transport's own limits say why).
fn unreadable(error: io::Error) -> OdbError {
    OdbError::Pack(format!("cannot read the pack: {error}"))
}

/// Input that ends in the middle of an entry's data.
fn incomplete(offset: u64) -> OdbError {
    OdbError::Pack(format!(
        "{EARLY_EOF}: the pack is incomplete, its object at offset {offset} ends early"
    ))
}

/// Inflates one zlib stream from `read`, consuming exactly its bytes,
/// into `scratch` a piece at a time and never beyond `announced` bytes;
/// `each` sees every piece of input consumed with the output it made.
/// Returns how many bytes it inflated to.
fn inflate(
    read: &mut impl BufRead,
    inflater: &mut Decompress,
    scratch: &mut [u8],
    announced: u64,
    offset: u64,
    each: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<u64, OdbError> {
    inflater.reset(true);
    loop {
        let input = read.fill_buf().map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => incomplete(offset),
            _ => unreadable(e),
        })?;
        if input.is_empty() {
            return Err(incomplete(offset));
        }
        // One byte of room beyond the announced size shows a stream that
        // would go on.
        let left = announced - inflater.total_out();
        let room = usize::try_from(left.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(scratch.len());
        let (before_in, before_out) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress(input, &mut scratch[..room], FlushDecompress::None)
            .map_err(|e| {
                OdbError::Pack(format!("object at offset {offset} does not inflate: {e}"))
            })?;
        let used = (inflater.total_in() - before_in) as usize;
        let made = (inflater.total_out() - before_out) as usize;
        each(&input[..used], &scratch[..made]);
        read.consume(used);
        if inflater.total_out() > announced {
            return Err(OdbError::Pack(format!(
                "object at offset {offset} inflates beyond the {announced} bytes its header \
                 announces"
            )));
        }
        match status {
            Status::StreamEnd => return Ok(inflater.total_out()),
            _ if used == 0 && made == 0 => {
                return Err(OdbError::Pack(format!(
                    "object at offset {offset} does not inflate: its zlib stream is stuck"
                )))
            }
            _ => {}
        }
    }
}

/// A reader that hands what it reads to the pack's hash and the entry's
/// CRC32 (for the entry header, read by gix-pack).
struct Tee<'a, R> {
    read: &'a mut R,
    hasher: &'a mut gix_hash::Hasher,
    crc: &'a mut crc32fast::Hasher,
}

impl<R: BufRead> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use flate2::Compression;
    use std::io::Write;

    const BLOB: u8 = 3;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    /// A SHA-1 pack of blob entries: (announced size, zlib stream).
    fn pack(entries: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"PACK\0\0\0\x02".to_vec();
        out.extend((entries.len() as u32).to_be_bytes());
        let mut header = Vec::new();
        for (size, stream) in entries {
            crate::encode_entry_header(&mut header, BLOB, *size, None);
            out.extend(&header);
            out.extend(stream);
        }
        let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
        hasher.update(&out);
        out.extend(hasher.try_finalize().unwrap().as_bytes());
        out
    }

    fn read_all(pack: &[u8], max: Option<u64>) -> Result<Vec<Entry>, OdbError> {
        let limits = IngestLimits {
            max_inflated: max,
            ..IngestLimits::default()
        };
        let stop = Stop::default();
        let entries = PackEntries::new(pack, ObjectFormat::Sha1, limits, stop.clone())?;
        entries
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| crate::admit::stopped(&stop, &e))
    }

    #[test]
    fn entries_keep_their_compressed_bytes_and_the_trailer() {
        let data = vec![b'z'; 100_000];
        let pack = pack(&[(100_000, zlib(&data)), (3, zlib(b"abc"))]);
        let entries = read_all(&pack, None).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].pack_offset, 12);
        assert_eq!(entries[0].compressed.as_deref(), Some(&zlib(&data)[..]));
        assert_eq!(
            entries[1].pack_offset,
            12 + u64::from(entries[0].header_size) + entries[0].compressed_size
        );
        assert_eq!(
            entries[1].trailer.unwrap().as_bytes(),
            &pack[pack.len() - 20..]
        );
        // A changed checksum, and a pack cut short, are refused.
        let mut corrupt = pack.clone();
        *corrupt.last_mut().unwrap() ^= 1;
        let error = read_all(&corrupt, None).unwrap_err().to_string();
        assert!(error.contains("checksum"), "{error}");
        let error = read_all(&pack[..40], None).unwrap_err().to_string();
        assert!(error.contains("early EOF"), "{error}");
    }

    #[test]
    fn a_stream_is_never_inflated_beyond_what_its_header_announces() {
        // A megabyte of zeros announced as ten bytes.
        let bomb = zlib(&vec![0u8; 1 << 20]);
        let error = read_all(&pack(&[(10, bomb)]), None).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("inflates beyond the 10 bytes its header announces"),
            "{error}"
        );
    }

    #[test]
    fn an_entry_beyond_the_bound_is_refused_before_it_is_inflated() {
        // Its stream is not zlib at all: refused for its size, unread.
        let pack = pack(&[(3, zlib(b"abc")), (1 << 40, b"not zlib".to_vec())]);
        let error = read_all(&pack, Some(1 << 30)).unwrap_err();
        assert!(matches!(error, OdbError::Refused(_)), "{error}");
        assert_eq!(
            error.to_string(),
            "pack inflates beyond 1073741824 bytes (refstore.maxPushInflated)"
        );
    }
}

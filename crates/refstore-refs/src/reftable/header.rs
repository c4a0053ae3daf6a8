//! The file header and footer.
//!
//! Version 1 (SHA-1) has a 24-byte header; version 2 appends a 4-byte hash
//! id (`sha1` or `s256`), making it 28 bytes. The footer repeats the header
//! and adds the positions of the sections, protected by a CRC-32 that a
//! reader checks before trusting any of them.

use super::error::{Error, Result};
use crate::ObjectFormat;

const MAGIC: &[u8; 4] = b"REFT";
const HASH_ID_SHA1: &[u8; 4] = b"sha1";
const HASH_ID_SHA256: &[u8; 4] = b"s256";
/// Largest block size the 24-bit `block_size` field can express.
pub const MAX_BLOCK_SIZE: u32 = 0xff_ffff;

/// The table's format version: it fixes the hash and the header size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Version 1: SHA-1 ids, 24-byte header, 68-byte footer.
    V1,
    /// Version 2: a hash id in the header, 28-byte header, 72-byte footer.
    V2(ObjectFormat),
}

impl Version {
    /// The version git writes for a repository of `format`: version 1 for
    /// SHA-1 (the widest compatibility, as the format recommends), version 2
    /// for SHA-256.
    pub fn for_format(format: ObjectFormat) -> Self {
        match format {
            ObjectFormat::Sha1 => Version::V1,
            ObjectFormat::Sha256 => Version::V2(ObjectFormat::Sha256),
        }
    }

    /// The object format of the ids stored in the table.
    pub fn object_format(self) -> ObjectFormat {
        match self {
            Version::V1 => ObjectFormat::Sha1,
            Version::V2(format) => format,
        }
    }

    /// The version number stored in the header.
    pub fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2(_) => 2,
        }
    }

    /// Size of the header in bytes.
    pub fn header_len(self) -> usize {
        match self {
            Version::V1 => 24,
            Version::V2(_) => 28,
        }
    }

    /// Size of the footer in bytes.
    pub fn footer_len(self) -> usize {
        self.header_len() + 5 * 8 + 4
    }
}

/// The header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format version and hash.
    pub version: Version,
    /// Block alignment, or 0 for an unaligned table.
    pub block_size: u32,
    /// Smallest update index of the table's records.
    pub min_update_index: u64,
    /// Largest update index of the table's records.
    pub max_update_index: u64,
}

impl Header {
    /// Appends the encoded header.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        out.push(self.version.number());
        out.extend_from_slice(&self.block_size.to_be_bytes()[1..]);
        out.extend_from_slice(&self.min_update_index.to_be_bytes());
        out.extend_from_slice(&self.max_update_index.to_be_bytes());
        if let Version::V2(format) = self.version {
            out.extend_from_slice(match format {
                ObjectFormat::Sha1 => HASH_ID_SHA1,
                ObjectFormat::Sha256 => HASH_ID_SHA256,
            });
        }
    }

    /// Decodes a header from the start of `data` (the file start, or the
    /// footer start at `offset`).
    pub(crate) fn decode(data: &[u8], offset: usize) -> Result<Header> {
        if data.len() < 24 {
            return Err(Error::corrupt(
                offset,
                format!("{} bytes are too few for a reftable header", data.len()),
            ));
        }
        if &data[..4] != MAGIC {
            return Err(Error::corrupt(
                offset,
                format!("bad magic {:02x?}, expected 'REFT'", &data[..4]),
            ));
        }
        let version = match data[4] {
            1 => Version::V1,
            2 => {
                let id = data.get(24..28).ok_or_else(|| {
                    Error::corrupt(
                        offset + 24,
                        "version 2 header is cut short before its hash id",
                    )
                })?;
                match id {
                    id if id == HASH_ID_SHA1 => Version::V2(ObjectFormat::Sha1),
                    id if id == HASH_ID_SHA256 => Version::V2(ObjectFormat::Sha256),
                    other => {
                        return Err(Error::corrupt(
                            offset + 24,
                            format!("unknown hash id {:02x?}", other),
                        ))
                    }
                }
            }
            other => {
                return Err(Error::corrupt(
                    offset + 4,
                    format!(
                        "unsupported reftable version {other}; this reader knows versions 1 and 2"
                    ),
                ))
            }
        };
        let block_size = u32::from_be_bytes([0, data[5], data[6], data[7]]);
        let min_update_index = u64::from_be_bytes(data[8..16].try_into().expect("8 bytes"));
        let max_update_index = u64::from_be_bytes(data[16..24].try_into().expect("8 bytes"));
        Ok(Header {
            version,
            block_size,
            min_update_index,
            max_update_index,
        })
    }
}

/// The footer's fields beyond the repeated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sections {
    /// Position of the root of the ref index, or 0.
    pub ref_index_position: u64,
    /// Position of the first obj block, or 0.
    pub obj_position: u64,
    /// Length of the abbreviated ids in obj blocks.
    pub obj_id_len: u8,
    /// Position of the root of the obj index, or 0.
    pub obj_index_position: u64,
    /// Position of the first log block, or 0.
    pub log_position: u64,
    /// Position of the root of the log index, or 0.
    pub log_index_position: u64,
}

/// Appends the footer for `header` and `sections`, CRC included.
pub(crate) fn encode_footer(header: &Header, sections: &Sections, out: &mut Vec<u8>) {
    let start = out.len();
    header.encode(out);
    out.extend_from_slice(&sections.ref_index_position.to_be_bytes());
    out.extend_from_slice(
        &((sections.obj_position << 5) | u64::from(sections.obj_id_len)).to_be_bytes(),
    );
    out.extend_from_slice(&sections.obj_index_position.to_be_bytes());
    out.extend_from_slice(&sections.log_position.to_be_bytes());
    out.extend_from_slice(&sections.log_index_position.to_be_bytes());
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Reads and checks the header and footer of a whole table.
pub(crate) fn decode(data: &[u8]) -> Result<(Header, Sections)> {
    let header = Header::decode(data, 0)?;
    let footer_len = header.version.footer_len();
    let header_len = header.version.header_len();
    if data.len() < header_len + footer_len {
        return Err(Error::corrupt(
            data.len(),
            format!(
                "the table has {} bytes, fewer than a header and footer need ({}); it was truncated",
                data.len(),
                header_len + footer_len
            ),
        ));
    }
    let footer_start = data.len() - footer_len;
    let footer = &data[footer_start..];
    let stored_crc = u32::from_be_bytes(footer[footer_len - 4..].try_into().expect("4 bytes"));
    let crc = crc32fast::hash(&footer[..footer_len - 4]);
    if crc != stored_crc {
        return Err(Error::corrupt(
            footer_start + footer_len - 4,
            format!("footer checksum mismatch: stored {stored_crc:08x}, computed {crc:08x}; the table is damaged or truncated"),
        ));
    }
    let footer_header = Header::decode(footer, footer_start)?;
    if footer_header != header {
        return Err(Error::corrupt(
            footer_start,
            "the footer does not repeat the header",
        ));
    }
    let field = |i: usize| {
        let at = header_len + 8 * i;
        u64::from_be_bytes(footer[at..at + 8].try_into().expect("8 bytes"))
    };
    let obj = field(1);
    let sections = Sections {
        ref_index_position: field(0),
        obj_position: obj >> 5,
        obj_id_len: (obj & 0x1f) as u8,
        obj_index_position: field(2),
        log_position: field(3),
        log_index_position: field(4),
    };
    for (name, position) in [
        ("ref index", sections.ref_index_position),
        ("obj section", sections.obj_position),
        ("obj index", sections.obj_index_position),
        ("log section", sections.log_position),
        ("log index", sections.log_index_position),
    ] {
        if position != 0 && (position < header_len as u64 || position >= footer_start as u64) {
            return Err(Error::corrupt(
                footer_start,
                format!("the footer places the {name} at byte {position}, outside the table's blocks (bytes {header_len}..{footer_start})"),
            ));
        }
    }
    if sections.obj_position != 0 && !(2..=31).contains(&sections.obj_id_len) {
        return Err(Error::corrupt(
            footer_start,
            format!("obj_id_len {} is outside 2..=31", sections.obj_id_len),
        ));
    }
    Ok((header, sections))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes_follow_the_version() {
        for (version, len, footer) in [
            (Version::V1, 24, 68),
            (Version::V2(ObjectFormat::Sha256), 28, 72),
        ] {
            let header = Header {
                version,
                block_size: 4096,
                min_update_index: 1,
                max_update_index: 2,
            };
            let mut out = Vec::new();
            header.encode(&mut out);
            assert_eq!(out.len(), len);
            assert_eq!(Header::decode(&out, 0).unwrap(), header);
            out.clear();
            encode_footer(&header, &Sections::default(), &mut out);
            assert_eq!(out.len(), footer);
        }
    }

    #[test]
    fn version_2_names_its_hash() {
        let header = Header {
            version: Version::V2(ObjectFormat::Sha256),
            block_size: 0x010203,
            min_update_index: 5,
            max_update_index: 9,
        };
        let mut out = Vec::new();
        header.encode(&mut out);
        assert_eq!(&out[..8], b"REFT\x02\x01\x02\x03");
        assert_eq!(&out[24..], b"s256");
    }

    #[test]
    fn every_flipped_footer_bit_is_caught() {
        let header = Header {
            version: Version::V1,
            block_size: 0,
            min_update_index: 1,
            max_update_index: 1,
        };
        let mut table = Vec::new();
        header.encode(&mut table);
        encode_footer(&header, &Sections::default(), &mut table);
        assert!(decode(&table).is_ok());
        for at in 24..table.len() {
            for bit in 0..8 {
                let mut bad = table.clone();
                bad[at] ^= 1 << bit;
                assert!(decode(&bad).is_err(), "flip at {at} bit {bit}");
            }
        }
    }
}

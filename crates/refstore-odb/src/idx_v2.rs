//! Adding entries to a pack index of version 2, the format git and
//! gix-pack write: for the large objects hashed apart from gix-pack's
//! indexer ([`crate::set_aside`]).
//!
//! The layout: magic `\377tOc` and version 2; a fan-out table of 256
//! counts (objects whose first id byte is at most i); the ids, sorted;
//! their CRC32s; their 31-bit offsets, or with the high bit set an index
//! into a table of 64-bit offsets that follows; the pack's checksum; the
//! index's own checksum.

use crate::OdbError;
use refstore_hash::{ObjectFormat, ObjectId};

const MAGIC: [u8; 8] = [0xff, b't', b'O', b'c', 0, 0, 0, 2];
const FANOUT: usize = 256 * 4;
/// Offsets at or above this go to the 64-bit table.
const LARGE_OFFSET: u64 = 0x8000_0000;

/// One object of a pack index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub(crate) id: ObjectId,
    pub(crate) crc32: u32,
    pub(crate) offset: u64,
}

/// The index `index` with `extra` added, for the pack whose checksum is
/// `pack_checksum`.
pub(crate) fn add_entries(
    index: &[u8],
    format: ObjectFormat,
    extra: &[IndexEntry],
    pack_checksum: &ObjectId,
) -> Result<Vec<u8>, OdbError> {
    let mut entries = read(index, format)?;
    entries.extend_from_slice(extra);
    entries.sort_unstable_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    write(&entries, format, pack_checksum)
}

fn read(index: &[u8], format: ObjectFormat) -> Result<Vec<IndexEntry>, OdbError> {
    let corrupt = || OdbError::Pack("the pack index just written is not version 2".into());
    if index.get(..8) != Some(&MAGIC[..]) {
        return Err(corrupt());
    }
    let u32_at = |at: usize| -> Result<u32, OdbError> {
        let bytes = index.get(at..at + 4).ok_or_else(corrupt)?;
        Ok(u32::from_be_bytes(bytes.try_into().expect("four bytes")))
    };
    let count = u32_at(8 + FANOUT - 4)? as usize;
    let hash_len = format.raw_len();
    let ids = 8 + FANOUT;
    let crcs = ids + count * hash_len;
    let offsets = crcs + count * 4;
    let large = offsets + count * 4;
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let raw = index
            .get(ids + i * hash_len..ids + (i + 1) * hash_len)
            .ok_or_else(corrupt)?;
        let id = ObjectId::from_raw(raw).ok_or_else(corrupt)?;
        let crc32 = u32_at(crcs + i * 4)?;
        let small = u32_at(offsets + i * 4)?;
        let offset = match u64::from(small) {
            o if o < LARGE_OFFSET => o,
            o => {
                let at = large + (o - LARGE_OFFSET) as usize * 8;
                let bytes = index.get(at..at + 8).ok_or_else(corrupt)?;
                u64::from_be_bytes(bytes.try_into().expect("eight bytes"))
            }
        };
        entries.push(IndexEntry { id, crc32, offset });
    }
    Ok(entries)
}

fn write(
    entries: &[IndexEntry],
    format: ObjectFormat,
    pack_checksum: &ObjectId,
) -> Result<Vec<u8>, OdbError> {
    let mut out = Vec::with_capacity(8 + FANOUT + entries.len() * (format.raw_len() + 12) + 64);
    out.extend_from_slice(&MAGIC);
    let mut fanout = [0u32; 256];
    for entry in entries {
        fanout[usize::from(entry.id.as_bytes()[0])] += 1;
    }
    let mut total = 0u32;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for entry in entries {
        out.extend_from_slice(entry.id.as_bytes());
    }
    for entry in entries {
        out.extend_from_slice(&entry.crc32.to_be_bytes());
    }
    let mut large = Vec::new();
    for entry in entries {
        let small = match entry.offset {
            o if o < LARGE_OFFSET => o as u32,
            o => {
                large.push(o);
                (LARGE_OFFSET as u32) | (large.len() as u32 - 1)
            }
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum.as_bytes());
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(&out);
    let checksum = hasher
        .try_finalize()
        .map_err(|source| OdbError::Collision { source })?;
    out.extend_from_slice(checksum.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(first: u8) -> ObjectId {
        let mut raw = [0u8; 20];
        raw[0] = first;
        raw[19] = 1;
        ObjectId::from_raw(&raw).unwrap()
    }

    #[test]
    fn entries_added_are_read_back_sorted_with_large_offsets() {
        let checksum = id(9);
        let first = write(
            &[IndexEntry {
                id: id(0x80),
                crc32: 7,
                offset: 12,
            }],
            ObjectFormat::Sha1,
            &checksum,
        )
        .unwrap();
        let extra = [
            IndexEntry {
                id: id(0xff),
                crc32: 8,
                offset: 5 << 31,
            },
            IndexEntry {
                id: id(0x01),
                crc32: 9,
                offset: 300,
            },
        ];
        let index = add_entries(&first, ObjectFormat::Sha1, &extra, &checksum).unwrap();
        let entries = read(&index, ObjectFormat::Sha1).unwrap();
        let ids: Vec<u8> = entries.iter().map(|e| e.id.as_bytes()[0]).collect();
        assert_eq!(ids, [0x01, 0x80, 0xff]);
        assert_eq!(entries[2].offset, 5 << 31);
        assert_eq!(entries[0].crc32, 9);
        // Fan-out: one object below 0x80, two up to 0xfe, three in all.
        assert_eq!(&index[8 + 0x7f * 4..8 + 0x80 * 4], &1u32.to_be_bytes());
        assert_eq!(&index[8 + 0x80 * 4..8 + 0x81 * 4], &2u32.to_be_bytes());
        assert_eq!(&index[8 + 255 * 4..8 + 256 * 4], &3u32.to_be_bytes());
        assert!(read(&index[..100], ObjectFormat::Sha1).is_err());
    }
}

//! Pack indexes (`.idx`, version 2): reading the ids and offsets of one,
//! and writing one for a pack refstore wrote.
//!
//! The format: `\377tOc`, version 2, a 256-entry fanout of cumulative
//! counts by first id byte, the sorted ids, one CRC32 per entry, one
//! 4-byte offset per entry (high bit set: an index into the 8-byte
//! offsets that follow, for packs beyond 2 GiB), the pack's checksum and
//! a checksum of everything before it.

use crate::error::MaintError;
use refstore_refs::ObjectFormat;

const MAGIC: [u8; 8] = [0xff, b't', b'O', b'c', 0, 0, 0, 2];

/// The ids and pack offsets of a version-2 index, in index (id) order.
#[derive(Debug, Clone)]
pub struct IndexEntries {
    /// Raw ids, `hash_len` bytes each, sorted.
    pub ids: Vec<u8>,
    /// The pack offset of each id.
    pub offsets: Vec<u64>,
    /// Bytes per id.
    pub hash_len: usize,
}

impl IndexEntries {
    /// Number of objects.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// True if the index holds no object.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The raw id at `position`.
    pub fn id(&self, position: usize) -> &[u8] {
        &self.ids[position * self.hash_len..(position + 1) * self.hash_len]
    }
}

/// The number of objects a version-2 index holds, from its fanout alone.
pub fn object_count(index: &[u8]) -> Result<u32, MaintError> {
    if index.get(..8) != Some(&MAGIC[..]) {
        return Err(MaintError::Format("not a version 2 pack index".into()));
    }
    word(index, 8 + 255 * 4)
}

fn word(bytes: &[u8], at: usize) -> Result<u32, MaintError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_be_bytes(b.try_into().expect("four bytes")))
        .ok_or_else(|| MaintError::Format("truncated pack index".into()))
}

/// Reads every id and offset of a version-2 index.
pub fn read(index: &[u8], hash_len: usize) -> Result<IndexEntries, MaintError> {
    let count = object_count(index)? as usize;
    let ids_at = 8 + 256 * 4;
    let offsets_at = ids_at + count * (hash_len + 4);
    let large_at = offsets_at + count * 4;
    let ids = index
        .get(ids_at..ids_at + count * hash_len)
        .ok_or_else(|| MaintError::Format("truncated pack index".into()))?
        .to_vec();
    let mut offsets = Vec::with_capacity(count);
    for i in 0..count {
        let small = word(index, offsets_at + 4 * i)?;
        if small & 0x8000_0000 == 0 {
            offsets.push(u64::from(small));
        } else {
            let at = large_at + 8 * (small & 0x7fff_ffff) as usize;
            let bytes = index
                .get(at..at + 8)
                .ok_or_else(|| MaintError::Format("truncated pack index".into()))?;
            offsets.push(u64::from_be_bytes(bytes.try_into().expect("eight bytes")));
        }
    }
    Ok(IndexEntries {
        ids,
        offsets,
        hash_len,
    })
}

/// One object of a pack being indexed.
#[derive(Debug, Clone)]
pub struct Written {
    /// Its raw id.
    pub id: Vec<u8>,
    /// Where its entry starts.
    pub offset: u64,
    /// CRC32 of the whole entry as stored.
    pub crc: u32,
}

/// Builds the version-2 index of a pack; sorts `entries` by id.
pub fn write(
    entries: &mut [Written],
    pack_checksum: &[u8],
    format: ObjectFormat,
) -> Result<Vec<u8>, MaintError> {
    entries.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    let mut out = Vec::with_capacity(8 + 1024 + entries.len() * (format.raw_len() + 12) + 40);
    out.extend_from_slice(&MAGIC);
    let mut fanout = [0u32; 256];
    for entry in entries.iter() {
        fanout[entry.id[0] as usize] += 1;
    }
    let mut total = 0u32;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for entry in entries.iter() {
        out.extend_from_slice(&entry.id);
    }
    for entry in entries.iter() {
        out.extend_from_slice(&entry.crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for entry in entries.iter() {
        if entry.offset < 0x8000_0000 {
            out.extend_from_slice(&(entry.offset as u32).to_be_bytes());
        } else {
            let n = (large.len() / 8) as u32;
            out.extend_from_slice(&(0x8000_0000 | n).to_be_bytes());
            large.extend_from_slice(&entry.offset.to_be_bytes());
        }
    }
    out.extend_from_slice(&large);
    out.extend_from_slice(pack_checksum);
    crate::checksum::append(&mut out, format)?;
    Ok(out)
}

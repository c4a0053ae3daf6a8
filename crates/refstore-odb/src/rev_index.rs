//! Pack reverse indexes (`pack-<hash>.rev`): the objects of a pack in the
//! order they appear in the pack, as positions in its `.idx`.
//!
//! Git writes one next to every pack it indexes (`pack.writeReverseIndex`,
//! on by default since git 2.41) so that finding an object's size on disk
//! or the object at an offset needs no sort at run time. The format:
//! `RIDX`, version 1, the hash function id (1 SHA-1, 2 SHA-256), one
//! 4-byte big-endian index position per object sorted by pack offset, the
//! pack's checksum, and a checksum of everything before it.

use crate::OdbError;
use refstore_hash::{ObjectFormat, ObjectId};

/// Builds the reverse index of the pack whose version-2 `.idx` is `index`.
pub fn reverse_index(
    index: &[u8],
    format: ObjectFormat,
    pack_checksum: &ObjectId,
) -> Result<Vec<u8>, OdbError> {
    let offsets = index_offsets(index, format.raw_len())?;
    let mut by_offset: Vec<u32> = (0..offsets.len() as u32).collect();
    by_offset.sort_unstable_by_key(|&position| offsets[position as usize]);

    let mut rev = Vec::with_capacity(12 + 4 * offsets.len() + 2 * format.raw_len());
    rev.extend_from_slice(b"RIDX");
    rev.extend_from_slice(&1u32.to_be_bytes());
    let hash_id: u32 = match format {
        ObjectFormat::Sha1 => 1,
        ObjectFormat::Sha256 => 2,
    };
    rev.extend_from_slice(&hash_id.to_be_bytes());
    for position in by_offset {
        rev.extend_from_slice(&position.to_be_bytes());
    }
    rev.extend_from_slice(pack_checksum.as_bytes());
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(&rev);
    let checksum = hasher
        .try_finalize()
        .map_err(|source| OdbError::Collision { source })?;
    rev.extend_from_slice(checksum.as_slice());
    Ok(rev)
}

/// The pack offset of every object of a version-2 index, in index order.
fn index_offsets(index: &[u8], hash_len: usize) -> Result<Vec<u64>, OdbError> {
    let bad = || OdbError::Pack("the pack index is not a version 2 index".into());
    if index.get(..8) != Some(&[0xff, b't', b'O', b'c', 0, 0, 0, 2][..]) {
        return Err(bad());
    }
    let word = |at: usize| -> Result<u32, OdbError> {
        let bytes = index.get(at..at + 4).ok_or_else(bad)?;
        Ok(u32::from_be_bytes(bytes.try_into().expect("four bytes")))
    };
    let count = word(8 + 255 * 4)? as usize;
    let offsets_at = 8 + 256 * 4 + count * (hash_len + 4);
    let large_at = offsets_at + count * 4;
    (0..count)
        .map(|i| {
            let small = word(offsets_at + 4 * i)?;
            if small & 0x8000_0000 == 0 {
                return Ok(u64::from(small));
            }
            let at = large_at + 8 * (small & 0x7fff_ffff) as usize;
            let bytes = index.get(at..at + 8).ok_or_else(bad)?;
            Ok(u64::from_be_bytes(bytes.try_into().expect("eight bytes")))
        })
        .collect()
}

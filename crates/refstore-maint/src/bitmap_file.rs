//! The reachability bitmap of a multi-pack-index,
//! `multi-pack-index-<checksum>.bitmap` (git's `BITM` format, version 1),
//! written.
//!
//! Layout: `BITM`, version 1 (2 bytes), flags (2 bytes: "full DAG", every
//! bitmap closed under reachability, and "hash cache"; no lookup table or
//! pseudo-merges), the number of entries (4 bytes), the
//! checksum of the multi-pack-index it belongs to; the four type bitmaps
//! (commits, trees, blobs, tags); one entry per selected commit — its
//! multi-pack-index position (4 bytes), the XOR offset (1 byte), flags (1
//! byte, 0) and its EWAH stream; the name-hash cache, one 4-byte [`name_hash`] per object in
//! index order, of the path it was found at (what lets a pack writer
//! pair versions of one file as deltas); and the checksum of everything
//! before.
//!
//! Bits are positions in the index's pseudo-pack order (its `RIDX`
//! chunk).
//!
//! An entry with XOR offset `k > 0` stores its bitmap XORed with the
//! bitmap of the entry `k` before it, as git stores most of them: the
//! commits selected are mostly near each other in history, so the XOR of
//! two is nearly empty and encodes in a few words. Each entry takes the
//! smallest of its whole bitmap and its XOR with each of the
//! [`XOR_WINDOW`] entries before it whose chain of XORed entries is
//! shorter than [`MAX_XOR_CHAIN`].

use crate::error::MaintError;
use refstore_odb::ewah::{self, Bitmap};
use refstore_refs::ObjectFormat;

/// Every bitmap is closed under reachability.
const FULL_DAG: u16 = 0x1;
/// A name-hash cache follows the entries.
const HASH_CACHE: u16 = 0x4;
/// How many earlier entries an entry may be XORed with (git searches as
/// many).
const XOR_WINDOW: usize = 10;
/// The longest chain of XORed entries: a reader resolves a whole chain to
/// read its last entry.
const MAX_XOR_CHAIN: u32 = 8;

/// git's hash of the path an object was found at: each byte (whitespace
/// skipped) enters at the top while the earlier ones shift down, so the
/// last characters, the file name and its extension, weigh most and the
/// versions of one file hash alike.
pub fn name_hash(path: &[u8]) -> u32 {
    path.iter()
        .filter(|&&c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .fold(0u32, |hash, &c| {
            (hash >> 2).wrapping_add(u32::from(c) << 24)
        })
}

/// One selected commit's bitmap.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The commit's multi-pack-index position.
    pub position: u32,
    /// Everything reachable from it, in pseudo-pack bits.
    pub reachable: Bitmap,
}

/// The bitmap file of the multi-pack-index whose checksum is `checksum`:
/// `types` are the commits, trees, blobs and tags among its objects,
/// `names` their name hashes by index position.
pub fn write(
    checksum: &[u8],
    types: &[Bitmap; 4],
    entries: &[Entry],
    names: &[u32],
    format: ObjectFormat,
) -> Result<Vec<u8>, MaintError> {
    let mut out = Vec::new();
    out.extend_from_slice(b"BITM");
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(FULL_DAG | HASH_CACHE).to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    out.extend_from_slice(checksum);
    for bitmap in types {
        ewah::encode(bitmap, &mut out);
    }
    let mut whole = Vec::new();
    let mut xored = Vec::new();
    // How many entries reading each one resolves.
    let mut chain = vec![0u32; entries.len()];
    for (n, entry) in entries.iter().enumerate() {
        whole.clear();
        ewah::encode(&entry.reachable, &mut whole);
        let mut best: (usize, Option<Vec<u8>>) = (0, None);
        for offset in 1..=XOR_WINDOW.min(n) {
            if chain[n - offset] >= MAX_XOR_CHAIN {
                continue;
            }
            let mut xor = entry.reachable.clone();
            xor.xor_assign(&entries[n - offset].reachable);
            xored.clear();
            ewah::encode(&xor, &mut xored);
            let smallest = best.1.as_ref().map_or(whole.len(), Vec::len);
            if xored.len() < smallest {
                best = (offset, Some(xored.clone()));
            }
        }
        if best.0 > 0 {
            chain[n] = chain[n - best.0] + 1;
        }
        out.extend_from_slice(&entry.position.to_be_bytes());
        out.push(best.0 as u8);
        out.push(0);
        out.extend_from_slice(best.1.as_deref().unwrap_or(&whole));
    }
    for name in names {
        out.extend_from_slice(&name.to_be_bytes());
    }
    crate::checksum::append(&mut out, format)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use refstore_odb::{ObjectKind, PackBitmap};
    use refstore_refs::ObjectId;

    #[test]
    fn name_hashes_weigh_the_end_of_the_path() {
        assert_eq!(name_hash(b""), 0);
        assert_eq!(name_hash(b"a"), u32::from(b'a') << 24);
        assert_eq!(name_hash(b"a b"), name_hash(b"ab"));
        assert_eq!(
            name_hash(b"ab"),
            ((u32::from(b'a') << 24) >> 2) + (u32::from(b'b') << 24)
        );
        // Sixteen characters on, the start no longer counts.
        let tail = b"/a/long/path/to/file.rs";
        let mut one = b"x".to_vec();
        one.extend_from_slice(tail);
        let mut other = b"y".to_vec();
        other.extend_from_slice(tail);
        assert_eq!(name_hash(&one), name_hash(&other));
    }

    #[test]
    fn written_bitmap_is_read_back_by_the_reader() {
        // Five objects: a commit (bit 0) reaching a tree (1) and a blob
        // (2); a second commit (3) reaching everything but a tag (4).
        let types = [
            [0, 3].into_iter().collect(),
            [1].into_iter().collect(),
            [2].into_iter().collect(),
            [4].into_iter().collect(),
        ];
        let entries = [
            Entry {
                position: 2,
                reachable: [0, 1, 2].into_iter().collect(),
            },
            Entry {
                position: 0,
                reachable: [0, 1, 2, 3].into_iter().collect(),
            },
        ];
        let checksum = [7u8; 20];
        let names = [0, 0, name_hash(b"d/f.txt"), 0, 0];
        let bytes = write(&checksum, &types, &entries, &names, ObjectFormat::Sha1).unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        let vfs = refstore_fs::real::RealFs::new();
        let mapped = refstore_fs::Vfs::read_mapped(&vfs, file.path()).unwrap();
        let parsed = PackBitmap::parse(mapped, 5, &ObjectId::from_raw(&checksum).unwrap()).unwrap();
        assert_eq!(parsed.entries(), 2);
        assert_eq!(parsed.kind_at(4), Some(ObjectKind::Tag));
        let reach = parsed.reachable_from(0).unwrap().unwrap();
        assert_eq!(reach.ones().collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert!(parsed.reachable_from(1).unwrap().is_none());
        assert_eq!(parsed.name_hash(2), Some(name_hash(b"d/f.txt")));
        assert_eq!(parsed.name_hash(0), Some(0));
        // Another index's checksum: refused.
        let mapped = refstore_fs::Vfs::read_mapped(&vfs, file.path()).unwrap();
        assert!(PackBitmap::parse(mapped, 5, &ObjectId::from_raw(&[8u8; 20]).unwrap()).is_err());
    }
}

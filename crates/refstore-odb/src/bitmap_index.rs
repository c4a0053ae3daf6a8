//! The reachability bitmap of a repository's packs, tied to the pack it
//! numbers: bit positions translated to and from [`PackedAt`].
//!
//! git keeps at most one bitmap per repository; when several packs have
//! one, it uses the first it finds and ignores the others, and so does
//! [`BitmapIndex::open`]. A bitmap that cannot be used (damaged, or left
//! behind by a pack it no longer matches) is reported as an error so the
//! caller can count objects by walking them instead.

use crate::bitmap::PackBitmap;
use crate::ewah::Bitmap;
use crate::{OdbError, PackedAt, Packs};
use refstore_fs::Vfs;
use std::sync::Arc;

/// A pack's bitmap with the pack's order of objects.
#[derive(Debug)]
pub struct BitmapIndex {
    pack: u32,
    bitmap: PackBitmap,
    /// The index position of each bit.
    positions: Vec<u32>,
    /// The bit of each index position.
    bits: Vec<u32>,
}

impl BitmapIndex {
    /// The bitmap of the first pack of `packs` that has one (read through
    /// `vfs`), or `None` if none has. A damaged bitmap is an error.
    pub fn open(vfs: &dyn Vfs, packs: &Packs) -> Result<Option<BitmapIndex>, OdbError> {
        for pack in 0..packs.len() as u32 {
            let path = packs.pack_path(pack).with_extension("bitmap");
            let data = match vfs.read_mapped(&path) {
                Ok(data) => data,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            };
            let objects = packs.objects_in(pack);
            let checksum = packs.pack_checksum(pack);
            let bitmap = PackBitmap::parse(data, objects, checksum.as_slice(), checksum.kind())
                .map_err(|e| OdbError::Pack(format!("{}: {e}", path.display())))?;
            let positions: Vec<u32> = packs.pack_order(pack).collect();
            let mut bits = vec![0; positions.len()];
            for (bit, &position) in positions.iter().enumerate() {
                bits[position as usize] = bit as u32;
            }
            return Ok(Some(BitmapIndex {
                pack,
                bitmap,
                positions,
                bits,
            }));
        }
        Ok(None)
    }

    /// The pack the bitmap numbers.
    pub fn pack(&self) -> u32 {
        self.pack
    }

    /// How many objects it numbers: bits `0..objects()`.
    pub fn objects(&self) -> usize {
        self.positions.len()
    }

    /// The bitmap file itself: type bitmaps, name hashes.
    pub fn file(&self) -> &PackBitmap {
        &self.bitmap
    }

    /// The bit of the object stored at `at`, if it is in the bitmap's pack.
    pub fn bit_of(&self, at: PackedAt) -> Option<usize> {
        (at.pack == self.pack).then(|| self.bits[at.position as usize] as usize)
    }

    /// Where the object of bit `bit` (below [`BitmapIndex::objects`]) is.
    pub fn at_bit(&self, bit: usize) -> PackedAt {
        PackedAt {
            pack: self.pack,
            position: self.positions[bit],
        }
    }

    /// Everything reachable from the commit stored at `at`, if it has a
    /// stored bitmap.
    pub fn reachable_from(&self, at: PackedAt) -> Result<Option<Arc<Bitmap>>, OdbError> {
        if at.pack != self.pack || !self.bitmap.has_commit(at.position) {
            return Ok(None);
        }
        self.bitmap.reachable_from(at.position)
    }

    /// The name hash git recorded for the object of bit `bit`, if any.
    pub fn name_hash(&self, bit: usize) -> Option<u32> {
        self.bitmap.name_hash(self.positions[bit])
    }
}

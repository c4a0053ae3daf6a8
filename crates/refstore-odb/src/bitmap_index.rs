//! The reachability bitmap of a repository's packs, tied to the objects it
//! numbers: bit positions translated to and from [`PackedAt`].
//!
//! A bitmap belongs either to a multi-pack index
//! (`multi-pack-index-<checksum>.bitmap`) or to one pack
//! (`pack-<hash>.bitmap`). git uses the multi-pack index's when there is
//! one, and otherwise the first pack bitmap it finds, ignoring the others;
//! so does [`BitmapIndex::open`].
//!
//! A pack's bitmap numbers its objects in pack order (by offset) and names
//! its commits by `.idx` position. A multi-pack index's numbers them in its
//! pseudo-pack order — packs one after the other, the preferred pack
//! first, each by offset, every object once (in the pack the index chose
//! for it) — given by the index's `RIDX` chunk or its `.rev` file as a list
//! of index positions; it names commits by multi-pack index position.
//!
//! A bitmap that cannot be used (damaged, or left behind by packs it no
//! longer matches) is an error, so the caller can count objects by walking
//! them instead.

use crate::bitmap::PackBitmap;
use crate::ewah::Bitmap;
use crate::{OdbError, PackedAt, Packs};
use refstore_fs::Vfs;
use refstore_hash::ObjectId;
use std::path::Path;
use std::sync::Arc;

/// No bit: an object copy the bitmap does not number.
const NONE: u32 = u32::MAX;

/// A bitmap with the order of the objects it numbers.
#[derive(Debug)]
pub struct BitmapIndex {
    bitmap: PackBitmap,
    /// Where the object of each bit is stored.
    stored: Vec<PackedAt>,
    /// The bitmap file's own number of each bit's object (`.idx` or
    /// multi-pack index position).
    keys: Vec<u32>,
    /// The bit of each of the file's numbers.
    bit_of_key: Vec<u32>,
    /// By pack of [`Packs`]: the bit of each index position (empty for
    /// packs the bitmap does not cover).
    bits: Vec<Vec<u32>>,
}

impl BitmapIndex {
    /// The bitmap of the packs of `objects_dir` (read through `vfs`), or
    /// `None` if there is none. A damaged or stale bitmap is an error.
    pub fn open(
        vfs: &dyn Vfs,
        objects_dir: &Path,
        packs: &Packs,
    ) -> Result<Option<BitmapIndex>, OdbError> {
        if let Some(index) = open_midx_bitmap(vfs, &objects_dir.join("pack"), packs)? {
            return Ok(Some(index));
        }
        for pack in 0..packs.len() as u32 {
            let path = packs.pack_path(pack).with_extension("bitmap");
            let Some(data) = read(vfs, &path)? else {
                continue;
            };
            let objects = packs.objects_in(pack);
            let checksum = packs.pack_checksum(pack);
            let bitmap = PackBitmap::parse(data, objects, &checksum)
                .map_err(|e| OdbError::Pack(format!("{}: {e}", path.display())))?;
            let keys: Vec<u32> = packs.pack_order(pack).collect();
            let stored = keys
                .iter()
                .map(|&position| PackedAt { pack, position })
                .collect();
            let bit_of_key = inverse(&keys, keys.len())
                .ok_or_else(|| OdbError::Pack(format!("{}: bad pack order", path.display())))?;
            let mut bits = vec![Vec::new(); packs.len()];
            bits[pack as usize].clone_from(&bit_of_key);
            return Ok(Some(BitmapIndex {
                bitmap,
                stored,
                keys,
                bit_of_key,
                bits,
            }));
        }
        Ok(None)
    }

    /// How many objects it numbers: bits `0..objects()`.
    pub fn objects(&self) -> usize {
        self.stored.len()
    }

    /// The bitmap file itself: type bitmaps, name hashes.
    pub fn file(&self) -> &PackBitmap {
        &self.bitmap
    }

    /// The bit of the object copy stored at `at`, if the bitmap numbers
    /// that copy.
    pub fn bit_of(&self, at: PackedAt) -> Option<usize> {
        let bit = *self.bits.get(at.pack as usize)?.get(at.position as usize)?;
        (bit != NONE).then_some(bit as usize)
    }

    /// Where the object of bit `bit` (below [`BitmapIndex::objects`]) is.
    pub fn at_bit(&self, bit: usize) -> PackedAt {
        self.stored[bit]
    }

    /// The bits of the commits with a stored bitmap.
    pub fn commits_with_bitmaps(&self) -> Vec<usize> {
        self.bitmap
            .commit_positions()
            .map(|key| self.bit_of_key[key as usize] as usize)
            .collect()
    }

    /// Everything reachable from the commit of bit `bit`, if it has a
    /// stored bitmap.
    pub fn reachable_from(&self, bit: usize) -> Result<Option<Arc<Bitmap>>, OdbError> {
        match self.keys.get(bit) {
            Some(&key) if self.bitmap.has_commit(key) => self.bitmap.reachable_from(key),
            _ => Ok(None),
        }
    }

    /// The name hash git recorded for the object of bit `bit`, if any.
    pub fn name_hash(&self, bit: usize) -> Option<u32> {
        self.bitmap.name_hash(*self.keys.get(bit)?)
    }
}

/// The bitmap of the multi-pack index in `pack_dir`, if it has one.
fn open_midx_bitmap(
    vfs: &dyn Vfs,
    pack_dir: &Path,
    packs: &Packs,
) -> Result<Option<BitmapIndex>, OdbError> {
    let midx_path = pack_dir.join("multi-pack-index");
    let Some(midx_data) = read(vfs, &midx_path)? else {
        return Ok(None);
    };
    let bad = |what: &str| OdbError::Pack(format!("{}: {what}", midx_path.display()));
    let ridx = ridx_chunk(&midx_data);
    let midx = gix_pack::multi_index::File::from_data(midx_data, midx_path.clone(), None)
        .map_err(|e| bad(&e.to_string()))?;
    let checksum = ObjectId::from_gix(&midx.checksum());
    let bitmap_path = pack_dir.join(format!("multi-pack-index-{checksum}.bitmap"));
    let Some(data) = read(vfs, &bitmap_path)? else {
        return Ok(None);
    };
    let objects = midx.num_objects();
    let bitmap = PackBitmap::parse(data, objects, &checksum)
        .map_err(|e| OdbError::Pack(format!("{}: {e}", bitmap_path.display())))?;
    // The pseudo-pack order: the RIDX chunk, or the .rev file.
    let keys = match ridx {
        Some(keys) => keys?,
        None => {
            let rev_path = pack_dir.join(format!("multi-pack-index-{checksum}.rev"));
            let rev = read(vfs, &rev_path)?.ok_or_else(|| {
                bad("its bitmap has no object order (no RIDX chunk, no .rev file)")
            })?;
            rev_positions(&rev, objects as usize, checksum.as_bytes())
                .ok_or_else(|| OdbError::Pack(format!("{}: corrupt", rev_path.display())))?
        }
    };
    let bit_of_key =
        inverse(&keys, objects as usize).ok_or_else(|| bad("its object order is corrupt"))?;
    // Each pack the index names, as numbered in `packs`.
    let pack_numbers: Vec<Option<u32>> = midx
        .index_names()
        .iter()
        .map(|name| {
            let path = pack_dir.join(name).with_extension("pack");
            (0..packs.len() as u32).find(|&p| packs.pack_path(p) == path)
        })
        .collect();
    let mut stored = Vec::with_capacity(keys.len());
    let mut bits: Vec<Vec<u32>> = vec![Vec::new(); packs.len()];
    for (bit, &key) in keys.iter().enumerate() {
        let (pack_id, offset) = midx
            .pack_id_and_pack_offset_at_index(key)
            .map_err(|e| bad(&e.to_string()))?;
        let pack = pack_numbers
            .get(pack_id as usize)
            .copied()
            .flatten()
            .ok_or_else(|| bad("it names a pack that is not there"))?;
        let at = packs
            .at_offset(pack, offset)
            .filter(|&at| packs.id(at) == ObjectId::from_gix(midx.oid_at_index(key)))
            .ok_or_else(|| bad("it does not match its packs"))?;
        let table = &mut bits[pack as usize];
        if table.is_empty() {
            table.resize(packs.objects_in(pack) as usize, NONE);
        }
        table[at.position as usize] = bit as u32;
        stored.push(at);
    }
    Ok(Some(BitmapIndex {
        bitmap,
        stored,
        keys,
        bit_of_key,
        bits,
    }))
}

/// The positions of the `RIDX` chunk of the multi-pack index `midx`, if
/// it has one: `Some(Err)` if it is malformed.
fn ridx_chunk(midx: &[u8]) -> Option<Result<Vec<u32>, OdbError>> {
    let bad = || {
        Err(OdbError::Pack(
            "multi-pack-index: corrupt chunk table".into(),
        ))
    };
    // MIDX, version, hash, chunk count, bases, pack count; then the table.
    let chunks = *midx.get(6)? as usize;
    let entry = |n: usize| -> Option<([u8; 4], u64)> {
        let at = 12 + 12 * n;
        let bytes = midx.get(at..at + 12)?;
        Some((
            bytes[..4].try_into().ok()?,
            u64::from_be_bytes(bytes[4..].try_into().ok()?),
        ))
    };
    for n in 0..chunks {
        let (id, start) = entry(n)?;
        if &id != b"RIDX" {
            continue;
        }
        let Some((_, end)) = entry(n + 1) else {
            return Some(bad());
        };
        let Some(bytes) = midx.get(start as usize..end as usize) else {
            return Some(bad());
        };
        if bytes.len() % 4 != 0 {
            return Some(bad());
        }
        return Some(Ok(bytes
            .chunks_exact(4)
            .map(|w| u32::from_be_bytes(w.try_into().expect("four bytes")))
            .collect()));
    }
    None
}

/// The positions of a multi-pack index `.rev` file (the format of a pack's
/// `.rev`, ending with the index's checksum and its own).
fn rev_positions(rev: &[u8], objects: usize, checksum: &[u8]) -> Option<Vec<u32>> {
    let hash_len = checksum.len();
    if rev.len() != 12 + 4 * objects + 2 * hash_len || &rev[..4] != b"RIDX" {
        return None;
    }
    let body = &rev[12..12 + 4 * objects];
    if &rev[12 + 4 * objects..12 + 4 * objects + hash_len] != checksum {
        return None;
    }
    Some(
        body.chunks_exact(4)
            .map(|w| u32::from_be_bytes(w.try_into().expect("four bytes")))
            .collect(),
    )
}

/// The inverse of the permutation `keys` of `0..len`; `None` if it is none.
fn inverse(keys: &[u32], len: usize) -> Option<Vec<u32>> {
    if keys.len() != len {
        return None;
    }
    let mut inverse = vec![NONE; len];
    for (bit, &key) in keys.iter().enumerate() {
        let slot = inverse.get_mut(key as usize)?;
        if *slot != NONE {
            return None;
        }
        *slot = bit as u32;
    }
    Some(inverse)
}

/// The file at `path`, or `None` if there is none.
fn read(vfs: &dyn Vfs, path: &Path) -> Result<Option<refstore_fs::Mapped>, OdbError> {
    match vfs.read_mapped(path) {
        Ok(data) => Ok(Some(data)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

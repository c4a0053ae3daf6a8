//! The `multi-pack-index` (git's MIDX format, version 1): one sorted list
//! of every object of a set of packs with the pack and offset to read it
//! from, so a reader looks an object up once instead of in every pack.
//!
//! Layout: `MIDX`, version 1, hash id (1 SHA-1, 2 SHA-256), the number of
//! chunks, 0 base files, the number of packs; a chunk table of (4-byte
//! id, 8-byte offset) rows ending with a zero id at the end of the last
//! chunk; the chunks — `PNAM` (the packs' `.idx` names, sorted, each
//! NUL-terminated, padded to 4 bytes), `OIDF` (fanout), `OIDL` (sorted
//! ids), `OOFF` (pack number and 31-bit offset per object, or with the
//! high bit an index into) `LOFF` (8-byte offsets, only when a pack
//! exceeds 2 GiB), `RIDX` (the objects in pseudo-pack order, as index
//! positions); then the checksum of everything before.
//!
//! The pseudo-pack order is the order a multi-pack bitmap numbers its bits
//! in: the preferred pack's objects first, then each other pack's in
//! `PNAM` order, each pack's by offset. [`write`] takes the preferred pack
//! first and resolves every object present in several packs to the first
//! listed, so the preferred pack gives every one of its objects: git reuses
//! the preferred pack's bytes verbatim for the first bits of a bitmap, and
//! that is only right when those bits are exactly that pack.

use crate::error::MaintError;
use crate::idx::IndexEntries;
use refstore_refs::ObjectFormat;

const OIDF: u32 = u32::from_be_bytes(*b"OIDF");
const OIDL: u32 = u32::from_be_bytes(*b"OIDL");
const OOFF: u32 = u32::from_be_bytes(*b"OOFF");
const LOFF: u32 = u32::from_be_bytes(*b"LOFF");
const PNAM: u32 = u32::from_be_bytes(*b"PNAM");
const RIDX: u32 = u32::from_be_bytes(*b"RIDX");

/// What a multi-pack-index says: its packs and its object ids.
#[derive(Debug, Clone, Default)]
pub struct Midx {
    /// The `.idx` names of its packs, sorted.
    pub packs: Vec<String>,
    /// Every object id, sorted, `hash_len` bytes each.
    pub ids: Vec<u8>,
    /// Bytes per id.
    pub hash_len: usize,
    /// Its trailing checksum, which names its bitmap.
    pub checksum: Vec<u8>,
    /// True if it has a `RIDX` chunk (a pseudo-pack order).
    pub has_order: bool,
}

impl Midx {
    /// True if `id` is one of its objects.
    pub fn contains(&self, id: &[u8]) -> bool {
        self.position(id).is_some()
    }

    /// The position of `id` in its sorted list of ids.
    pub fn position(&self, id: &[u8]) -> Option<u32> {
        let n = self.ids.len() / self.hash_len.max(1);
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let at = &self.ids[mid * self.hash_len..(mid + 1) * self.hash_len];
            match at.cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// The name of its bitmap, `multi-pack-index-<checksum>.bitmap`.
    pub fn bitmap_name(&self) -> String {
        let hex: String = self.checksum.iter().map(|b| format!("{b:02x}")).collect();
        format!("multi-pack-index-{hex}.bitmap")
    }

    /// Parses a multi-pack-index file.
    pub fn parse(bytes: &[u8], hash_len: usize) -> Result<Midx, MaintError> {
        let bad = |what: &str| MaintError::Format(format!("multi-pack-index: {what}"));
        if bytes.len() < 12 + hash_len || &bytes[..4] != b"MIDX" {
            return Err(bad("bad signature"));
        }
        if bytes[4] != 1 {
            return Err(bad("unsupported version"));
        }
        let chunks = bytes[6] as usize;
        let packs = u32::from_be_bytes(bytes[8..12].try_into().expect("4")) as usize;
        let mut table = Vec::with_capacity(chunks + 1);
        for n in 0..=chunks {
            let at = 12 + 12 * n;
            let row = bytes.get(at..at + 12).ok_or_else(|| bad("truncated"))?;
            let id = u32::from_be_bytes(row[..4].try_into().expect("4"));
            let offset = u64::from_be_bytes(row[4..].try_into().expect("8")) as usize;
            table.push((id, offset));
        }
        let chunk = |want: u32| -> Result<&[u8], MaintError> {
            let n = table[..chunks]
                .iter()
                .position(|&(id, _)| id == want)
                .ok_or_else(|| bad("missing chunk"))?;
            let start = table[n].1;
            let end = table[n + 1].1;
            bytes
                .get(start..end)
                .ok_or_else(|| bad("chunk out of bounds"))
        };
        let names = chunk(PNAM)?;
        let packs: Vec<String> = names
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .take(packs)
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect();
        let ids = chunk(OIDL)?.to_vec();
        if ids.len() % hash_len != 0 {
            return Err(bad("bad object id list"));
        }
        let has_order = table[..chunks].iter().any(|&(id, _)| id == RIDX);
        Ok(Midx {
            packs,
            ids,
            hash_len,
            checksum: bytes[bytes.len() - hash_len..].to_vec(),
            has_order,
        })
    }
}

/// One pack to cover: its `.idx` name and its entries.
pub struct MidxPack<'a> {
    /// `pack-<hash>.idx`.
    pub index_name: String,
    /// Its ids and offsets.
    pub entries: &'a IndexEntries,
}

/// Where the multi-pack-index reads one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen {
    /// The pack, as its place in the list given to [`write`].
    pub pack: usize,
    /// Its position in that pack's index.
    pub position: u32,
    /// Its offset in that pack.
    pub offset: u64,
}

/// A multi-pack-index built by [`write`].
#[derive(Debug, Clone)]
pub struct Written {
    /// The file.
    pub bytes: Vec<u8>,
    /// What it says.
    pub midx: Midx,
    /// By index position: the copy of each object it chose.
    pub chosen: Vec<Chosen>,
    /// Index positions in pseudo-pack order (its `RIDX` chunk).
    pub order: Vec<u32>,
}

/// Builds a multi-pack-index over `packs`, the first of them the preferred
/// pack. Where an object is in several packs, the copy in the pack listed
/// first in `packs` is chosen.
pub fn write(packs: &[MidxPack<'_>], format: ObjectFormat) -> Result<Written, MaintError> {
    let hash_len = format.raw_len();
    // Pack numbers follow the sorted names.
    let mut order: Vec<usize> = (0..packs.len()).collect();
    order.sort_by(|&a, &b| packs[a].index_name.cmp(&packs[b].index_name));
    let mut number = vec![0u32; packs.len()];
    for (n, &pack) in order.iter().enumerate() {
        number[pack] = n as u32;
    }
    // (id, preference, index position); sorted by id then preference.
    let mut objects: Vec<(&[u8], usize, u32)> = Vec::new();
    for (preference, pack) in packs.iter().enumerate() {
        for position in 0..pack.entries.len() {
            objects.push((pack.entries.id(position), preference, position as u32));
        }
    }
    objects.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    objects.dedup_by(|later, earlier| later.0 == earlier.0);
    let chosen: Vec<Chosen> = objects
        .iter()
        .map(|&(_, pack, position)| Chosen {
            pack,
            position,
            offset: packs[pack].entries.offsets[position as usize],
        })
        .collect();

    let mut pnam = Vec::new();
    for &pack in &order {
        pnam.extend_from_slice(packs[pack].index_name.as_bytes());
        pnam.push(0);
    }
    while pnam.len() % 4 != 0 {
        pnam.push(0);
    }
    let mut oidf = Vec::with_capacity(1024);
    let mut counts = [0u32; 256];
    for object in &objects {
        counts[object.0[0] as usize] += 1;
    }
    let mut total = 0u32;
    for count in counts {
        total += count;
        oidf.extend_from_slice(&total.to_be_bytes());
    }
    let mut oidl = Vec::with_capacity(objects.len() * hash_len);
    for object in &objects {
        oidl.extend_from_slice(object.0);
    }
    let large_needed = chosen.iter().any(|c| c.offset > 0x7fff_ffff);
    let mut ooff = Vec::with_capacity(objects.len() * 8);
    let mut loff = Vec::new();
    for c in &chosen {
        ooff.extend_from_slice(&number[c.pack].to_be_bytes());
        if large_needed && c.offset >> 31 != 0 {
            let n = (loff.len() / 8) as u32;
            ooff.extend_from_slice(&(0x8000_0000 | n).to_be_bytes());
            loff.extend_from_slice(&c.offset.to_be_bytes());
        } else {
            ooff.extend_from_slice(&(c.offset as u32).to_be_bytes());
        }
    }
    let pseudo = pseudo_pack_order(&chosen, &number);
    let ridx: Vec<u8> = pseudo.iter().flat_map(|p| p.to_be_bytes()).collect();
    let mut chunks: Vec<(u32, &[u8])> =
        vec![(PNAM, &pnam), (OIDF, &oidf), (OIDL, &oidl), (OOFF, &ooff)];
    if large_needed {
        chunks.push((LOFF, &loff));
    }
    chunks.push((RIDX, &ridx));

    let mut out = Vec::new();
    out.extend_from_slice(b"MIDX");
    out.push(1);
    out.push(format.file_id());
    out.push(chunks.len() as u8);
    out.push(0);
    out.extend_from_slice(&(packs.len() as u32).to_be_bytes());
    let chunks: Vec<([u8; 4], &[u8])> = chunks
        .into_iter()
        .map(|(id, chunk)| (id.to_be_bytes(), chunk))
        .collect();
    crate::chunk_file::append_chunks(&mut out, &chunks);
    crate::checksum::append(&mut out, format)?;
    let midx = Midx {
        packs: order.iter().map(|&p| packs[p].index_name.clone()).collect(),
        ids: oidl,
        hash_len,
        checksum: out[out.len() - hash_len..].to_vec(),
        has_order: true,
    };
    Ok(Written {
        bytes: out,
        midx,
        chosen,
        order: pseudo,
    })
}

/// Index positions sorted by pseudo-pack order: the preferred pack (the
/// first given) first, the others by pack number, each by offset.
fn pseudo_pack_order(chosen: &[Chosen], number: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..chosen.len() as u32).collect();
    let key = |c: &Chosen| (c.pack != 0, number[c.pack], c.offset);
    order.sort_unstable_by_key(|&n| key(&chosen[n as usize]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idx::{self, Written};

    fn entries(ids: &[u8], offsets: &[u64]) -> IndexEntries {
        let mut written: Vec<Written> = ids
            .iter()
            .zip(offsets)
            .map(|(&b, &offset)| Written {
                id: vec![b; 20],
                offset,
                crc: 0,
            })
            .collect();
        let bytes = idx::write(&mut written, &[0; 20], ObjectFormat::Sha1).unwrap();
        idx::read(&bytes, 20).unwrap()
    }

    #[test]
    fn written_multi_pack_index_parses_back() {
        // The pack listed first wins a shared object; large offsets go to
        // LOFF.
        let a = entries(&[1, 7, 9], &[12, 40, 0x9000_0000]);
        let b = entries(&[7, 3], &[12, 30]);
        let packs = [
            MidxPack {
                index_name: "pack-b.idx".into(),
                entries: &b,
            },
            MidxPack {
                index_name: "pack-a.idx".into(),
                entries: &a,
            },
        ];
        let written = write(&packs, ObjectFormat::Sha1).unwrap();
        let (bytes, midx) = (&written.bytes, &written.midx);
        assert_eq!(midx.packs, ["pack-a.idx", "pack-b.idx"]);
        let parsed = Midx::parse(bytes, 20).unwrap();
        assert_eq!(parsed.packs, midx.packs);
        assert_eq!(parsed.ids.len(), 4 * 20);
        for id in [1u8, 3, 7, 9] {
            assert!(parsed.contains(&[id; 20]));
        }
        assert!(!parsed.contains(&[2; 20]));
        assert!(parsed.has_order);
        assert_eq!(parsed.checksum, midx.checksum);
        // Six chunks: PNAM, OIDF, OIDL, OOFF, LOFF, RIDX.
        assert_eq!(bytes[6], 6);
        // The pseudo-pack order: pack b (preferred) by offset — 7 at 12
        // (b's copy chosen), 3 at 30 — then pack a without 7: 1, 9.
        let ids: Vec<u8> = written
            .order
            .iter()
            .map(|&n| parsed.ids[n as usize * 20])
            .collect();
        assert_eq!(ids, [7, 3, 1, 9]);
        assert_eq!(
            written.chosen[parsed.position(&[7; 20]).unwrap() as usize].pack,
            0
        );
    }
}

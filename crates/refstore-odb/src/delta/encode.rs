//! Describing a target as a delta from a base. Matches are found as git
//! does, by indexing the base at fixed-size blocks and extending every
//! block match as far as the bytes agree, both ways.

use std::collections::HashMap;

/// The block size the base is indexed at: shorter matches are inserted.
const BLOCK: usize = 16;
/// The most bytes one copy instruction takes (git writes no longer ones).
const MAX_COPY: usize = 0x1_0000;
/// The most bytes one insert instruction may carry.
const MAX_INSERT: usize = 127;

/// The base indexed for delta searches against it.
pub struct DeltaIndex<'a> {
    base: &'a [u8],
    /// Block hash → the offset of the last base block with that hash.
    blocks: HashMap<u64, usize>,
}

impl<'a> DeltaIndex<'a> {
    /// Indexes `base`.
    pub fn new(base: &'a [u8]) -> Self {
        let mut blocks = HashMap::with_capacity(base.len() / BLOCK + 1);
        let mut offset = 0;
        while offset + BLOCK <= base.len() {
            blocks.insert(block_hash(&base[offset..offset + BLOCK]), offset);
            offset += BLOCK;
        }
        DeltaIndex { base, blocks }
    }

    /// The delta turning the base into `target`, or `None` if it would not
    /// be shorter than `limit` bytes.
    pub fn delta(&self, target: &[u8], limit: usize) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(limit.min(target.len() / 2 + 32));
        write_size(&mut out, self.base.len());
        write_size(&mut out, target.len());
        let mut pending = 0; // start of bytes not yet emitted
        let mut at = 0;
        while at + BLOCK <= target.len() {
            let Some(&base_at) = self.blocks.get(&block_hash(&target[at..at + BLOCK])) else {
                at += 1;
                continue;
            };
            if self.base[base_at..base_at + BLOCK] != target[at..at + BLOCK] {
                at += 1;
                continue;
            }
            // Extend the match backwards over bytes not yet emitted, then
            // forwards as far as both agree.
            let mut start = at;
            let mut base_start = base_at;
            while start > pending
                && base_start > 0
                && target[start - 1] == self.base[base_start - 1]
            {
                start -= 1;
                base_start -= 1;
            }
            let mut end = at + BLOCK;
            let mut base_end = base_at + BLOCK;
            while end < target.len()
                && base_end < self.base.len()
                && target[end] == self.base[base_end]
            {
                end += 1;
                base_end += 1;
            }
            insert(&mut out, &target[pending..start]);
            copy(&mut out, base_start, end - start);
            pending = end;
            at = end;
            if out.len() >= limit {
                return None;
            }
        }
        insert(&mut out, &target[pending..]);
        (out.len() < limit).then_some(out)
    }
}

/// FNV-1a over one block: cheap, and collisions only cost a comparison.
fn block_hash(block: &[u8]) -> u64 {
    block.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn write_size(out: &mut Vec<u8>, mut size: usize) {
    loop {
        let byte = (size & 0x7f) as u8;
        size >>= 7;
        if size == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn insert(out: &mut Vec<u8>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let n = bytes.len().min(MAX_INSERT);
        out.push(n as u8);
        out.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
    }
}

fn copy(out: &mut Vec<u8>, mut offset: usize, mut size: usize) {
    while size > 0 {
        let n = size.min(MAX_COPY);
        let at = out.len();
        out.push(0x80);
        for i in 0..4 {
            let byte = (offset >> (8 * i)) as u8;
            if byte != 0 {
                out[at] |= 1 << i;
                out.push(byte);
            }
        }
        for i in 0..3 {
            let byte = (n >> (8 * i)) as u8;
            if byte != 0 {
                out[at] |= 0x10 << i;
                out.push(byte);
            }
        }
        offset += n;
        size -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Applies a delta with the decoder that unpacks received packs
    /// (which git's own deltas exercise in the ingest tests).
    fn apply(base: &[u8], delta: &[u8]) -> Vec<u8> {
        super::super::apply::apply_delta(base, delta).expect("a valid delta")
    }

    #[test]
    fn similar_texts_make_small_deltas() {
        let base: Vec<u8> = (0..200)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut target = base.clone();
        target.splice(500..500, b"an inserted line\n".iter().copied());
        target.extend_from_slice(b"the end\n");
        let delta = DeltaIndex::new(&base).delta(&target, target.len()).unwrap();
        assert!(delta.len() < 60, "{} bytes", delta.len());
        assert_eq!(apply(&base, &delta), target);
    }

    #[test]
    fn unrelated_data_gives_no_delta_under_the_limit() {
        let base = vec![b'a'; 1000];
        let target: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(DeltaIndex::new(&base).delta(&target, 500), None);
    }

    #[test]
    fn long_copies_are_split() {
        let base: Vec<u8> = (0..(MAX_COPY + 100) as u32)
            .map(|i| (i % 253) as u8)
            .collect();
        let delta = DeltaIndex::new(&base).delta(&base, base.len()).unwrap();
        assert_eq!(apply(&base, &delta), base);
    }

    proptest! {
        #[test]
        fn deltas_rebuild_their_target(
            base in prop::collection::vec(0u8..4, 0..600),
            edits in prop::collection::vec((0usize..600, prop::collection::vec(any::<u8>(), 0..20)), 0..6),
        ) {
            let mut target = base.clone();
            for (at, bytes) in edits {
                let at = at.min(target.len());
                target.splice(at..at, bytes);
            }
            if let Some(delta) = DeltaIndex::new(&base).delta(&target, usize::MAX) {
                prop_assert_eq!(apply(&base, &delta), target);
            }
        }
    }
}

//! Hashing for maps and sets keyed by object ids.
//!
//! An id is already a uniformly distributed hash, so its first eight bytes
//! serve as the map's hash: SipHash, the standard library's default, costs
//! as much as the inserts themselves in a walk over a large history.
//! Its methods are marked for inlining: maps in other crates call them in
//! their innermost loops.

/// Builds [`IdHash`]ers: `HashMap<ObjectId, V, IdHasher>`.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher;

impl std::hash::BuildHasher for IdHasher {
    type Hasher = IdHash;
    #[inline]
    fn build_hasher(&self) -> IdHash {
        IdHash(0)
    }
}

/// The hasher [`IdHasher`] builds.
#[derive(Debug)]
pub struct IdHash(u64);

impl std::hash::Hasher for IdHash {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Ids are written whole (after a short discriminant): keep the
        // first eight bytes of the longest write, mixed with what came
        // before for anything shorter.
        if bytes.len() >= 8 {
            self.0 ^= u64::from_le_bytes(bytes[..8].try_into().expect("eight bytes"));
        } else {
            for &b in bytes {
                self.0 = self.0.rotate_left(8) ^ u64::from(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectId;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn ids_differing_in_their_first_bytes_hash_apart() {
        let ids: Vec<ObjectId> = (0..=255u8)
            .map(|b| {
                let mut raw = [0x11; 20];
                raw[0] = b;
                ObjectId::from_raw(&raw).unwrap()
            })
            .collect();
        let hashes: HashSet<u64> = ids.iter().map(|id| IdHasher.hash_one(id)).collect();
        assert_eq!(hashes.len(), ids.len());
        let set: HashSet<ObjectId, IdHasher> = ids.iter().copied().collect();
        assert!(ids.iter().all(|id| set.contains(id)));
    }
}

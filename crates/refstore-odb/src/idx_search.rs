//! Finding an object id in a pack index. Ids are hashes, spread evenly
//! over their range, so the position of an id among the sorted ones is
//! well guessed from its value: a few guesses land next to it where a
//! bisection of a million ids takes twenty probes, each a cache miss in a
//! walk that looks up every tree it reads. Guesses are only the first
//! steps: bisection finishes, so ids made to cluster cost at most a few
//! probes more than a plain bisection.
//!
//! Probes compare the first eight bytes as one number and the rest only
//! when those are equal.

use std::cmp::Ordering;

/// Guessing stops after this many probes, or once the range is this
/// small.
const GUESSES: u32 = 3;
const SMALL_RANGE: u32 = 32;

/// The first eight bytes of an id, as a number that orders ids as their
/// bytes do.
fn prefix(id: &[u8]) -> u64 {
    u64::from_be_bytes(id[..8].try_into().expect("ids are longer than eight bytes"))
}

/// The position of the raw id `wanted` among `count` raw ids sorted
/// ascending, of which `id_at` gives each; `None` if it is not one of them.
pub(crate) fn find<'a>(count: u32, wanted: &[u8], id_at: impl Fn(u32) -> &'a [u8]) -> Option<u32> {
    let key = prefix(wanted);
    // The range still possible, [lo, hi), and the prefixes just outside
    // it (the ends of the id space at first).
    let (mut lo, mut hi) = (0u32, count);
    let (mut lo_key, mut hi_key) = (0u64, u64::MAX);
    let mut probes = 0;
    while lo < hi {
        let span = hi - lo;
        let at = if probes < GUESSES && span > SMALL_RANGE && lo_key <= key && key <= hi_key {
            let width = u128::from(hi_key - lo_key) + 1;
            let offset = u128::from(key - lo_key) * u128::from(span) / width;
            lo + (offset as u32).min(span - 1)
        } else {
            lo + span / 2
        };
        probes += 1;
        let probed = id_at(at);
        let probed_key = prefix(probed);
        let order = probed_key
            .cmp(&key)
            .then_with(|| probed[8..].cmp(&wanted[8..]));
        match order {
            Ordering::Equal => return Some(at),
            Ordering::Less => {
                lo = at + 1;
                lo_key = probed_key;
            }
            Ordering::Greater => {
                hi = at;
                hi_key = probed_key;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn search(ids: &[[u8; 20]], id: &[u8; 20]) -> Option<u32> {
        find(ids.len() as u32, id, |i| &ids[i as usize])
    }

    proptest! {
        #[test]
        fn finds_exactly_the_ids_present(
            mut ids in proptest::collection::vec(any::<[u8; 20]>(), 0..300),
            // Ids sharing long prefixes, as made to defeat the guesses.
            clustered in proptest::collection::vec(any::<u8>(), 0..100),
            absent in any::<[u8; 20]>(),
        ) {
            for (i, b) in clustered.iter().enumerate() {
                let mut id = [0x42; 20];
                id[19] = *b;
                id[18] = i as u8;
                ids.push(id);
            }
            ids.sort();
            ids.dedup();
            for (i, id) in ids.iter().enumerate() {
                prop_assert_eq!(search(&ids, id), Some(i as u32));
            }
            prop_assert_eq!(search(&ids, &absent), ids.binary_search(&absent).ok().map(|i| i as u32));
        }
    }

    #[test]
    fn ids_at_the_ends_of_the_space_are_found() {
        let ids = [[0u8; 20], [0x80; 20], [0xff; 20]];
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(search(&ids, id), Some(i as u32));
        }
        assert_eq!(search(&[], &[0; 20]), None);
    }
}

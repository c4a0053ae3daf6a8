//! The header of a pack entry, as pack writers put it before the entry's
//! compressed data: the type and inflated size (little-endian base-128,
//! four size bits in the first byte), then for an offset delta the
//! distance back to its base (big-endian base-128 with git's +1 per
//! continuation byte, so that every distance has one encoding). Encoded
//! for writing, decoded for a writer that copies stored entries and must
//! know where a header ends without inflating anything.

/// Encodes the header of an entry of type `type_id` (1 to 4, 6 with
/// `base_distance` for an offset delta, 7 for a reference delta, whose
/// base id the caller appends) of `size` inflated bytes into `out`,
/// cleared first.
pub fn encode_entry_header(out: &mut Vec<u8>, type_id: u8, size: u64, base_distance: Option<u64>) {
    out.clear();
    let mut size_left = size >> 4;
    let mut byte = (type_id << 4) | (size & 0x0f) as u8;
    while size_left != 0 {
        out.push(byte | 0x80);
        byte = (size_left & 0x7f) as u8;
        size_left >>= 7;
    }
    out.push(byte);
    if let Some(mut distance) = base_distance {
        let mut bytes = [0u8; 10];
        let mut at = bytes.len() - 1;
        bytes[at] = (distance & 0x7f) as u8;
        distance >>= 7;
        while distance != 0 {
            distance -= 1;
            at -= 1;
            bytes[at] = 0x80 | (distance & 0x7f) as u8;
            distance >>= 7;
        }
        out.extend_from_slice(&bytes[at..]);
    }
}

/// What an entry header says, as [`decode_entry_header`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// The type (1 to 4 for whole objects, 6 and 7 for offset and
    /// reference deltas).
    pub type_id: u8,
    /// The inflated size: the object, or the delta.
    pub size: u64,
    /// For an offset delta, the distance back to its base.
    pub base_distance: Option<u64>,
    /// The header's length in bytes, the distance included (a reference
    /// delta's base id, which follows, is not).
    pub len: usize,
}

/// Reads the header at the start of `bytes`; `None` if it is truncated,
/// of an unknown type, or its numbers overflow.
pub fn decode_entry_header(bytes: &[u8]) -> Option<EntryHeader> {
    let mut at = 0;
    let mut next = || {
        let byte = *bytes.get(at)?;
        at += 1;
        Some(byte)
    };
    let mut byte = next()?;
    let type_id = (byte >> 4) & 7;
    let mut size = u64::from(byte & 0x0f);
    let mut shift = 4;
    while byte & 0x80 != 0 {
        byte = next()?;
        if shift >= 64 {
            return None;
        }
        size |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    let base_distance = match type_id {
        1..=4 | 7 => None,
        6 => {
            byte = next()?;
            let mut distance = u64::from(byte & 0x7f);
            while byte & 0x80 != 0 {
                byte = next()?;
                if distance >= 1 << 56 {
                    return None;
                }
                distance = ((distance + 1) << 7) | u64::from(byte & 0x7f);
            }
            Some(distance)
        }
        _ => return None,
    };
    Some(EntryHeader {
        type_id,
        size,
        base_distance,
        len: at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_decoded_header_is_the_encoded_one(
            type_id in prop::sample::select(vec![1u8, 2, 3, 4, 6, 7]),
            size in any::<u64>(),
            distance in 1u64..(1 << 62),
            tail in prop::collection::vec(any::<u8>(), 0..4),
        ) {
            let distance = (type_id == 6).then_some(distance);
            let mut out = Vec::new();
            encode_entry_header(&mut out, type_id, size, distance);
            let len = out.len();
            out.extend_from_slice(&tail);
            let expected = EntryHeader { type_id, size, base_distance: distance, len };
            prop_assert_eq!(decode_entry_header(&out), Some(expected));
            // Cut anywhere, it is incomplete.
            prop_assert_eq!(decode_entry_header(&out[..len - 1]), None);
        }
    }
}

//! The header of a pack entry, as pack writers put it before the entry's
//! compressed data: the type and inflated size (little-endian base-128,
//! four size bits in the first byte), then for an offset delta the
//! distance back to its base (big-endian base-128 with git's +1 per
//! continuation byte, so that every distance has one encoding).

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

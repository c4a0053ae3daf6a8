//! Variable-length integers as reftable stores them.
//!
//! The encoding is the one of `ofs-delta` offsets in pack files: seven bits
//! per byte, most significant group first, the high bit marking "more
//! follows", and one added to the running value at every continuation so
//! that each number has exactly one encoding.

use super::error::{Error, Result};

/// Longest encoding of a `u64` (ten groups of seven bits).
pub(crate) const MAX_LEN: usize = 10;

/// Appends the encoding of `value` to `out`.
pub(crate) fn put(out: &mut Vec<u8>, mut value: u64) {
    let mut tmp = [0u8; MAX_LEN];
    let mut i = MAX_LEN - 1;
    tmp[i] = (value & 0x7f) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        i -= 1;
        tmp[i] = 0x80 | (value & 0x7f) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Decodes a varint from the front of `input`, returning the value and the
/// number of bytes it took. `offset` is where `input` starts in the table,
/// for the error message.
pub(crate) fn get(input: &[u8], offset: usize) -> Result<(u64, usize)> {
    let mut iter = input.iter().enumerate();
    let Some((_, &first)) = iter.next() else {
        return Err(Error::corrupt(
            offset,
            "varint runs past the end of its block",
        ));
    };
    let mut value = u64::from(first & 0x7f);
    let mut byte = first;
    let mut used = 1;
    while byte & 0x80 != 0 {
        let Some((_, &next)) = iter.next() else {
            return Err(Error::corrupt(
                offset,
                "varint runs past the end of its block",
            ));
        };
        value = value
            .checked_add(1)
            .filter(|v| v >> 57 == 0)
            .ok_or_else(|| Error::corrupt(offset, "varint overflows 64 bits"))?;
        value = (value << 7) | u64::from(next & 0x7f);
        byte = next;
        used += 1;
    }
    Ok((value, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7f]),
            (128, &[0x80, 0x00]),
            (255, &[0x80, 0x7f]),
            (16511, &[0xff, 0x7f]),
            (16512, &[0x80, 0x80, 0x00]),
        ];
        for &(value, bytes) in cases {
            let mut out = Vec::new();
            put(&mut out, value);
            assert_eq!(out, bytes, "encoding {value}");
            assert_eq!(get(bytes, 0).unwrap(), (value, bytes.len()));
        }
    }

    #[test]
    fn round_trips_extremes() {
        for value in [u64::MAX, u64::MAX - 1, 1 << 63, (1 << 56) - 1, 1 << 56] {
            let mut out = Vec::new();
            put(&mut out, value);
            assert!(out.len() <= MAX_LEN);
            assert_eq!(get(&out, 0).unwrap(), (value, out.len()));
        }
    }

    #[test]
    fn truncated_and_overflowing_input_is_an_error() {
        assert!(get(&[], 0).is_err());
        assert!(get(&[0x80], 0).is_err());
        assert!(get(&[0xff; 11], 0).is_err());
    }
}

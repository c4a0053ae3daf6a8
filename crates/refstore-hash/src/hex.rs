//! Decoding hex object ids eight digits at a time. A `packed-refs` of a
//! million refs holds a million ids, and every advertisement of them
//! decodes each one; treating eight ASCII digits as one `u64` checks and
//! converts them with a dozen word operations instead of sixteen table
//! lookups.

/// Which letters count as hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// `a-f` only, as git writes ids.
    Lower,
    /// `a-f` and `A-F`, as git reads ids from ref files.
    Any,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (all below 0x80) that is at least `n`.
#[inline(always)]
fn at_least(x: u64, n: u8) -> u64 {
    x.wrapping_add(ONES * u64::from(0x80 - n)) & HIGH
}

/// Decodes 16 hex digits into 8 bytes; `None` if one is not a digit.
#[inline(always)]
fn decode_word(digits: &[u8; 8], case: Case) -> Option<[u8; 4]> {
    let x = u64::from_le_bytes(*digits);
    if x & HIGH != 0 {
        return None;
    }
    let digit = at_least(x, b'0') & !at_least(x, b'9' + 1);
    let letters = match case {
        Case::Lower => x,
        Case::Any => x | (ONES * 0x20),
    };
    let letter = at_least(letters, b'a') & !at_least(letters, b'f' + 1);
    if digit | letter != HIGH {
        return None;
    }
    // '0'-'9' keep their low nibble; 'a'/'A' (0x41, 0x61) gain 9 from bit 6.
    let nibbles = (x & (ONES * 0x0f)) + 9 * ((x >> 6) & ONES);
    // Byte 2i becomes (digit 2i << 4) | digit 2i+1; the odd bytes are dropped
    // and the even ones moved together.
    let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
    let pairs = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    let pairs = (pairs | (pairs >> 16)) & 0x0000_0000_ffff_ffff;
    Some((pairs as u32).to_le_bytes())
}

/// Decodes `2 * N` hex digits into the first `N` bytes of `out`; `false`
/// if a character is not a hex digit of `case`. `N` is 20 or 32.
pub(crate) fn decode<const N: usize>(hex: &[u8], case: Case, out: &mut [u8; 32]) -> bool {
    let hex = &hex[..2 * N];
    let mut ok = true;
    for (digits, bytes) in hex.chunks_exact(8).zip(out[..N].chunks_exact_mut(4)) {
        match decode_word(digits.try_into().expect("eight digits"), case) {
            Some(decoded) => bytes.copy_from_slice(&decoded),
            None => ok = false,
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(hex: &[u8], case: Case) -> Option<Vec<u8>> {
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' if case == Case::Any => Some(c - b'A' + 10),
            _ => None,
        };
        hex.chunks(2)
            .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
            .collect()
    }

    #[test]
    fn every_byte_in_every_position_decodes_as_a_table_would() {
        let base = *b"0123456789abcdefABCDEF0123456789abcdef01";
        for case in [Case::Lower, Case::Any] {
            for position in 0..base.len() {
                for byte in 0..=255u8 {
                    let mut hex = base;
                    hex[position] = byte;
                    let mut out = [0; 32];
                    let ok = decode::<20>(&hex, case, &mut out);
                    let want = reference(&hex, case);
                    assert_eq!(ok, want.is_some(), "{case:?} {position} {byte:#x}");
                    if let Some(want) = want {
                        assert_eq!(&out[..20], &want[..]);
                    }
                }
            }
        }
    }

    #[test]
    fn sha256_length_ids_decode_whole() {
        let hex = b"00ff10ef2233445566778899aabbccddeeff00112233445566778899AaBbCcDd";
        let mut out = [0; 32];
        assert!(decode::<32>(hex, Case::Any, &mut out));
        assert_eq!(out.to_vec(), reference(hex, Case::Any).unwrap());
        assert!(!decode::<32>(hex, Case::Lower, &mut out));
    }
}

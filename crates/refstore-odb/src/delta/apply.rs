//! Applying a delta to its base. Every size and range is checked, since
//! deltas come from the network.

/// Why a delta cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// The delta ended in the middle of a size or instruction.
    #[error("delta is truncated")]
    Truncated,
    /// The delta was made for a base of another size.
    #[error("delta expects a base of {expected} bytes, the base has {actual}")]
    BaseSize {
        /// What the delta says.
        expected: u64,
        /// What the base has.
        actual: usize,
    },
    /// An instruction copies from outside the base.
    #[error("delta copies bytes beyond the end of its base")]
    CopyOutOfRange,
    /// The reserved instruction byte 0.
    #[error("delta holds the reserved instruction 0")]
    ReservedInstruction,
    /// The instructions produce more or fewer bytes than announced.
    #[error("delta result is not the announced {0} bytes")]
    ResultSize(u64),
}

/// Applies `delta` to `base` and returns the result.
pub fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, DeltaError> {
    let mut input = delta;
    let base_size = read_size(&mut input)?;
    if base_size != base.len() as u64 {
        return Err(DeltaError::BaseSize {
            expected: base_size,
            actual: base.len(),
        });
    }
    let result_size = read_size(&mut input)?;
    // The announced size is untrusted: grow as instructions produce bytes,
    // never allocate it up front beyond what the delta can produce.
    let mut out = Vec::with_capacity(result_size.min(delta.len() as u64 * 128) as usize);
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        if op & 0x80 != 0 {
            let offset = read_sparse(&mut input, op & 0x0f)?;
            let size = match read_sparse(&mut input, (op >> 4) & 0x07)? {
                0 => 0x10000,
                n => n,
            };
            let end = offset
                .checked_add(size)
                .filter(|&e| e <= base.len() as u64)
                .ok_or(DeltaError::CopyOutOfRange)?;
            out.extend_from_slice(&base[offset as usize..end as usize]);
        } else if op != 0 {
            let len = op as usize;
            if input.len() < len {
                return Err(DeltaError::Truncated);
            }
            out.extend_from_slice(&input[..len]);
            input = &input[len..];
        } else {
            return Err(DeltaError::ReservedInstruction);
        }
        if out.len() as u64 > result_size {
            return Err(DeltaError::ResultSize(result_size));
        }
    }
    if out.len() as u64 != result_size {
        return Err(DeltaError::ResultSize(result_size));
    }
    Ok(out)
}

/// A little-endian base-128 number (7 bits per byte, high bit: more follow).
pub(crate) fn read_size(input: &mut &[u8]) -> Result<u64, DeltaError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first().ok_or(DeltaError::Truncated)?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DeltaError::Truncated)
}

/// The little-endian number whose present bytes `mask` names (bit i: byte i
/// follows); absent bytes are zero.
fn read_sparse(input: &mut &[u8], mask: u8) -> Result<u64, DeltaError> {
    let mut value = 0u64;
    for i in 0..8 {
        if mask & (1 << i) != 0 {
            let (&byte, rest) = input.split_first().ok_or(DeltaError::Truncated)?;
            *input = rest;
            value |= u64::from(byte) << (8 * i);
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_inserts() {
        let base = b"hello, world";
        let delta = [
            12, 13, // base and result sizes
            0x90, 7, // copy: no offset bytes (offset 0), one size byte (7)
            5, b't', b'h', b'e', b'r', b'e', // insert five bytes
            0x91, 11, 1, // copy: offset 11, size 1
        ];
        assert_eq!(apply_delta(base, &delta).unwrap(), b"hello, thered");
    }

    #[test]
    fn rejects_bad_deltas() {
        let base = b"abc";
        assert_eq!(
            apply_delta(base, &[4, 1, 1, b'x']),
            Err(DeltaError::BaseSize {
                expected: 4,
                actual: 3
            })
        );
        assert_eq!(
            apply_delta(base, &[3, 2, 1, b'x']),
            Err(DeltaError::ResultSize(2))
        );
        assert_eq!(
            apply_delta(base, &[3, 1, 2, b'x']),
            Err(DeltaError::Truncated)
        );
        assert_eq!(
            apply_delta(base, &[3, 1, 0]),
            Err(DeltaError::ReservedInstruction)
        );
        assert_eq!(
            apply_delta(base, &[3, 4, 0x80 | 0x01 | 0x10, 2, 4]),
            Err(DeltaError::CopyOutOfRange)
        );
        assert_eq!(apply_delta(base, &[3]), Err(DeltaError::Truncated));
        assert_eq!(apply_delta(base, &[3, 0x80]), Err(DeltaError::Truncated));
        assert_eq!(apply_delta(base, &[3, 0]), Ok(Vec::new()));
    }
}

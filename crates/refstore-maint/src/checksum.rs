//! The trailing checksum every git file format here ends with: the hash of
//! all bytes before it.

use crate::error::MaintError;
use refstore_refs::ObjectFormat;

/// Appends the hash of `out` to it.
pub fn append(out: &mut Vec<u8>, format: ObjectFormat) -> Result<(), MaintError> {
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(out);
    let sum = hasher
        .try_finalize()
        .map_err(|e| MaintError::Format(format!("hash collision detected: {e}")))?;
    out.extend_from_slice(sum.as_slice());
    Ok(())
}

/// The hash of `bytes`.
pub fn of(bytes: &[u8], format: ObjectFormat) -> Result<Vec<u8>, MaintError> {
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(bytes);
    let sum = hasher
        .try_finalize()
        .map_err(|e| MaintError::Format(format!("hash collision detected: {e}")))?;
    Ok(sum.as_slice().to_vec())
}

//! The object ids a pack index (`.idx`, version 2) lists, read from its
//! bytes: enough to tell whether a peer's pack holds anything this node
//! lacks without downloading the pack.

use refstore_refs::{ObjectFormat, ObjectId};

/// The ids listed by the version 2 index `bytes` of `format`.
pub(crate) fn object_ids(bytes: &[u8], format: ObjectFormat) -> Result<Vec<ObjectId>, String> {
    const FANOUT: usize = 8;
    const IDS: usize = FANOUT + 256 * 4;
    if bytes.len() < IDS || bytes[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
        return Err("not a version 2 pack index".to_owned());
    }
    let last = &bytes[FANOUT + 255 * 4..IDS];
    let count = u32::from_be_bytes(last.try_into().expect("four bytes")) as usize;
    let width = format.raw_len();
    let end = count
        .checked_mul(width)
        .and_then(|len| len.checked_add(IDS))
        .filter(|&end| end <= bytes.len())
        .ok_or("the pack index is truncated")?;
    bytes[IDS..end]
        .chunks_exact(width)
        .map(|raw| ObjectId::from_raw(raw).ok_or_else(|| "a bad object id".to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_and_bad_indexes_refused() {
        let mut idx = vec![0xff, b't', b'O', b'c', 0, 0, 0, 2];
        for i in 0..256u32 {
            idx.extend_from_slice(&(if i >= 0xab { 1u32 } else { 0 }).to_be_bytes());
        }
        let id = [0xabu8; 20];
        idx.extend_from_slice(&id);
        let ids = object_ids(&idx, ObjectFormat::Sha1).unwrap();
        assert_eq!(ids, [ObjectId::from_raw(&id).unwrap()]);
        assert!(object_ids(&idx[..idx.len() - 1], ObjectFormat::Sha1).is_err());
        assert!(object_ids(b"PACK", ObjectFormat::Sha1).is_err());
    }
}

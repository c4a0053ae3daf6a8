//! Object ids: the hash of `<type> <size>\0<content>`.

use crate::OdbError;
use refstore_hash::{ObjectFormat, ObjectId};

/// The header git puts before an object's content when hashing and storing
/// it: `<type> <size>\0`.
pub fn object_header(type_name: &[u8], size: usize) -> Vec<u8> {
    let mut header = Vec::with_capacity(type_name.len() + 22);
    header.extend_from_slice(type_name);
    header.push(b' ');
    header.extend_from_slice(size.to_string().as_bytes());
    header.push(0);
    header
}

/// The id of an object of type `type_name` (normally `commit`, `tree`,
/// `blob` or `tag`; any name for objects hashed literally) holding `data`.
///
/// Fails only if SHA-1 collision detection finds `data` to be part of a
/// collision attack, as git refuses such objects too.
pub fn object_id(
    format: ObjectFormat,
    type_name: &[u8],
    data: &[u8],
) -> Result<ObjectId, OdbError> {
    let mut hasher = gix_hash::hasher(format.gix_kind());
    hasher.update(&object_header(type_name, data.len()));
    hasher.update(data);
    let id = hasher
        .try_finalize()
        .map_err(|source| OdbError::Collision { source })?;
    Ok(ObjectId::from_gix(&id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_ids() {
        // The empty blob and empty tree, as every git knows them.
        assert_eq!(
            object_id(ObjectFormat::Sha1, b"blob", b"")
                .unwrap()
                .to_hex(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            object_id(ObjectFormat::Sha1, b"tree", b"")
                .unwrap()
                .to_hex(),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
        assert_eq!(
            object_id(ObjectFormat::Sha256, b"blob", b"")
                .unwrap()
                .to_hex(),
            "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
        );
        assert_eq!(object_header(b"blob", 12), b"blob 12\0");
    }
}

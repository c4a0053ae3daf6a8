//! The format checks git applies before hashing a commit, tree or tag that
//! is not written "literally": objects refstore stores must parse.

use crate::ObjectKind;
use refstore_hash::ObjectFormat;

/// Why content is not a valid object of its kind. The messages are git's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// A commit that does not parse.
    #[error("corrupt commit")]
    Commit,
    /// A tag that does not parse.
    #[error("corrupt tag")]
    Tag,
    /// A tree entry cut short (no name terminator or not enough id bytes).
    #[error("too-short tree object")]
    TreeTooShort,
    /// A tree entry whose mode is not octal digits followed by a space.
    #[error("malformed mode in tree entry")]
    TreeMode,
    /// A tree entry with an empty name.
    #[error("empty filename in tree entry")]
    TreeEmptyName,
}

/// Checks that `data` is a well-formed object of `kind`. Blobs are always
/// well-formed.
pub fn check_format(
    kind: ObjectKind,
    data: &[u8],
    format: ObjectFormat,
) -> Result<(), FormatError> {
    let hash = format.gix_kind();
    match kind {
        ObjectKind::Blob => Ok(()),
        ObjectKind::Tree => check_tree(data, format.raw_len()),
        ObjectKind::Commit => gix_object::CommitRef::from_bytes(data, hash)
            .map(drop)
            .map_err(|_| FormatError::Commit),
        ObjectKind::Tag => gix_object::TagRef::from_bytes(data, hash)
            .map(drop)
            .map_err(|_| FormatError::Tag),
    }
}

/// Walks the entries `<octal mode> <name>\0<raw id>` of a tree.
fn check_tree(mut data: &[u8], id_len: usize) -> Result<(), FormatError> {
    while !data.is_empty() {
        let name_end = data
            .iter()
            .position(|&b| b == 0)
            .ok_or(FormatError::TreeTooShort)?;
        if data.len() < name_end + 1 + id_len {
            return Err(FormatError::TreeTooShort);
        }
        let entry = &data[..name_end];
        let space = entry
            .iter()
            .position(|&b| b == b' ')
            .ok_or(FormatError::TreeMode)?;
        let mode = &entry[..space];
        if mode.is_empty() || !mode.iter().all(|b| (b'0'..=b'7').contains(b)) {
            return Err(FormatError::TreeMode);
        }
        if space + 1 == entry.len() {
            return Err(FormatError::TreeEmptyName);
        }
        data = &data[name_end + 1 + id_len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(entries: &[u8]) -> Result<(), FormatError> {
        check_format(ObjectKind::Tree, entries, ObjectFormat::Sha1)
    }

    #[test]
    fn trees() {
        let mut good = b"100644 a\0".to_vec();
        good.extend([7; 20]);
        good.extend(b"40000 dir\0");
        good.extend([8; 20]);
        assert_eq!(tree(&good), Ok(()));
        assert_eq!(tree(b""), Ok(()));
        assert_eq!(
            tree(&good[..good.len() - 1]),
            Err(FormatError::TreeTooShort)
        );
        assert_eq!(tree(b"100644 a"), Err(FormatError::TreeTooShort));
        let mut bad_mode = b"10x644 a\0".to_vec();
        bad_mode.extend([7; 20]);
        assert_eq!(tree(&bad_mode), Err(FormatError::TreeMode));
        let mut no_name = b"100644 \0".to_vec();
        no_name.extend([7; 20]);
        assert_eq!(tree(&no_name), Err(FormatError::TreeEmptyName));
    }

    #[test]
    fn commits_and_tags() {
        assert_eq!(
            check_format(ObjectKind::Commit, b"garbage\n", ObjectFormat::Sha1),
            Err(FormatError::Commit)
        );
        assert_eq!(
            check_format(ObjectKind::Tag, b"garbage\n", ObjectFormat::Sha1),
            Err(FormatError::Tag)
        );
        let commit = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
author A <a@example.com> 1700000000 +0000\n\
committer A <a@example.com> 1700000000 +0000\n\nmsg\n";
        assert_eq!(
            check_format(ObjectKind::Commit, commit, ObjectFormat::Sha1),
            Ok(())
        );
        assert_eq!(
            check_format(ObjectKind::Blob, b"\0anything", ObjectFormat::Sha1),
            Ok(())
        );
    }
}

//! The four kinds of git object.

use std::fmt;

/// What an object is: the type `git cat-file -t` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// A commit.
    Commit,
    /// A tree (a directory listing).
    Tree,
    /// A blob (file content).
    Blob,
    /// An annotated tag.
    Tag,
}

impl ObjectKind {
    /// The name git uses in object headers and messages (`commit`, `tree`,
    /// `blob`, `tag`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Commit => "commit",
            ObjectKind::Tree => "tree",
            ObjectKind::Blob => "blob",
            ObjectKind::Tag => "tag",
        }
    }

    /// Parses a type name as git spells it; `None` for anything else.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        match name {
            b"commit" => Some(ObjectKind::Commit),
            b"tree" => Some(ObjectKind::Tree),
            b"blob" => Some(ObjectKind::Blob),
            b"tag" => Some(ObjectKind::Tag),
            _ => None,
        }
    }

    /// gitoxide's name for the kind.
    pub fn to_gix(self) -> gix_object::Kind {
        match self {
            ObjectKind::Commit => gix_object::Kind::Commit,
            ObjectKind::Tree => gix_object::Kind::Tree,
            ObjectKind::Blob => gix_object::Kind::Blob,
            ObjectKind::Tag => gix_object::Kind::Tag,
        }
    }

    pub(crate) fn from_gix(kind: gix_object::Kind) -> Self {
        match kind {
            gix_object::Kind::Commit => ObjectKind::Commit,
            gix_object::Kind::Tree => ObjectKind::Tree,
            gix_object::Kind::Blob => ObjectKind::Blob,
            gix_object::Kind::Tag => ObjectKind::Tag,
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in [
            ObjectKind::Commit,
            ObjectKind::Tree,
            ObjectKind::Blob,
            ObjectKind::Tag,
        ] {
            assert_eq!(ObjectKind::from_name(kind.as_str().as_bytes()), Some(kind));
        }
        assert_eq!(ObjectKind::from_name(b"blobs"), None);
        assert_eq!(ObjectKind::from_name(b"Blob"), None);
    }
}

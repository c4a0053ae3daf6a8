//! The last version of each directory a walk has read, so that reading
//! the next version visits only the entries that changed: a commit
//! usually changes a few files, and its root tree's hundreds of other
//! entries name objects the walk has already dealt with. Comparing two
//! versions entry by entry reads memory in order, where looking each
//! entry's object up in the walk's table is a cache miss.
//!
//! Only an entry whose id is the one the previous version had at the same
//! name is skipped, and every entry of a version read was dealt with, so
//! skipping changes nothing in what is sent. Directories are known by the
//! hash of their path; two paths with one hash only make skips rarer.

use super::tree_scan::Entries;
use refstore_hash::{IdHasher, ObjectFormat};
use std::cmp::Ordering;
use std::collections::HashMap;

/// The most bytes of tree data kept.
const CAP: usize = 16 << 20;

/// The last version read of each directory, by path hash.
#[derive(Default)]
pub(crate) struct LastVersions {
    trees: HashMap<u64, Vec<u8>, IdHasher>,
    bytes: usize,
}

impl LastVersions {
    /// Takes the last version of the directory at `path` out, if kept.
    pub fn take(&mut self, path: u64) -> Option<Vec<u8>> {
        let data = self.trees.remove(&path)?;
        self.bytes -= data.capacity();
        Some(data)
    }

    /// Keeps `data`, a version of the directory at `path` whose every
    /// entry has been dealt with, in `buffer` if one is given.
    pub fn keep(&mut self, path: u64, data: &[u8], buffer: Option<Vec<u8>>) {
        let mut kept = buffer.unwrap_or_default();
        kept.clear();
        kept.extend_from_slice(data);
        if self.bytes + kept.capacity() > CAP {
            return;
        }
        self.bytes += kept.capacity();
        if let Some(old) = self.trees.insert(path, kept) {
            self.bytes -= old.capacity();
        }
    }
}

/// Answers, for the entries of a new version in order, whether the
/// previous version had the same id at the same name.
pub(crate) struct Unchanged<'a> {
    previous: Entries<'a>,
}

impl<'a> Unchanged<'a> {
    pub fn new(previous: &'a [u8], format: ObjectFormat) -> Self {
        Unchanged {
            previous: Entries::new(previous, format),
        }
    }

    /// True if the previous version's entry of the name in `record` (a
    /// whole tree record, whose `name` and `id` are given) has the id
    /// `id`. Records must come in the order of the tree: the previous
    /// version is read once, alongside.
    pub fn contains(&mut self, record: &[u8], name: &[u8], id: &[u8]) -> bool {
        // Mostly the next record is the same, byte for byte: one compare.
        // The previous version is read from record to record, so the
        // bytes matched are one whole record there too.
        if self.previous.rest().starts_with(record) {
            self.previous.skip_bytes(record.len());
            return true;
        }
        loop {
            let mut ahead = Entries::clone(&self.previous);
            let Some((previous_name, previous_id)) = ahead.next() else {
                return false;
            };
            // Plain byte order, not quite git's (a tree sorts as if its
            // name ended with '/'): where they differ, an entry is only
            // not recognised.
            match previous_name.cmp(name) {
                Ordering::Less => self.previous = ahead,
                Ordering::Equal => {
                    self.previous = ahead;
                    return previous_id == id;
                }
                Ordering::Greater => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(entries: &[(&str, &str, u8)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (mode, name, byte) in entries {
            data.extend(format!("{mode} {name}\0").bytes());
            data.extend([*byte; 20]);
        }
        data
    }

    fn check(unchanged: &mut Unchanged<'_>, mode: &str, name: &str, byte: u8) -> bool {
        let record = tree(&[(mode, name, byte)]);
        unchanged.contains(&record, name.as_bytes(), &[byte; 20])
    }

    #[test]
    fn only_same_ids_at_same_names_are_unchanged() {
        let previous = tree(&[
            ("100644", "a", 1),
            ("100644", "foo.c", 2),
            ("40000", "foo", 3),
            ("100644", "z", 4),
        ]);
        let mut unchanged = Unchanged::new(&previous, ObjectFormat::Sha1);
        assert!(check(&mut unchanged, "100644", "a", 1));
        assert!(!check(&mut unchanged, "100644", "b", 9));
        assert!(check(&mut unchanged, "100644", "foo.c", 2));
        assert!(!check(&mut unchanged, "100644", "foo", 5));
        assert!(!check(&mut unchanged, "100644", "y", 4));
        // A new mode, the same object: dealt with.
        assert!(check(&mut unchanged, "100755", "z", 4));
        assert!(!check(&mut unchanged, "100644", "zz", 4));
    }

    #[test]
    fn kept_versions_come_back_once_and_the_cap_holds() {
        let mut versions = LastVersions::default();
        versions.keep(7, b"tree", None);
        assert_eq!(versions.take(7).as_deref(), Some(&b"tree"[..]));
        assert_eq!(versions.take(7), None);
        assert_eq!(versions.bytes, 0);
        versions.keep(1, &vec![0; CAP + 1], None);
        assert_eq!(versions.take(1), None);
    }
}

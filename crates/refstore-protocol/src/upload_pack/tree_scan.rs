//! Reading a tree object's entries in place, for walks that meet every
//! entry of hundreds of thousands of trees: nothing is copied or
//! allocated per entry, and a caller that has seen an entry's object
//! before does no more work for it.
//!
//! A tree is a sequence of `<octal mode> <name>\0<id>` records.

use refstore_hash::ObjectFormat;
use refstore_refs::ObjectId;

/// One entry of a tree, borrowed from the tree's data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeEntry<'a> {
    /// The whole record: mode, name and id.
    pub record: &'a [u8],
    /// The id's bytes, as stored: an entry whose object was seen before
    /// is recognized without making an id of them.
    pub raw_id: &'a [u8],
    pub name: &'a [u8],
    /// A subtree.
    pub is_tree: bool,
    /// A submodule's commit: an object of another repository.
    pub is_commit: bool,
}

impl TreeEntry<'_> {
    /// The entry's object id.
    pub fn id(&self) -> ObjectId {
        ObjectId::from_raw(self.raw_id).expect("ids are read at the object format's length")
    }
}

/// The file-type bits of a mode and the values git gives trees and
/// submodule commits.
const TYPE_MASK: u32 = 0o170_000;
const TREE: u32 = 0o040_000;
const COMMIT: u32 = 0o160_000;

/// Calls `visit` with each entry of the tree `data` whose ids are `hash`
/// ids; a record that is not well formed ends the scan with what is wrong
/// with it.
pub(crate) fn scan_tree<'a>(
    data: &'a [u8],
    format: ObjectFormat,
    mut visit: impl FnMut(TreeEntry<'a>),
) -> Result<(), &'static str> {
    let id_len = format.raw_len();
    let mut rest = data;
    while !rest.is_empty() {
        let space = rest
            .iter()
            .take(8)
            .position(|&b| b == b' ')
            .ok_or("an entry's mode is missing or too long")?;
        let mut mode = 0u32;
        for &digit in &rest[..space] {
            if !(b'0'..=b'7').contains(&digit) {
                return Err("an entry's mode is not an octal number");
            }
            mode = mode << 3 | u32::from(digit - b'0');
        }
        if space == 0 {
            return Err("an entry's mode is empty");
        }
        let after_mode = &rest[space + 1..];
        // Names are short: a plain loop beats setting up a vector search.
        let nul = after_mode
            .iter()
            .position(|&b| b == 0)
            .ok_or("an entry's name is not terminated")?;
        let name = &after_mode[..nul];
        let id_start = nul + 1;
        let id = after_mode
            .get(id_start..id_start + id_len)
            .ok_or("an entry's id is truncated")?;
        let record_len = space + 1 + id_start + id_len;
        visit(TreeEntry {
            record: &rest[..record_len],
            raw_id: id,
            name,
            is_tree: mode & TYPE_MASK == TREE,
            is_commit: mode & TYPE_MASK == COMMIT,
        });
        rest = &rest[record_len..];
    }
    Ok(())
}

/// The ids of a tree's entries with their names, read without checks:
/// for data [`scan_tree`] has read before.
#[derive(Clone)]
pub(crate) struct Entries<'a> {
    rest: &'a [u8],
    id_len: usize,
}

impl<'a> Entries<'a> {
    pub fn new(data: &'a [u8], format: ObjectFormat) -> Self {
        Entries {
            rest: data,
            id_len: format.raw_len(),
        }
    }
}

impl<'a> Entries<'a> {
    /// What is left to read: it starts with the next record.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Moves past the next `n` bytes, a whole number of records.
    pub fn skip_bytes(&mut self, n: usize) {
        self.rest = &self.rest[n..];
    }
}

impl<'a> Iterator for Entries<'a> {
    /// The name and the id.
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let space = self.rest.iter().position(|&b| b == b' ')?;
        let after_mode = &self.rest[space + 1..];
        let nul = after_mode.iter().position(|&b| b == 0)?;
        let id = after_mode.get(nul + 1..nul + 1 + self.id_len)?;
        self.rest = &after_mode[nul + 1 + self.id_len..];
        Some((&after_mode[..nul], id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Id, name, is a tree, is a commit.
    type Read = (String, Vec<u8>, bool, bool);

    fn entries(data: &[u8]) -> Result<Vec<Read>, &'static str> {
        let mut out = Vec::new();
        scan_tree(data, ObjectFormat::Sha1, |e| {
            out.push((e.id().to_string(), e.name.to_vec(), e.is_tree, e.is_commit))
        })?;
        Ok(out)
    }

    fn record(mode: &str, name: &str, byte: u8) -> Vec<u8> {
        let mut r = format!("{mode} {name}\0").into_bytes();
        r.extend_from_slice(&[byte; 20]);
        r
    }

    #[test]
    fn entries_are_read_as_gix_reads_them() {
        let mut data = record("100644", "a.txt", 1);
        data.extend(record("40000", "dir", 2));
        data.extend(record("160000", "sub", 3));
        data.extend(record("120000", "link", 4));
        data.extend(record("100755", "run", 5));
        let ours = entries(&data).unwrap();
        let theirs: Vec<_> =
            gix_object::TreeRefIter::from_bytes(&data, ObjectFormat::Sha1.gix_kind())
                .map(|e| {
                    let e = e.unwrap();
                    (
                        e.oid.to_string(),
                        e.filename.to_vec(),
                        e.mode.is_tree(),
                        e.mode.is_commit(),
                    )
                })
                .collect();
        assert_eq!(ours, theirs);
        assert_eq!(ours[1].1, b"dir");
        let mut records = Vec::new();
        scan_tree(&data, ObjectFormat::Sha1, |e| {
            records.extend_from_slice(e.record)
        })
        .unwrap();
        assert_eq!(records, data);
        assert!(ours[1].2 && ours[2].3);
    }

    #[test]
    fn entries_give_names_and_ids() {
        let mut data = record("100644", "a.txt", 1);
        data.extend(record("40000", "dir", 2));
        let got: Vec<_> = Entries::new(&data, ObjectFormat::Sha1).collect();
        assert_eq!(
            got,
            [(&b"a.txt"[..], &[1; 20][..]), (&b"dir"[..], &[2; 20][..])]
        );
    }

    #[test]
    fn malformed_records_are_errors() {
        let good = record("100644", "a", 1);
        assert!(entries(&good[..good.len() - 1]).is_err());
        assert!(entries(b"100644 no-terminator").is_err());
        assert!(entries(&record("10a644", "a", 1)).is_err());
        assert!(entries(&record("", "a", 1)).is_err());
        assert!(entries(b"1006441234567 a\0").is_err());
        assert_eq!(entries(b"").unwrap(), []);
    }
}

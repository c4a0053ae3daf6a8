//! The checks of a tree: entries that cannot be parsed, zero-padded or
//! unknown modes, names that are empty, hold a `/`, are `.`, `..`, `.git`
//! or too long, entries out of git's order or duplicated; and the blobs it
//! names `.gitmodules` or `.gitattributes`, recorded for their content
//! checks.

use refstore_hash::ObjectId;

use super::dotgit::{is_dot_special, is_hfs_dot, is_ntfs_dot, is_ntfs_dotgit};
use super::msg_id::MsgId;
use super::Checker;

/// Longest tree entry name accepted before `largePathname` (git's default).
const MAX_TREE_ENTRY_LEN: usize = 4096;

impl Checker<'_> {
    pub(super) fn tree(&mut self, data: &[u8]) {
        let hash_len = self.format.raw_len();
        let mut flags = TreeFlags::default();
        let mut previous: Option<(u32, &[u8])> = None;
        let mut candidates: Vec<&[u8]> = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let Some(entry) = parse_entry(rest, hash_len) else {
                let _ = self.report(MsgId::BadTree, "cannot be parsed as a tree");
                return;
            };
            rest = &rest[entry.len..];
            let name = entry.name;
            flags.null_id |= entry.id.iter().all(|&b| b == 0);
            flags.full_path |= name.contains(&b'/');
            flags.dot |= name == b".";
            flags.dotdot |= name == b"..";
            flags.dotgit |= is_hfs_dot(name, b"git") || is_ntfs_dotgit(name);
            flags.zero_pad |= entry.zero_padded;
            flags.large_name |= name.len() > MAX_TREE_ENTRY_LEN;
            let symlink = entry.mode == 0o120000;
            let entry_id = ObjectId::from_raw(entry.id).expect("a full id");
            if is_dot_special(name, b"gitmodules", b"gi7eba") {
                if symlink {
                    let _ = self.report(MsgId::GitmodulesSymlink, ".gitmodules is a symbolic link");
                } else if let Some(special) = self.special.as_deref_mut() {
                    special.gitmodules.insert(entry_id);
                }
            }
            if is_dot_special(name, b"gitattributes", b"gi7d29") {
                if symlink {
                    let _ = self.report(MsgId::GitattributesSymlink, ".gitattributes is a symlink");
                } else if let Some(special) = self.special.as_deref_mut() {
                    special.gitattributes.insert(entry_id);
                }
            }
            if symlink && is_dot_special(name, b"gitignore", b"gi250a") {
                let _ = self.report(MsgId::GitignoreSymlink, ".gitignore is a symlink");
            }
            if symlink && is_dot_special(name, b"mailmap", b"maba30") {
                let _ = self.report(MsgId::MailmapSymlink, ".mailmap is a symlink");
            }
            // Windows reads a backslash as a directory separator.
            for (i, _) in name.iter().enumerate().filter(|&(_, &b)| b == b'\\') {
                let after = &name[i + 1..];
                flags.dotgit |= is_ntfs_dotgit(after);
                if is_ntfs_dot(after, b"gitmodules", b"gi7eba") {
                    if symlink {
                        let _ =
                            self.report(MsgId::GitmodulesSymlink, ".gitmodules is a symbolic link");
                    } else if let Some(special) = self.special.as_deref_mut() {
                        special.gitmodules.insert(entry_id);
                    }
                }
            }
            // 100664 was written by early gits; accepted unless strict.
            flags.bad_mode |= !(matches!(
                entry.mode,
                0o100755 | 0o100644 | 0o120000 | 0o040000 | 0o160000
            ) || (entry.mode == 0o100664 && !self.options.strict));
            if let Some((mode, prev)) = previous {
                match order(mode, prev, entry.mode, name, &mut candidates) {
                    Order::Sorted => {}
                    Order::Unsorted => flags.unsorted = true,
                    Order::Duplicate => flags.duplicates = true,
                }
            }
            previous = Some((entry.mode, name));
        }
        let reports = [
            (
                flags.null_id,
                MsgId::NullSha1,
                "contains entries pointing to null sha1",
            ),
            (
                flags.full_path,
                MsgId::FullPathname,
                "contains full pathnames",
            ),
            (flags.dot, MsgId::HasDot, "contains '.'"),
            (flags.dotdot, MsgId::HasDotdot, "contains '..'"),
            (flags.dotgit, MsgId::HasDotgit, "contains '.git'"),
            (
                flags.zero_pad,
                MsgId::ZeroPaddedFilemode,
                "contains zero-padded file modes",
            ),
            (
                flags.bad_mode,
                MsgId::BadFilemode,
                "contains bad file modes",
            ),
            (
                flags.duplicates,
                MsgId::DuplicateEntries,
                "contains duplicate file entries",
            ),
            (flags.unsorted, MsgId::TreeNotSorted, "not properly sorted"),
            (
                flags.large_name,
                MsgId::LargePathname,
                "contains excessively large pathname",
            ),
        ];
        for (found, msg_id, text) in reports {
            if found {
                let _ = self.report(msg_id, text);
            }
        }
    }
}

/// What the entries of one tree showed.
#[derive(Default)]
struct TreeFlags {
    null_id: bool,
    full_path: bool,
    dot: bool,
    dotdot: bool,
    dotgit: bool,
    zero_pad: bool,
    bad_mode: bool,
    duplicates: bool,
    unsorted: bool,
    large_name: bool,
}

/// One tree entry, as stored.
struct Entry<'a> {
    mode: u32,
    zero_padded: bool,
    name: &'a [u8],
    id: &'a [u8],
    /// Bytes the entry takes.
    len: usize,
}

/// Parses the entry at the start of `data`, as git's tree reader does: an
/// octal mode, a space, a non-empty name, a NUL, the raw id.
fn parse_entry(data: &[u8], hash_len: usize) -> Option<Entry<'_>> {
    let nul = data.iter().position(|&b| b == 0)?;
    if data.len() < nul + 1 + hash_len {
        return None;
    }
    let head = &data[..nul];
    let space = head.iter().position(|&b| b == b' ')?;
    let mode_digits = &head[..space];
    if mode_digits.is_empty() || !mode_digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    let mode = mode_digits.iter().try_fold(0u32, |m, &d| {
        m.checked_mul(8)?.checked_add(u32::from(d - b'0'))
    })?;
    let name = &head[space + 1..];
    if name.is_empty() {
        return None;
    }
    Some(Entry {
        mode,
        zero_padded: mode_digits[0] == b'0',
        name,
        id: &data[nul + 1..nul + 1 + hash_len],
        len: nul + 1 + hash_len,
    })
}

enum Order {
    Sorted,
    Unsorted,
    Duplicate,
}

fn is_dir(mode: u32) -> bool {
    mode & 0o170000 == 0o040000
}

/// Whether entry (`mode2`, `name2`) may follow (`mode1`, `name1`) in git's
/// tree order, where a directory sorts as if its name ended with `/`.
/// `candidates` keeps names of non-directories that a later directory of
/// the same name would duplicate (`foo`, `foo.bar`, `foo/`).
fn order<'a>(
    mode1: u32,
    name1: &'a [u8],
    mode2: u32,
    name2: &[u8],
    candidates: &mut Vec<&'a [u8]>,
) -> Order {
    let common = name1.len().min(name2.len());
    match name1[..common].cmp(&name2[..common]) {
        std::cmp::Ordering::Less => return Order::Sorted,
        std::cmp::Ordering::Greater => return Order::Unsorted,
        std::cmp::Ordering::Equal => {}
    }
    let mut c1 = name1.get(common).copied().unwrap_or(0);
    let mut c2 = name2.get(common).copied().unwrap_or(0);
    if c1 == 0 && c2 == 0 {
        return Order::Duplicate;
    }
    if c1 == 0 && is_dir(mode1) {
        c1 = b'/';
    }
    if c2 == 0 && is_dir(mode2) {
        c2 = b'/';
    }
    let below_slash = |c: u8| c != 0 && c < b'/';
    if c1 == 0 && below_slash(c2) {
        candidates.push(name1);
    } else if c2 == b'/' && below_slash(c1) {
        while let Some(file) = candidates.pop() {
            let Some(after) = name2.strip_prefix(file) else {
                continue;
            };
            if after.is_empty() {
                return Order::Duplicate;
            }
            if below_slash(after[0]) {
                candidates.push(file);
                break;
            }
        }
    }
    if c1 < c2 {
        Order::Sorted
    } else {
        Order::Unsorted
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::check_one;
    use super::super::FsckOptions;
    use crate::ObjectKind;

    fn tree(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (mode, name) in entries {
            data.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            data.extend_from_slice(&[7; 20]);
        }
        data
    }
    #[test]
    fn tree_entries() {
        let strict = FsckOptions::new(true);
        let t = |entries: &[(&str, &str)]| check_one(ObjectKind::Tree, &tree(entries), &strict);
        assert_eq!(
            t(&[("100644", "a"), ("40000", "b"), ("100755", "c")]),
            Vec::<String>::new()
        );
        assert_eq!(t(&[("0100644", "a")]), ["E zeroPaddedFilemode"]);
        assert_eq!(t(&[("100644", "b"), ("100644", "a")]), ["E treeNotSorted"]);
        assert_eq!(
            t(&[("100644", "a"), ("100644", "a")]),
            ["E duplicateEntries"]
        );
        // A file and a directory of the same name, apart.
        assert_eq!(
            t(&[("100644", "foo"), ("100644", "foo.bar"), ("40000", "foo")]),
            ["E duplicateEntries"]
        );
        // A directory sorts as `name/`.
        assert_eq!(t(&[("40000", "a"), ("100644", "a.b")]), ["E treeNotSorted"]);
        assert_eq!(
            t(&[("100644", "a.b"), ("40000", "a")]),
            Vec::<String>::new()
        );
        assert_eq!(t(&[("100644", ".git")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".GIT")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".g\u{200c}it")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", "git~1")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".git. .")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", "a\\.git")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".gitx")]), Vec::<String>::new());
        assert_eq!(t(&[("100644", "..")]), ["E hasDotdot"]);
        assert_eq!(t(&[("100644", ".")]), ["E hasDot"]);
        assert_eq!(t(&[("100644", "a/b")]), ["E fullPathname"]);
        assert_eq!(t(&[("100664", "a")]), ["W badFilemode"]);
        assert_eq!(t(&[("120000", ".gitmodules")]), ["E gitmodulesSymlink"]);
        assert_eq!(t(&[("120000", "gi7eba~1")]), ["E gitmodulesSymlink"]);
        assert_eq!(t(&[("120000", ".gitignore")]), ["W gitignoreSymlink"]);
        assert_eq!(t(&[("100644", "")]), ["E badTree"]);
        assert_eq!(
            check_one(ObjectKind::Tree, b"100644 a\0short", &strict),
            ["E badTree"]
        );
        let mut null = b"100644 a\0".to_vec();
        null.extend([0; 20]);
        assert_eq!(check_one(ObjectKind::Tree, &null, &strict), ["E nullSha1"]);
        // Not strict: warnings stay warnings.
        let lenient = FsckOptions::new(false);
        assert_eq!(
            check_one(ObjectKind::Tree, &tree(&[("0100644", "a")]), &lenient),
            ["W zeroPaddedFilemode"]
        );
        assert_eq!(
            check_one(ObjectKind::Tree, &tree(&[("100664", "a")]), &lenient),
            Vec::<String>::new()
        );
    }
}

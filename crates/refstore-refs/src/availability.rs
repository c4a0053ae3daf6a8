//! Directory/file conflict checks, batched over a whole transaction.
//!
//! A ref `refs/heads/a` and a ref `refs/heads/a/b` cannot both exist: one
//! would be a file where the other needs a directory. For every ref a
//! transaction creates, two things are checked: no prefix of its name is a
//! ref, and no ref lies below its name. Done naively that is one lookup per
//! prefix per name and one directory scan per name; here every distinct
//! prefix is looked up once for the whole transaction, and the "below"
//! question is one seek of a cursor over the existing names per name.

use crate::transaction::Rejection;
use crate::RefName;
use std::collections::{BTreeMap, BTreeSet};

/// The refs that exist, as far as the check needs to know.
pub trait ExistingRefs {
    /// True if a ref with exactly this name exists.
    fn contains(&mut self, name: &[u8]) -> bool;
    /// The first existing name that is `>= from`, if any. The check only
    /// asks whether a name starts with `from` (`from` ends with `/`), so an
    /// implementation may answer `None` when none does.
    fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>>;
}

/// A conflict found for a ref being created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The ref that cannot be created.
    pub name: RefName,
    /// The ref in its way.
    pub existing: RefName,
    /// True if `existing` is created by the same transaction.
    pub in_transaction: bool,
}

/// The rejection of each ref that `conflicts` (from [`check`]) name, the
/// first conflict of a name winning.
pub fn rejections(conflicts: Vec<Conflict>) -> BTreeMap<RefName, Rejection> {
    let mut blocked = BTreeMap::new();
    for c in conflicts {
        let reason = if c.in_transaction {
            Rejection::ConflictInTransaction { other: c.existing }
        } else {
            Rejection::NameConflict {
                existing: c.existing,
            }
        };
        blocked.entry(c.name).or_insert(reason);
    }
    blocked
}

/// Checks, in order, each ref in `missing` (refs the transaction touches
/// that do not exist yet) against the existing refs and against every other
/// ref the transaction touches (`affected`), as git does: a ref the same
/// transaction deletes still counts. Returns at most one conflict per name,
/// in the order of `missing`.
pub fn check(
    missing: &[RefName],
    affected: &BTreeSet<RefName>,
    existing: &mut dyn ExistingRefs,
) -> Vec<Conflict> {
    let affected_names: BTreeSet<&[u8]> = affected.iter().map(RefName::as_bytes).collect();
    // Each distinct prefix is looked up once for the whole transaction.
    let mut prefix_exists: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for name in missing {
        let conflict = first_conflict(name, &affected_names, &mut prefix_exists, existing);
        if let Some((other, in_transaction)) = conflict {
            conflicts.push(Conflict {
                name: name.clone(),
                existing: RefName::from_trusted(other),
                in_transaction,
            });
        }
    }
    conflicts
}

fn first_conflict(
    name: &RefName,
    affected: &BTreeSet<&[u8]>,
    prefix_exists: &mut BTreeMap<Vec<u8>, bool>,
    existing: &mut dyn ExistingRefs,
) -> Option<(Vec<u8>, bool)> {
    for prefix in name.prefixes() {
        // Most prefixes were asked about already: look before allocating.
        let exists = match prefix_exists.get(prefix) {
            Some(&known) => known,
            None => {
                let found = existing.contains(prefix);
                prefix_exists.insert(prefix.to_vec(), found);
                found
            }
        };
        if exists {
            return Some((prefix.to_vec(), false));
        }
        if affected.contains(prefix) {
            return Some((prefix.to_vec(), true));
        }
    }
    let mut dir = name.as_bytes().to_vec();
    dir.push(b'/');
    if let Some(found) = existing.seek(&dir).filter(|f| f.starts_with(&dir)) {
        return Some((found, false));
    }
    affected
        .range::<[u8], _>((
            std::ops::Bound::Excluded(dir.as_slice()),
            std::ops::Bound::Unbounded,
        ))
        .next()
        .filter(|other| other.starts_with(&dir))
        .map(|other| (other.to_vec(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sorted(Vec<Vec<u8>>, usize, usize);

    impl ExistingRefs for Sorted {
        fn contains(&mut self, name: &[u8]) -> bool {
            self.2 += 1;
            self.0.binary_search_by(|n| n.as_slice().cmp(name)).is_ok()
        }
        fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>> {
            self.1 += 1;
            let i = self.0.partition_point(|n| n.as_slice() < from);
            self.0.get(i).cloned()
        }
    }

    fn list(names: &[&str]) -> Vec<RefName> {
        names.iter().map(|n| RefName::new(n).unwrap()).collect()
    }

    fn existing(list: &[&str]) -> Sorted {
        let mut v: Vec<Vec<u8>> = list.iter().map(|n| n.as_bytes().to_vec()).collect();
        v.sort();
        Sorted(v, 0, 0)
    }

    #[test]
    fn conflicts_with_existing_refs_both_ways() {
        let mut ex = existing(&["refs/heads/a", "refs/heads/b/c", "refs/tags/v1"]);
        let missing = list(&[
            "refs/heads/a/x",
            "refs/heads/b",
            "refs/heads/c",
            "refs/tags/v1/x",
        ]);
        let affected = missing.iter().cloned().collect();
        let found = check(&missing, &affected, &mut ex);
        let pairs: Vec<(String, String)> = found
            .iter()
            .map(|c| (c.name.to_string(), c.existing.to_string()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("refs/heads/a/x".into(), "refs/heads/a".into()),
                ("refs/heads/b".into(), "refs/heads/b/c".into()),
                ("refs/tags/v1/x".into(), "refs/tags/v1".into()),
            ]
        );
    }

    #[test]
    fn conflicts_inside_the_transaction_and_deletions() {
        let mut ex = existing(&["refs/heads/old"]);
        let missing = list(&["refs/heads/x", "refs/heads/x/y", "refs/heads/old/z"]);
        let mut affected: BTreeSet<RefName> = missing.iter().cloned().collect();
        affected.insert(RefName::new("refs/heads/old").unwrap());
        let found = check(&missing, &affected, &mut ex);
        // Each of x and x/y is reported against the other, and a ref being
        // deleted in the same transaction still blocks, as in git.
        assert_eq!(found.len(), 3);
        assert_eq!(found[2].existing.to_string(), "refs/heads/old");
        assert_eq!(found[0].name.to_string(), "refs/heads/x");
        assert_eq!(found[0].existing.to_string(), "refs/heads/x/y");
        assert!(found[0].in_transaction);
        assert_eq!(found[1].existing.to_string(), "refs/heads/x");
    }

    #[test]
    fn each_prefix_is_looked_up_once() {
        let created: Vec<RefName> = (0..1000)
            .map(|i| RefName::new(format!("refs/heads/group{}/b{i}", i % 10)).unwrap())
            .collect();
        let mut ex = existing(&["refs/heads/other"]);
        let affected = created.iter().cloned().collect();
        assert!(check(&created, &affected, &mut ex).is_empty());
        // refs, refs/heads and ten group directories.
        assert_eq!(ex.2, 12);
        assert_eq!(ex.1, 1000);
    }
}

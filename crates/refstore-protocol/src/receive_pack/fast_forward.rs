//! Whether an update is a fast-forward: the new commit descends from the
//! old one. Asked only when `receive.denyNonFastForwards` is set.

use refstore_odb::{ObjectKind, Odb};
use refstore_refs::ObjectId;
use std::collections::{HashSet, VecDeque};

/// What the history says about an update from `old` to `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// `old` is `new` or one of its ancestors.
    FastForward,
    /// `old` is not an ancestor of `new`.
    Diverged,
    /// One side is not a commit (or cannot be read): git calls it a bad ref.
    NotCommits,
}

/// Walks the ancestry of `new` looking for `old`.
pub(crate) fn relation(odb: &Odb, old: ObjectId, new: ObjectId) -> Relation {
    let is_commit = |id: &ObjectId| matches!(odb.kind(id), Ok(Some(ObjectKind::Commit)));
    if !is_commit(&old) || !is_commit(&new) {
        return Relation::NotCommits;
    }
    // Breadth first over every ancestor: with no commit-graph to bound
    // it, a walk that may stop early by commit dates could call a real
    // fast-forward diverged when clocks are skewed.
    let mut seen = HashSet::from([new]);
    let mut queue = VecDeque::from([new]);
    while let Some(id) = queue.pop_front() {
        if id == old {
            return Relation::FastForward;
        }
        let Some(parents) = parents(odb, &id) else {
            return Relation::NotCommits;
        };
        for parent in parents {
            if seen.insert(parent) {
                queue.push_back(parent);
            }
        }
    }
    Relation::Diverged
}

/// The parents of commit `id`, or `None` if it cannot be read as one.
fn parents(odb: &Odb, id: &ObjectId) -> Option<Vec<ObjectId>> {
    let (ObjectKind::Commit, data) = odb.read(id).ok()?? else {
        return None;
    };
    let commit = gix_object::CommitRef::from_bytes(&data, odb.format().gix_kind()).ok()?;
    Some(commit.parents().map(|p| ObjectId::from_gix(&p)).collect())
}

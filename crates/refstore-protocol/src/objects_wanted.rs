//! Before a fetch is answered, its wants, and before a push's pack is
//! read, the old tips its commands build on: handed to the repository's
//! [`crate::ObjectsWanted`] step, which brings in what they reach and the
//! repository lacks. A want being here is not enough: on a node that
//! missed an earlier push, a later push's commit can be here while its
//! parent is not, and the pack would fail halfway; a push building on the
//! missed one would be refused for objects the client rightly expects
//! the server to have.

use crate::repository::Repository;
use refstore_refs::ObjectId;

/// Gives the repository's [`crate::ObjectsWanted`] step, if it has one,
/// the fetch's `wants` (or the push's old tips). True if the step stored objects: packs it stored
/// are not among the packs opened before.
pub(crate) fn bring_in(repo: &Repository, wants: &[ObjectId]) -> bool {
    match &repo.objects_wanted {
        Some(step) if !wants.is_empty() => step.objects_wanted(repo, wants),
        _ => false,
    }
}

//! Before a fetch is answered: the wants the repository lacks, handed to
//! its [`crate::ObjectsWanted`] step to bring in.

use crate::repository::Repository;
use refstore_refs::ObjectId;

/// Gives the repository's [`crate::ObjectsWanted`] step, if it has one,
/// the ids of `wants` the repository lacks. True if the step was asked:
/// packs it stored are not among the packs opened before.
pub(crate) fn bring_in(repo: &Repository, wants: &[ObjectId]) -> bool {
    let Some(step) = &repo.objects_wanted else {
        return false;
    };
    let missing: Vec<ObjectId> = wants
        .iter()
        .filter(|id| !repo.objects.contains(id))
        .copied()
        .collect();
    if missing.is_empty() {
        return false;
    }
    step.objects_missing(repo, &missing);
    true
}

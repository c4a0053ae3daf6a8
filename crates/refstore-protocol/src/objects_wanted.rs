//! A step before a fetch is answered: when the client wants objects the
//! repository lacks, an [`ObjectsWanted`] given with the repository may
//! bring them in first (a cluster node fetching, from its peers, the
//! packs it missed while it was down). upload-pack then judges the wants
//! as always: what is still missing is refused as git refuses it.

use crate::Repository;
use refstore_refs::ObjectId;

/// Brings in objects a fetch wants and the repository lacks.
pub trait ObjectsWanted: Send + Sync {
    /// Called with the wanted ids the repository lacks, before upload-pack
    /// reads any object for the fetch. Objects stored into the
    /// repository's objects directory by then are served.
    fn objects_missing(&self, repo: &Repository, missing: &[ObjectId]);
}

/// Gives the repository's [`ObjectsWanted`] step, if it has one, the ids
/// of `wants` the repository lacks. True if the step was asked: packs it
/// stored are not among the packs opened before.
pub(crate) fn bring_in(repo: &Repository, wants: &[gix_hash::ObjectId]) -> bool {
    let Some(step) = &repo.objects_wanted else {
        return false;
    };
    let missing: Vec<ObjectId> = wants
        .iter()
        .map(|id| ObjectId::from_gix(id))
        .filter(|id| !repo.objects.contains(id))
        .collect();
    if missing.is_empty() {
        return false;
    }
    step.objects_missing(repo, &missing);
    true
}

//! A step between a push's objects and its refs: once receive-pack has
//! moved the pushed packs into the repository durably, and before it
//! writes a single ref, an [`ObjectsStored`] given with the repository
//! may require more of them (a cluster: that other nodes hold the packs
//! too). Its refusal refuses every ref of the push with its reason; the
//! objects stay, unreferenced, as after any refusal that follows their
//! migration.

use crate::Repository;

/// Decides whether the packs a push added are stored well enough for its
/// refs to change.
pub trait ObjectsStored: Send + Sync {
    /// Called with the repository and the names (`pack-<hex>`) of the
    /// packs the push added, once they are in the repository durably and
    /// before the ref transaction. `Err` holds the reason every ref is
    /// refused with, as the user sees it.
    fn objects_stored(&self, repo: &Repository, packs: &[String]) -> Result<(), String>;
}

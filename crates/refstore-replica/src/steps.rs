//! The steps a replicating node gives each repository it serves:
//! receive-pack's quorum ([`ObjectsStored`]) and upload-pack's catch-up
//! ([`ObjectsWanted`]).

use crate::Replica;
use refstore_protocol::{ObjectsStored, ObjectsWanted, Repository};
use refstore_refs::ObjectId;
use std::sync::Arc;

/// The steps of one repository of a replicating node: receive-pack's
/// quorum, and upload-pack's catch-up when a fetch wants objects this
/// node missed.
#[derive(Debug)]
pub struct ForRepository {
    pub(crate) replica: Arc<Replica>,
    /// The repository's path below the served root.
    pub(crate) name: String,
}

impl ObjectsStored for ForRepository {
    fn objects_stored(&self, repo: &Repository, packs: &[String]) -> Result<(), String> {
        self.replica.replicate(repo, &self.name, packs)
    }
}

impl ObjectsWanted for ForRepository {
    fn objects_missing(&self, repo: &Repository, _missing: &[ObjectId]) {
        self.replica.catch_up(repo, &self.name);
    }
}

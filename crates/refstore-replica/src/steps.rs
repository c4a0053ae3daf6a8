//! The steps a replicating node gives each repository it serves:
//! receive-pack's quorum ([`ObjectsStored`]) and upload-pack's catch-up
//! ([`ObjectsWanted`]).

use crate::Replica;
use refstore_protocol::{ObjectsStored, ObjectsWanted, Repository};
use refstore_refs::ObjectId;
use std::sync::Arc;

impl Replica {
    /// The quorum and catch-up steps for the repository a client named
    /// `name` (its path below the served root, the same on every node).
    pub fn for_repository(self: &Arc<Self>, name: &str) -> Arc<ForRepository> {
        Arc::new(ForRepository {
            replica: self.clone(),
            name: name.to_owned(),
        })
    }
}

/// The steps of one repository of a replicating node: receive-pack's
/// quorum, and upload-pack's catch-up when a fetch wants objects this
/// node missed.
#[derive(Debug)]
pub struct ForRepository {
    replica: Arc<Replica>,
    /// The repository's path below the served root.
    name: String,
}

impl ObjectsStored for ForRepository {
    fn objects_stored(&self, repo: &Repository, packs: &[String]) -> Result<(), String> {
        self.replica.replicate(repo, &self.name, packs)
    }
}

impl ObjectsWanted for ForRepository {
    fn objects_wanted(&self, repo: &Repository, wants: &[ObjectId]) -> bool {
        self.replica.complete_wants(repo, &self.name, wants) > 0
    }
}

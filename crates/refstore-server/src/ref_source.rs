//! Serving repositories whose refs are kept somewhere other than their own
//! ref store (a cluster's etcd): the server opens each repository as usual
//! and then asks the [`RefSource`] for its refs.

use crate::confine::Served;
use refstore_protocol::repository::{OpenError, Repository};
use refstore_refs::backend::Backend;
use std::sync::Arc;

/// Where the refs of served repositories come from.
pub trait RefSource: Send + Sync + std::fmt::Debug {
    /// The ref store of `repo`, the repository below the served root
    /// named `name` ([`Served::name`]).
    fn refs(&self, repo: &Repository, name: &str) -> Arc<dyn Backend>;
}

impl crate::ServeOptions {
    /// Opens the repository `served` (found and confined by
    /// [`crate::authorize`]) exactly where it is, with the server's
    /// configuration; with the refs the server's [`RefSource`] gives, when
    /// it has one; and, on a replicating node, with the steps that copy a
    /// push's objects to other nodes and fetch what this node lacks from
    /// them. All of them know it by its name.
    pub fn open_repository(
        &self,
        vfs: Arc<dyn refstore_fs::Vfs>,
        served: &Served,
    ) -> Result<Repository, OpenError> {
        let overrides = self.repository_overrides();
        let mut repo = Repository::open_location(vfs, served.location.clone(), &overrides)?;
        if let Some(source) = &self.ref_source {
            repo.refs = source.refs(&repo, &served.name);
        }
        if let Some(replica) = &self.replication {
            let steps = replica.for_repository(&served.name);
            repo.objects_stored = Some(steps.clone());
            repo.objects_wanted = Some(steps);
        }
        Ok(repo)
    }
}

//! Serving repositories whose refs are kept somewhere other than their own
//! ref store (a cluster's etcd): the server opens each repository as usual
//! and then asks the [`RefSource`] for its refs.

use refstore_protocol::repository::{OpenError, Repository};
use refstore_refs::backend::Backend;
use std::path::Path;
use std::sync::Arc;

/// Where the refs of served repositories come from.
pub trait RefSource: Send + Sync + std::fmt::Debug {
    /// The ref store of `repo`, a repository below the served root.
    fn refs(&self, repo: &Repository) -> Arc<dyn Backend>;
}

impl crate::ServeOptions {
    /// Opens the repository at `path`, which clients call `name`, with the
    /// server's configuration; with the refs the server's [`RefSource`]
    /// gives, when it has one; and, on a replicating node, with the steps
    /// that copy a push's objects to other nodes and fetch what this node
    /// lacks from them.
    pub fn open_repository(
        &self,
        vfs: Arc<dyn refstore_fs::Vfs>,
        path: &Path,
        name: &str,
    ) -> Result<Repository, OpenError> {
        let mut repo = Repository::open(vfs.clone(), path, &self.repository_overrides())?;
        if let Some(source) = &self.ref_source {
            repo.refs = source.refs(&repo);
        }
        if let Some(replica) = &self.replication {
            let steps = replica.for_repository(name);
            repo.objects_stored = Some(steps.clone());
            repo.objects_wanted = Some(steps);
        }
        Ok(repo)
    }
}

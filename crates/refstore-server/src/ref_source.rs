//! Serving repositories whose refs are kept somewhere other than their own
//! ref store (a cluster's etcd): the server opens each repository as usual
//! and then asks the [`RefSource`] for its refs.

use refstore_protocol::repository::{OpenError, Repository};
use refstore_refs::backend::Backend;
use std::path::Path;
use std::sync::Arc;

/// Where the refs of served repositories come from.
pub trait RefSource: Send + Sync + std::fmt::Debug {
    /// The ref store of `repo`, a repository below the served root `root`
    /// (symbolic links resolved).
    fn refs(&self, root: &Path, repo: &Repository) -> Arc<dyn Backend>;
}

impl crate::ServeOptions {
    /// Opens the repository at `path` with the server's configuration and,
    /// when the server has a [`RefSource`], with the refs it gives.
    pub fn open_repository(
        &self,
        vfs: Arc<dyn refstore_fs::Vfs>,
        path: &Path,
    ) -> Result<Repository, OpenError> {
        let mut repo = Repository::open(vfs.clone(), path, &self.repository_overrides())?;
        if let Some(source) = &self.ref_source {
            let root = refstore_fs::confine::resolve(vfs.as_ref(), &self.root)
                .unwrap_or_else(|_| self.root.clone());
            repo.refs = source.refs(&root, &repo);
        }
        Ok(repo)
    }
}

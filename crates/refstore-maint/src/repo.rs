//! The repository housekeeping works on: the opened repository
//! ([`refstore_repo::Repository`], which it derefs to) with the
//! housekeeping settings and the ref store the tasks read.
//!
//! A cluster node's copy of a repository ([`Repo::with_cluster_refs`])
//! is maintained with the cluster's refs (etcd's), not its own ref store.
//! Its objects are a part of the cluster's (with `object_copies` below the
//! number of nodes it holds only some pushes), and pushes through other
//! nodes are not seen here, so pruning there judges by etcd's refs, a
//! grace period for pushes in flight, and only while the node holds
//! everything those refs reach ([`crate::reach`]).

use crate::error::MaintError;
use crate::settings::MaintSettings;
use refstore_refs::backend::Backend;
use std::path::PathBuf;
use std::sync::Arc;

/// A repository to maintain.
#[derive(Debug)]
pub struct Repo {
    repository: refstore_repo::Repository,
    /// Housekeeping settings.
    pub maint: MaintSettings,
    /// The ref store, for `pack-refs` and the tips bitmaps are written
    /// for (both skipped without one).
    pub refs: Option<Arc<dyn Backend>>,
    /// True for a cluster node's copy: `refs` are the cluster's, and
    /// pruning judges as the module's documentation says.
    pub cluster_copy: bool,
}

impl std::ops::Deref for Repo {
    type Target = refstore_repo::Repository;

    fn deref(&self) -> &refstore_repo::Repository {
        &self.repository
    }
}

impl Repo {
    /// The opened repository, its housekeeping settings read from its
    /// configuration and its ref store opened.
    pub fn new(repository: refstore_repo::Repository) -> Result<Repo, MaintError> {
        let refs = repository
            .refs()
            .map_err(|e| MaintError::Refs(e.to_string()))?;
        Ok(Repo {
            maint: MaintSettings::from_config(&repository.config)?,
            refs: Some(refs),
            cluster_copy: false,
            repository,
        })
    }

    /// A cluster node's copy of a repository, maintained with `refs`, the
    /// cluster's refs of it (listed at one revision, and `HEAD`): the
    /// tips its bitmaps are written for. Its own ref store is left alone
    /// (its refs are not the truth); what is pruned is judged by `refs`
    /// and the grace period ([`crate::reach`]).
    pub fn with_cluster_refs(
        repository: refstore_repo::Repository,
        refs: Arc<dyn Backend>,
    ) -> Result<Repo, MaintError> {
        Ok(Repo {
            maint: MaintSettings::from_config(&repository.config)?,
            refs: Some(refs),
            cluster_copy: true,
            repository,
        })
    }

    /// The repository without its ref store: what needs refs is skipped.
    #[cfg(test)]
    pub(crate) fn without_refs(repository: refstore_repo::Repository) -> Result<Repo, MaintError> {
        Ok(Repo {
            maint: MaintSettings::from_config(&repository.config)?,
            refs: None,
            cluster_copy: false,
            repository,
        })
    }

    /// `<common>/objects/pack`.
    pub fn pack_dir(&self) -> PathBuf {
        self.objects_dir().join("pack")
    }

    pub(crate) fn fsync(&self) -> &refstore_fs::config::FsyncSettings {
        &self.settings.fsync
    }
}

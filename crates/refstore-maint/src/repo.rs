//! The repository housekeeping works on: the opened repository
//! ([`refstore_repo::Repository`], which it derefs to) with the
//! housekeeping settings and the ref store the tasks read.

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
            repository,
        })
    }

    /// The repository without its ref store: what needs refs is skipped.
    #[cfg(test)]
    pub(crate) fn without_refs(repository: refstore_repo::Repository) -> Result<Repo, MaintError> {
        Ok(Repo {
            maint: MaintSettings::from_config(&repository.config)?,
            refs: None,
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

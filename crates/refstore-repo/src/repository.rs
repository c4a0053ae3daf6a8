//! The opened repository: where it is, its configuration, and its ref
//! store and object database, each opened once and on first use.
//!
//! A path a client names resolves as git resolves it for
//! `git upload-pack <dir>`: `<dir>/.git`, then `<dir>`, then `<dir>.git`
//! ([`Repository::open`]); commands that discover their repository as git
//! does (`-C`, `--git-dir`, `GIT_DIR`) open what they found
//! ([`Repository::open_location`]).

use crate::objects::SharedObjects;
use crate::{OpenError, TagPeeler};
use refstore_fs::config::{Config, Override, Settings};
use refstore_fs::discover::{self, Location};
use refstore_fs::Vfs;
use refstore_odb::{Odb, OdbError};
use refstore_refs::backend::{self, Backend};
use refstore_refs::reftable::ReftableOptions;
use refstore_refs::ObjectFormat;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// An opened repository.
pub struct Repository {
    /// Where it is.
    pub location: Location,
    /// Its configuration (repository, global and `-c` overrides).
    pub config: Config,
    /// The configuration, interpreted.
    pub settings: Settings,
    /// The filesystem everything is stored through.
    pub vfs: Arc<dyn Vfs>,
    format: ObjectFormat,
    /// Its objects: one store, shared by every handle on it and by the
    /// peeler lent to the ref store.
    objects: Arc<SharedObjects>,
    /// Its refs, once opened.
    refs: OnceLock<Arc<dyn Backend>>,
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("git_dir", &self.location.git_dir)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Repository {
    /// Opens the repository at `path` (a work tree or a git directory), as
    /// git finds the repository a client names.
    pub fn open(
        vfs: Arc<dyn Vfs>,
        path: &Path,
        overrides: &[Override],
    ) -> Result<Repository, OpenError> {
        let git_dir = find_git_dir(vfs.as_ref(), path)
            .ok_or_else(|| OpenError::NotARepository(path.to_owned()))?;
        let options = discover::Options {
            git_dir: Some(git_dir),
            ..discover::Options::default()
        };
        let location = discover::discover(vfs.as_ref(), path, &options)
            .map_err(|_| OpenError::NotARepository(path.to_owned()))?;
        Self::open_location(vfs, location, overrides)
    }

    /// Opens the repository found by discovery: loads and checks its
    /// configuration and recovers the lock files crashed processes left
    /// (`refstore.staleLockAge`).
    pub fn open_location(
        vfs: Arc<dyn Vfs>,
        location: Location,
        overrides: &[Override],
    ) -> Result<Repository, OpenError> {
        let config = Config::load(Some(&location.git_dir), overrides)?;
        let repository = Self::from_config(vfs, location, config)?;
        if let Some(age) = repository.settings.stale_lock_age {
            refstore_fs::stale::recover_stale_locks(&repository.location.common_dir, age);
        }
        Ok(repository)
    }

    /// The repository at `location` with a configuration already loaded
    /// (or made from text): checked and interpreted, nothing else read.
    pub fn from_config(
        vfs: Arc<dyn Vfs>,
        location: Location,
        mut config: Config,
    ) -> Result<Repository, OpenError> {
        config.check_repository_format()?;
        let settings = config.settings()?;
        let format = ObjectFormat::from_name(settings.object_format).ok_or_else(|| {
            OpenError::Config(format!(
                "unknown object format '{}'",
                settings.object_format
            ))
        })?;
        let objects = SharedObjects::new(location.common_dir.join("objects"), format);
        Ok(Repository {
            location,
            config,
            settings,
            vfs,
            format,
            objects: Arc::new(objects),
            refs: OnceLock::new(),
        })
    }

    /// The object format of its ids.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// True for a repository without a work tree (`core.bare` decides
    /// where it is set).
    pub fn is_bare(&self) -> bool {
        self.settings.bare.unwrap_or(self.location.is_bare())
    }

    /// The git directory.
    pub fn git_dir(&self) -> &Path {
        &self.location.git_dir
    }

    /// The common directory (objects, refs, shared by worktrees).
    pub fn common_dir(&self) -> &Path {
        &self.location.common_dir
    }

    /// `<common>/objects`.
    pub fn objects_dir(&self) -> &Path {
        self.objects.objects_dir()
    }

    /// Its ref store, in the format its configuration names
    /// (`extensions.refStorage`) with its `reftable.*` and flush settings,
    /// opened on the first call. Pushed tags are recorded with their
    /// peeled values where the store keeps them, so advertisements need
    /// no object reads: the store is lent the repository's objects.
    pub fn refs(&self) -> Result<Arc<dyn Backend>, OpenError> {
        if let Some(refs) = self.refs.get() {
            return Ok(refs.clone());
        }
        let reftable = ReftableOptions::from_settings(&self.settings.reftable, self.format);
        let refs = backend::open_with(
            self.vfs.clone(),
            &backend::Location {
                git_dir: self.location.git_dir.clone(),
                common_dir: self.location.common_dir.clone(),
                object_format: self.format,
                storage: self.settings.ref_storage,
            },
            reftable,
            self.settings.fsync.batch_mechanism(),
        )?;
        refs.set_peeler(self.peeler());
        Ok(self.refs.get_or_init(|| refs).clone())
    }

    /// A handle on its object database, which is opened on the first
    /// call; every handle shares the loaded indexes and mapped packs.
    pub fn objects(&self) -> Result<Odb, OdbError> {
        self.objects.odb()
    }

    /// What peels annotated tags through its objects, for a ref store
    /// other than its own (a cluster's).
    pub fn peeler(&self) -> Arc<TagPeeler> {
        Arc::new(TagPeeler::new(self.objects.clone()))
    }
}

/// The git directory a client's path names, tried in git's order.
fn find_git_dir(vfs: &dyn Vfs, path: &Path) -> Option<PathBuf> {
    let mut with_git_suffix = path.as_os_str().to_owned();
    with_git_suffix.push(".git");
    let with_git_suffix = PathBuf::from(with_git_suffix);
    [
        path.join(".git"),
        path.to_owned(),
        with_git_suffix.join(".git"),
        with_git_suffix,
    ]
    .into_iter()
    .find(|candidate| discover::is_git_directory(vfs, candidate))
}

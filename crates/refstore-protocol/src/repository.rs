//! A repository opened for serving: its configuration, its ref store in
//! whichever format it uses, and its object database.
//!
//! Both services and every transport open repositories the same way, so a
//! path a client names resolves as git resolves it for `git upload-pack
//! <dir>`: `<dir>/.git`, then `<dir>`, then `<dir>.git`.

use crate::TagPeeler;
use refstore_fs::config::{Config, Override, Settings};
use refstore_fs::discover::{self, Location};
use refstore_fs::Vfs;
use refstore_odb::Odb;
use refstore_refs::backend::{self, Backend};
use refstore_refs::ObjectFormat;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a repository could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No repository at the path (nor at the usual variants of it).
    #[error("'{}' does not appear to be a git repository", .0.display())]
    NotARepository(PathBuf),
    /// The configuration is unreadable or names an unknown format.
    #[error("{0}")]
    Config(String),
    /// The ref store cannot be opened.
    #[error("{0}")]
    Refs(#[from] backend::OpenError),
    /// The object database cannot be opened.
    #[error("{0}")]
    Objects(#[from] refstore_odb::OdbError),
}

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
    /// Its refs.
    pub refs: Arc<dyn Backend>,
    /// Its objects.
    pub objects: Odb,
    /// What must hold a push's packs before its refs change (`None`:
    /// this repository alone).
    pub objects_stored: Option<Arc<dyn crate::ObjectsStored>>,
    /// What brings in objects a fetch wants and the repository lacks
    /// (`None`: they are refused).
    pub objects_wanted: Option<Arc<dyn crate::ObjectsWanted>>,
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("git_dir", &self.location.git_dir)
            .finish_non_exhaustive()
    }
}

impl Repository {
    /// Opens the repository at `path` (a work tree or a git directory).
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

    /// Opens the repository found by discovery.
    pub fn open_location(
        vfs: Arc<dyn Vfs>,
        location: Location,
        overrides: &[Override],
    ) -> Result<Repository, OpenError> {
        let config_error = |e: refstore_fs::config::ConfigError| OpenError::Config(e.to_string());
        let mut config = Config::load(Some(&location.git_dir), overrides).map_err(config_error)?;
        config.check_repository_format().map_err(config_error)?;
        let settings = config.settings().map_err(config_error)?;
        if let Some(age) = settings.stale_lock_age {
            refstore_fs::stale::recover_stale_locks(&location.common_dir, age);
        }
        let object_format = ObjectFormat::from_name(settings.object_format).ok_or_else(|| {
            OpenError::Config(format!(
                "unknown object format '{}'",
                settings.object_format
            ))
        })?;
        // The reftable.* settings apply to pushes into reftable stores.
        let reftable = refstore_refs::reftable::ReftableOptions::from_settings(
            &settings.reftable,
            object_format,
        );
        let refs = backend::open_with(
            vfs.clone(),
            &backend::Location {
                git_dir: location.git_dir.clone(),
                common_dir: location.common_dir.clone(),
                object_format,
                storage: settings.ref_storage,
            },
            reftable,
            settings.fsync.batch_mechanism(),
        )?;
        let objects_dir = location.common_dir.join("objects");
        let objects = Odb::open(&objects_dir, object_format)?;
        // Pushed tags are recorded with their peeled values where the
        // store keeps them, so advertisements need no object reads.
        refs.set_peeler(Arc::new(TagPeeler::new(objects_dir, object_format)));
        Ok(Repository {
            location,
            config,
            settings,
            vfs,
            refs,
            objects,
            objects_stored: None,
            objects_wanted: None,
        })
    }

    /// The object format of its ids.
    pub fn object_format(&self) -> ObjectFormat {
        self.refs.object_format()
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

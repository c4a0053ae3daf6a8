//! Housekeeping of a repository (`refstore maintenance run`): what keeps it
//! fast and clean however many pushes it takes and whatever crashes.
//!
//! Tasks, in the order a full run performs them:
//!
//! - [`Task::Cleanup`] removes what crashed processes leave: temporary
//!   files and quarantine directories, `.keep` files of receive-packs that
//!   are gone, packs without an index, and abandoned lock files (never a
//!   live one).
//! - [`Task::PackRefs`] packs loose refs (files) or compacts the table
//!   stack (reftable).
//! - [`Task::LooseObjects`] moves loose objects into a pack and removes
//!   the loose copies of packed objects.
//! - [`Task::IncrementalRepack`] keeps the packs a geometric progression
//!   (`git repack --geometric=2 -d`), rolling the small ones into one new
//!   pack whose entries are copied as stored, and writes a
//!   `multi-pack-index` over all packs with its reachability bitmap
//!   (`repack.writeBitmaps`, on by default in bare repositories); packs it
//!   made redundant are deleted once no reader can still be using them.
//! - [`Task::CommitGraph`] writes or extends the split commit-graph
//!   (`objects/info/commit-graphs/`), as `git commit-graph write --split`.
//!
//! A run holds git's maintenance lock (`objects/maintenance.lock`) and
//! `gc.pid` for its whole duration, so `git maintenance`, `git gc` and
//! refstore never work on one repository at once. With `--auto`
//! ([`Options::auto`]) a task runs only when its threshold says so, as git
//! decides (`gc.auto`, `gc.autoPackLimit`, `maintenance.<task>.auto`).
//!
//! Every file is written through the [`refstore_fs::Vfs`] and flushed
//! before it receives the name readers look for.
#![deny(missing_docs, unsafe_code)]

mod auto;
mod bitmap_file;
mod bitmap_select;
mod bitmap_walk;
mod bitmaps;
mod checksum;
mod chunk_file;
pub mod cleanup;
mod commit_graph;
mod commit_graph_chain;
mod commit_graph_file;
mod delta_plan;
pub mod expire;
pub mod geometric;
pub mod idx;
mod install;
mod inventory;
mod lock;
mod loose;
pub mod midx;
mod midx_write;
mod pack_out;
pub mod process;
mod prune;
mod refs_task;
mod repack;
mod settings;

pub use lock::MaintenanceLock;
pub use settings::MaintSettings;

use refstore_fs::config::Settings;
use refstore_fs::Vfs;
use refstore_refs::backend::Backend;
use refstore_refs::ObjectFormat;
use std::path::PathBuf;
use std::sync::Arc;

/// Why housekeeping failed. Nothing stored is lost by a failure: new files
/// are visible only once complete, old ones removed only once redundant.
#[derive(Debug, thiserror::Error)]
pub enum MaintError {
    /// A filesystem operation failed.
    #[error("{0}")]
    Io(#[from] refstore_fs::Error),
    /// Reading objects failed.
    #[error("{0}")]
    Odb(#[from] refstore_odb::OdbError),
    /// A file is not in the format expected.
    #[error("{0}")]
    Format(String),
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// Refs could not be packed.
    #[error("{0}")]
    Refs(String),
    /// Another process is doing this work right now.
    #[error("{0}")]
    Busy(String),
}

/// One housekeeping task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    /// Remove what crashed processes left.
    Cleanup,
    /// Pack refs, or compact reftables.
    PackRefs,
    /// Pack loose objects.
    LooseObjects,
    /// Geometric repack and multi-pack-index.
    IncrementalRepack,
    /// Write the commit-graph.
    CommitGraph,
}

impl Task {
    /// Every task, in the order a run performs them.
    pub const ALL: [Task; 5] = [
        Task::Cleanup,
        Task::PackRefs,
        Task::LooseObjects,
        Task::IncrementalRepack,
        Task::CommitGraph,
    ];

    /// The task's name (`--task=<name>`, `maintenance.<name>.*`).
    pub fn name(self) -> &'static str {
        match self {
            Task::Cleanup => "cleanup",
            Task::PackRefs => "pack-refs",
            Task::LooseObjects => "loose-objects",
            Task::IncrementalRepack => "incremental-repack",
            Task::CommitGraph => "commit-graph",
        }
    }

    /// The task called `name`.
    pub fn from_name(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Run each task only if its threshold is reached.
    pub auto: bool,
    /// The tasks; empty means every task `maintenance.<task>.enabled`
    /// does not turn off.
    pub tasks: Vec<Task>,
}

/// A repository to maintain.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The filesystem.
    pub vfs: Arc<dyn Vfs>,
    /// The git directory.
    pub git_dir: PathBuf,
    /// The common directory (objects, refs).
    pub common_dir: PathBuf,
    /// Object format.
    pub format: ObjectFormat,
    /// Repository settings (flushing, timeouts, stale lock age).
    pub settings: Settings,
    /// Housekeeping settings.
    pub maint: MaintSettings,
    /// The ref store, for `pack-refs` and the tips bitmaps are written
    /// for (both skipped without one).
    pub refs: Option<Arc<dyn Backend>>,
    /// True if it has no work tree (`core.bare`, or where it was found).
    pub bare: bool,
}

impl Repo {
    /// `<common>/objects`.
    pub fn objects_dir(&self) -> PathBuf {
        self.common_dir.join("objects")
    }

    /// `<common>/objects/pack`.
    pub fn pack_dir(&self) -> PathBuf {
        self.common_dir.join("objects").join("pack")
    }

    /// The gix hash kind of the object format.
    pub fn hash(&self) -> gix_hash::Kind {
        self.format.gix_kind()
    }

    /// A repository from its parts, the housekeeping settings read from
    /// `config`.
    pub fn new(
        vfs: Arc<dyn Vfs>,
        location: &refstore_fs::discover::Location,
        config: &refstore_fs::config::Config,
        settings: Settings,
        refs: Option<Arc<dyn Backend>>,
    ) -> Result<Repo, MaintError> {
        let format = ObjectFormat::from_name(settings.object_format).ok_or_else(|| {
            MaintError::Config(format!(
                "unknown object format '{}'",
                settings.object_format
            ))
        })?;
        Ok(Repo {
            vfs,
            git_dir: location.git_dir.clone(),
            common_dir: location.common_dir.clone(),
            format,
            maint: MaintSettings::from_config(config)?,
            bare: settings.bare.unwrap_or(location.is_bare()),
            settings,
            refs,
        })
    }

    fn fsync(&self) -> &refstore_fs::config::FsyncSettings {
        &self.settings.fsync
    }
}

/// What one task did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskReport {
    /// The task.
    pub task: Task,
    /// False if `--auto` found nothing to do.
    pub ran: bool,
    /// A one-line summary.
    pub summary: String,
}

/// What a run did; `None` if another maintenance or gc holds the
/// repository (git skips with a warning, and so does the caller).
pub fn run(repo: &Repo, options: &Options) -> Result<Option<Vec<TaskReport>>, MaintError> {
    let Some(_lock) = MaintenanceLock::acquire(repo)? else {
        return Ok(None);
    };
    let tasks: Vec<Task> = if options.tasks.is_empty() {
        Task::ALL
            .into_iter()
            .filter(|t| repo.maint.enabled(*t))
            .collect()
    } else {
        let mut tasks = options.tasks.clone();
        tasks.sort();
        tasks.dedup();
        tasks
    };
    let mut reports = Vec::new();
    for task in tasks {
        if options.auto && !auto::should_run(repo, task)? {
            reports.push(TaskReport {
                task,
                ran: false,
                summary: "nothing to do".into(),
            });
            continue;
        }
        let summary = match task {
            Task::Cleanup => cleanup::run(repo)?.to_string(),
            Task::PackRefs => refs_task::run(repo)?,
            Task::LooseObjects => loose::run(repo)?,
            Task::IncrementalRepack => repack::run(repo)?,
            Task::CommitGraph => commit_graph::run(repo)?,
        };
        tracing::debug!(task = task.name(), "{summary}");
        reports.push(TaskReport {
            task,
            ran: true,
            summary,
        });
    }
    Ok(Some(reports))
}

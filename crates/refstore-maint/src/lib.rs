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
//! - [`Task::LooseObjects`] deletes unreachable loose objects older than
//!   `gc.pruneExpire`, moves the others into a pack and removes the loose
//!   copies of packed objects.
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
//! A cluster node's copy of a repository is maintained with the cluster's
//! refs ([`Repo::with_cluster_refs`]): reachability is judged by etcd's
//! refs and a grace period for pushes in flight, and `incremental-repack`
//! drops the old unreachable objects of its packs too.
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
mod commit;
mod commit_graph;
mod commit_graph_chain;
mod commit_graph_file;
mod delta_plan;
mod error;
pub mod expire;
pub mod geometric;
pub mod idx;
mod install;
mod inventory;
mod lock;
mod loose;
mod loose_files;
pub mod midx;
mod midx_write;
mod pack_out;
pub mod process;
mod prune;
mod prune_packs;
mod reach;
mod refs_task;
mod repack;
mod repo;
mod rolled_up;
mod settings;
mod task;

pub use error::MaintError;
pub use lock::MaintenanceLock;
pub use repo::Repo;
pub use settings::MaintSettings;
pub use task::Task;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Run each task only if its threshold is reached.
    pub auto: bool,
    /// The tasks; empty means every task `maintenance.<task>.enabled`
    /// does not turn off.
    pub tasks: Vec<Task>,
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
    if reports.iter().any(|r| r.ran) {
        // Packs the run deleted stay mapped, their disk space held, while
        // the process keeps a store that opened them.
        refstore_odb::shared::forget(repo.objects_dir());
    }
    Ok(Some(reports))
}

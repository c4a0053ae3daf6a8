//! `--auto`: whether a task has enough to do, with git's thresholds.
//!
//! - `loose-objects`: at least `maintenance.loose-objects.auto` (100)
//!   loose objects, or more than `gc.auto` (6700) of them, estimated as
//!   git does from the `objects/17` directory (a 256th of them).
//! - `incremental-repack`: at least `maintenance.incremental-repack.auto`
//!   (10) packs outside the `multi-pack-index`, or more than
//!   `gc.autoPackLimit` (50) packs without `.keep`.
//! - `commit-graph`: at least `maintenance.commit-graph.auto` (100)
//!   commits reachable from refs that the commit-graph lacks, counted up
//!   to the threshold, as git counts them.
//! - `pack-refs`: at least `maintenance.pack-refs.auto` (16) loose refs,
//!   or tables beyond the first.
//! - `cleanup`: always (it only lists directories).
//!
//! A threshold of 0 turns the task off under `--auto`; a negative one
//! runs it every time (git's rules for `maintenance.<task>.auto`).

use crate::error::MaintError;
use crate::inventory::Inventory;
use crate::repo::Repo;
use crate::task::Task;

/// True if `task` should run under `--auto`.
pub fn should_run(repo: &Repo, task: Task) -> Result<bool, MaintError> {
    let threshold = repo.maint.auto_threshold(task);
    if threshold < 0 {
        return Ok(true);
    }
    Ok(match task {
        Task::Cleanup => true,
        Task::LooseObjects => {
            let gc_auto = repo.maint.gc_auto;
            let over_gc = gc_auto > 0 && loose_in_17(repo)? > (gc_auto as usize).div_ceil(256);
            (threshold > 0 && crate::loose_files::list(repo)?.len() >= threshold as usize)
                || over_gc
        }
        Task::IncrementalRepack => {
            let inventory = Inventory::read(repo)?;
            let limit = repo.maint.gc_auto_pack_limit;
            let unkept = inventory.packs.iter().filter(|p| !p.keep).count();
            (threshold > 0 && inventory.outside_midx().len() >= threshold as usize)
                || (limit > 0 && unkept > limit as usize)
        }
        Task::CommitGraph => {
            threshold > 0
                && crate::commit_graph::missing_commits(repo, threshold as usize)?
                    >= threshold as usize
        }
        Task::PackRefs => threshold > 0 && crate::refs_task::pending(repo)? >= threshold as usize,
    })
}

/// Loose objects in `objects/17`, git's sample of a 256th.
fn loose_in_17(repo: &Repo) -> Result<usize, MaintError> {
    let hex_len = repo.object_format().hex_len();
    match repo.vfs.read_dir(&repo.objects_dir().join("17")) {
        Ok(entries) => Ok(entries
            .iter()
            .filter(|e| {
                let name = e.name.to_string_lossy();
                name.len() == hex_len - 2 && name.bytes().all(|b| b.is_ascii_hexdigit())
            })
            .count()),
        Err(e) if e.is_not_found() => Ok(0),
        Err(e) => Err(e.into()),
    }
}

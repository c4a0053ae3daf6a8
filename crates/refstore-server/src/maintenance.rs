//! Housekeeping after pushes: `refstore serve` runs `maintenance run
//! --auto` ([`refstore_maint`]) for a repository in the background once a
//! push to it succeeded, on a few worker threads of its own
//! (`--maintenance-workers`, default 1; 0 turns it off), so a push is
//! answered without waiting and the packs it leaves are rolled up as they
//! accumulate.
//!
//! At most one run per repository is queued or running at a time: a push
//! that arrives while one is queued adds nothing, one that arrives while
//! it runs makes it run once more afterwards (its pack may have come too
//! late to be seen). Runs of different repositories proceed in parallel up
//! to the number of workers. The run itself takes git's maintenance lock,
//! so it also never overlaps a `git maintenance`, `git gc` or
//! `refstore maintenance` on the same repository.
//!
//! A server whose refs come from elsewhere (a cluster's etcd, through its
//! [`RefSource`]) maintains each repository with those refs
//! ([`refstore_maint::Repo::with_cluster_refs`]), through a handle made
//! for housekeeping, whose every read is current when made (not the
//! push's, whose reads share what was confirmed during the push): its own
//! ref store is not the truth, so it is neither packed nor used to judge
//! reachability; pruning judges by those refs and a grace period for
//! pushes in flight.

use crate::ref_source::RefSource;
use refstore_fs::config::Override;
use refstore_fs::Vfs;
use refstore_refs::backend::Backend;
use refstore_repo::Repository;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Where a repository is in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Queued,
    Running,
    /// Running, and pushed to since it started.
    RunningAgain,
}

/// The background maintenance of a server.
#[derive(Debug)]
pub struct Maintenance {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    phases: Mutex<HashMap<PathBuf, Phase>>,
    /// The refs of each queued repository whose refs are kept elsewhere
    /// (a cluster's).
    cluster_refs: Mutex<HashMap<PathBuf, Arc<dyn Backend>>>,
    queue: Mutex<Sender<PathBuf>>,
    vfs: Arc<dyn Vfs>,
    overrides: Vec<Override>,
    /// Where the served repositories' refs are kept, when not in their
    /// own ref stores (a cluster's etcd).
    ref_source: Option<Arc<dyn RefSource>>,
}

impl Maintenance {
    /// Starts `workers` threads (none: maintenance is off); with
    /// `ref_source`, repositories are maintained with the refs it gives,
    /// not their own ref stores'.
    pub fn start(
        workers: usize,
        vfs: Arc<dyn Vfs>,
        overrides: Vec<Override>,
        ref_source: Option<Arc<dyn RefSource>>,
    ) -> Maintenance {
        if workers == 0 {
            return Maintenance { inner: None };
        }
        let (sender, receiver) = channel();
        let inner = Arc::new(Inner {
            phases: Mutex::new(HashMap::new()),
            cluster_refs: Mutex::new(HashMap::new()),
            queue: Mutex::new(sender),
            vfs,
            overrides,
            ref_source,
        });
        let receiver = Arc::new(Mutex::new(receiver));
        for n in 0..workers {
            let inner = inner.clone();
            let receiver = receiver.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("maintenance-{n}"))
                .spawn(move || work(&inner, &receiver));
            if let Err(e) = spawned {
                tracing::warn!("cannot start a maintenance worker: {e}");
            }
        }
        Maintenance { inner: Some(inner) }
    }

    /// Asks for `maintenance run --auto` of `repo` (named `name` below
    /// the served root), which a push was just served on.
    pub fn after_push(&self, repo: &refstore_protocol::Repository, name: &str) {
        let Some(inner) = &self.inner else { return };
        let git_dir = repo.location.git_dir.as_path();
        if let Some(source) = &inner.ref_source {
            let refs = source.refs(repo, name, None);
            lock(&inner.cluster_refs).insert(git_dir.to_owned(), refs);
        }
        let mut phases = lock(&inner.phases);
        match phases.get(git_dir).copied() {
            Some(Phase::Queued) | Some(Phase::RunningAgain) => {}
            Some(Phase::Running) => {
                phases.insert(git_dir.to_owned(), Phase::RunningAgain);
            }
            None => {
                phases.insert(git_dir.to_owned(), Phase::Queued);
                let _ = lock(&inner.queue).send(git_dir.to_owned());
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn work(inner: &Inner, receiver: &Mutex<Receiver<PathBuf>>) {
    loop {
        let Ok(git_dir) = lock(receiver).recv() else {
            return;
        };
        lock(&inner.phases).insert(git_dir.clone(), Phase::Running);
        run_once(inner, &git_dir);
        let mut phases = lock(&inner.phases);
        if phases.get(&git_dir) == Some(&Phase::RunningAgain) {
            phases.insert(git_dir.clone(), Phase::Queued);
            let _ = lock(&inner.queue).send(git_dir);
        } else {
            phases.remove(&git_dir);
            lock(&inner.cluster_refs).remove(&git_dir);
        }
    }
}

fn run_once(inner: &Inner, git_dir: &Path) {
    let cluster_refs = lock(&inner.cluster_refs).get(git_dir).cloned();
    let result = Repository::open(inner.vfs.clone(), git_dir, &inner.overrides)
        .map_err(|e| e.to_string())
        .and_then(|repo| {
            match cluster_refs {
                Some(refs) => refstore_maint::Repo::with_cluster_refs(repo, refs),
                None => refstore_maint::Repo::new(repo),
            }
            .map_err(|e| e.to_string())
        })
        .and_then(|repo| {
            let options = refstore_maint::Options {
                auto: true,
                tasks: Vec::new(),
            };
            refstore_maint::run(&repo, &options).map_err(|e| e.to_string())
        });
    match result {
        Ok(Some(reports)) => {
            for report in reports.iter().filter(|r| r.ran) {
                tracing::info!(
                    repo = %git_dir.display(),
                    task = report.task.name(),
                    "maintenance: {}",
                    report.summary
                );
            }
        }
        Ok(None) => {
            tracing::info!(repo = %git_dir.display(), "maintenance skipped: repository busy")
        }
        Err(e) => tracing::warn!(repo = %git_dir.display(), "maintenance failed: {e}"),
    }
}

//! The background repair: at startup and then at every interval, every
//! repository below the served root catches up from the peers, so a node
//! that was down holds every push's objects again without waiting for a
//! fetch to need them. After a repository caught up, its packs' copies
//! on the other members are counted and restored to `object_copies`
//! ([`crate::copies`]).

use crate::Replica;
use refstore_fs::config::Override;
use refstore_fs::discover::is_git_directory;
use refstore_fs::{FileKind, Vfs};
use refstore_protocol::Repository;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How deep below the root repositories are looked for (`team/r.git` is
/// at depth 2).
const MAX_DEPTH: usize = 4;

/// How often the repair thread looks at the shutdown flag while it waits.
const SHUTDOWN_POLL: Duration = Duration::from_millis(200);

/// The repositories below `root`, as paths relative to it (`team/r.git`);
/// a repository's own directories are not searched further.
pub fn repositories(vfs: &dyn Vfs, root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![(String::new(), 0)];
    while let Some((relative, depth)) = pending.pop() {
        let dir = root.join(&relative);
        if !relative.is_empty() && is_git_directory(vfs, &dir) {
            found.push(relative);
            continue;
        }
        if depth == MAX_DEPTH {
            continue;
        }
        let Ok(entries) = vfs.read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy();
            if entry.kind != FileKind::Dir || name.starts_with('.') {
                continue;
            }
            let child = match relative.is_empty() {
                true => name.into_owned(),
                false => format!("{relative}/{name}"),
            };
            pending.push((child, depth + 1));
        }
    }
    found.sort();
    found
}

/// Told, during a repair pass, how far it got: `(done, total)`
/// repositories, `(total, total)` once the pass is over.
pub type Progress = Box<dyn FnMut(usize, usize) + Send>;

impl Replica {
    /// One repair pass over every repository below `root`; how many packs
    /// were added.
    pub fn repair(&self, vfs: &Arc<dyn Vfs>, root: &Path, overrides: &[Override]) -> usize {
        self.repair_reporting(vfs, root, overrides, &mut |_, _| {})
    }

    /// [`Replica::repair`], telling `progress` how far it got.
    pub fn repair_reporting(
        &self,
        vfs: &Arc<dyn Vfs>,
        root: &Path,
        overrides: &[Override],
        progress: &mut dyn FnMut(usize, usize),
    ) -> usize {
        let mut added = 0;
        let (mut still_below, mut copied) = (0, 0);
        let names = repositories(vfs.as_ref(), root);
        for (done, name) in names.iter().enumerate() {
            progress(done, names.len());
            let opened = refstore_repo::Repository::open(vfs.clone(), &root.join(name), overrides);
            match opened.and_then(Repository::serve) {
                Ok(repo) => {
                    added += self.catch_up(&repo, name);
                    match self.restore_copies(&repo, name) {
                        Ok(check) => {
                            still_below += check.still_below as u64;
                            copied += check.copied as u64;
                        }
                        Err(e) => tracing::warn!(repo = name, "cannot count the copies: {e}"),
                    }
                }
                Err(e) => tracing::warn!(repo = name, "repair cannot open the repository: {e}"),
            }
        }
        self.copies_pass_done(still_below, copied);
        progress(names.len(), names.len());
        added
    }
}

/// Runs repair passes on a thread of its own, the first at once, until
/// `shutdown` is set, telling `progress` how far each pass got.
pub fn spawn(
    replica: Arc<Replica>,
    vfs: Arc<dyn Vfs>,
    root: std::path::PathBuf,
    overrides: Vec<Override>,
    shutdown: Arc<AtomicBool>,
    mut progress: Progress,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("refstore-repair".into())
        .spawn(move || loop {
            let added = replica.repair_reporting(&vfs, &root, &overrides, &mut progress);
            tracing::info!(packs = added, "repair pass done");
            let Some(every) = replica.peers.repair_every else {
                return;
            };
            let next = Instant::now() + every;
            while Instant::now() < next {
                if shutdown.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(SHUTDOWN_POLL);
            }
        })
}

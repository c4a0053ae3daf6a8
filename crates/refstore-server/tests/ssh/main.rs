//! The built-in SSH server with the machine's real git and OpenSSH
//! client, the server running in the test's process: clone, fetch, push
//! and ls-remote, keys and access rules, the commands it runs, its limits
//! against clients that misbehave, the limits of a push over SSH and HTTP
//! alike, names of repositories through links, and its metrics.

#[path = "../support/mod.rs"]
mod support;

mod clients;
mod limits;
mod links;
mod metrics;
mod push_limits;

use std::path::{Path, PathBuf};
use support::*;

/// A work repository with two branches and a tag (`home/work`), and bare
/// copies of it at `repos` below `root`; the work repository's path.
pub fn setup(home: &Path, root: &Path, repos: &[&str]) -> PathBuf {
    let work = support::repos::three_commits_work(home);
    for repo in repos {
        work.bare_clone(&root.join(repo));
    }
    work.path
}

/// Commits `len` bytes of [`noise`] as `big` in `work` and serves a bare
/// copy of it at `big.git` below `root`, which it returns.
pub fn serve_big_file(home: &Path, root: &Path, work: &Path, len: usize, seed: u64) -> PathBuf {
    std::fs::write(work.join("big"), noise(seed, len)).unwrap();
    git_ok(home, work, &["add", "big"]);
    git_ok(home, work, &["commit", "-q", "-m", "big"]);
    let served = root.join("big.git");
    bare_clone(home, work, &served);
    served
}

//! Background maintenance after pushes, the server running in the test's
//! process: the packs pushes leave are rolled up, pushes racing the
//! maintenance they start lose nothing, and a run judges a repository by
//! refs read for housekeeping.

#[path = "../support/mod.rs"]
mod support;

mod after_pushes;
mod races;
mod refs;

use std::path::Path;
use support::*;

/// A bare repository `<home>/root/proj.git` with `settings` in its
/// configuration, served with pushes allowed to the user `bob` (password
/// `pw`), and `<home>/work`, an empty repository to push from: the server
/// and the repository's URL for bob.
pub fn served_for_pushes(home: &Path, settings: &[[&str; 2]]) -> (Served, String) {
    let root = home.join("root");
    let served = root.join("proj.git");
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", served.to_str().unwrap()],
    );
    for [key, value] in settings {
        git_ok(home, &served, &["config", key, value]);
    }
    let server = Serve::new(&root).pushes("bob:pw\n").start();
    let url = server.url_as("bob", "pw", "proj.git");
    git_ok(home, home, &["init", "-q", "work"]);
    (server, url)
}

/// Takes git's maintenance lock of the repository at `git_dir`, as `git
/// maintenance` would, once no run holds it: no background run is under
/// way or starts until the lock file is removed. Fails after two minutes.
pub fn take_maintenance_lock(git_dir: &Path) -> std::path::PathBuf {
    let lock = git_dir.join("objects/maintenance.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::fs::File::create_new(&lock).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the maintenance lock was never free"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    lock
}

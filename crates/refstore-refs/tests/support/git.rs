//! Running the machine's git in a test repository (which is its home too),
//! isolated from the developer's configuration, with fixed identities and
//! dates.

use refstore_testsupport::{stderr, stdout as text, Git};
use std::path::{Path, PathBuf};

/// The date of every commit and reflog entry git writes here.
const DATE: &str = "1700000000 +0130";

/// Runs `git <args>` in `dir` and returns (stdout, stderr); panics with
/// git's message if it fails.
pub fn run(dir: &Path, args: &[&str]) -> (String, String) {
    let out = Git::at(dir).dated(DATE).run(args);
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    (text(&out), stderr(&out))
}

/// Like [`run`], returning stdout only.
pub fn stdout(dir: &Path, args: &[&str]) -> String {
    run(dir, args).0
}

/// A bare repository `dir/<name>` whose refs live in a reftable stack
/// nobody wrote yet, laid out as git lays it out (the machine's git makes
/// it a files repository; the layout is changed by hand).
pub fn reftable_repo(dir: &Path, name: &str) -> PathBuf {
    stdout(dir, &["init", "-q", "--bare", name]);
    let git_dir = dir.join(name);
    stdout(&git_dir, &["config", "core.repositoryformatversion", "1"]);
    stdout(&git_dir, &["config", "extensions.refStorage", "reftable"]);
    std::fs::remove_dir_all(git_dir.join("refs")).unwrap();
    std::fs::create_dir(git_dir.join("refs")).unwrap();
    std::fs::write(
        git_dir.join("refs/heads"),
        "this repository uses the reftable format\n",
    )
    .unwrap();
    std::fs::write(git_dir.join("HEAD"), "ref: refs/heads/.invalid\n").unwrap();
    git_dir
}

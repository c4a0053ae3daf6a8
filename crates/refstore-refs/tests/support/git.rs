//! Running the machine's git in a test repository, isolated from the
//! developer's configuration, with fixed identities and dates.

use std::path::Path;
use std::process::Command;

/// Runs `git <args>` in `dir` and returns (stdout, stderr); panics with
/// git's message if it fails.
pub fn run(dir: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "1700000000 +0130")
        .env("GIT_AUTHOR_DATE", "1700000000 +0130")
        .output()
        .expect("cannot run git: install git (scripts/install-deps does)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Like [`run`], returning stdout only.
pub fn stdout(dir: &Path, args: &[&str]) -> String {
    run(dir, args).0
}

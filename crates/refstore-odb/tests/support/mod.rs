//! Running the machine's git in a test repository (which is its home too),
//! isolated from the developer's configuration, global configuration
//! included, with fixed identities and dates; and the fault-matrix driver.
#![allow(dead_code, unused_imports)] // each test binary uses a different part

use refstore_testsupport::Git;
use std::path::Path;

/// The fault-injection matrix driver, shared with refstore-refs' tests.
pub use refstore_testsupport::faults;

fn git(dir: &Path) -> Git {
    Git::at(dir).no_global_config().dated("1700000000 +0130")
}

/// Runs `git <args>` in `dir` with `input` on stdin; returns stdout as
/// bytes, panicking with git's message if it fails.
pub fn run_with_input(dir: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    git(dir).ok_bytes(args, input)
}

/// Runs `git <args>` in `dir`; returns stdout, trimmed of its final newline.
pub fn run(dir: &Path, args: &[&str]) -> String {
    git(dir).ok(args).trim_end_matches('\n').to_owned()
}

/// Runs `git <args>` in `dir`; returns whether it succeeded and its stdout.
pub fn try_run(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = git(dir).run(args);
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap().trim_end().to_owned(),
    )
}

/// A pack of everything in a repository git makes at `dir`: `commits`
/// versions of one growing file, so the pack holds deltas.
pub fn small_pack(dir: &Path, commits: usize) -> Vec<u8> {
    run(dir, &["init", "-q", "."]);
    for i in 0..commits {
        std::fs::write(dir.join("file"), "some text\n".repeat(50 + i)).unwrap();
        run(dir, &["add", "file"]);
        run(dir, &["commit", "-q", "-m", &format!("c{i}")]);
    }
    run_with_input(dir, &["pack-objects", "--stdout", "--all", "-q"], b"")
}

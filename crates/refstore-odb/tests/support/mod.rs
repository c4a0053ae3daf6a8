//! Running the machine's git in a test repository, isolated from the
//! developer's configuration, with fixed identities and dates.
#![allow(dead_code)] // each test binary uses a different part

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "1700000000 +0130")
        .env("GIT_AUTHOR_DATE", "1700000000 +0130");
    cmd
}

/// Runs `git <args>` in `dir` with `input` on stdin; returns stdout as
/// bytes, panicking with git's message if it fails.
pub fn run_with_input(dir: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = git(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run git: install git (scripts/install-deps does)");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `git <args>` in `dir`; returns stdout, trimmed of its final newline.
pub fn run(dir: &Path, args: &[&str]) -> String {
    let out = run_with_input(dir, args, b"");
    String::from_utf8(out)
        .unwrap()
        .trim_end_matches('\n')
        .to_owned()
}

/// Runs `git <args>` in `dir`; returns whether it succeeded and its stdout.
pub fn try_run(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = git(dir).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap().trim_end().to_owned(),
    )
}

/// The fault-injection matrix driver of refstore-refs' tests, shared.
#[path = "../../../refstore-refs/tests/support/faults.rs"]
pub mod faults;

//! Helpers shared by the integration tests that drive the real git.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `git <args>` in `dir`, isolated from the user's configuration, with
/// `input` on stdin.
pub fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run git: install git (scripts/install-deps does)");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // git may stop reading early; that is its answer, not a failure.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

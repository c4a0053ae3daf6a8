//! Running `refstore` and `git` side by side in isolated environments.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// An environment free of the developer's configuration: HOME is `home`,
/// no system config, fixed identities.
pub fn isolate<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_CEILING_DIRECTORIES")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
}

pub fn refstore(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn git(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new("git"), home)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("cannot run git: install git (scripts/install-deps does)")
}

/// Runs `cmd` (already isolated) with `input` on its standard input. A
/// program that stops reading early (as git does at a bad command) may close
/// the pipe first; that is not an error here.
pub fn run_with_input(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs git and fails the test if it fails.
pub fn git_ok(home: &Path, cwd: &Path, args: &[&str]) -> String {
    let o = git(home, cwd, args);
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// A bare copy of the repository at `from` made by git at `to`, as the
/// repositories a test serves are made.
pub fn bare_clone(home: &Path, from: &Path, to: &Path) {
    let (from, to) = (from.to_str().unwrap(), to.to_str().unwrap());
    git_ok(home, home, &["clone", "-q", "--bare", from, to]);
}

/// git's bare clone of `repo` into `to` served by refstore's upload-pack:
/// a file:// URL makes git use its transport rather than copy files, so
/// refstore answers. The caller judges the output.
pub fn clone_through_refstore(home: &Path, repo: &Path, to: &Path) -> Output {
    let upload_pack = format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"));
    git(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            "--upload-pack",
            &upload_pack,
            &format!("file://{}", repo.display()),
            to.to_str().unwrap(),
        ],
    )
}

/// Runs `args` through refstore and git in `cwd` and requires the same exit
/// code and standard output, and the same standard error where asked
/// (always for git's fatal errors).
pub fn assert_agrees(home: &Path, cwd: &Path, args: &[&str], same_stderr: bool) {
    let ours = refstore(home, cwd, args);
    let theirs = git(home, cwd, args);
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{args:?}: {}",
        stderr(&ours)
    );
    assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
    if same_stderr || theirs.status.code() == Some(128) {
        assert_eq!(stderr(&ours), stderr(&theirs), "{args:?}");
    }
}

/// Reading `/metrics`.
pub mod prometheus;

/// Shallow clones from refstore and from git compared.
pub mod shallow;

/// Bounded, seeded rounds for stress tests.
pub mod stress;

/// Packers, writers and readers of refs racing, and what must hold.
pub mod ref_races;

/// JGit, an implementation of both ref formats independent of refstore and
/// of the machine's git.
#[path = "../../../refstore-refs/tests/support/jgit.rs"]
pub mod jgit;

/// `len` bytes that do not compress, the same on every run.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

//! Running `refstore` and `git` side by side in isolated environments:
//! what refstore-cli's tests share beyond refstore-testsupport, whose
//! runners are re-exported here.
#![allow(dead_code, unused_imports)] // each test binary uses a different part

use std::path::Path;
use std::process::{Command, Output};

pub use refstore_testsupport::fixtures::{self, bare_clone, Work};
pub use refstore_testsupport::{git, git_ok, isolate, run_with_input, stderr, stdout};

/// `refstore <args>` in `cwd`, in the same isolated environment as git.
pub fn refstore(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// `program <args>` (git or refstore) in `cwd`, isolated, with `input`
/// on its standard input.
pub fn run_isolated(program: &str, home: &Path, cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    run_with_input(
        isolate(&mut Command::new(program), home)
            .args(args)
            .current_dir(cwd),
        input,
    )
}

/// `refstore <args>` in `cwd` with `input` on its standard input.
pub fn refstore_with_input(home: &Path, cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    run_isolated(env!("CARGO_BIN_EXE_refstore"), home, cwd, args, input)
}

/// `git <args>` in `cwd` with `input` on its standard input, which must
/// succeed: its standard output.
pub fn git_bytes(home: &Path, cwd: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    refstore_testsupport::Git::new(home, cwd).ok_bytes(args, input)
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

/// Pushes into refstore's receive-pack and git's compared.
pub mod push_pair;

/// Shallow clones from refstore and from git compared.
pub mod shallow;

/// Generated histories for fetches compared with git.
pub mod history;

/// Bounded, seeded rounds for stress tests.
pub mod stress;

/// Packers, writers and readers of refs racing, and what must hold.
pub mod ref_races;

/// JGit, an implementation of both ref formats independent of refstore and
/// of the machine's git.
pub use refstore_testsupport::jgit;

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

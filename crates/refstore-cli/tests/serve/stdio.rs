//! The services over stdio, as git runs them through `--upload-pack` and
//! `--receive-pack`: `refstore receive-pack` takes the push limits from
//! the repository's configuration, and real git clients fetch from and
//! push to a reftable repository (JGit reading the pushed refs from the
//! stack).

use crate::ssh_served::{refs_of, setup};
use crate::support::jgit;
use crate::support::*;
use std::path::Path;

/// Adds a file of `len` bytes of noise to `work` in a new commit.
fn commit_noise(home: &Path, work: &Path, len: usize) {
    std::fs::write(work.join("noise"), noise(7, len)).unwrap();
    git_ok(home, work, &["add", "noise"]);
    git_ok(home, work, &["commit", "-q", "-m", "noise"]);
}

fn quarantines(git_dir: &Path) -> usize {
    std::fs::read_dir(git_dir.join("objects"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("tmp_objdir")
        })
        .count()
}

#[test]
fn receive_pack_over_stdio_takes_the_limits_from_the_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    git_ok(
        home,
        &served,
        &["config", "refstore.maxPushRequest", "100k"],
    );
    let before = refs_of(home, &served);
    commit_noise(home, &work, 1 << 20);
    let receive_pack = format!("{} receive-pack", env!("CARGO_BIN_EXE_refstore"));
    let url = format!("file://{}", served.display());
    let o = git(
        home,
        &work,
        &[
            "push",
            "--receive-pack",
            &receive_pack,
            &url,
            "HEAD:refs/heads/big",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the request is larger than this server accepts (102400 bytes)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &served), before);
    assert_eq!(quarantines(&served), 0);
}

#[test]
fn git_clones_from_and_pushes_to_a_reftable_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let bin = env!("CARGO_BIN_EXE_refstore");
    git_ok(home, home, &["init", "-q", "-b", "main", "src"]);
    let src = home.join("src");
    git_ok(home, &src, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git_ok(home, &src, &["tag", "-a", "v1", "-m", "tag"]);
    git_ok(home, home, &["clone", "-q", "--bare", "src", "served.git"]);
    let served = home.join("served.git");
    let out = refstore(home, &served, &["refs", "migrate", "--ref-format=reftable"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let upload = format!("{bin} upload-pack");
    let listed = git_ok(
        home,
        home,
        &["ls-remote", "--upload-pack", &upload, "served.git"],
    );
    let expected = git_ok(home, &src, &["show-ref", "--head", "-d"]);
    let normalize = |s: &str| {
        let mut lines: Vec<String> = s.lines().map(|l| l.replace('\t', " ")).collect();
        lines.sort();
        lines
    };
    assert_eq!(normalize(&listed), normalize(&expected));
    git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--upload-pack",
            &upload,
            "served.git",
            "work",
        ],
    );
    let work = home.join("work");

    git_ok(home, &work, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let receive = format!("{bin} receive-pack");
    let pushed = git(
        home,
        &work,
        &[
            "push",
            "-q",
            "--receive-pack",
            &receive,
            "origin",
            "main:main",
            "main:refs/heads/new",
            ":refs/tags/v1",
        ],
    );
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let tip = git_ok(home, &work, &["rev-parse", "main"]);
    let tip = tip.trim();
    assert_eq!(
        jgit::dump(&served)
            .lines()
            .filter(|l| !l.starts_with("log "))
            .collect::<Vec<_>>(),
        [
            "symref HEAD refs/heads/main".to_owned(),
            format!("ref refs/heads/main {tip}"),
            format!("ref refs/heads/new {tip}"),
        ]
    );
}

//! Real git clients fetch from and push to a reftable repository through
//! `refstore upload-pack` and `refstore receive-pack`; JGit reads the
//! pushed refs from the stack.

mod support;
use support::jgit;

use support::{git, git_ok, refstore, stderr};

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

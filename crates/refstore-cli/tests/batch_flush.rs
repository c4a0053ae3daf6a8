//! `refstore.batchFlush` reaches the flush points of ref updates and object
//! writes: traced with strace, `syncfs` issues `syncfs(2)` and no
//! `fdatasync`, `fdatasync` the reverse, and `auto` does what the
//! filesystem's type calls for. A wrong value is a fatal error that changes
//! nothing.

mod support;
use refstore_fs::flush::BatchMechanism;
use refstore_fs::real::RealFs;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// Runs refstore under strace and returns how many `syncfs` and
/// `fdatasync` calls it made.
fn flush_calls(home: &Path, repo: &Path, args: &[&str], stdin: &str) -> (usize, usize) {
    let trace = home.join("trace");
    let mut child = isolate(&mut Command::new("strace"), home)
        .args(["-f", "-qq", "-e", "trace=syncfs,fdatasync", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_refstore"))
        .args(args)
        .current_dir(repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot run strace: install strace (scripts/install-deps does)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let log = std::fs::read_to_string(&trace).unwrap();
    let count = |call: &str| {
        log.lines()
            .filter(|l| l.contains(&format!("{call}(")) && !l.contains("= -1"))
            .count()
    };
    (count("syncfs"), count("fdatasync"))
}

/// `home/r`, a files repository whose `main` holds one empty commit, and
/// that commit's id as `rev-parse` prints it.
fn repository_with_one_commit(home: &Path) -> (PathBuf, String) {
    git_ok(home, home, &["init", "-q", "-b", "main", "r"]);
    let repo = home.join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    let head = git_ok(home, &repo, &["rev-parse", "HEAD"]);
    (repo, head)
}

#[test]
fn the_configured_mechanism_makes_the_flushes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (repo, head) = repository_with_one_commit(home);
    let head = head.trim();
    let auto = BatchMechanism::Auto.resolve(&RealFs::new(), &repo.join(".git"));
    for (i, value) in ["auto", "syncfs", "fdatasync"].into_iter().enumerate() {
        let setting = format!("refstore.batchFlush={value}");
        let configured = BatchMechanism::from_config_name(value).unwrap();
        // `auto` flushes as the filesystem calls for, whatever the size.
        let expected = match configured {
            BatchMechanism::Auto => auto,
            chosen => chosen,
        };
        let check = |what: &str, (syncfs, fdatasync): (usize, usize)| match expected {
            BatchMechanism::Syncfs => assert!(
                syncfs > 0 && fdatasync == 0,
                "{value}, {what}: {syncfs} syncfs, {fdatasync} fdatasync"
            ),
            _ => assert!(
                syncfs == 0 && fdatasync > 0,
                "{value}, {what}: {syncfs} syncfs, {fdatasync} fdatasync"
            ),
        };
        let name = format!("refs/heads/b{i}");
        let calls = flush_calls(
            home,
            &repo,
            &["-c", &setting, "update-ref", &name, head],
            "",
        );
        check("update-ref", calls);
        let calls = flush_calls(
            home,
            &repo,
            &["-c", &setting, "hash-object", "-w", "--stdin"],
            &format!("object {i}\n"),
        );
        check("hash-object -w", calls);
        assert_eq!(git_ok(home, &repo, &["rev-parse", &name]).trim(), head);
        let many: String = (0..20)
            .map(|n| format!("create refs/heads/many{i}/r{n} {head}\n"))
            .collect();
        let calls = flush_calls(
            home,
            &repo,
            &["-c", &setting, "update-ref", "--stdin"],
            &many,
        );
        check("update-ref --stdin of 20 refs", calls);
    }
}

#[test]
fn a_wrong_value_is_fatal_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (repo, head) = repository_with_one_commit(home);
    let out = refstore(
        home,
        &repo,
        &[
            "-c",
            "refstore.batchFlush=sometimes",
            "update-ref",
            "refs/heads/new",
            head.trim(),
        ],
    );
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: invalid value for 'refstore.batchflush': 'sometimes' (expected auto, syncfs or fdatasync)\n"
    );
    assert!(!git(
        home,
        &repo,
        &["rev-parse", "--verify", "-q", "refs/heads/new"]
    )
    .status
    .success());
}

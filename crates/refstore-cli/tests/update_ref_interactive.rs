//! `update-ref --stdin` driven interactively: each verb is acknowledged
//! before the next command is sent, a prepared transaction holds its locks
//! against git until it is committed or aborted, and nothing is visible
//! before `commit`.

mod support;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use support::*;

#[test]
fn prepared_transaction_holds_locks_until_commit_or_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "repo"]);
    let repo = home.join("repo");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let id = git_ok(home, &repo, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();

    let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
        .args(["update-ref", "--stdin"])
        .current_dir(&repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut send = |line: &str| {
        input.write_all(line.as_bytes()).unwrap();
        input.flush().unwrap();
    };
    let mut expect = |want: &str| {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        assert_eq!(line, want);
    };

    send(&format!("start\nupdate refs/heads/x {id}\nprepare\n"));
    expect("start: ok\n");
    expect("prepare: ok\n");
    assert!(repo.join(".git/refs/heads/x.lock").exists());
    assert!(
        !repo.join(".git/refs/heads/x").exists(),
        "visible before commit"
    );
    let blocked = git(home, &repo, &["update-ref", "refs/heads/x", &id]);
    assert_eq!(blocked.status.code(), Some(128));
    assert!(
        stderr(&blocked).contains("Unable to create"),
        "{}",
        stderr(&blocked)
    );

    send("commit\n");
    expect("commit: ok\n");
    assert!(!repo.join(".git/refs/heads/x.lock").exists());
    assert_eq!(
        git_ok(home, &repo, &["rev-parse", "refs/heads/x"]).trim(),
        id
    );

    send("start\ndelete refs/heads/x\nprepare\n");
    expect("start: ok\n");
    expect("prepare: ok\n");
    assert!(repo.join(".git/refs/heads/x.lock").exists());
    send("abort\n");
    expect("abort: ok\n");
    assert!(!repo.join(".git/refs/heads/x.lock").exists());

    drop(input);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(
        git_ok(home, &repo, &["rev-parse", "refs/heads/x"]).trim(),
        id,
        "an aborted delete changed the ref"
    );
}

#[test]
fn a_prepared_transaction_left_at_end_of_input_is_abandoned() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "repo"]);
    let repo = home.join("repo");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let id = git_ok(home, &repo, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    for input in [
        format!("start\nupdate refs/heads/y {id}\nprepare\n"),
        format!("start\nupdate refs/heads/y {id}\n"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home)
            .args(["update-ref", "--stdin"])
            .current_dir(&repo);
        let out = run_with_input(&mut cmd, input.as_bytes());
        assert!(out.status.success());
        assert!(!repo.join(".git/refs/heads/y").exists());
        assert!(!repo.join(".git/refs/heads/y.lock").exists());
    }
}

//! Every ref command on a repository in the reftable format, checked with
//! JGit (the git on this machine predates reftable): `init` lays the
//! repository out so JGit opens it, and what update-ref, symbolic-ref and
//! pack-refs write is what JGit reads, reflogs included.

mod support;
use support::jgit;

use std::path::Path;
use std::process::{Command, Output};
use support::{isolate, run_with_input, stderr, stdout};

fn refstore(home: &Path, cwd: &Path, args: &[&str], input: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .env("GIT_COMMITTER_DATE", "1700000000 +0130")
        .args(args)
        .current_dir(cwd);
    run_with_input(&mut cmd, input.as_bytes())
}

fn ok(home: &Path, cwd: &Path, args: &[&str], input: &str) -> String {
    let out = refstore(home, cwd, args, input);
    assert!(out.status.success(), "refstore {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Writes `count` distinct commits into the repository at `work` (update-ref
/// refuses ids of objects the repository lacks, as git does); entry 0 is the
/// null id.
fn commits(home: &Path, work: &Path, count: u32) -> Vec<String> {
    let tree = ok(
        home,
        work,
        &["hash-object", "-t", "tree", "-w", "--stdin"],
        "",
    );
    let mut ids = vec!["0".repeat(40)];
    for n in 1..count {
        let body = format!(
            "tree {}\nauthor A <a@example.com> {n} +0000\ncommitter C <c@example.com> {n} +0000\n\ncommit {n}\n",
            tree.trim()
        );
        let id = ok(
            home,
            work,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            &body,
        );
        ids.push(id.trim().to_owned());
    }
    ids
}

fn log(name: &str, old: &str, new: &str, message: &str) -> String {
    format!("log {name} {old} {new} 1700000000 90 committer@example.com C O Mitter\t{message}\n\n")
}

#[test]
fn init_lays_out_a_repository_jgit_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    ok(
        home,
        home,
        &[
            "init",
            "-q",
            "--bare",
            "--ref-format=reftable",
            "-b",
            "trunk",
            "r.git",
        ],
        "",
    );
    let git_dir = home.join("r.git");
    assert_eq!(
        std::fs::read_to_string(git_dir.join("HEAD")).unwrap(),
        "ref: refs/heads/.invalid\n"
    );
    assert_eq!(
        std::fs::read_to_string(git_dir.join("refs/heads")).unwrap(),
        "this repository uses the reftable format\n"
    );
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
    assert!(config.contains("repositoryformatversion = 1"), "{config}");
    assert!(
        config.contains("[extensions]\n\trefstorage = reftable\n"),
        "{config}"
    );
    assert_eq!(jgit::dump(&git_dir), "symref HEAD refs/heads/trunk\n");
    // git 2.39 refuses the repository rather than seeing it empty.
    let git = support::git(home, &git_dir, &["show-ref"]);
    assert!(!git.status.success());
}

#[test]
fn ref_commands_write_what_jgit_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    ok(
        home,
        home,
        &["init", "-q", "--ref-format=reftable", "-b", "main", "w"],
        "",
    );
    let work = home.join("w");
    let git_dir = work.join(".git");
    let ids = commits(home, &work, 10);
    let id = |n: usize| ids[n].clone();
    let null = id(0);

    let stdin = format!(
        "start\ncreate refs/heads/main {}\ncreate refs/heads/topic {}\ncreate refs/tags/v1 {}\nprepare\ncommit\n",
        id(1),
        id(2),
        id(3)
    );
    assert_eq!(
        ok(
            home,
            &work,
            &["update-ref", "-m", "first", "--stdin"],
            &stdin
        ),
        "start: ok\nprepare: ok\ncommit: ok\n"
    );
    ok(
        home,
        &work,
        &["update-ref", "-m", "second", "HEAD", &id(4), &id(1)],
        "",
    );
    ok(home, &work, &["update-ref", "-d", "refs/heads/topic"], "");
    ok(
        home,
        &work,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/heads/main",
        ],
        "",
    );

    // Refusals as in the files format.
    let out = refstore(
        home,
        &work,
        &["update-ref", "refs/heads/main", &id(5), &id(9)],
        "",
    );
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        format!(
            "fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': is at {} but expected {}\n",
            id(4),
            id(9)
        )
    );
    let out = refstore(
        home,
        &work,
        &["update-ref", "refs/heads/main/x", &id(5)],
        "",
    );
    assert!(stderr(&out).contains("'refs/heads/main' exists; cannot create 'refs/heads/main/x'"));

    assert_eq!(
        ok(home, &work, &["show-ref"], ""),
        format!(
            "{} refs/heads/main\n{} refs/remotes/origin/HEAD\n{} refs/tags/v1\n",
            id(4),
            id(4),
            id(3)
        )
    );
    assert_eq!(
        ok(
            home,
            &work,
            &[
                "for-each-ref",
                "--format=%(refname) %(symref)",
                "refs/remotes"
            ],
            ""
        ),
        "refs/remotes/origin/HEAD refs/heads/main\n"
    );
    assert_eq!(
        ok(home, &work, &["symbolic-ref", "HEAD"], ""),
        "refs/heads/main\n"
    );

    let expected = [
        "symref HEAD refs/heads/main\n".to_owned(),
        format!("ref refs/heads/main {}\n", id(4)),
        "symref refs/remotes/origin/HEAD refs/heads/main\n".to_owned(),
        format!("ref refs/tags/v1 {}\n", id(3)),
        log("HEAD", &null, &id(1), "first"),
        log("HEAD", &id(1), &id(4), "second"),
        log("refs/heads/main", &null, &id(1), "first"),
        log("refs/heads/main", &id(1), &id(4), "second"),
    ]
    .concat();
    assert_eq!(jgit::dump(&git_dir), expected);

    // pack-refs compacts the stack into one table; nothing changes for
    // readers, and the table is sound.
    ok(home, &work, &["pack-refs", "--all"], "");
    let list = std::fs::read_to_string(git_dir.join("reftable/tables.list")).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert_eq!(jgit::dump(&git_dir), expected);
    let verify = refstore(home, &work, &["refs", "verify"], "");
    assert_eq!(
        (verify.status.code(), stderr(&verify)),
        (Some(0), String::new())
    );

    // Damage is reported with the file at fault.
    let table = git_dir.join("reftable").join(list.trim());
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[30] ^= 0x55;
    std::fs::write(&table, bytes).unwrap();
    let verify = refstore(home, &work, &["refs", "verify"], "");
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        stderr(&verify).contains(&format!("error: reftable/{}: ", list.trim())),
        "{}",
        stderr(&verify)
    );
}

//! `update-ref` writes only values git would write: an object the repository
//! has, and a commit where the ref is a branch. Each case runs through git
//! and refstore on one repository (files format) and must give the same exit
//! code, the same message and the same refs; the reftable format refuses
//! with the same words.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use support::{git, git_ok, isolate, refstore, run_with_input, stderr};

const MISSING: &str = "1111111111111111111111111111111111111111";

struct Objects {
    commit: String,
    tree: String,
    blob: String,
}

fn objects(home: &Path, repo: &Path) -> Objects {
    git_ok(home, repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    let rev = |spec: &str| git_ok(home, repo, &["rev-parse", spec]).trim().to_owned();
    let blob = run_with_input(
        isolate(&mut Command::new("git"), home)
            .args(["hash-object", "-w", "--stdin"])
            .current_dir(repo),
        b"content\n",
    );
    Objects {
        commit: rev("HEAD"),
        tree: rev("HEAD^{tree}"),
        blob: String::from_utf8(blob.stdout).unwrap().trim().to_owned(),
    }
}

fn with_stdin(program: &str, home: &Path, repo: &Path, args: &[&str], input: &str) -> Output {
    let mut cmd = Command::new(program);
    isolate(&mut cmd, home).args(args).current_dir(repo);
    run_with_input(&mut cmd, input.as_bytes())
}

fn refs(home: &Path, repo: &Path) -> String {
    git_ok(
        home,
        repo,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    )
}

#[test]
fn values_are_checked_as_git_checks_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let repo = home.join("r");
    git_ok(home, home, &["init", "-q", "-b", "main", "r"]);
    let o = objects(home, &repo);

    let argv_cases: Vec<Vec<&str>> = vec![
        vec!["update-ref", "refs/heads/x", MISSING],
        vec!["update-ref", "refs/tags/x", MISSING],
        vec!["update-ref", "refs/heads/t", &o.tree],
        vec!["update-ref", "HEAD", &o.blob],
        vec!["update-ref", "--no-deref", "HEAD", MISSING],
        vec!["update-ref", "refs/tags/tree", &o.tree],
        vec!["update-ref", "refs/other/blob", &o.blob],
        vec!["update-ref", "refs/heads/ok", &o.commit],
    ];
    for args in &argv_cases {
        let before = refs(home, &repo);
        let ours = refstore(home, &repo, args);
        let after_ours = refs(home, &repo);
        let theirs = git(home, &repo, args);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(stderr(&ours), stderr(&theirs), "{args:?}");
        if !theirs.status.success() {
            assert_eq!(after_ours, before, "{args:?}: a refused value changed refs");
        }
        assert_eq!(after_ours, refs(home, &repo), "{args:?}");
    }
    assert!(refs(home, &repo).contains("refs/tags/tree"));

    let stdin_cases = [
        format!("create refs/heads/y {MISSING}\n"),
        format!(
            "create refs/heads/a {}\ncreate refs/heads/b {}\n",
            o.commit, o.blob
        ),
        format!("update refs/heads/ok {MISSING} {}\n", o.commit),
        format!("update refs/tags/blob {}\n", o.blob),
    ];
    for input in &stdin_cases {
        let before = refs(home, &repo);
        let ours = with_stdin(
            env!("CARGO_BIN_EXE_refstore"),
            home,
            &repo,
            &["update-ref", "--stdin"],
            input,
        );
        let after_ours = refs(home, &repo);
        let theirs = with_stdin("git", home, &repo, &["update-ref", "--stdin"], input);
        assert_eq!(ours.status.code(), theirs.status.code(), "{input}");
        assert_eq!(stderr(&ours), stderr(&theirs), "{input}");
        if !theirs.status.success() {
            assert_eq!(
                after_ours, before,
                "{input}: the transaction was not atomic"
            );
        }
        assert_eq!(after_ours, refs(home, &repo), "{input}");
    }
    assert!(refs(home, &repo).contains("refs/tags/blob"));
}

#[test]
fn batch_updates_reject_only_the_bad_values() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let repo = home.join("r");
    git_ok(home, home, &["init", "-q", "-b", "main", "r"]);
    let o = objects(home, &repo);
    let input = format!(
        "create refs/heads/good {}\ncreate refs/heads/gone {MISSING}\ncreate refs/heads/blob {}\n",
        o.commit, o.blob
    );
    let out = with_stdin(
        env!("CARGO_BIN_EXE_refstore"),
        home,
        &repo,
        &["update-ref", "--stdin", "--batch-updates"],
        &input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains(&format!(
        "refs/heads/gone rejected: cannot update ref 'refs/heads/gone': trying to write ref 'refs/heads/gone' with nonexistent object {MISSING}"
    )), "{report}");
    assert!(report.contains(&format!(
        "refs/heads/blob rejected: cannot update ref 'refs/heads/blob': trying to write non-commit object {} to branch 'refs/heads/blob'",
        o.blob
    )), "{report}");
    let listed = refs(home, &repo);
    assert!(listed.contains("refs/heads/good"), "{listed}");
    assert!(!listed.contains("refs/heads/gone") && !listed.contains("refs/heads/blob"));
}

#[test]
fn reftable_refuses_with_the_same_words() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let repo = home.join("r");
    let out = refstore(home, home, &["init", "-q", "--ref-format=reftable", "r"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = refstore(home, &repo, &["update-ref", "refs/heads/x", MISSING]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        format!("fatal: update_ref failed for ref 'refs/heads/x': cannot update ref 'refs/heads/x': trying to write ref 'refs/heads/x' with nonexistent object {MISSING}\n")
    );
    let listed = refstore(home, &repo, &["for-each-ref"]);
    assert!(listed.status.success() && listed.stdout.is_empty());
}

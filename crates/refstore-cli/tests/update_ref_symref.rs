//! The `symref-*` commands of `update-ref --stdin` (git 2.46 and later;
//! the machine's git predates them, so results are read back with the
//! machine's `git symbolic-ref`, `git rev-parse` and `git fsck`).

mod support;
use std::path::Path;
use std::process::{Command, Output};
use support::*;

fn stdin_update(home: &Path, repo: &Path, args: &[&str], input: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .arg("update-ref")
        .args(args)
        .arg("--stdin")
        .current_dir(repo);
    run_with_input(&mut cmd, input.as_bytes())
}

fn target_of(home: &Path, repo: &Path, name: &str) -> Option<String> {
    let o = git(home, repo, &["symbolic-ref", "-q", name]);
    o.status.success().then(|| stdout(&o).trim().to_owned())
}

#[test]
fn symref_commands_create_update_verify_and_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "repo"]);
    let repo = home.join("repo");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git_ok(home, &repo, &["branch", "other"]);
    git_ok(home, &repo, &["branch", "plain"]);
    let id = git_ok(home, &repo, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    let ok = |input: &str| {
        let o = stdin_update(home, &repo, &[], input);
        assert!(o.status.success(), "{input:?}: {}", stderr(&o));
    };
    let fails = |input: &str| {
        let o = stdin_update(home, &repo, &[], input);
        assert_eq!(o.status.code(), Some(128), "{input:?} succeeded");
        assert!(stderr(&o).starts_with("fatal: "), "{}", stderr(&o));
    };

    ok("symref-create refs/heads/alias refs/heads/main\n");
    assert_eq!(
        target_of(home, &repo, "refs/heads/alias").as_deref(),
        Some("refs/heads/main")
    );
    fails("symref-create refs/heads/alias refs/heads/other\n");
    assert_eq!(
        target_of(home, &repo, "refs/heads/alias").as_deref(),
        Some("refs/heads/main")
    );

    ok("symref-verify refs/heads/alias refs/heads/main\n");
    fails("symref-verify refs/heads/alias refs/heads/other\n");
    fails("symref-verify refs/heads/plain refs/heads/main\n");

    ok("symref-update refs/heads/alias refs/heads/other ref refs/heads/main\n");
    assert_eq!(
        target_of(home, &repo, "refs/heads/alias").as_deref(),
        Some("refs/heads/other")
    );
    fails("symref-update refs/heads/alias refs/heads/main ref refs/heads/main\n");
    assert_eq!(
        target_of(home, &repo, "refs/heads/alias").as_deref(),
        Some("refs/heads/other")
    );

    // A regular ref becomes symbolic when its old value matches.
    fails(&format!(
        "symref-update refs/heads/plain refs/heads/main oid {}\n",
        "1".repeat(40)
    ));
    assert_eq!(target_of(home, &repo, "refs/heads/plain"), None);
    ok(&format!(
        "symref-update refs/heads/plain refs/heads/main oid {id}\n"
    ));
    assert_eq!(
        target_of(home, &repo, "refs/heads/plain").as_deref(),
        Some("refs/heads/main")
    );

    // HEAD moves to another branch; the -z form spells the same commands.
    let o = stdin_update(
        home,
        &repo,
        &["-z"],
        "symref-update\0HEAD refs/heads/other\0\0\0\0",
    );
    // In -z form the command word is followed by a space, then the name.
    assert_ne!(
        o.status.code(),
        Some(0),
        "a space-separated target in -z form"
    );
    let o = stdin_update(
        home,
        &repo,
        &["-z"],
        "symref-update HEAD\0refs/heads/other\0ref\0refs/heads/main\0",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        target_of(home, &repo, "HEAD").as_deref(),
        Some("refs/heads/other")
    );

    // One failing command leaves the whole transaction undone.
    fails("symref-create refs/heads/new refs/heads/main\nsymref-delete refs/heads/alias refs/heads/main\n");
    assert_eq!(target_of(home, &repo, "refs/heads/new"), None);
    assert_eq!(
        target_of(home, &repo, "refs/heads/alias").as_deref(),
        Some("refs/heads/other")
    );

    ok("symref-delete refs/heads/alias refs/heads/other\n");
    assert!(!git(
        home,
        &repo,
        &["rev-parse", "-q", "--verify", "refs/heads/alias"]
    )
    .status
    .success());
    assert!(!repo.join(".git/refs/heads/alias").exists());
    git_ok(home, &repo, &["fsck", "--no-progress"]);
    assert_eq!(
        git_ok(
            home,
            &repo,
            &["rev-parse", "refs/heads/other", "refs/heads/main"]
        ),
        format!("{id}\n{id}\n")
    );
}

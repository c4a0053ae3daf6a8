//! `refstore symbolic-ref` reads, sets and deletes symbolic refs as
//! `git symbolic-ref` does: same output, exit codes, messages, resulting refs
//! and HEAD reflog.

mod support;
use refstore_testsupport::env::{fixed_dates, FIXED_DATE};
use support::*;

fn setup(home: &std::path::Path, dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    git_ok(home, dir, &["init", "-q", "-b", "main", name]);
    let repo = dir.join(name);
    let mut cmd = std::process::Command::new("git");
    // Both dates fixed: the two repositories must make the same commit
    // even when their set-ups straddle a second.
    let ok = fixed_dates(isolate(&mut cmd, home), FIXED_DATE)
        .args(["commit", "-q", "--allow-empty", "-m", "x"])
        .current_dir(&repo)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    git_ok(home, &repo, &["branch", "other"]);
    repo
}

#[test]
fn agrees_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let ours = setup(home, tmp.path(), "ours");
    let theirs = setup(home, tmp.path(), "theirs");
    let steps: &[&[&str]] = &[
        &["HEAD"],
        &["--short", "HEAD"],
        &["-m", "switch it", "HEAD", "refs/heads/other"],
        &["HEAD", "refs/heads/unborn"],
        &["HEAD", "main"],
        &["HEAD", "refs/heads/a..b"],
        &["refs/heads/main"],
        &["-q", "refs/heads/main"],
        &["refs/heads/s", "refs/heads/main"],
        &["refs/heads/s"],
        &["-d", "refs/heads/s"],
        &["-d", "HEAD"],
        &["nope"],
        &["-d", "refs/heads/main"],
        &["-m", "back", "HEAD", "refs/heads/main"],
    ];
    for args in steps {
        let full: Vec<&str> = ["symbolic-ref"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        let mut ours_cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refstore"));
        let o = isolate(&mut ours_cmd, home)
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .args(&full)
            .current_dir(&ours)
            .output()
            .unwrap();
        let mut git_cmd = std::process::Command::new("git");
        let t = isolate(&mut git_cmd, home)
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .args(&full)
            .current_dir(&theirs)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), t.status.code(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&t), "{args:?}");
        assert_eq!(stderr(&o), stderr(&t), "{args:?}");
        let refs = |repo| {
            git_ok(
                home,
                repo,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname) %(symref)",
                ],
            )
        };
        assert_eq!(refs(&ours), refs(&theirs), "after {args:?}");
        let head =
            |repo: &std::path::Path| std::fs::read_to_string(repo.join(".git/HEAD")).unwrap();
        assert_eq!(head(&ours), head(&theirs), "after {args:?}");
        let log =
            |repo: &std::path::Path| std::fs::read_to_string(repo.join(".git/logs/HEAD")).unwrap();
        assert_eq!(log(&ours), log(&theirs), "HEAD reflog after {args:?}");
    }
}

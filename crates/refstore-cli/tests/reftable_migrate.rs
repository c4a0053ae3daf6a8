//! `refs migrate --ref-format=reftable` and back: JGit reads the same refs,
//! peeled values and reflogs after the migration as git's files held before
//! it, and after migrating back git reads them as before.

mod support;
use support::jgit;

use support::{git_ok, refstore, stderr};

/// JGit's dump without the blank lines that separate a reftable reflog
/// message's stored newline from the next line (files reflogs have none).
fn dump(git_dir: &std::path::Path) -> String {
    jgit::dump(git_dir)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn migrating_to_reftable_keeps_refs_and_reflogs() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "repo"]);
    let repo = home.join("repo");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git_ok(home, &repo, &["tag", "-a", "v1", "-m", "tag"]);
    git_ok(home, &repo, &["branch", "topic"]);
    git_ok(home, &repo, &["pack-refs", "--all"]);
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git_ok(home, &repo, &["tag", "light"]);
    git_ok(
        home,
        &repo,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/heads/topic",
        ],
    );
    let git_dir = repo.join(".git");
    let before = dump(&git_dir);
    let show_ref = git_ok(home, &repo, &["show-ref", "--head", "-d"]);
    let reflog = git_ok(home, &repo, &["reflog", "show", "main"]);
    assert!(before.contains("log refs/heads/main "), "{before}");

    let dry = refstore(
        home,
        &repo,
        &["refs", "migrate", "--ref-format=reftable", "--dry-run"],
    );
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(
        stderr(&dry).starts_with("would migrate 6 refs and "),
        "{}",
        stderr(&dry)
    );
    assert!(!git_dir.join("reftable").exists());
    assert_eq!(dump(&git_dir), before);

    let out = refstore(home, &repo, &["refs", "migrate", "--ref-format=reftable"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
    assert!(config.contains("refstorage = reftable"), "{config}");
    assert!(!git_dir.join("packed-refs").exists());
    assert!(!git_dir.join("logs/refs").exists());
    assert_eq!(
        std::fs::read_to_string(git_dir.join("HEAD")).unwrap(),
        "ref: refs/heads/.invalid\n"
    );
    assert_eq!(dump(&git_dir), before);

    let again = refstore(home, &repo, &["refs", "migrate", "--ref-format=reftable"]);
    assert_eq!(again.status.code(), Some(128));
    assert_eq!(
        stderr(&again),
        "fatal: repository already uses 'reftable' format\n"
    );

    // And back: git reads the files format again, as it was.
    let back = refstore(home, &repo, &["refs", "migrate", "--ref-format=files"]);
    assert!(back.status.success(), "{}", stderr(&back));
    assert!(!git_dir.join("reftable").exists());
    assert_eq!(dump(&git_dir), before);
    assert_eq!(git_ok(home, &repo, &["show-ref", "--head", "-d"]), show_ref);
    assert_eq!(git_ok(home, &repo, &["reflog", "show", "main"]), reflog);
    git_ok(home, &repo, &["fsck", "--no-progress"]);
}

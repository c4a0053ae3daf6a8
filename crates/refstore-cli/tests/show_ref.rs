//! `refstore show-ref` prints what `git show-ref` prints, with the same exit
//! codes, on a repository with loose, packed and symbolic refs.

mod support;
use support::*;

#[test]
fn agrees_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    git_ok(home, dir, &["init", "-q", "-b", "main", "r"]);
    let repo = dir.join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    for b in ["feature/main", "other", "x/y"] {
        git_ok(home, &repo, &["branch", b]);
    }
    git_ok(home, &repo, &["tag", "v1"]);
    git_ok(home, &repo, &["pack-refs", "--all"]);
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git_ok(home, &repo, &["branch", "loose"]);
    git_ok(
        home,
        &repo,
        &["symbolic-ref", "refs/heads/sym", "refs/heads/other"],
    );
    let cases: &[&[&str]] = &[
        &[],
        &["main"],
        &["y"],
        &["x/y", "v1"],
        &["nomatch"],
        &["--heads"],
        &["--tags"],
        &["--heads", "--tags"],
        &["--head"],
        &["--hash", "main"],
        &["-q", "main"],
        &["-q", "nomatch"],
        &["--verify", "refs/heads/main"],
        &["--verify", "HEAD"],
        &["--verify", "main"],
        &["--verify", "refs/heads/nope"],
        &["--verify", "-q", "refs/heads/nope"],
        &["--verify", "refs/heads/main", "refs/tags/v1"],
        &["--verify", "--hash", "refs/heads/sym"],
        &["sym"],
    ];
    for args in cases {
        let full: Vec<&str> = ["show-ref"].iter().chain(args.iter()).copied().collect();
        assert_agrees(home, &repo, &full, true);
    }
}

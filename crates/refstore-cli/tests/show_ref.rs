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
    git_ok(home, &repo, &["tag", "-a", "-m", "packed", "v2"]);
    git_ok(home, &repo, &["pack-refs", "--all"]);
    git_ok(home, &repo, &["tag", "-a", "-m", "loose", "v3"]);
    Work::at(home, &repo).nested_tag("v4", "v3");
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
        &["-d"],
        &["--dereference", "--tags"],
        &["-d", "--hash", "v4"],
        &["-d", "--verify", "refs/tags/v2", "refs/heads/main"],
        &["-d", "-q", "v3"],
    ];
    for args in cases {
        let full: Vec<&str> = ["show-ref"].iter().chain(args.iter()).copied().collect();
        assert_agrees(home, &repo, &full, true);
    }
}

/// `--exists` (newer than the machine's git): exit codes and messages as
/// git documents them; loose, packed and symbolic refs, dangling included,
/// exist; abbreviations are not expanded.
#[test]
fn exists_checks_one_ref_without_following_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    git_ok(home, dir, &["init", "-q", "-b", "main", "r"]);
    let repo = dir.join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git_ok(home, &repo, &["branch", "packed"]);
    git_ok(home, &repo, &["pack-refs", "--all"]);
    git_ok(home, &repo, &["branch", "loose"]);
    git_ok(
        home,
        &repo,
        &["symbolic-ref", "refs/heads/dangling", "refs/heads/nope"],
    );
    git_ok(
        home,
        &repo,
        &["symbolic-ref", "refs/sym", "refs/heads/main"],
    );
    let missing = "error: reference does not exist\n";
    let cases: &[(&[&str], i32, &str)] = &[
        (&["refs/heads/packed"], 0, ""),
        (&["refs/heads/loose"], 0, ""),
        (&["HEAD"], 0, ""),
        (&["refs/sym"], 0, ""),
        (&["refs/heads/dangling"], 0, ""),
        (&["refs/heads/nope"], 2, missing),
        (&["main"], 2, missing),
        (&["refs/heads"], 2, missing),
        (&[], 128, "fatal: --exists requires exactly one reference\n"),
        (
            &["refs/heads/loose", "HEAD"],
            128,
            "fatal: --exists requires exactly one reference\n",
        ),
    ];
    for (refs, code, err) in cases {
        let args: Vec<&str> = ["show-ref", "--exists"]
            .iter()
            .chain(refs.iter())
            .copied()
            .collect();
        let out = refstore(home, &repo, &args);
        assert_eq!(
            (out.status.code(), stderr(&out).as_str()),
            (Some(*code), *err),
            "{refs:?}"
        );
        assert_eq!(stdout(&out), "");
        // git agrees on what exists (its older --verify cannot see dangling
        // symrefs, so those are checked by file above).
        if *code == 2 && refs[0].starts_with("refs/heads/") {
            let theirs = git(
                home,
                &repo,
                &["rev-parse", "-q", "--verify", "--no-deref", refs[0]],
            );
            assert!(!theirs.status.success());
        }
    }
}

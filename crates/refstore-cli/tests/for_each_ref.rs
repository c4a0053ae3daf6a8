//! `refstore for-each-ref` prints what `git for-each-ref` prints, with the
//! same exit codes, on a repository with loose and packed refs, annotated
//! and nested tags, symbolic refs (one dangling), names that are ambiguous
//! when shortened, and a broken loose ref.

mod support;
use support::*;

#[test]
fn agrees_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    git_ok(home, dir, &["init", "-q", "-b", "main", "r"]);
    let repo = dir.join("r");
    let git = |args: &[&str]| git_ok(home, &repo, args);
    git(&["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&["branch", "v1"]);
    git(&["tag", "-a", "-m", "packed tag", "v1"]);
    git(&["tag", "light"]);
    git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    git(&["pack-refs", "--all"]);
    git(&["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&["branch", "feature/x"]);
    git(&["tag", "-a", "-m", "loose tag", "v2"]);
    Work::at(home, &repo).nested_tag("v3", "v2");
    git(&["tag", "tree-tag", "HEAD^{tree}"]);
    git(&["symbolic-ref", "refs/sym", "refs/heads/main"]);
    git(&["symbolic-ref", "refs/heads/dangling", "refs/heads/nope"]);
    let first = git(&["rev-parse", "HEAD~1"]).trim().to_owned();
    let points_first = format!("--points-at={first}");

    let all_atoms = "--format=%(refname:short)|%(symref)|%(symref:short)|%(*objectname)|%(*objecttype)|%(objectname:short)|%(upstream)|%(push)|%(HEAD)|%(objecttype)";
    let cases: &[&[&str]] = &[
        &[],
        // refs/remotes/origin/HEAD is left out here: git before 2.40
        // shortened it to "origin/HEAD", later git to "origin" (below).
        &[all_atoms, "refs/heads", "refs/tags", "refs/sym", "refs/remotes/origin/main"],
        &["refs/heads"],
        &["refs/heads/", "refs/tags/v1"],
        &["refs/*/v*"],
        &["refs/ta"],
        &["nomatch"],
        &["--sort=-refname"],
        &["--sort=objectname", "--format=%(objectname) %(refname)"],
        &["--sort=objecttype", "--sort=-refname"],
        &["--sort=refname", "--sort=-refname"],
        &["--count=2"],
        &["--count=3", "--sort=-refname", "refs/tags"],
        &[&points_first],
        &["--points-at=v2"],
        &["--points-at=main"],
        &["--format=%(refname:lstrip=2)|%(refname:rstrip=1)|%(refname:lstrip=-1)|%(refname:strip=1)|%(refname:rstrip=-2)"],
        &["--format=%%%41%(objectname:short=10)%(*objectname:short)"],
        &["--format=%(foo)"],
        &["--format=%(refname:bogus)"],
        &["--format=%(objecttype:x)"],
        &["--format=%(*objecttype:x)"],
        &["--format=%(HEAD:x)"],
        &["--sort=bogus"],
        &["--format=%(refname"],
        &["--count=-1"],
        &["--count=x"],
        &["--points-at=nope"],
    ];
    for args in cases {
        let full: Vec<&str> = ["for-each-ref"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        assert_agrees(home, &repo, &full, false);
    }

    // Git 2.40 and later shorten refs/remotes/<remote>/HEAD to <remote>
    // (the "refs/remotes/%.*s/HEAD" rule), and so does refstore.
    let short = refstore(
        home,
        &repo,
        &["for-each-ref", "--format=%(refname:short)", "refs/remotes/"],
    );
    assert_eq!(stdout(&short), "origin\norigin/main\n");

    // A broken loose ref is skipped with git's warning.
    std::fs::write(repo.join(".git/refs/heads/broken"), "garbage\n").unwrap();
    assert_agrees(home, &repo, &["for-each-ref"], true);
}

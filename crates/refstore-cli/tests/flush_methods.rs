//! Every flush method commits the same transactions: creating refs in new
//! directories, then deleting them so their directories are emptied and
//! removed (a removed directory must not be flushed afterwards).

mod support;
use support::*;

#[test]
fn create_and_delete_in_new_directories_under_every_method() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, tmp.path(), &["init", "-q", "-b", "main", "r"]);
    let repo = tmp.path().join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    let head = git_ok(home, &repo, &["rev-parse", "HEAD"]);
    let head = head.trim();
    for (fsync, method) in [
        ("reference", "fsync"),
        ("reference", "batch"),
        ("reference", "writeout-only"),
        ("none", "batch"),
    ] {
        let settings = [
            "-c".to_owned(),
            format!("core.fsync={fsync}"),
            "-c".to_owned(),
            format!("core.fsyncMethod={method}"),
        ];
        let run = |args: &[&str]| {
            let all: Vec<&str> = settings
                .iter()
                .map(String::as_str)
                .chain(args.iter().copied())
                .collect();
            let out = refstore(home, &repo, &all);
            assert!(out.status.success(), "{method}: {args:?}: {}", stderr(&out));
        };
        run(&["update-ref", "refs/heads/c/d/e", head]);
        run(&["update-ref", "refs/tags/t/u", head]);
        run(&["update-ref", "-d", "refs/heads/c/d/e"]);
        run(&["update-ref", "-d", "refs/tags/t/u"]);
        assert!(
            !repo.join(".git/refs/heads/c").exists(),
            "{method}: emptied directories are removed"
        );
        assert!(
            !repo.join(".git/logs/refs/heads/c").exists(),
            "{method}: and so are their reflogs"
        );
        assert_eq!(
            git_ok(home, &repo, &["for-each-ref", "--format=%(refname)"]),
            "refs/heads/main\n"
        );
    }
}

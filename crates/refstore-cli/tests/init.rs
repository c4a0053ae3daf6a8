//! `refstore init` creates repositories git accepts and works in.

mod support;
use support::*;

#[test]
fn git_works_in_a_repository_refstore_created() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    let out = refstore(home, dir, &["init", "-b", "main", "work"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let git_dir = dir.join("work/.git").canonicalize().unwrap();
    assert_eq!(
        stdout(&out),
        format!(
            "Initialized empty Git repository in {}/\n",
            git_dir.display()
        )
    );
    let work = dir.join("work");
    std::fs::write(work.join("file"), "content\n").unwrap();
    git_ok(home, &work, &["add", "file"]);
    git_ok(home, &work, &["commit", "-q", "-m", "first"]);
    assert_eq!(
        git_ok(home, &work, &["symbolic-ref", "HEAD"]),
        "refs/heads/main\n"
    );
    assert_eq!(
        git_ok(home, &work, &["rev-parse", "--is-bare-repository"]),
        "false\n"
    );
    git_ok(home, &work, &["fsck", "--strict"]);
    // git writes reflogs here because refstore enabled them like git init does.
    assert_eq!(
        git_ok(home, &work, &["reflog", "--format=%gs"]),
        "commit (initial): first\n"
    );

    let again = refstore(home, dir, &["init", "work"]);
    assert_eq!(
        stdout(&again),
        format!(
            "Reinitialized existing Git repository in {}/\n",
            git_dir.display()
        )
    );
    assert_eq!(git_ok(home, &work, &["log", "--format=%s"]), "first\n");
}

#[test]
fn bare_sha256_and_default_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    let out = refstore(home, dir, &["init", "--bare", "-q", "bare.git"]);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stderr(&out)
    );
    let bare = dir.join("bare.git");
    assert_eq!(
        git_ok(home, &bare, &["rev-parse", "--is-bare-repository"]),
        "true\n"
    );
    assert_eq!(
        git_ok(home, &bare, &["symbolic-ref", "HEAD"]),
        "refs/heads/master\n"
    );
    git_ok(home, &bare, &["fsck"]);

    refstore(home, dir, &["init", "--object-format=sha256", "-q", "s256"]);
    let s256 = dir.join("s256");
    assert_eq!(
        git_ok(home, &s256, &["rev-parse", "--show-object-format"]),
        "sha256\n"
    );
    git_ok(home, &s256, &["commit", "-q", "--allow-empty", "-m", "x"]);
    assert_eq!(git_ok(home, &s256, &["rev-parse", "HEAD"]).trim().len(), 64);

    let out = refstore(
        home,
        dir,
        &["-c", "init.defaultBranch=trunk", "init", "-q", "t"],
    );
    assert!(out.status.success());
    assert_eq!(
        git_ok(home, &dir.join("t"), &["symbolic-ref", "HEAD"]),
        "refs/heads/trunk\n"
    );
    std::fs::write(
        home.join(".gitconfig"),
        "[init]\n\tdefaultBranch = fromglobal\n",
    )
    .unwrap();
    refstore(home, dir, &["init", "-q", "g"]);
    assert_eq!(
        git_ok(home, &dir.join("g"), &["symbolic-ref", "HEAD"]),
        "refs/heads/fromglobal\n"
    );
}

#[test]
fn bad_arguments_fail_like_git() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    let out = refstore(home, dir, &["init", "-b", "a..b", "x"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out), "fatal: invalid initial branch name: 'a..b'\n");
    assert!(!dir.join("x").exists(), "nothing created on error");
    let out = refstore(home, dir, &["init", "--object-format=md5", "x"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out), "fatal: unknown hash algorithm 'md5'\n");
    let out = refstore(home, dir, &["init", "--ref-format=tar", "x"]);
    assert_eq!(stderr(&out), "fatal: unknown ref storage format 'tar'\n");
    let out = refstore(home, dir, &["init", "--no-such-option"]);
    assert_eq!(out.status.code(), Some(129));
}

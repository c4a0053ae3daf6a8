//! `refstore hash-object` compared with git: the same ids for files,
//! standard input and listed paths, in SHA-1 and SHA-256 repositories;
//! objects written with -w that git reads and `git fsck --full` accepts;
//! git's errors for missing files, bad types and malformed objects.

mod support;

use std::path::Path;
use std::process::Output;
use support::*;

/// Both programs, same input: same exit code and standard output.
fn assert_agrees_with_input(home: &Path, cwd: &Path, args: &[&str], input: &[u8]) -> String {
    let ours = refstore_with_input(home, cwd, args, input);
    let theirs = run_isolated("git", home, cwd, args, input);
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{args:?}: {}",
        stderr(&ours)
    );
    assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
    stdout(&ours)
}

/// A repository with files of assorted content next to it.
fn setup(format: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    git_ok(
        tmp.path(),
        tmp.path(),
        &["init", "-q", &format!("--object-format={format}"), "repo"],
    );
    std::fs::write(repo.join("empty"), b"").unwrap();
    std::fs::write(repo.join("text"), b"hello\nworld\n").unwrap();
    std::fs::write(repo.join("no newline"), b"last line").unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(repo.join("binary"), binary).unwrap();
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/inner"), b"inner\r\n").unwrap();
    tmp
}

const FILES: [&str; 5] = ["empty", "text", "no newline", "binary", "sub/inner"];

#[test]
fn ids_agree_with_git_in_both_formats() {
    for format in ["sha1", "sha256"] {
        let tmp = setup(format);
        let (home, repo) = (tmp.path(), tmp.path().join("repo"));
        let mut args = vec!["hash-object"];
        args.extend(FILES);
        assert_agrees(home, &repo, &args, true);
        assert_agrees(
            home,
            &repo.join("sub"),
            &["hash-object", "inner", "../text"],
            true,
        );
        assert_agrees(home, &repo, &["hash-object", "--no-filters", "text"], true);
        let out = assert_agrees_with_input(
            home,
            &repo,
            &["hash-object", "--stdin", "text"],
            b"from stdin\n",
        );
        assert_eq!(out.lines().count(), 2);
        let listed = FILES.join("\n") + "\n\"sub/inne\\162\"\n";
        let out = assert_agrees_with_input(
            home,
            &repo,
            &["hash-object", "--stdin-paths"],
            listed.as_bytes(),
        );
        assert_eq!(out.lines().count(), 6);
        assert_eq!(
            out.lines().next().unwrap().len(),
            if format == "sha1" { 40 } else { 64 }
        );
    }
}

#[test]
fn typed_and_literal_objects_agree_with_git() {
    let tmp = setup("sha1");
    let (home, repo) = (tmp.path(), tmp.path().join("repo"));
    let blob = git_ok(home, &repo, &["hash-object", "-w", "text"]);
    let mut tree = b"100644 text\0".to_vec();
    tree.extend(hex_to_raw(blob.trim()));
    std::fs::write(repo.join("tree"), &tree).unwrap();
    let tree_id = git_ok(home, &repo, &["hash-object", "-t", "tree", "tree"]);
    let commit = format!(
        "tree {}author A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\nmsg\n",
        tree_id.trim().to_owned() + "\n"
    );
    std::fs::write(repo.join("commit"), commit).unwrap();
    let tag = format!(
        "object {}type blob\ntag v1\ntagger T <t@example.com> 1700000000 +0000\n\nmsg\n",
        blob.trim().to_owned() + "\n"
    );
    std::fs::write(repo.join("tag"), tag).unwrap();
    for (kind, file) in [
        ("tree", "tree"),
        ("commit", "commit"),
        ("tag", "tag"),
        ("blob", "tag"),
    ] {
        assert_agrees(home, &repo, &["hash-object", "-t", kind, file], true);
    }
    assert_agrees(
        home,
        &repo,
        &["hash-object", "-t", "bogus", "--literally", "text"],
        true,
    );
    assert_agrees(
        home,
        &repo,
        &["hash-object", "-t", "commit", "--literally", "text"],
        true,
    );
}

fn hex_to_raw(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn written_objects_are_what_git_writes() {
    let tmp = setup("sha1");
    let (home, repo) = (tmp.path(), tmp.path().join("repo"));
    let mut args = vec!["hash-object", "-w"];
    args.extend(FILES);
    let ours = refstore(home, &repo, &args);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let ids = stdout(&ours);
    assert_eq!(
        ids,
        git_ok(
            home,
            &repo,
            &["hash-object"]
                .iter()
                .chain(&FILES)
                .copied()
                .collect::<Vec<_>>()
        )
    );
    for (id, file) in ids.lines().zip(FILES) {
        let content = git(home, &repo, &["cat-file", "blob", id]);
        assert!(content.status.success(), "git reads {id}");
        assert_eq!(content.stdout, std::fs::read(repo.join(file)).unwrap());
    }
    let fsck = git(home, &repo, &["fsck", "--full", "--strict"]);
    assert!(fsck.status.success(), "{}", stderr(&fsck));
    assert_eq!(
        git_ok(home, &repo, &["count-objects"]).split(' ').next(),
        Some("5")
    );

    // Writing again stores nothing new; a commit and a tree written by
    // refstore make a history git accepts.
    let again = refstore(home, &repo, &["hash-object", "-w", "text"]);
    assert_eq!(
        stdout(&again),
        ids.lines().nth(1).unwrap().to_owned() + "\n"
    );
    let mut tree = b"100644 text\0".to_vec();
    tree.extend(hex_to_raw(ids.lines().nth(1).unwrap()));
    let tree_id = stdout(&refstore_with_input(
        home,
        &repo,
        &["hash-object", "-w", "-t", "tree", "--stdin"],
        &tree,
    ));
    let commit = format!(
        "tree {}\nauthor A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\nmsg\n",
        tree_id.trim()
    );
    let commit_id = stdout(&refstore_with_input(
        home,
        &repo,
        &["hash-object", "-w", "-t", "commit", "--stdin"],
        commit.as_bytes(),
    ));
    git_ok(
        home,
        &repo,
        &["update-ref", "refs/heads/main", commit_id.trim()],
    );
    let fsck = git(
        home,
        &repo,
        &["fsck", "--full", "--strict", "--no-dangling"],
    );
    assert!(fsck.status.success(), "{}", stderr(&fsck));
    assert_eq!(
        git_ok(home, &repo, &["show", "main:text"]),
        "hello\nworld\n"
    );
}

#[test]
fn sha256_objects_written() {
    let tmp = setup("sha256");
    let (home, repo) = (tmp.path(), tmp.path().join("repo"));
    let ours = refstore(home, &repo, &["hash-object", "-w", "binary", "text"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert_eq!(
        stdout(&ours),
        git_ok(home, &repo, &["hash-object", "binary", "text"])
    );
    let fsck = git(home, &repo, &["fsck", "--full"]);
    assert!(fsck.status.success(), "{}", stderr(&fsck));
}

#[test]
fn errors_as_git_reports_them() {
    let tmp = setup("sha1");
    let (home, repo) = (tmp.path(), tmp.path().join("repo"));
    // A missing file after a good one: the good one is hashed, written and
    // printed first, as git does.
    assert_agrees(home, &repo, &["hash-object", "text", "missing"], true);
    assert_agrees(home, &repo, &["hash-object", "-w", "text", "missing"], true);
    let written = git_ok(home, &repo, &["hash-object", "text"]);
    assert!(git(home, &repo, &["cat-file", "-e", written.trim()])
        .status
        .success());
    assert_agrees(home, &repo, &["hash-object", "-t", "bogus", "text"], true);
    std::fs::write(repo.join("short-tree"), b"100644 a\0").unwrap();
    assert_agrees(
        home,
        &repo,
        &["hash-object", "-t", "tree", "short-tree"],
        true,
    );
    for kind in ["commit", "tag"] {
        let ours = refstore(home, &repo, &["hash-object", "-t", kind, "text"]);
        let theirs = git(home, &repo, &["hash-object", "-t", kind, "text"]);
        assert_eq!(ours.status.code(), theirs.status.code());
        let fatal = |o: &Output| stderr(o).lines().last().unwrap().to_owned();
        assert_eq!(fatal(&ours), fatal(&theirs));
        assert_eq!(fatal(&ours), format!("fatal: corrupt {kind}"));
    }
    // Usage errors: exit 129 with git's explanation.
    for args in [
        &["hash-object", "--stdin-paths", "text"][..],
        &["hash-object", "--stdin", "--stdin-paths"][..],
    ] {
        let ours = refstore(home, &repo, args);
        let theirs = git(home, &repo, args);
        assert_eq!(ours.status.code(), Some(129));
        assert_eq!(theirs.status.code(), Some(129));
        assert_eq!(stderr(&ours).lines().next(), stderr(&theirs).lines().next());
    }
    // Outside any repository: hashing works, writing does not.
    assert_agrees(home, tmp.path(), &["hash-object", "repo/text"], true);
    let ours = refstore(home, tmp.path(), &["hash-object", "-w", "repo/text"]);
    let theirs = git(home, tmp.path(), &["hash-object", "-w", "repo/text"]);
    assert_eq!(ours.status.code(), theirs.status.code());
    assert_eq!(ours.status.code(), Some(128));
}

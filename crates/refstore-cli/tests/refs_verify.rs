//! `refstore refs verify`: a repository git wrote is clean; each kind of
//! damage gives git's message line (the messages of `git refs verify`,
//! which the machine's git predates) and a non-zero exit; git's own reader
//! confirms the damaged refs are broken; nothing is written.

mod support;
use std::path::Path;
use support::*;

struct Repo {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    dir: std::path::PathBuf,
    main: String,
    tag: String,
    peeled: String,
}

fn repo() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    git_ok(&home, &home, &["init", "-q", "-b", "main", "repo"]);
    let dir = home.join("repo");
    git_ok(&home, &dir, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git_ok(&home, &dir, &["branch", "side"]);
    git_ok(&home, &dir, &["tag", "-a", "-m", "t", "v1"]);
    git_ok(&home, &dir, &["pack-refs", "--all"]);
    git_ok(&home, &dir, &["branch", "loose"]);
    git_ok(
        &home,
        &dir,
        &["symbolic-ref", "refs/heads/alias", "refs/heads/main"],
    );
    let rev = |r: &str| git_ok(&home, &dir, &["rev-parse", r]).trim().to_owned();
    let (main, tag, peeled) = (rev("main"), rev("v1"), rev("v1^{}"));
    Repo {
        _tmp: tmp,
        home,
        dir,
        main,
        tag,
        peeled,
    }
}

/// Exit code and standard error of `refs verify`, after checking that it
/// changed nothing.
fn verify(r: &Repo) -> (Option<i32>, String) {
    let before = snapshot(&r.dir.join(".git"));
    let out = refstore(&r.home, &r.dir, &["refs", "verify"]);
    assert_eq!(before, snapshot(&r.dir.join(".git")), "refs verify wrote");
    (out.status.code(), stderr(&out))
}

fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            } else {
                out.push((p.clone(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_repository_written_by_git_is_clean() {
    let r = repo();
    assert_eq!(verify(&r), (Some(0), String::new()));
}

#[test]
fn damaged_loose_refs_are_reported_as_git_does() {
    let r = repo();
    let heads = r.dir.join(".git/refs/heads");
    let m = &r.main;
    let cases: Vec<(&str, String, &str)> = vec![
        ("bad", format!("{m}x"), "error: refs/heads/bad: badRefContent: {c}"),
        ("bad", "xfsazqfxcadas".into(), "error: refs/heads/bad: badRefContent: {c}"),
        ("nolf", m.clone(), "warning: refs/heads/nolf: refMissingNewline: misses LF at the end"),
        ("junk", format!("{m} garbage"), "warning: refs/heads/junk: trailingRefContent: has trailing garbage: ' garbage'"),
        ("sym", "ref: refs/heads/.branch\n".into(), "error: refs/heads/sym: badReferentName: points to invalid refname 'refs/heads/.branch'"),
        ("sym", "ref: refs/heads/main\n\n".into(), "warning: refs/heads/sym: trailingRefContent: has trailing whitespaces or newlines"),
        ("sym", "ref: refs-back/heads/main\n".into(), "warning: refs/heads/sym: symrefTargetIsNotARef: points to non-ref target 'refs-back/heads/main'"),
        (".dot", format!("{m}\n"), "error: refs/heads/.dot: badRefName: invalid refname format"),
    ];
    for (file, content, expected) in cases {
        let path = heads.join(file);
        std::fs::write(&path, &content).unwrap();
        let (code, err) = verify(&r);
        let expected = expected.replace("{c}", &content);
        assert_eq!(err, format!("{expected}\n"), "content {content:?}");
        let is_error = expected.starts_with("error");
        assert_eq!(code, Some(i32::from(is_error)), "content {content:?}");
        if expected.contains("badRefContent") {
            // git's reader agrees the ref is broken.
            let listed = git(&r.home, &r.dir, &["for-each-ref"]);
            assert!(
                stderr(&listed).contains(&format!("ignoring broken ref refs/heads/{file}")),
                "{}",
                stderr(&listed)
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
    // A lock file is a writer's, not a ref.
    std::fs::write(heads.join("x.lock"), "garbage").unwrap();
    assert_eq!(verify(&r), (Some(0), String::new()));
}

#[test]
fn damaged_packed_refs_lines_are_reported_as_git_does() {
    let r = repo();
    let short = &r.peeled[..4];
    let (m, tag, peeled) = (&r.main, &r.tag, &r.peeled);
    std::fs::write(
        r.dir.join(".git/packed-refs"),
        format!(
            "# pack-refs with: peeled fully-peeled sorted \n\
             {short} refs/heads/branch-1\n\
             {m}x\n\
             {m}   refs/heads/bad-branch\n\
             {m} refs/heads/branch.\n\
             {tag} refs/tags/annotated-tag-3\n\
             ^{short}\n\
             {tag} refs/tags/annotated-tag-4.\n\
             ^{peeled} garbage\n"
        ),
    )
    .unwrap();
    let (code, err) = verify(&r);
    assert_eq!(code, Some(1));
    let expected = format!(
        "error: packed-refs line 2: badPackedRefEntry: '{short} refs/heads/branch-1' has invalid oid\n\
         error: packed-refs line 3: badPackedRefEntry: has no space after oid '{m}' but with 'x'\n\
         error: packed-refs line 4: badRefName: has bad refname '  refs/heads/bad-branch'\n\
         error: packed-refs line 5: badRefName: has bad refname 'refs/heads/branch.'\n\
         error: packed-refs line 7: badPackedRefEntry: '{short}' has invalid peeled oid\n\
         error: packed-refs line 8: badRefName: has bad refname 'refs/tags/annotated-tag-4.'\n\
         error: packed-refs line 9: badPackedRefEntry: has trailing garbage after peeled oid ' garbage'\n"
    );
    assert_eq!(err, expected);
}

#[test]
fn packed_refs_header_order_and_emptiness() {
    let r = repo();
    let packed = r.dir.join(".git/packed-refs");
    let header = "# pack-refs with:peeled fully-peeled sorted";
    std::fs::write(&packed, format!("{header}\n")).unwrap();
    assert_eq!(
        verify(&r),
        (
            Some(1),
            format!("error: packed-refs.header: badPackedRefHeader: '{header}' does not start with '# pack-refs with: '\n")
        )
    );
    let m = &r.main;
    std::fs::write(
        &packed,
        format!(
            "# pack-refs with: peeled fully-peeled sorted \n{m} refs/heads/x\n{m} refs/heads/a\n"
        ),
    )
    .unwrap();
    assert_eq!(
        verify(&r),
        (
            Some(1),
            "error: packed-refs line 3: packedRefUnsorted: refname 'refs/heads/a' is less than previous refname 'refs/heads/x'\n".to_owned()
        )
    );
    // Without the sorted trait, order is not checked; without a header, fine.
    std::fs::write(&packed, format!("{m} refs/heads/x\n{m} refs/heads/a\n")).unwrap();
    assert_eq!(verify(&r), (Some(0), String::new()));
    std::fs::write(&packed, "").unwrap();
    assert_eq!(
        verify(&r),
        (
            Some(0),
            "warning: packed-refs: emptyPackedRefsFile: file is empty\n".to_owned()
        )
    );
}

#[test]
fn directory_file_conflicts_between_loose_and_packed_refs() {
    let r = repo();
    // refs/heads/side is packed; a loose ref below it can never coexist.
    let dir = r.dir.join(".git/refs/heads/side");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sub"), format!("{}\n", r.main)).unwrap();
    assert_eq!(
        verify(&r),
        (
            Some(1),
            "error: refs/heads/side/sub: refNameConflict: 'refs/heads/side' exists; cannot have both\n"
                .to_owned()
        )
    );
}

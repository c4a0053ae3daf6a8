//! Object kinds, contents and peeled tags read by `Odb`, compared with what
//! git reports for the same repository: loose, packed (with deltas), through
//! an alternate, and in a SHA-256 repository.

mod support;

use refstore_hash::{ObjectFormat, ObjectId};
use refstore_odb::{ObjectKind, Odb, OdbError};
use std::path::Path;
use support::{run, run_with_input, try_run};

/// Builds a repository with commits, trees, blobs, lightweight tags,
/// annotated tags of a commit, a tree and a blob, and a tag of a tag.
/// Returns the ids of interesting objects.
fn build_repo(dir: &Path, format: ObjectFormat) -> Vec<String> {
    run(
        dir,
        &[
            "init",
            "-q",
            "--bare",
            &format!("--object-format={}", format.name()),
            ".",
        ],
    );
    let mut ids = Vec::new();
    let mut parent: Option<String> = None;
    for round in 0..4 {
        // A large blob changed a little each round, so repacking makes deltas.
        let mut content = String::new();
        for line in 0..400 {
            content.push_str(&format!("line {line} of a file that changes slowly\n"));
        }
        content.push_str(&format!("round {round}\n"));
        let blob = String::from_utf8(run_with_input(
            dir,
            &["hash-object", "-w", "--stdin"],
            content.as_bytes(),
        ))
        .unwrap()
        .trim()
        .to_owned();
        let tree = String::from_utf8(run_with_input(
            dir,
            &["mktree"],
            format!("100644 blob {blob}\tfile\n").as_bytes(),
        ))
        .unwrap()
        .trim()
        .to_owned();
        let mut args = vec!["commit-tree", tree.as_str(), "-m", "msg"];
        if let Some(p) = &parent {
            args.extend(["-p", p.as_str()]);
        }
        let commit = run(dir, &args);
        ids.extend([blob, tree, commit.clone()]);
        parent = Some(commit);
    }
    let head = parent.unwrap();
    run(dir, &["update-ref", "refs/heads/main", &head]);
    run(dir, &["tag", "light", &head]);
    run(dir, &["tag", "-a", "-m", "annotated", "annotated", &head]);
    run(dir, &["tag", "-a", "-m", "of a tag", "nested", "annotated"]);
    run(dir, &["tag", "-a", "-m", "twice", "nested2", "nested"]);
    run(dir, &["tag", "-a", "-m", "tree", "treetag", &ids[1]]);
    run(dir, &["tag", "-a", "-m", "blob", "blobtag", &ids[0]]);
    for tag in ["annotated", "nested", "nested2", "treetag", "blobtag"] {
        ids.push(run(dir, &["rev-parse", tag]));
    }
    ids
}

fn id(hex: &str) -> ObjectId {
    hex.parse().unwrap()
}

/// Every id's kind, content and peeled value agree with git's.
fn assert_matches_git(git_dir: &Path, odb: &Odb, ids: &[String]) {
    for hex in ids {
        let oid = id(hex);
        let git_kind = run(git_dir, &["cat-file", "-t", hex]);
        let kind = odb.kind(&oid).unwrap().expect("object present");
        assert_eq!(kind.as_str(), git_kind, "kind of {hex}");
        assert!(odb.contains(&oid));
        let (read_kind, content) = odb.read(&oid).unwrap().unwrap();
        assert_eq!(read_kind, kind);
        let git_content = run_with_input(git_dir, &["cat-file", &git_kind, hex], b"");
        assert_eq!(content, git_content, "content of {hex}");
        let peeled = odb.peel(&oid).unwrap();
        if kind == ObjectKind::Tag {
            let git_peeled = run(git_dir, &["rev-parse", &format!("{hex}^{{}}")]);
            assert_eq!(peeled.map(|p| p.to_hex()), Some(git_peeled), "peel {hex}");
            let git_target = run(git_dir, &["rev-parse", &format!("{hex}^{{tag}}")]);
            assert_eq!(git_target, *hex);
        } else {
            assert_eq!(peeled, None, "{hex} is not a tag");
            assert_eq!(odb.tagged(&oid).unwrap(), None);
        }
    }
}

fn missing(format: ObjectFormat) -> ObjectId {
    ObjectId::from_hex_in("e".repeat(format.hex_len()).as_bytes(), format).unwrap()
}

#[test]
fn loose_then_packed_sha1() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = build_repo(dir, ObjectFormat::Sha1);
    let odb = Odb::open(&dir.join("objects"), ObjectFormat::Sha1).unwrap();
    assert_matches_git(dir, &odb, &ids);

    let absent = missing(ObjectFormat::Sha1);
    assert!(!odb.contains(&absent));
    assert_eq!(odb.kind(&absent).unwrap(), None);
    assert_eq!(odb.read(&absent).unwrap(), None);
    assert_eq!(odb.peel(&absent).unwrap(), None);

    run(dir, &["repack", "-adq", "--depth=50"]);
    run(dir, &["prune-packed"]);
    let (_, loose) = try_run(dir, &["count-objects"]);
    assert!(loose.starts_with("0 objects"), "all packed: {loose}");
    let (_, verify) = try_run(
        dir,
        &["verify-pack", "-v", &packs(dir)[0].to_string_lossy()],
    );
    assert!(verify.contains("chain length"), "the pack has deltas");
    // A fresh handle and the one opened before the repack both read packs.
    assert_matches_git(dir, &odb, &ids);
    let reopened = Odb::open(&dir.join("objects"), ObjectFormat::Sha1).unwrap();
    assert_matches_git(dir, &reopened, &ids);
}

fn packs(git_dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(git_dir.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect()
}

#[test]
fn sha256_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = build_repo(dir, ObjectFormat::Sha256);
    assert_eq!(ids[0].len(), 64);
    let odb = Odb::open(&dir.join("objects"), ObjectFormat::Sha256).unwrap();
    assert_matches_git(dir, &odb, &ids);
    run(dir, &["gc", "-q"]);
    assert_matches_git(dir, &odb, &ids);
    // A SHA-1 id is refused rather than looked up.
    let err = odb.kind(&missing(ObjectFormat::Sha1)).unwrap_err();
    assert!(matches!(err, OdbError::WrongFormat { .. }), "{err}");
    assert!(!odb.contains(&missing(ObjectFormat::Sha1)));
}

#[test]
fn objects_of_an_alternate() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let borrower = tmp.path().join("borrower");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::create_dir_all(&borrower).unwrap();
    let ids = build_repo(&base, ObjectFormat::Sha1);
    run(&base, &["gc", "-q"]);
    run(&borrower, &["init", "-q", "--bare", "."]);
    std::fs::write(
        borrower.join("objects/info/alternates"),
        format!("{}\n", base.join("objects").display()),
    )
    .unwrap();
    let own = String::from_utf8(run_with_input(
        &borrower,
        &["hash-object", "-w", "--stdin"],
        b"only here\n",
    ))
    .unwrap()
    .trim()
    .to_owned();
    let odb = Odb::open(&borrower.join("objects"), ObjectFormat::Sha1).unwrap();
    let mut all = ids.clone();
    all.push(own.clone());
    assert_matches_git(&borrower, &odb, &all);
    let base_odb = Odb::open(&base.join("objects"), ObjectFormat::Sha1).unwrap();
    assert!(!base_odb.contains(&id(&own)));
}

#[test]
fn objects_written_after_opening_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "--bare", "."]);
    let odb = Odb::open(&dir.join("objects"), ObjectFormat::Sha1).unwrap();
    let blob = String::from_utf8(run_with_input(
        dir,
        &["hash-object", "-w", "--stdin"],
        b"late\n",
    ))
    .unwrap();
    assert_eq!(odb.kind(&id(blob.trim())).unwrap(), Some(ObjectKind::Blob));
}

#[test]
fn a_tag_of_a_missing_object_does_not_peel() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "--bare", "."]);
    let absent = missing(ObjectFormat::Sha1);
    let tag_body = format!(
        "object {absent}\ntype commit\ntag dangling\ntagger C O Mitter <c@example.com> 1700000000 +0000\n\nmsg\n"
    );
    let tag = String::from_utf8(run_with_input(
        dir,
        &["hash-object", "-t", "tag", "-w", "--stdin", "--literally"],
        tag_body.as_bytes(),
    ))
    .unwrap();
    let tag = id(tag.trim());
    let odb = Odb::open(&dir.join("objects"), ObjectFormat::Sha1).unwrap();
    assert_eq!(odb.kind(&tag).unwrap(), Some(ObjectKind::Tag));
    assert_eq!(odb.tagged(&tag).unwrap(), Some(absent));
    match odb.peel(&tag) {
        Err(OdbError::MissingTagTarget { tag: t, target }) => {
            assert_eq!((t, target), (tag, absent));
        }
        other => panic!("expected a missing target, got {other:?}"),
    }
    assert!(!try_run(dir, &["rev-parse", &format!("{tag}^{{}}")]).0);
}

#[test]
fn a_missing_object_directory_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Odb::open(&tmp.path().join("nope"), ObjectFormat::Sha1).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn a_tag_peeled_in_one_repository_peels_in_another_only_with_its_target() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, partial) = (tmp.path().join("whole"), tmp.path().join("partial"));
    for dir in [&whole, &partial] {
        std::fs::create_dir_all(dir).unwrap();
        run(dir, &["init", "-q", "--bare", "."]);
    }
    let tree = run_with_input(&whole, &["mktree"], b"");
    let tree = String::from_utf8(tree).unwrap();
    let commit = run(&whole, &["commit-tree", tree.trim(), "-m", "tagged"]);
    let tag_body = format!(
        "object {commit}\ntype commit\ntag v1\ntagger C O Mitter <c@example.com> 1700000000 +0000\n\nv1\n"
    );
    // The same tag object in both; only `whole` has what it names.
    let mut tags = Vec::new();
    for dir in [&whole, &partial] {
        let tag = run_with_input(
            dir,
            &["hash-object", "-t", "tag", "-w", "--stdin"],
            tag_body.as_bytes(),
        );
        tags.push(id(String::from_utf8(tag).unwrap().trim()));
    }
    assert_eq!(tags[0], tags[1]);
    let tag = tags[0];
    let whole_odb = Odb::open(&whole.join("objects"), ObjectFormat::Sha1).unwrap();
    let partial_odb = Odb::open(&partial.join("objects"), ObjectFormat::Sha1).unwrap();
    for _ in 0..2 {
        assert_eq!(whole_odb.peel(&tag).unwrap(), Some(id(&commit)));
        assert!(
            matches!(partial_odb.peel(&tag), Err(OdbError::MissingTagTarget { .. })),
            "a tag whose target this repository lacks does not peel here, whatever another repository knows"
        );
    }
    assert!(!try_run(&partial, &["rev-parse", &format!("{tag}^{{}}")]).0);
    assert_eq!(run(&whole, &["rev-parse", &format!("{tag}^{{}}")]), commit);
}

//! The files backend reads repositories written by git exactly as git does:
//! the same refs, values and order as `git for-each-ref`, loose refs
//! shadowing packed ones, peeled tags, symbolic refs, broken refs skipped
//! with the same names git warns about.

use refstore_fs::real::RealFs;
use refstore_refs::files::FilesBackend;
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, RefName};
use std::sync::Arc;

mod support;
use support::git::run as git;

#[test]
fn listing_matches_git_for_each_ref() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("r");
    git(tmp.path(), &["init", "-q", "-b", "main", "r"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&repo, &["tag", "-a", "v1", "-m", "v1"]);
    git(&repo, &["tag", "-a", "v1-of-v1", "-m", "tag of tag", "v1"]);
    git(&repo, &["tag", "light"]);
    for b in ["a/b/c", "a/d", "z", "packed-then-loose"] {
        git(&repo, &["branch", b]);
    }
    git(&repo, &["pack-refs", "--all"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&repo, &["branch", "-f", "packed-then-loose"]);
    git(&repo, &["branch", "loose-only"]);
    git(
        &repo,
        &["symbolic-ref", "refs/heads/sym", "refs/heads/main"],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]).0;
    std::fs::write(repo.join(".git/refs/heads/broken"), "not an id\n").unwrap();
    std::fs::write(
        repo.join(".git/refs/heads/trailing"),
        format!("{}  ", head.trim()),
    )
    .unwrap();
    std::fs::write(repo.join(".git/refs/heads/ignored.lock"), &head).unwrap();

    let (expected, warnings) = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname) %(symref)",
        ],
    );
    let backend = FilesBackend::new(
        Arc::new(RealFs::new()),
        repo.join(".git"),
        repo.join(".git"),
        ObjectFormat::Sha1,
    );
    let listing = backend.list(b"").unwrap();
    let mut ours = String::new();
    for r in &listing.refs {
        let (id, symref) = match &r.target {
            Target::Object(id) => (id.to_hex(), String::new()),
            Target::Symbolic(to) => (
                backend
                    .resolve(&r.name)
                    .unwrap()
                    .unwrap()
                    .id
                    .unwrap()
                    .to_hex(),
                to.to_string(),
            ),
        };
        ours.push_str(&format!("{} {id} {symref}\n", r.name));
    }
    assert_eq!(ours, expected);
    let broken: Vec<String> = listing.broken.iter().map(|n| n.to_string()).collect();
    assert_eq!(broken, ["refs/heads/broken"]);
    assert!(
        warnings.contains("ignoring broken ref refs/heads/broken"),
        "{warnings}"
    );

    // Peeled values come from packed-refs, fully peeled as `show-ref -d` shows.
    let (peeled, _) = git(&repo, &["show-ref", "-d", "--tags"]);
    let mut ours = String::new();
    for r in backend.list(b"refs/tags/").unwrap().refs {
        ours.push_str(&format!("{} {}\n", r.target.object_id().unwrap(), r.name));
        if let Some(p) = r.peeled {
            ours.push_str(&format!("{p} {}^{{}}\n", r.name));
        }
    }
    assert_eq!(ours, peeled);

    // Prefix listing and single lookups.
    let a: Vec<String> = backend
        .list(b"refs/heads/a/")
        .unwrap()
        .refs
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    assert_eq!(a, ["refs/heads/a/b/c", "refs/heads/a/d"]);
    let head_ref = backend
        .resolve(&RefName::new("HEAD").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(head_ref.name.to_string(), "refs/heads/main");
    assert_eq!(head_ref.id.unwrap().to_hex(), head.trim());
    assert!(backend
        .read(&RefName::new("refs/heads/nope").unwrap())
        .unwrap()
        .is_none());
    let moved = backend
        .read(&RefName::new("refs/heads/packed-then-loose").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        moved.target.object_id().unwrap().to_hex(),
        head.trim(),
        "loose shadows packed"
    );
}

#[test]
fn unborn_dangling_and_cyclic_symrefs() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("r");
    git(tmp.path(), &["init", "-q", "-b", "unborn", "r"]);
    let backend = FilesBackend::new(
        Arc::new(RealFs::new()),
        repo.join(".git"),
        repo.join(".git"),
        ObjectFormat::Sha1,
    );
    let head = backend
        .resolve(&RefName::new("HEAD").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(head.name.to_string(), "refs/heads/unborn");
    assert_eq!(head.id, None);
    std::fs::write(repo.join(".git/refs/heads/x"), "ref: refs/heads/y\n").unwrap();
    std::fs::write(repo.join(".git/refs/heads/y"), "ref: refs/heads/x\n").unwrap();
    let err = backend
        .resolve(&RefName::new("refs/heads/x").unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("nests too deeply"), "{err}");
}

//! Opening a repository: the paths a client may name, and the ref store
//! and object database opened once and shared by every handle.

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_repo::{OpenError, Repository};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn vfs() -> Arc<dyn Vfs> {
    Arc::new(RealFs::new())
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes the repository at `git_dir` a reftable one, as `git init
/// --ref-format=reftable` would have (git 2.39 cannot).
fn use_reftable(git_dir: &Path) {
    git(git_dir, &["config", "core.repositoryformatversion", "1"]);
    git(git_dir, &["config", "extensions.refStorage", "reftable"]);
    std::fs::create_dir(git_dir.join("reftable")).unwrap();
    std::fs::write(git_dir.join("reftable/tables.list"), b"").unwrap();
}

/// Every way a client may name a repository (`<dir>` of a work tree,
/// `<dir>/.git`, a bare `<dir>.git` named with or without its suffix)
/// opens the same git directory, for either ref format.
#[test]
fn a_client_path_opens_the_repository_git_would() {
    for format in ["files", "reftable"] {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().canonicalize().unwrap();
        git(&root, &["init", "-q", "work"]);
        git(&root, &["init", "-q", "--bare", "bare.git"]);
        if format == "reftable" {
            for git_dir in [root.join("work/.git"), root.join("bare.git")] {
                use_reftable(&git_dir);
            }
        }
        let cases = [
            ("work", root.join("work/.git")),
            ("work/.git", root.join("work/.git")),
            ("bare.git", root.join("bare.git")),
            ("bare", root.join("bare.git")),
        ];
        for (named, git_dir) in cases {
            let repo = Repository::open(vfs(), &root.join(named), &[])
                .unwrap_or_else(|e| panic!("{format} {named}: {e}"));
            assert_eq!(repo.git_dir(), git_dir, "{format} {named}");
            assert_eq!(
                repo.is_bare(),
                named.starts_with("bare"),
                "{format} {named}"
            );
            let refs = repo
                .refs()
                .unwrap_or_else(|e| panic!("{format} {named}: {e}"));
            assert_eq!(
                refs.as_files().is_some(),
                format == "files",
                "{format} {named}"
            );
        }
        let missing = Repository::open(vfs(), &root.join("nothing"), &[]);
        assert!(matches!(missing, Err(OpenError::NotARepository(_))));
    }
}

/// The ref store is opened once, and every object database handle reads
/// through one store.
#[test]
fn refs_and_objects_are_opened_once() {
    let home = tempfile::tempdir().unwrap();
    git(home.path(), &["init", "-q", "--bare", "repo.git"]);
    let repo = Repository::open(vfs(), &home.path().join("repo.git"), &[]).unwrap();
    assert!(Arc::ptr_eq(&repo.refs().unwrap(), &repo.refs().unwrap()));
    let handles: Vec<_> = (0..3).map(|_| repo.objects().unwrap()).collect();
    for handle in &handles[1..] {
        assert!(Arc::ptr_eq(&handles[0].store(), &handle.store()));
    }
    assert_eq!(handles[0].objects_dir(), repo.objects_dir());
}

/// A repository whose objects directory is gone still opens (plumbing
/// that reads no object works); asking for its objects says why not, and
/// asks again next time rather than remembering the failure.
#[test]
fn objects_are_opened_on_first_use() {
    let home = tempfile::tempdir().unwrap();
    git(home.path(), &["init", "-q", "--bare", "repo.git"]);
    let git_dir = home.path().join("repo.git");
    let location = refstore_fs::discover::Location {
        git_dir: git_dir.clone(),
        common_dir: git_dir.clone(),
        work_tree: None,
    };
    let repo = Repository::open_location(vfs(), location, &[]).unwrap();
    std::fs::rename(git_dir.join("objects"), git_dir.join("elsewhere")).unwrap();
    assert!(repo.objects().is_err());
    std::fs::rename(git_dir.join("elsewhere"), git_dir.join("objects")).unwrap();
    assert!(repo.objects().is_ok());
}

/// A configuration naming an object format refstore does not know is
/// refused when the repository is opened, in the configuration's words.
#[test]
fn an_unknown_object_format_is_refused() {
    let home = tempfile::tempdir().unwrap();
    git(home.path(), &["init", "-q", "--bare", "repo.git"]);
    let git_dir = home.path().join("repo.git");
    git(&git_dir, &["config", "core.repositoryformatversion", "1"]);
    git(&git_dir, &["config", "extensions.objectformat", "md5"]);
    let err = Repository::open(vfs(), &git_dir, &[]).unwrap_err();
    assert!(matches!(err, OpenError::Config(_)), "{err}");
    assert!(err.to_string().contains("md5"), "{err}");
}

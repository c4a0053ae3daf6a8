//! A cluster node's copy ([`Repo::with_cluster_refs`]) is maintained with
//! the refs it is given, not its own ref store, and prunes nothing: an old
//! loose object no ref reaches, which the same run on the repository
//! itself prunes, is packed and kept; the copy's loose refs stay loose.

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_maint::{Options, Repo, Task};
use refstore_testsupport::Git;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn git(dir: &Path, args: &[&str], input: &str) -> String {
    Git::at(dir)
        .ok_with(args, input.as_bytes())
        .trim()
        .to_owned()
}

/// A bare repository with `main` at a commit, an old loose blob no ref
/// reaches, and its id.
fn repository(dir: &Path) -> String {
    git(dir, &["init", "-q", "--bare", "r.git"], "");
    let git_dir = dir.join("r.git");
    let empty = git(&git_dir, &["mktree"], "");
    let base = git(&git_dir, &["commit-tree", &empty, "-m", "base"], "");
    git(&git_dir, &["update-ref", "refs/heads/main", &base], "");
    let orphan = git(
        &git_dir,
        &["hash-object", "-w", "--stdin"],
        "no ref reaches this\n",
    );
    let path = git_dir
        .join("objects")
        .join(&orphan[..2])
        .join(&orphan[2..]);
    let status = Command::new("touch")
        .args(["-d", "30 days ago"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    orphan
}

fn run(repo: &Repo) -> Vec<String> {
    let options = Options {
        auto: false,
        tasks: vec![Task::PackRefs, Task::LooseObjects],
    };
    refstore_maint::run(repo, &options)
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|r| r.summary)
        .collect()
}

#[test]
fn a_cluster_copy_packs_but_prunes_nothing_and_leaves_its_own_refs() {
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());

    // The repository itself: the orphan goes, main is packed.
    let alone = tempfile::tempdir().unwrap();
    let orphan = repository(alone.path());
    let git_dir = alone.path().join("r.git");
    let opened = refstore_repo::Repository::open(vfs.clone(), &git_dir, &[]).unwrap();
    run(&Repo::new(opened).unwrap());
    assert!(!Git::at(&git_dir)
        .run(&["cat-file", "-e", &orphan])
        .status
        .success());
    assert!(!git_dir.join("refs/heads/main").exists());

    // A copy given refs from elsewhere (here: its own store, opened
    // apart, standing in for the cluster's) keeps the orphan, packed.
    let copy = tempfile::tempdir().unwrap();
    let orphan = repository(copy.path());
    let git_dir = copy.path().join("r.git");
    let opened = refstore_repo::Repository::open(vfs.clone(), &git_dir, &[]).unwrap();
    let refs = refstore_repo::Repository::open(vfs, &git_dir, &[])
        .unwrap()
        .refs()
        .unwrap();
    let summaries = run(&Repo::with_cluster_refs(opened, refs).unwrap());
    assert!(
        summaries.iter().any(|s| s.contains("pruned 0")),
        "{summaries:?}"
    );
    git(&git_dir, &["cat-file", "-e", &orphan], "");
    let loose = git_dir
        .join("objects")
        .join(&orphan[..2])
        .join(&orphan[2..]);
    assert!(!loose.exists(), "the orphan was not packed");
    assert!(git_dir.join("refs/heads/main").exists());
    git(&git_dir, &["fsck", "--strict", "--no-progress"], "");
}

//! A cluster node's copy ([`Repo::with_cluster_refs`]) is maintained with
//! the refs it is given (etcd's), not its own ref store: its loose refs
//! stay loose, and what it prunes is judged by the given refs and the
//! grace period. Old orphans go, packed (a rolled-up pack is rewritten
//! without them) or loose; objects younger than the grace stay, orphans or
//! not, and so does what the copy's own refs name but the given refs do
//! not reach; and nothing at all goes while the given refs reach an
//! object the copy lacks (other nodes hold what lies behind it).

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_maint::{Options, Repo};
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

fn backdate(path: &Path) {
    let status = Command::new("touch")
        .args(["-d", "30 days ago"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn has(git_dir: &Path, id: &str) -> bool {
    Git::at(git_dir)
        .run(&["cat-file", "-e", id])
        .status
        .success()
}

/// A commit on `parent` (or a root) whose tree holds one file of
/// `content`: the commit's, tree's and blob's ids.
fn commit(git_dir: &Path, parent: Option<&str>, content: &str) -> [String; 3] {
    let blob = git(git_dir, &["hash-object", "-w", "--stdin"], content);
    let tree = git(git_dir, &["mktree"], &format!("100644 blob {blob}\tf\n"));
    let mut args = vec!["commit-tree", &tree, "-m", content];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let commit = git(git_dir, &args, "");
    [commit, tree, blob]
}

/// What the copy holds.
struct Copy {
    /// The history of `main`, which the given refs name.
    main: Vec<String>,
    /// An old branch's objects, packed with `main`'s 30 days ago; only
    /// the copy's own refs name it.
    old_side: [String; 3],
    /// A branch's objects pushed just now, in a pack of their own; only
    /// the copy's own refs name it.
    young_side: [String; 3],
    /// Loose objects no ref reaches, 30 days old and new.
    old_loose: String,
    young_loose: String,
}

/// `r.git`, the copy, and `etcd.git`, whose refs stand in for the
/// cluster's: `main` at the copy's `main` and `extra` (if given).
fn setup(dir: &Path, extra: Option<&str>) -> Copy {
    git(dir, &["init", "-q", "--bare", "r.git"], "");
    git(dir, &["init", "-q", "--bare", "etcd.git"], "");
    let git_dir = dir.join("r.git");
    let first = commit(&git_dir, None, "first\n");
    let second = commit(&git_dir, Some(&first[0]), "second\n");
    let old_side = commit(&git_dir, Some(&first[0]), "old side\n");
    git(&git_dir, &["update-ref", "refs/heads/main", &second[0]], "");
    git(
        &git_dir,
        &["update-ref", "refs/heads/old", &old_side[0]],
        "",
    );
    git(&git_dir, &["repack", "-a", "-d", "-q"], "");
    for entry in std::fs::read_dir(git_dir.join("objects/pack")).unwrap() {
        backdate(&entry.unwrap().path());
    }
    let young_side = commit(&git_dir, Some(&second[0]), "young side\n");
    git(
        &git_dir,
        &["update-ref", "refs/heads/young", &young_side[0]],
        "",
    );
    git(&git_dir, &["repack", "-d", "-q"], "");
    let loose = |content: &str| git(&git_dir, &["hash-object", "-w", "--stdin"], content);
    let old_loose = loose("an old orphan\n");
    backdate(
        &git_dir
            .join("objects")
            .join(&old_loose[..2])
            .join(&old_loose[2..]),
    );
    let young_loose = loose("a young orphan\n");

    // Ids only, as etcd holds them (git would refuse ids it lacks).
    let etcd = dir.join("etcd.git");
    let heads = etcd.join("refs/heads");
    std::fs::write(heads.join("main"), format!("{}\n", second[0])).unwrap();
    git(&etcd, &["symbolic-ref", "HEAD", "refs/heads/main"], "");
    if let Some(id) = extra {
        std::fs::write(heads.join("extra"), format!("{id}\n")).unwrap();
    }
    for (key, value) in [
        ("gc.pruneExpire", "1.hour.ago"),
        ("refstore.redundantPackExpire", "now"),
    ] {
        git(&git_dir, &["config", key, value], "");
    }
    Copy {
        main: first.into_iter().chain(second).collect(),
        old_side,
        young_side,
        old_loose,
        young_loose,
    }
}

/// Every task on the copy in `dir`, with `etcd.git`'s refs.
fn maintain(dir: &Path) -> Vec<String> {
    maintain_with(dir, &[])
}

/// [`maintain`] with configuration `overrides` (`key=value`).
fn maintain_with(dir: &Path, overrides: &[&str]) -> Vec<String> {
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    let git_dir = dir.join("r.git");
    let overrides: Vec<refstore_fs::config::Override> = overrides
        .iter()
        .map(|o| {
            let (key, value) = o.split_once('=').unwrap();
            refstore_fs::config::Override {
                key: key.to_owned(),
                value: Some(value.to_owned()),
            }
        })
        .collect();
    let opened = refstore_repo::Repository::open(vfs.clone(), &git_dir, &overrides).unwrap();
    // The cluster's refs: a store apart from the copy's own.
    let refs = refstore_repo::Repository::open(vfs, &dir.join("etcd.git"), &[])
        .unwrap()
        .refs()
        .unwrap();
    let repo = Repo::with_cluster_refs(opened, refs).unwrap();
    refstore_maint::run(&repo, &Options::default())
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|r| r.summary)
        .collect()
}

#[test]
fn a_cluster_copy_prunes_old_orphans_by_the_refs_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let copy = setup(dir.path(), None);
    let git_dir = dir.path().join("r.git");
    let summaries = maintain(dir.path());

    for id in &copy.main {
        assert!(has(&git_dir, id), "{id} of main is gone: {summaries:?}");
    }
    for id in &copy.old_side {
        assert!(
            !has(&git_dir, id),
            "{id}, old and orphaned, is kept: {summaries:?}"
        );
    }
    assert!(!has(&git_dir, &copy.old_loose), "{summaries:?}");
    for id in copy.young_side.iter().chain([&copy.young_loose]) {
        assert!(has(&git_dir, id), "{id}, young, is gone: {summaries:?}");
    }
    // The copy's own refs are left alone, loose as they were.
    assert!(git_dir.join("refs/heads/main").exists());
    assert!(git_dir.join("refs/heads/old").exists());
    // What remains is whole: `main` and the young branch read back.
    git(&git_dir, &["update-ref", "-d", "refs/heads/old"], "");
    git(
        &git_dir,
        &["fsck", "--full", "--no-dangling", "--no-progress"],
        "",
    );
    // Once pruned, a second run finds nothing more to do, and keeps all.
    maintain(dir.path());
    for id in copy.main.iter().chain(&copy.young_side) {
        assert!(has(&git_dir, id));
    }
}

#[test]
fn a_cluster_copy_lacking_what_the_refs_reach_prunes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A commit only other nodes hold, which the cluster's refs name.
    let elsewhere = tempfile::tempdir().unwrap();
    git(elsewhere.path(), &["init", "-q", "--bare", "o.git"], "");
    let [absent, ..] = commit(&elsewhere.path().join("o.git"), None, "elsewhere\n");
    let copy = setup(dir.path(), Some(&absent));
    let git_dir = dir.path().join("r.git");
    let summaries = maintain(dir.path());
    for id in copy
        .main
        .iter()
        .chain(&copy.old_side)
        .chain(&copy.young_side)
        .chain([&copy.old_loose, &copy.young_loose])
    {
        assert!(has(&git_dir, id), "{id} is gone: {summaries:?}");
    }
}

#[test]
fn a_pack_pruning_rewrote_stays_redundant_through_runs_that_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let copy = setup(dir.path(), None);
    let git_dir = dir.path().join("r.git");
    let keep_packs = ["refstore.redundantPackExpire=1.hour.ago"];
    let redundant_list = git_dir.join("objects/info/refstore-redundant-packs");
    // Rewritten, the old pack is hidden at once (its index removed, so
    // no reader finds the orphans any more) and its data stays an hour
    // for readers that had opened it.
    let first = maintain_with(dir.path(), &keep_packs);
    assert!(!has(&git_dir, &copy.old_side[0]), "{first:?}");
    let listed = std::fs::read_to_string(&redundant_list).unwrap();
    assert_eq!(listed.lines().count(), 1, "{first:?}");
    let hidden = listed.split(' ').next().unwrap();
    let pack_dir = git_dir.join("objects/pack");
    assert!(
        pack_dir.join(format!("{hidden}.pack")).exists(),
        "{first:?}"
    );
    assert!(
        !pack_dir.join(format!("{hidden}.idx")).exists(),
        "{first:?}"
    );
    // The cluster's refs now name a commit the copy lacks: runs that
    // cannot judge leave the rewritten pack redundant, and do not roll
    // it (and its orphans) back in.
    let elsewhere = tempfile::tempdir().unwrap();
    git(elsewhere.path(), &["init", "-q", "--bare", "o.git"], "");
    let [absent, ..] = commit(&elsewhere.path().join("o.git"), None, "elsewhere\n");
    let extra = dir.path().join("etcd.git/refs/heads/extra");
    std::fs::write(&extra, format!("{absent}\n")).unwrap();
    for _ in 0..2 {
        let run = maintain_with(dir.path(), &keep_packs);
        let now = std::fs::read_to_string(&redundant_list).unwrap_or_default();
        assert_eq!(now, listed, "{run:?}");
    }
    std::fs::remove_file(&extra).unwrap();
    // Once it can judge again, the pack goes with the orphans.
    let last = maintain(dir.path());
    for id in &copy.old_side {
        assert!(!has(&git_dir, id), "{id} came back: {last:?}");
    }
    for id in copy.main.iter().chain(&copy.young_side) {
        assert!(has(&git_dir, id));
    }
}

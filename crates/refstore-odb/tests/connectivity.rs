//! The connectivity check against histories and packs made by git: a
//! complete pack passes, a pack lacking a blob, a tree or a commit is
//! refused with the missing object named, and the walk stops at what the
//! known tips reach.

mod support;

use refstore_hash::{ObjectFormat, ObjectId};
use refstore_odb::{check_connectivity, ConnectivityError, ObjectKind, Odb};
use std::path::PathBuf;
use support::{run, run_with_input};

/// A source repository with three commits on `main` (the last adds
/// `dir/sub/c`), an annotated tag, and an empty bare target.
struct Fixture {
    _tmp: tempfile::TempDir,
    source: PathBuf,
    target: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    let target = tmp.path().join("target.git");
    std::fs::create_dir_all(&source).unwrap();
    run(&source, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(source.join("dir/sub")).unwrap();
    for (step, file) in ["a", "dir/b", "dir/sub/c"].iter().enumerate() {
        std::fs::write(source.join(file), format!("{file} {step}\n")).unwrap();
        std::fs::write(source.join("a"), format!("a at {step}\n")).unwrap();
        run(&source, &["add", "-A"]);
        run(&source, &["commit", "-q", "-m", &format!("step {step}")]);
    }
    run(&source, &["tag", "-a", "-m", "release", "v1", "main"]);
    run(tmp.path(), &["init", "-q", "--bare", "target.git"]);
    Fixture {
        _tmp: tmp,
        source,
        target,
    }
}

impl Fixture {
    fn id(&self, rev: &str) -> ObjectId {
        run(&self.source, &["rev-parse", rev]).parse().unwrap()
    }

    /// Copies into the target, as a pack, the objects `git rev-list
    /// --objects <revs>` lists, less `without`.
    fn send(&self, revs: &[&str], without: &[ObjectId]) {
        let mut args = vec!["rev-list", "--objects"];
        args.extend_from_slice(revs);
        let listed = run(&self.source, &args);
        let wanted: String = listed
            .lines()
            .map(|line| line.split(' ').next().unwrap())
            .filter(|id| !without.iter().any(|w| w.to_hex() == *id))
            .map(|id| format!("{id}\n"))
            .collect();
        let pack = run_with_input(
            &self.source,
            &["pack-objects", "--stdout"],
            wanted.as_bytes(),
        );
        run_with_input(&self.target, &["index-pack", "--stdin"], &pack);
    }

    fn odb(&self) -> Odb {
        Odb::open(&self.target.join("objects"), ObjectFormat::Sha1).unwrap()
    }
}

fn missing(result: Result<refstore_odb::Checked, ConnectivityError>) -> (ObjectId, ObjectKind) {
    match result {
        Err(ConnectivityError::Missing { id, kind, .. }) => (id, kind),
        other => panic!("expected a missing object, got {other:?}"),
    }
}

#[test]
fn a_complete_pack_is_connected() {
    let f = fixture();
    f.send(&["main", "v1"], &[]);
    let checked = check_connectivity(&f.odb(), &[f.id("main"), f.id("v1")], &[]).unwrap();
    assert_eq!(checked.new_commits, 3);
    // Every object git lists was verified, each once.
    let listed = run(&f.source, &["rev-list", "--objects", "main", "v1"]);
    assert_eq!(checked.objects, listed.lines().count());
    // git agrees that the target is complete.
    run(
        &f.target,
        &["update-ref", "refs/heads/main", &f.id("main").to_hex()],
    );
    run(&f.target, &["fsck", "--connectivity-only"]);
}

#[test]
fn a_missing_blob_is_named() {
    let f = fixture();
    let blob = f.id("main:dir/sub/c");
    f.send(&["main"], &[blob]);
    let err = check_connectivity(&f.odb(), &[f.id("main")], &[]);
    assert_eq!(missing(err), (blob, ObjectKind::Blob));
    let message = check_connectivity(&f.odb(), &[f.id("main")], &[])
        .unwrap_err()
        .to_string();
    assert!(message.contains(&blob.to_hex()), "{message}");
    assert!(
        message.contains(&f.id("main:dir/sub").to_hex()),
        "{message}"
    );
}

#[test]
fn a_missing_tree_is_named() {
    let f = fixture();
    let tree = f.id("main:dir");
    f.send(&["main"], &[tree]);
    let err = check_connectivity(&f.odb(), &[f.id("main")], &[]);
    assert_eq!(missing(err), (tree, ObjectKind::Tree));
}

#[test]
fn a_missing_parent_commit_is_named() {
    let f = fixture();
    let parent = f.id("main~1");
    f.send(&["main"], &[parent]);
    let err = check_connectivity(&f.odb(), &[f.id("main")], &[]);
    assert_eq!(missing(err), (parent, ObjectKind::Commit));
    // The same through the walk that stops at known tips.
    let known = [f.id("main~2"), f.id("main~2^{tree}")];
    let err = check_connectivity(&f.odb(), &[f.id("main")], &known);
    assert_eq!(missing(err), (parent, ObjectKind::Commit));
}

#[test]
fn a_missing_tip_and_tag_target_are_named() {
    let f = fixture();
    let tip = f.id("main");
    let err = check_connectivity(&f.odb(), &[tip], &[]);
    assert_eq!(missing(err), (tip, ObjectKind::Commit));
    f.send(&["v1"], &[tip]);
    let err = check_connectivity(&f.odb(), &[f.id("v1")], &[]);
    assert_eq!(missing(err), (tip, ObjectKind::Commit));
}

#[test]
fn the_walk_stops_at_known_history() {
    let f = fixture();
    // The target has the first commit complete, then everything of the
    // next two commits except a blob only the first commit's tree needs.
    f.send(&["main~2"], &[]);
    let old_blob = f.id("main~2:a");
    f.send(&["main", "^main~2"], &[]);
    let incremental = check_connectivity(&f.odb(), &[f.id("main")], &[f.id("main~2")]).unwrap();
    assert_eq!(incremental.new_commits, 2);

    // With the old history known, an object only it reaches is not looked
    // for: prove it by checking a target that lacks such a blob.
    let g = fixture();
    g.send(&["main"], &[old_blob]);
    let known = [g.id("main~1")];
    check_connectivity(&g.odb(), &[g.id("main")], &known).unwrap();
    // Without the known tip the same check walks into it and fails.
    let err = check_connectivity(&g.odb(), &[g.id("main")], &[]);
    assert_eq!(missing(err), (old_blob, ObjectKind::Blob));
}

#[test]
fn a_tip_already_known_needs_no_walk() {
    let f = fixture();
    f.send(&["main"], &[]);
    let main = f.id("main");
    let checked = check_connectivity(&f.odb(), &[main], &[main]).unwrap();
    assert_eq!(checked.new_commits, 0);
}

/// Speed on a long history (run with `--ignored --nocapture`): a linear
/// history of 5000 commits touching one file each, among 500 files.
#[test]
#[ignore]
fn speed_on_a_long_history() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("big.git");
    run(tmp.path(), &["init", "-q", "--bare", "big.git"]);
    let mut script = String::new();
    for i in 0..5000 {
        let body = format!("content {i}\n");
        script.push_str(&format!(
            "commit refs/heads/main\ncommitter C <c@example.com> {} +0000\ndata 2\nc\n",
            1_700_000_000 + i
        ));
        script.push_str(&format!(
            "M 100644 inline d{}/f{}\ndata {}\n{body}\n",
            i % 50,
            i % 500,
            body.len()
        ));
    }
    run_with_input(&repo, &["fast-import", "--quiet"], script.as_bytes());
    let odb = Odb::open(&repo.join("objects"), ObjectFormat::Sha1).unwrap();
    let tip: ObjectId = run(&repo, &["rev-parse", "main"]).parse().unwrap();
    let old: ObjectId = run(&repo, &["rev-parse", "main~100"]).parse().unwrap();
    let start = std::time::Instant::now();
    let full = check_connectivity(&odb, &[tip], &[]).unwrap();
    let full_time = start.elapsed();
    let start = std::time::Instant::now();
    let tail = check_connectivity(&odb, &[tip], &[old]).unwrap();
    let tail_time = start.elapsed();
    let start = std::time::Instant::now();
    let (ok, _) = support::try_run(&repo, &["rev-list", "--objects", "main", "--quiet"]);
    assert!(ok);
    let git_time = start.elapsed();
    println!(
        "whole history: {} commits, {} objects in {full_time:?}; last 100 commits: {} objects in {tail_time:?}; git rev-list --objects (whole): {git_time:?}",
        full.new_commits, full.objects, tail.objects
    );
}

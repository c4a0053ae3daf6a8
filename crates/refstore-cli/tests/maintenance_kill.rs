//! `refstore maintenance run` killed with SIGKILL at every step of packing
//! loose objects, a geometric repack and a commit-graph rewrite: after each kill git
//! (`fsck`, `rev-list --objects`, `multi-pack-index verify`, `commit-graph
//! verify`, bitmaps) and refstore (a clone it serves) read every object
//! and every ref, and the next run finishes the work and leaves nothing
//! behind.
//!
//! The process is stopped by the refstore binary itself before its k-th
//! filesystem change (`REFSTORE_TEST_KILL_AT_STEP`), for k = 1, 2, ...
//! until a run completes.

mod support;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// More steps than any run takes: the loop ends well before.
const MAX_STEPS: u64 = 3000;

const TASKS: [&str; 3] = [
    "--task=loose-objects",
    "--task=incremental-repack",
    "--task=commit-graph",
];

/// Adds `commits` commits to `main` in one `git fast-import`, which
/// stores them as one new pack, or as loose objects if `loose`; every
/// fourth commit merges a side line.
fn import(home: &Path, repo: &Path, first: usize, commits: usize, loose: bool) {
    let mut stream = String::new();
    for n in first..first + commits {
        let message = format!("commit {n}\n");
        stream.push_str(&format!(
            "commit refs/heads/side\ncommitter C <c@example.com> {} +0000\ndata 5\nside\n",
            1_700_000_000 + 2 * n
        ));
        // Each import continues the branches the last one left.
        let from = |branch: &str| match n == first && first > 0 {
            true => format!("from refs/heads/{branch}^0\n"),
            false => String::new(),
        };
        stream.push_str(&from("side"));
        stream.push_str(&format!("M 100644 inline side{n}\ndata 2\n{}\n", n % 10));
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter C <c@example.com> {} +0000\ndata {}\n{message}",
            1_700_000_001 + 2 * n,
            message.len()
        ));
        stream.push_str(&from("main"));
        if n % 4 == 3 {
            stream.push_str("merge refs/heads/side\n");
        }
        let content: String = (0..=n).map(|i| format!("line {i}\n")).collect();
        stream.push_str(&format!(
            "M 100644 inline file{}\ndata {}\n{content}\n",
            n % 5,
            content.len()
        ));
    }
    let o = run_with_input(
        isolate(&mut Command::new("git"), home)
            .args([
                "-c",
                &format!("fastimport.unpackLimit={}", if loose { 1000 } else { 1 }),
            ])
            .args(["fast-import", "--quiet"])
            .current_dir(repo),
        stream.as_bytes(),
    );
    assert!(o.status.success(), "fast-import: {}", stderr(&o));
}

/// A bare repository of several packs of varied sizes, maintained once
/// (a multi-pack-index with a bitmap, a commit-graph), then given more
/// small packs and loose objects, so that the next run packs the loose
/// objects (with deltas), rolls packs up, replaces both files and deletes
/// the rolled-up packs and the loose objects.
fn repository(home: &Path) -> PathBuf {
    let repo = home.join("pristine.git");
    git_ok(home, home, &["init", "-q", "--bare", "pristine.git"]);
    let mut first = 0;
    for commits in [24, 6, 5, 2] {
        import(home, &repo, first, commits, false);
        first += commits;
    }
    maintenance(home, &repo, &[]);
    for commits in [3, 2, 1, 1] {
        import(home, &repo, first, commits, false);
        first += commits;
    }
    // And loose objects, versions of files the packs have.
    import(home, &repo, first, 3, true);
    repo
}

fn maintenance(home: &Path, repo: &Path, extra: &[&str]) {
    let mut args = vec!["-c", "refstore.redundantPackExpire=now"];
    args.extend(extra);
    args.extend(["maintenance", "run", "--quiet"]);
    args.extend(TASKS);
    let o = refstore(home, repo, &args);
    assert!(o.status.success(), "maintenance: {}", stderr(&o));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every object reachable from the refs (ids only), sorted.
fn reachable(home: &Path, repo: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["rev-list", "--objects", "--all"];
    all.extend(args);
    let out = git_ok(home, repo, &all);
    let mut ids: Vec<String> = out
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// Files a finished run must not leave: temporaries and locks.
fn leftovers(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            leftovers(&entry.path(), found);
        } else if name.starts_with("tmp_") || name.ends_with(".lock") || name == "gc.pid" {
            found.push(entry.path());
        }
    }
}

/// What git and refstore must read in the repository, whatever state a
/// kill left it in.
fn assert_readable(home: &Path, repo: &Path, objects: &[String], context: &str) {
    let o = git(
        home,
        repo,
        &["fsck", "--full", "--no-dangling", "--no-progress"],
    );
    assert!(o.status.success(), "{context}: git fsck: {}", stderr(&o));
    assert_eq!(reachable(home, repo, &[]), objects, "{context}: rev-list");
    let pack_dir = repo.join("objects/pack");
    if pack_dir.join("multi-pack-index").exists() {
        let o = git(home, repo, &["multi-pack-index", "verify"]);
        assert!(o.status.success(), "{context}: midx verify: {}", stderr(&o));
        // Through the bitmap, if the index has one.
        assert_eq!(
            reachable(home, repo, &["--use-bitmap-index"]),
            objects,
            "{context}: rev-list --use-bitmap-index"
        );
    }
    if repo.join("objects/info/commit-graph").exists()
        || repo.join("objects/info/commit-graphs").exists()
    {
        let o = git(home, repo, &["commit-graph", "verify"]);
        assert!(
            o.status.success(),
            "{context}: commit-graph verify: {}",
            stderr(&o)
        );
    }
    // refstore serves a complete clone (git checks its connectivity).
    let clone = home.join("clone.git");
    let _ = std::fs::remove_dir_all(&clone);
    let o = clone_through_refstore(home, repo, &clone);
    assert!(o.status.success(), "{context}: clone: {}", stderr(&o));
    assert_eq!(reachable(home, &clone, &[]), objects, "{context}: clone");
}

#[test]
fn a_run_killed_at_any_step_leaves_a_readable_repository_the_next_run_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let pristine = repository(home);
    let objects = reachable(home, &pristine, &[]);
    let refs = git_ok(home, &pristine, &["show-ref"]);
    let work = home.join("work.git");
    let mut completed = None;
    for step in 1..=MAX_STEPS {
        let _ = std::fs::remove_dir_all(&work);
        copy_dir(&pristine, &work);
        let mut args = vec!["-c", "refstore.redundantPackExpire=now"];
        args.extend(["maintenance", "run"]);
        args.extend(TASKS);
        let o = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
            .env("REFSTORE_TEST_KILL_AT_STEP", step.to_string())
            .args(&args)
            .current_dir(&work)
            .output()
            .unwrap();
        if o.status.success() {
            eprintln!("{}", stderr(&o));
            completed = Some(step);
            break;
        }
        assert_eq!(
            o.status.signal(),
            Some(9),
            "step {step}: not killed: {:?} {}",
            o.status,
            stderr(&o)
        );
        let context = format!("killed at step {step}");
        assert_readable(home, &work, &objects, &context);
        assert_eq!(git_ok(home, &work, &["show-ref"]), refs, "{context}");

        // The next run (once what the kill left is old enough for
        // cleanup) finishes the work.
        let mut args = vec![
            "-c",
            "refstore.redundantPackExpire=now",
            "-c",
            "refstore.cleanupExpire=now",
        ];
        args.extend(["maintenance", "run", "--quiet", "--task=cleanup"]);
        args.extend(TASKS);
        let o = refstore(home, &work, &args);
        assert!(o.status.success(), "{context}: next run: {}", stderr(&o));
        let context = format!("{context}, then a run");
        assert_readable(home, &work, &objects, &context);
        assert!(
            work.join("objects/pack/multi-pack-index").exists(),
            "{context}"
        );
        assert!(
            work.join("objects/info/commit-graphs/commit-graph-chain")
                .exists(),
            "{context}"
        );
        let mut found = Vec::new();
        leftovers(&work, &mut found);
        assert!(found.is_empty(), "{context}: left {found:?}");
        let counted = git_ok(home, &work, &["count-objects", "-v"]);
        assert!(
            counted.lines().any(|l| l == "garbage: 0"),
            "{context}: {counted}"
        );
    }
    let steps = completed.expect("a run completes within MAX_STEPS steps");
    eprintln!("an uninterrupted run takes {} steps", steps - 1);
    // The work is more than a handful of steps: the kills covered a
    // rollup, two index rewrites and deletions.
    assert!(steps > 20, "only {steps} steps");
    assert_readable(home, &work, &objects, "the uninterrupted run");
}

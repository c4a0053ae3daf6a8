//! Objects while pushes, housekeeping and fetches run at once on one
//! repository: pushes through `refstore receive-pack` (some small enough
//! to be stored loose, some packs, some bringing back old unreachable
//! objects the repository still holds loose and a prune may take),
//! `refstore maintenance run` of loose-objects (with prune),
//! incremental-repack (redundant packs deleted at once) and commit-graph,
//! alternating with git's own `repack -A -d`, and clones served by
//! `refstore upload-pack` throughout.
//!
//! Every push is acknowledged and its refs name complete histories; every
//! clone succeeds and is complete; the repository passes `git fsck
//! --strict` at the end. A housekeeping run may give up (git's repack may
//! take its packs away as it reads them): counted, not judged.
//!
//! `REFSTORE_STRESS_ROUNDS` (pushes), `REFSTORE_STRESS_SECONDS` and
//! `REFSTORE_STRESS_SEED` run it longer or differently.

mod support;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use support::stress::Budget;
use support::*;

/// Old commits the repository holds loose and unreachable, which pushes
/// bring back in turn, leaving the one brought back before unreachable
/// again.
const OLD: usize = 3;

fn receive_pack() -> String {
    format!(
        "--receive-pack={} receive-pack",
        env!("CARGO_BIN_EXE_refstore")
    )
}

fn push(home: &Path, work: &Path, srv: &Path, refspecs: &[String]) -> Output {
    let url = format!("file://{}", srv.display());
    let mut args = vec!["push".to_owned(), "-q".into(), receive_pack(), url];
    args.extend(refspecs.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    git(home, work, &args)
}

/// Sets every loose object of `srv` a month back, past `gc.pruneExpire`
/// (those housekeeping removes meanwhile are skipped).
fn age_loose_objects(srv: &Path) {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(srv.join("objects")).unwrap() {
        let dir = dir.unwrap();
        if dir.file_name().len() == 2 {
            if let Ok(entries) = std::fs::read_dir(dir.path()) {
                files.extend(entries.filter_map(|f| Some(f.ok()?.path())));
            }
        }
    }
    if !files.is_empty() {
        let _ = Command::new("touch")
            .args(["-c", "-d", "30 days ago"])
            .args(&files)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// What the actors saw.
#[derive(Debug, Default)]
struct Seen {
    pushes: usize,
    maintenance_runs: usize,
    maintenance_gave_up: usize,
    git_repacks: usize,
    clones: usize,
    failures: Vec<String>,
}

#[test]
fn pushes_housekeeping_and_clones_at_once_lose_no_object() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    let srv = home.join("srv.git");
    let work = home.join("work");
    git_ok(&home, &home, &["init", "-q", "--bare", "srv.git"]);
    git_ok(
        &home,
        &srv,
        &["config", "refstore.redundantPackExpire", "now"],
    );
    git_ok(&home, &home, &["init", "-q", "-b", "main", "work"]);
    std::fs::write(work.join("base"), "base\n").unwrap();
    git_ok(&home, &work, &["add", "-A"]);
    git_ok(&home, &work, &["commit", "-qm", "base"]);
    let pushed = push(&home, &work, &srv, &["main".into()]);
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    // Old commits: pushed, their branches deleted, their loose objects
    // aged. The work repository keeps them and will push them again.
    let mut old = Vec::new();
    for i in 0..OLD {
        let blob = run_with_input(
            isolate(Command::new("git").current_dir(&work), &home).args([
                "hash-object",
                "-w",
                "--stdin",
            ]),
            format!("old {i}\n").as_bytes(),
        );
        let tree = run_with_input(
            isolate(Command::new("git").current_dir(&work), &home).args(["mktree"]),
            format!("100644 blob {}\told\n", stdout(&blob).trim()).as_bytes(),
        );
        let commit = git_ok(
            &home,
            &work,
            &[
                "commit-tree",
                stdout(&tree).trim(),
                "-m",
                &format!("old {i}"),
            ],
        );
        old.push(commit.trim().to_owned());
    }
    let refspecs: Vec<String> = old
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c}:refs/heads/old/{i}"))
        .collect();
    assert!(push(&home, &work, &srv, &refspecs).status.success());
    let deletions: Vec<String> = (0..OLD).map(|i| format!(":refs/heads/old/{i}")).collect();
    assert!(push(&home, &work, &srv, &deletions).status.success());
    age_loose_objects(&srv);

    let budget = Budget::from_env(16, 40);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let done = Arc::new(AtomicBool::new(false));
    let clones = Arc::new(AtomicUsize::new(0));

    let maintainer = {
        let (home, srv, seen, done) = (home.clone(), srv.clone(), seen.clone(), done.clone());
        std::thread::spawn(move || {
            let mut turn = 0;
            while !done.load(Ordering::SeqCst) {
                turn += 1;
                if turn % 4 == 0 {
                    let o = git(&home, &srv, &["repack", "-A", "-d", "-q"]);
                    let mut seen = seen.lock().unwrap();
                    seen.git_repacks += 1;
                    if !o.status.success() {
                        seen.failures.push(format!("git repack: {}", stderr(&o)));
                    }
                    continue;
                }
                let o = refstore(
                    &home,
                    &srv,
                    &[
                        "maintenance",
                        "run",
                        "--task=loose-objects",
                        "--task=incremental-repack",
                        "--task=commit-graph",
                    ],
                );
                let mut seen = seen.lock().unwrap();
                seen.maintenance_runs += 1;
                if !o.status.success() {
                    seen.maintenance_gave_up += 1;
                }
            }
        })
    };
    let cloner = {
        let (home, srv, seen, done) = (home.clone(), srv.clone(), seen.clone(), done.clone());
        let clones = clones.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let n = clones.fetch_add(1, Ordering::SeqCst);
                let to = home.join(format!("clone{n}.git"));
                let o = clone_through_refstore(&home, &srv, &to);
                let failure = if !o.status.success() {
                    Some(format!("clone {n}: {}", stderr(&o)))
                } else {
                    let f = git(&home, &to, &["fsck", "--strict", "--no-progress"]);
                    (!f.status.success()).then(|| format!("clone {n} fsck: {}", stderr(&f)))
                };
                let _ = std::fs::remove_dir_all(&to);
                let mut seen = seen.lock().unwrap();
                seen.clones += 1;
                seen.failures.extend(failure);
            }
        })
    };

    let mut expected: Vec<(String, String)> = Vec::new();
    let pushes = budget.run(|round, rng| {
        // Small pushes are stored loose, larger ones as packs.
        let files = if rng.below(2) == 0 { 3 } else { 150 };
        for f in 0..files {
            std::fs::write(work.join(format!("f{f}")), format!("{round} {f}\n")).unwrap();
        }
        git_ok(&home, &work, &["add", "-A"]);
        git_ok(&home, &work, &["commit", "-qm", &format!("round {round}")]);
        let head = git_ok(&home, &work, &["rev-parse", "HEAD"])
            .trim()
            .to_owned();
        let revived = &old[round % OLD];
        let refspecs = vec![
            "main".to_owned(),
            format!("main:refs/heads/r{round}"),
            format!("+{revived}:refs/heads/revived"),
        ];
        // A random jitter, so that pushes land at any moment of the race
        // under test (not a wait for anything).
        std::thread::sleep(rng.delay(30));
        let o = push(&home, &work, &srv, &refspecs);
        let mut seen = seen.lock().unwrap();
        seen.pushes += 1;
        if o.status.success() {
            expected.retain(|(name, _)| name != "refs/heads/main" && name != "refs/heads/revived");
            expected.push(("refs/heads/main".into(), head.clone()));
            expected.push((format!("refs/heads/r{round}"), head));
            expected.push(("refs/heads/revived".into(), revived.clone()));
        } else {
            seen.failures.push(format!("push {round}: {}", stderr(&o)));
        }
        drop(seen);
        // Time passes: what the push left unreachable is old enough to
        // prune, and so is what the next push brings back.
        age_loose_objects(&srv);
    });
    done.store(true, Ordering::SeqCst);
    maintainer.join().unwrap();
    cloner.join().unwrap();

    let seen = Arc::try_unwrap(seen).unwrap().into_inner().unwrap();
    let fsck = git(&home, &srv, &["fsck", "--strict", "--no-progress"]);
    let mut failures = seen.failures.clone();
    if !fsck.status.success() {
        failures.push(format!("fsck: {}", stderr(&fsck)));
    }
    for (name, id) in &expected {
        let o = git(&home, &srv, &["rev-parse", "--verify", "-q", name]);
        if stdout(&o).trim() != id {
            failures.push(format!("{name} is {:?}, pushed {id}", stdout(&o).trim()));
        }
    }
    eprintln!(
        "{pushes} pushes ({} rounds asked, seed {}), {} refstore maintenance runs ({} gave up), \
         {} git repacks, {} clones; {} failures",
        budget.rounds,
        budget.seed,
        seen.maintenance_runs,
        seen.maintenance_gave_up,
        seen.git_repacks,
        seen.clones,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

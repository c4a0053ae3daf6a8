//! Pushes racing the server's own background maintenance: in each
//! round one push (plain git over HTTP) creates 200 branches, and the
//! next deletes them and creates 200 others, while the maintenance the
//! first started packs refs (pack-refs), rolls packs up and prunes.
//! Another client keeps pushing a branch of its own meanwhile, as on a
//! busy host, so maintenance runs back to back and packs branches at any
//! moment of the pushes. Every deletion a push reported `ok` stays
//! deleted, every branch it created exists at its commit, a listing
//! after a push shows every branch that exists throughout it, and the
//! repository is complete (`git fsck --strict`) once the server is done.
//!
//! `REFSTORE_STRESS_ROUNDS` (pushes), `REFSTORE_STRESS_SECONDS` and
//! `REFSTORE_STRESS_SEED` run it longer or differently.

use crate::support::alone::alone;
use crate::support::*;
use crate::{served_for_pushes, take_maintenance_lock};
use refstore_testsupport::stress::Budget;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Branches each push creates (and the next deletes).
const BRANCHES: usize = 200;

fn gone(round: usize, i: usize) -> String {
    format!("refs/heads/r{round}/gone/{i}")
}

fn kept(round: usize, i: usize) -> String {
    format!("refs/heads/r{round}/kept/{i}")
}

/// The `refs/heads/` refs `git ls-remote` lists at `url`.
fn listed(home: &Path, url: &str) -> BTreeMap<String, String> {
    let o = git_net(home, home, &["ls-remote", "--heads", url]);
    assert!(o.status.success(), "ls-remote: {}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let (id, name) = l.split_once('\t')?;
            Some((name.to_owned(), id.to_owned()))
        })
        .collect()
}

/// Pushes; the error if the push was refused.
fn push(home: &Path, work: &Path, url: &str, refspecs: &[String]) -> Result<(), String> {
    let mut args = vec!["push", "-q", url];
    args.extend(refspecs.iter().map(String::as_str));
    let o = git_net(home, work, &args);
    match o.status.success() {
        true => Ok(()),
        false => Err(stderr(&o)),
    }
}

/// Loose ref files below `dir`.
fn loose_refs(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => loose_refs(&entry.path()),
            Ok(_) => 1,
            Err(_) => 0,
        })
        .sum()
}

/// What is wrong with `refs` after `rounds` rounds: deleted branches
/// present, kept ones missing or not at their round's commit.
fn wrong(refs: &BTreeMap<String, String>, commits: &[String], rounds: usize) -> (usize, usize) {
    let back = refs.keys().filter(|name| name.contains("/gone/")).count();
    let missing = (0..rounds)
        .flat_map(|r| (0..BRANCHES).map(move |i| (r, i)))
        .filter(|&(r, i)| refs.get(&kept(r, i)) != Some(&commits[r]))
        .count();
    (back, missing)
}

#[test]
fn pushed_deletions_and_creations_hold_against_background_maintenance() {
    // Alone: the log tells how often maintenance packed refs meanwhile.
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (server, url) = served_for_pushes(
        home,
        &[
            // Every push's branches are packed by the maintenance it starts.
            ["maintenance.pack-refs.auto", "1"],
            ["maintenance.incremental-repack.auto", "2"],
            ["maintenance.loose-objects.auto", "1"],
            ["refstore.redundantPackExpire", "now"],
        ],
    );
    let work = home.join("work");
    let served = home.join("root/proj.git");

    let budget = Budget::from_env(10, 30);
    // The commits are made first, so that pushes follow each other
    // closely; the other client's two are made the same way.
    let commit = |message: &str| {
        std::fs::write(work.join("f"), message).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", message]);
        git_ok(home, &work, &["rev-parse", "HEAD"])
            .trim()
            .to_owned()
    };
    let commits: Vec<String> = (0..budget.rounds)
        .map(|r| commit(&format!("round {r}")))
        .collect();
    let noise = [commit("other 0"), commit("other 1")];
    let stop = Arc::new(AtomicBool::new(false));
    let other_client = {
        let (home, work, url, stop) = (home.to_owned(), work.clone(), url.clone(), stop.clone());
        // Nobody else writes its branch: a push refused is a misread
        // (an advertisement that missed the branch makes git send a
        // creation, which then finds it there).
        std::thread::spawn(move || {
            let (mut pushes, mut refused) = (0, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let refspec = format!("+{}:refs/heads/other", noise[pushes % 2]);
                if let Err(e) = push(&home, &work, &url, &[refspec]) {
                    refused.push(e);
                }
                pushes += 1;
            }
            (pushes, refused)
        })
    };

    let (mut listings, mut bad_listings, mut examples) = (0, 0, Vec::new());
    let rounds = budget.run(|round, rng| {
        let commit = &commits[round];
        let created: Vec<String> = (0..BRANCHES)
            .map(|i| format!("{commit}:{}", gone(round, i)))
            .collect();
        push(home, &work, &url, &created).unwrap();
        // The delay spreads where in the maintenance this push lands (a
        // random jitter of the race under test, not a wait).
        std::thread::sleep(rng.delay(20));
        let replaced: Vec<String> = (0..BRANCHES)
            .map(|i| format!(":{}", gone(round, i)))
            .chain((0..BRANCHES).map(|i| format!("{commit}:{}", kept(round, i))))
            .collect();
        push(home, &work, &url, &replaced).unwrap();
        // Every other round (as the seed says) is listed while the
        // maintenance after it runs: the branches kept so far exist
        // throughout, those deleted were acknowledged.
        if rng.below(2) == 0 {
            listings += 1;
            let (back, missing) = wrong(&listed(home, &url), &commits, round + 1);
            if back + missing > 0 {
                bad_listings += 1;
                if examples.len() < 4 {
                    examples.push(format!(
                        "listed after round {round}: {back} deleted branches, {missing} kept \
                         ones missing"
                    ));
                }
            }
        }
    });
    stop.store(true, Ordering::SeqCst);
    let (other_pushes, other_refused) = other_client.join().unwrap();

    // Let the maintenance after the last push finish: every push left
    // loose refs, which only its pack-refs removes. Then take git's
    // maintenance lock, as `git maintenance` would, so that no run is
    // under way or starts while the server stops (the deadline bounds a
    // hang only).
    let deadline = Instant::now() + Duration::from_secs(120);
    let lock = loop {
        let lock = take_maintenance_lock(&served);
        if loose_refs(&served.join("refs")) == 0 {
            break lock;
        }
        std::fs::remove_file(lock).unwrap();
        assert!(Instant::now() < deadline, "maintenance never finished");
        std::thread::sleep(Duration::from_millis(50));
    };
    server.stop();
    let packings = log
        .log()
        .lines()
        .filter(|l| l.contains("maintenance:") && l.contains("pack-refs"))
        .count();

    let refs: BTreeMap<String, String> = git_ok(home, &served, &["show-ref"])
        .lines()
        .filter_map(|l| {
            let (id, name) = l.split_once(' ')?;
            Some((name.to_owned(), id.to_owned()))
        })
        .collect();
    let (back, missing) = wrong(&refs, &commits, rounds);
    eprintln!(
        "{rounds} rounds of {BRANCHES} creations then {BRANCHES} deletions and {BRANCHES} \
         creations, {other_pushes} pushes of another client ({} refused), {packings} background \
         pack-refs; \
         afterwards {back} deleted branches back, {missing} created ones missing; \
         {bad_listings} of {listings} listings wrong (seed {})",
        other_refused.len(),
        budget.seed
    );
    examples.extend(
        other_refused
            .iter()
            .take(2)
            .map(|e| format!("other client: {e}")),
    );
    git_ok(home, &served, &["fsck", "--strict", "--no-progress"]);
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(
        (back, missing, bad_listings, other_refused.len()),
        (0, 0, 0, 0),
        "{}",
        examples.join("\n")
    );
}

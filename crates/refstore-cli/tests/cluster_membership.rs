//! The membership of a running cluster changes under load: a 3-node
//! cluster (`object_copies = 2`) holding 100 repositories, with clients
//! cloning, fetching and pushing through its ready nodes all along,
//!
//! (a) gets a fourth node, which reports `starting` on `/healthz` until
//!     it holds every object acknowledged before it started, then `ok`,
//!     and then takes part in pushes' quorums (with two other nodes
//!     paused, pushes through the first still succeed; the paused ones
//!     serve clients again after a repair pass filled what they missed);
//! (b) has a node replaced after its disk was lost (stopped, its root
//!     deleted, started again under its name): `starting`, then `ok`
//!     holding everything, its `refstore_cluster_packs_below_copies` 0;
//! (c) has nodes removed with `cluster node remove`: later pushes succeed
//!     without them, nothing is sent to a removed node, which refuses
//!     requests, and a removal leaving fewer nodes than `object_copies`
//!     is refused.
//!
//! No client operation may fail (none is retried), and clients use a node
//! only while it is ready: one is taken out of their rotation, and its
//! requests in flight finish, before it is stopped or removed.

mod cluster;
mod support;

use cluster::fleet::Fleet;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{git_ok, isolate, stderr};

const REPOS: usize = 100;
const PUSHERS: usize = 2;
const CLONERS: usize = 1;
const FETCHERS: usize = 1;
/// Nodes the test ever has.
const MAX_NODES: usize = 4;

fn repo(r: usize) -> String {
    format!("r{r:03}.git")
}

/// `git <args>` in `cwd`, not required to succeed.
fn git(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new("git"), home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// What the client loops share.
struct Load {
    home: PathBuf,
    /// The nodes clients may use: index and port.
    ready: Mutex<Vec<(usize, u16)>>,
    /// Client operations in flight, by node.
    in_flight: Vec<AtomicUsize>,
    /// Successful operations by kind.
    counts: Mutex<BTreeMap<&'static str, usize>>,
    failures: Mutex<Vec<String>>,
    /// Each repository's last acknowledged `main`.
    tips: Mutex<HashMap<usize, String>>,
    stop: AtomicBool,
}

impl Load {
    /// Runs `op` against a ready node, counted in flight meanwhile.
    fn through_a_node<T>(&self, seed: &mut u64, op: impl FnOnce(u16) -> T) -> T {
        let (i, port) = {
            let ready = self.ready.lock().unwrap();
            let pick = ready[next(seed) % ready.len()];
            self.in_flight[pick.0].fetch_add(1, Ordering::SeqCst);
            pick
        };
        let result = op(port);
        self.in_flight[i].fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Takes node `i` out of the clients' rotation once its operations in
    /// flight are over.
    fn take_out(&self, i: usize) {
        self.ready.lock().unwrap().retain(|(j, _)| *j != i);
        while self.in_flight[i].load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn put_in(&self, i: usize, port: u16) {
        self.ready.lock().unwrap().push((i, port));
    }

    /// Counts `output` as one operation of `kind`, failed or not.
    fn record(&self, kind: &'static str, what: &str, output: &Output) -> bool {
        if output.status.success() {
            *self.counts.lock().unwrap().entry(kind).or_default() += 1;
            true
        } else {
            self.failures
                .lock()
                .unwrap()
                .push(format!("{kind} {what}: {}", stderr(output)));
            false
        }
    }

    fn count(&self, kind: &str) -> usize {
        self.counts.lock().unwrap().get(kind).copied().unwrap_or(0)
    }

    fn tips(&self) -> HashMap<usize, String> {
        self.tips.lock().unwrap().clone()
    }
}

/// A xorshift step: the loops' choices.
fn next(seed: &mut u64) -> usize {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 11) as usize
}

fn url(port: u16, r: usize) -> String {
    format!("http://alice:pw@127.0.0.1:{port}/{}", repo(r))
}

/// Pushes a new commit to one of its own repositories (one pusher per
/// repository, so every push is a fast-forward) through a ready node.
fn pusher(load: &Load, k: usize) {
    let dir = load.home.join(format!("pusher-{k}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mine: Vec<usize> = (0..REPOS).filter(|r| r % PUSHERS == k).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15 ^ (k as u64 + 1);
    let mut n = 0;
    while !load.stop.load(Ordering::SeqCst) {
        let r = mine[next(&mut seed) % mine.len()];
        let work = dir.join(repo(r));
        if !work.exists() {
            let o = load.through_a_node(&mut seed, |port| {
                git(
                    &load.home,
                    &dir,
                    &["clone", "-q", &url(port, r), work.to_str().unwrap()],
                )
            });
            if !load.record("clone", &repo(r), &o) {
                continue;
            }
        }
        n += 1;
        std::fs::write(work.join(format!("p{k}-{n}.txt")), format!("{k} {n} {r}\n")).unwrap();
        git_ok(&load.home, &work, &["add", "-A"]);
        git_ok(
            &load.home,
            &work,
            &["commit", "-q", "-m", &format!("push {n}")],
        );
        let o = load.through_a_node(&mut seed, |port| {
            git(
                &load.home,
                &work,
                &["push", "-q", &url(port, r), "HEAD:refs/heads/main"],
            )
        });
        if load.record("push", &repo(r), &o) {
            let tip = git_ok(&load.home, &work, &["rev-parse", "HEAD"]);
            load.tips.lock().unwrap().insert(r, tip.trim().to_owned());
        }
    }
}

/// Clones a repository whole through a ready node.
fn cloner(load: &Load, k: usize) {
    let dir = load.home.join(format!("cloner-{k}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d ^ (k as u64 + 1);
    while !load.stop.load(Ordering::SeqCst) {
        let r = next(&mut seed) % REPOS;
        let dest = dir.join(repo(r));
        let o = load.through_a_node(&mut seed, |port| {
            git(
                &load.home,
                &dir,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    &url(port, r),
                    dest.to_str().unwrap(),
                ],
            )
        });
        load.record("clone", &repo(r), &o);
        let _ = std::fs::remove_dir_all(&dest);
    }
}

/// Fetches a repository's `main` into one local repository through a
/// ready node.
fn fetcher(load: &Load, k: usize) {
    let local = load.home.join(format!("fetcher-{k}.git"));
    git_ok(
        &load.home,
        &load.home,
        &["init", "-q", "--bare", local.to_str().unwrap()],
    );
    let mut seed = 0x6a09_e667_f3bc_c908 ^ (k as u64 + 1);
    while !load.stop.load(Ordering::SeqCst) {
        let r = next(&mut seed) % REPOS;
        let refspec = format!("+refs/heads/main:refs/remotes/{r}/main");
        let o = load.through_a_node(&mut seed, |port| {
            git(
                &load.home,
                &local,
                &["fetch", "-q", &url(port, r), &refspec],
            )
        });
        load.record("fetch", &repo(r), &o);
    }
}

/// Polls node `i`'s `/healthz` from its start until it answers `ok`:
/// the first answer and how long it took.
fn until_ready(fleet: &Fleet, i: usize) -> (String, Duration) {
    let started = Instant::now();
    let (_, first) = fleet.health(i);
    loop {
        let (ok, text) = fleet.health(i);
        if ok {
            assert_eq!(text, "ok");
            return (first, started.elapsed());
        }
        assert!(text.starts_with("starting: "), "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "node {} not ready after 2 minutes: {text}",
            fleet.nodes[i].name
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that node `i`'s copy of every repository holds every object
/// of `tips` (read from its disk with plain git).
fn holds_everything(fleet: &Fleet, i: usize, tips: &HashMap<usize, String>) {
    for (r, tip) in tips {
        let dir = fleet.nodes[i].root.join(repo(*r));
        let o = git(&fleet.home, &dir, &["rev-list", "--objects", tip]);
        assert!(
            o.status.success(),
            "{} lacks objects of {} at {tip}: {}",
            fleet.nodes[i].name,
            repo(*r),
            stderr(&o)
        );
    }
}

/// Every object of repository `r` in node `i`'s copy.
fn objects(fleet: &Fleet, i: usize, r: usize) -> BTreeSet<String> {
    let dir = fleet.nodes[i].root.join(repo(r));
    git_ok(
        &fleet.home,
        &dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// The number of objects in node `i`'s copies.
fn object_count(fleet: &Fleet, i: usize) -> usize {
    (0..REPOS).map(|r| objects(fleet, i, r).len()).sum()
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: a signal to a child process this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
}

/// One commit per repository, on branches `bNNN` of a local repository,
/// made by one `git fast-import`.
fn seed_repository(home: &Path) -> PathBuf {
    let seed = home.join("seed");
    git_ok(home, home, &["init", "-q", seed.to_str().unwrap()]);
    let mut stream = String::new();
    for r in 0..REPOS {
        let message = format!("seed {r}\n");
        let content = format!("repository {r}\n{}\n", "x".repeat(r * 7));
        stream.push_str(&format!(
            "commit refs/heads/b{r:03}\ncommitter C <c@example.com> 1700000000 +0000\ndata {}\n{message}M 644 inline seed.txt\ndata {}\n{content}\n",
            message.len(),
            content.len()
        ));
    }
    let o = support::run_with_input(
        isolate(&mut Command::new("git"), home)
            .args(["fast-import", "--quiet"])
            .current_dir(&seed),
        stream.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    seed
}

#[test]
fn nodes_are_added_replaced_and_removed_under_load() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let mut fleet = Fleet::new(
        home,
        &["n1", "n2", "n3"],
        "object_copies = 2\npeer_timeout_ms = 5000\netcd_timeout_ms = 2000\nrepair_interval_s = 10",
    );
    for i in 0..3 {
        fleet.start(i);
        until_ready(&fleet, i);
    }

    // 100 repositories, one commit each, created and pushed four at a time.
    let seed = seed_repository(home);
    let set_up = Instant::now();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (fleet, seed) = (&fleet, &seed);
            s.spawn(move || {
                for r in (t..REPOS).step_by(4) {
                    let o = fleet.cluster(0, &["create"], &["-b", "main", &repo(r)]);
                    assert!(o.status.success(), "{}", stderr(&o));
                    let node = &fleet.nodes[r % 3];
                    let refspec = format!("refs/heads/b{r:03}:refs/heads/main");
                    let o = git(
                        home,
                        seed,
                        &["push", "-q", &node.url_of(&repo(r)), &refspec],
                    );
                    assert!(o.status.success(), "{}", stderr(&o));
                }
            });
        }
    });
    let mut tips = HashMap::new();
    for r in 0..REPOS {
        tips.insert(
            r,
            git_ok(home, &seed, &["rev-parse", &format!("b{r:03}")])
                .trim()
                .to_owned(),
        );
    }
    eprintln!(
        "set-up: {REPOS} repositories created and pushed in {:.1?}",
        set_up.elapsed()
    );

    let load = Arc::new(Load {
        home: home.to_owned(),
        ready: Mutex::new((0..3).map(|i| (i, fleet.nodes[i].port)).collect()),
        in_flight: (0..MAX_NODES).map(|_| AtomicUsize::new(0)).collect(),
        counts: Mutex::new(BTreeMap::new()),
        failures: Mutex::new(Vec::new()),
        tips: Mutex::new(tips),
        stop: AtomicBool::new(false),
    });
    let mut loops = Vec::new();
    for k in 0..PUSHERS {
        let load = load.clone();
        loops.push(std::thread::spawn(move || pusher(&load, k)));
    }
    for k in 0..CLONERS {
        let load = load.clone();
        loops.push(std::thread::spawn(move || cloner(&load, k)));
    }
    for k in 0..FETCHERS {
        let load = load.clone();
        loops.push(std::thread::spawn(move || fetcher(&load, k)));
    }
    let under_load = Instant::now();
    std::thread::sleep(Duration::from_secs(3));

    // (a) A fourth node.
    let before = load.tips();
    let n4 = fleet.add_node("n4");
    let base = fleet.nodes[n4].base();
    let o = fleet.cluster(0, &["node", "add"], &["n4", &base]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fleet.cluster(0, &["node", "add"], &["n4", &base]);
    assert!(
        stderr(&o).contains("node 'n4' is a member already"),
        "{}",
        stderr(&o)
    );
    let o = fleet.cluster(0, &["node", "list"], &[]);
    let listed: Vec<String> = support::stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(listed.contains(&format!("n4\t{base}")), "{listed:?}");
    fleet.start(n4);
    let (first, added_in) = until_ready(&fleet, n4);
    assert!(
        first.starts_with("starting: catching up 100 repositories"),
        "{first}"
    );
    holds_everything(&fleet, n4, &before);
    load.put_in(n4, fleet.nodes[n4].port);
    eprintln!("(a) n4 answered '{first}', then ok after {added_in:.1?}");

    // Only n1 and n4 answer for a while: each push needs the other as its
    // second copy, so n4 is in the quorums.
    std::thread::sleep(Duration::from_secs(2));
    for i in [1, 2] {
        load.take_out(i);
        signal(fleet.nodes[i].pid(), libc::SIGSTOP);
    }
    let pushes = load.count("push");
    std::thread::sleep(Duration::from_secs(6));
    let paused_pushes = load.count("push") - pushes;
    // Resumed, n2 and n3 missed those pushes' packs. A fetch through
    // them brings in what it needs first, but a push building on a tip
    // they lack the objects of is refused (its thin pack's bases are
    // missing) until a repair pass fills the gap, so they go back into
    // the rotation after a pass that started once they were resumed.
    let passes: Vec<usize> = [1, 2].map(|i| fleet.repair_passes(i)).to_vec();
    for i in [1, 2] {
        signal(fleet.nodes[i].pid(), libc::SIGCONT);
    }
    let resumed = Instant::now();
    for (i, before) in [1, 2].into_iter().zip(passes) {
        while fleet.repair_passes(i) < before + 2 {
            assert!(
                resumed.elapsed() < Duration::from_secs(90),
                "no repair pass"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        load.put_in(i, fleet.nodes[i].port);
    }
    eprintln!(
        "(a) n2 and n3 repaired {:.1?} after they resumed",
        resumed.elapsed()
    );
    assert!(paused_pushes > 0, "no push while n2 and n3 were paused");
    eprintln!("(a) {paused_pushes} pushes acknowledged with n2 and n3 paused");

    // (b) n3 loses its disk and comes back under its name.
    std::thread::sleep(Duration::from_secs(2));
    load.take_out(2);
    fleet.stop(2);
    std::fs::remove_dir_all(&fleet.nodes[2].root).unwrap();
    std::fs::create_dir_all(&fleet.nodes[2].root).unwrap();
    let before = load.tips();
    fleet.start(2);
    let (first, replaced_in) = until_ready(&fleet, 2);
    assert!(
        first.starts_with("starting: catching up 100 repositories"),
        "{first}"
    );
    holds_everything(&fleet, 2, &before);
    assert_eq!(
        fleet.metric(2, "refstore_cluster_packs_below_copies"),
        Some(0.0)
    );
    load.put_in(2, fleet.nodes[2].port);
    eprintln!("(b) n3 replaced: '{first}', then ok after {replaced_in:.1?}");

    // (c) n4 is removed, then n3; n2 cannot be (2 nodes = object_copies).
    std::thread::sleep(Duration::from_secs(2));
    load.take_out(n4);
    let o = fleet.cluster(0, &["node", "remove"], &["n4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::thread::sleep(Duration::from_secs(4));
    let o = git(
        home,
        home,
        &["ls-remote", &fleet.nodes[n4].url_of(&repo(0))],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("node 'n4' was removed from the cluster"),
        "{}",
        stderr(&o)
    );
    let n4_objects = object_count(&fleet, n4);
    let pushes = load.count("push");
    load.take_out(2);
    let o = fleet.cluster(0, &["node", "remove"], &["n3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fleet.cluster(0, &["node", "remove"], &["n2"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("removing node 'n2' would leave 1 nodes, fewer than object_copies = 2"),
        "{}",
        stderr(&o)
    );
    let o = fleet.cluster(0, &["node", "remove"], &["n9"]);
    assert!(
        stderr(&o).contains("node 'n9' is not a member (members: n1, n2)"),
        "{}",
        stderr(&o)
    );
    std::thread::sleep(Duration::from_secs(5));
    let later_pushes = load.count("push") - pushes;
    assert!(later_pushes > 0, "no push after the removals");

    load.stop.store(true, Ordering::SeqCst);
    for handle in loops {
        handle.join().unwrap();
    }
    let loaded_for = under_load.elapsed();
    let failures = load.failures.lock().unwrap().clone();
    let counts = load.counts.lock().unwrap().clone();
    eprintln!(
        "load over {loaded_for:.1?}: {counts:?}, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "client operations failed: {failures:#?}"
    );
    assert!(counts.values().all(|&n| n > 0), "{counts:?}");
    assert_eq!(
        object_count(&fleet, n4),
        n4_objects,
        "objects reached the removed n4"
    );

    // Every object of every repository is on both members (object_copies),
    // read from their disks; stragglers of the last pushes get a moment.
    let tips = load.tips();
    holds_everything(&fleet, 0, &tips);
    holds_everything(&fleet, 1, &tips);
    let settle = Instant::now();
    let mut unequal: Vec<usize> = (0..REPOS).collect();
    while !unequal.is_empty() {
        unequal.retain(|&r| objects(&fleet, 0, r) != objects(&fleet, 1, r));
        assert!(
            settle.elapsed() < Duration::from_secs(30),
            "n1 and n2 hold different objects of {unequal:?}"
        );
        if !unequal.is_empty() {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    for i in [0, 1] {
        let below = fleet.metric(i, "refstore_cluster_packs_below_copies");
        let copied = fleet.metric(i, "refstore_cluster_repair_packs_copied_total");
        eprintln!(
            "{}: packs below copies {below:?}, packs copied {copied:?}",
            fleet.nodes[i].name
        );
    }
}

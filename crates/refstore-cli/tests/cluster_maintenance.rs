//! Housekeeping of a cluster's nodes: three nodes, each push's objects on
//! two of them, many generated pushes through every node (new branches,
//! fast-forwards, force-pushes that orphan commits, deletions), one node
//! down for some of them and maintained while down (it lacks objects
//! etcd's refs reach), its peers' packs of those pushes rolled up and
//! deleted before it comes back and catches up from them, then
//! `refstore maintenance run --cluster` on every node while a push is in
//! flight (`MAINT_SEED=<n>` replays one history). Afterwards each node holds few packs,
//! every ref's history is complete through every node (`git fsck
//! --full` of a clone), every commit ever pushed, orphans included, is
//! still on at least `object_copies` nodes (all are younger than the
//! grace period, so repacking consolidates and prunes nothing), and the
//! push made during maintenance is intact.
//!
//! Pruning: with the nodes' objects made older than a short grace period,
//! one node prunes the orphans while its peers still hold them, and its
//! repair does not copy them back (it copies what etcd's refs need); then
//! every node prunes while a push is in flight. The orphans are gone from
//! every node for good, an orphan younger than the grace stays, every
//! reachable object is on `object_copies` nodes, and clones through
//! every node are whole.

mod cluster;
mod support;

use cluster::{Objects, TestCluster};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::{git_ok, stderr};

const COPIES: usize = 2;
const BRANCHES: usize = 5;

/// The generated history: what etcd should hold, and every commit pushed.
struct History {
    /// Branch name → tip, as every acknowledged push left it.
    refs: BTreeMap<String, String>,
    /// Every commit a push carried, orphaned or not.
    pushed: Vec<String>,
    /// Commits no ref reaches any more (force-pushed over, deleted).
    orphaned: Vec<String>,
    /// The commit every branch starts from.
    root: String,
    step: usize,
    seed: u64,
}

impl History {
    fn next_random(&mut self) -> u64 {
        // xorshift64: the same pushes for the same seed.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    /// A commit on `base` adding a file of its own: its id.
    fn commit_on(&mut self, c: &TestCluster, base: &str) -> String {
        git_ok(&c.home, &c.work, &["checkout", "-q", "--detach", base]);
        let name = format!("f{}.txt", self.step);
        let content: String = (0..200)
            .map(|i| format!("{} {i} {}\n", self.step, self.seed))
            .collect();
        std::fs::write(c.work.join(&name), content).unwrap();
        git_ok(&c.home, &c.work, &["add", &name]);
        git_ok(&c.home, &c.work, &["commit", "-q", "-m", &name]);
        c.rev("HEAD")
    }

    /// One generated push through node `node`.
    fn push(&mut self, c: &TestCluster, node: usize) {
        self.step += 1;
        let branch = format!("b{}", self.next_random() % BRANCHES as u64);
        let full = format!("refs/heads/{branch}");
        let tip = self.refs.get(&full).cloned();
        let url = c.nodes[node].url();
        let refspec;
        match (tip, self.next_random() % 6) {
            (Some(tip), 0) => {
                // Deleted: its history is orphaned.
                refspec = format!(":{full}");
                self.orphaned.push(tip);
                self.refs.remove(&full);
            }
            (Some(tip), 1 | 2) => {
                // Force-pushed onto the tip's parent: the old tip is orphaned.
                let parent = c.rev(&format!("{tip}^"));
                let new = self.commit_on(c, &parent);
                refspec = format!("+{new}:{full}");
                self.orphaned.push(tip);
                self.pushed.push(new.clone());
                self.refs.insert(full.clone(), new);
            }
            (tip, _) => {
                let base = tip.unwrap_or_else(|| self.root.clone());
                let new = self.commit_on(c, &base);
                refspec = format!("{new}:{full}");
                self.pushed.push(new.clone());
                self.refs.insert(full.clone(), new);
            }
        }
        let o = c.git(&["push", "-q", &url, &refspec]);
        assert!(
            o.status.success(),
            "push {} ({refspec}) through {}: {}",
            self.step,
            c.nodes[node].name,
            stderr(&o)
        );
    }
}

fn repo_dir(c: &TestCluster, i: usize) -> PathBuf {
    c.nodes[i].root.join("repo.git")
}

/// The packs in node `i`'s copy.
fn packs(c: &TestCluster, i: usize) -> usize {
    std::fs::read_dir(repo_dir(c, i).join("objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".pack")
        })
        .count()
}

/// `refstore [-c <config>...] maintenance run --cluster <file> <repo>` on
/// node `i`'s copy.
fn maintain(c: &TestCluster, i: usize, config: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = Vec::new();
    for item in config {
        args.extend(["-c".to_owned(), (*item).to_owned()]);
    }
    args.extend(
        [
            "maintenance",
            "run",
            "--cluster",
            c.nodes[i].config.to_str().unwrap(),
            repo_dir(c, i).to_str().unwrap(),
        ]
        .map(str::to_owned),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    c.refstore(&args)
}

fn maintain_ok(c: &TestCluster, i: usize, config: &[&str]) -> String {
    let o = maintain(c, i, config);
    assert!(
        o.status.success(),
        "maintenance of {}: {}",
        c.nodes[i].name,
        stderr(&o)
    );
    stderr(&o)
}

/// Clones through node `i`, checks the clone with `git fsck --full` and
/// that its branches are `expected`.
fn clone_checked(c: &TestCluster, i: usize, expected: &BTreeMap<String, String>, label: &str) {
    let dest = c.home.join(format!("clone-{label}-{}", c.nodes[i].name));
    let o = c.git(&[
        "clone",
        "-q",
        "--mirror",
        &c.nodes[i].url(),
        dest.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "clone through {}: {}",
        c.nodes[i].name,
        stderr(&o)
    );
    git_ok(&c.home, &dest, &["fsck", "--full", "--no-dangling"]);
    let listed = git_ok(
        &c.home,
        &dest,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads/b*",
        ],
    );
    let got: BTreeMap<String, String> = listed
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').unwrap();
            (name.to_owned(), id.to_owned())
        })
        .collect();
    assert_eq!(&got, expected, "branches through {}", c.nodes[i].name);
}

/// How many nodes' copies hold `id`.
fn holders(c: &TestCluster, id: &str) -> usize {
    (0..c.nodes.len())
        .filter(|&i| {
            let dir = repo_dir(c, i);
            support::git(&c.home, &dir, &["cat-file", "-e", id])
                .status
                .success()
        })
        .count()
}

#[test]
fn maintenance_consolidates_every_nodes_packs_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start_with(tmp.path(), 1, 3, Objects::Replicated { copies: COPIES });
    let seed = std::env::var("MAINT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_cafe_u64);
    eprintln!("MAINT_SEED={seed}");
    let mut history = History {
        refs: BTreeMap::new(),
        pushed: Vec::new(),
        orphaned: Vec::new(),
        root: c.rev("main"),
        step: 0,
        seed,
    };

    // A copy of the cluster is never maintained by its own refs.
    let o = c.refstore(&["maintenance", "run", repo_dir(&c, 0).to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--cluster"), "{}", stderr(&o));
    // Nor by the refs of another name than its own.
    let o = c.cluster("create", &["other.git"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = c.refstore(&[
        "maintenance",
        "run",
        "--cluster",
        c.nodes[0].config.to_str().unwrap(),
        "--name",
        "other.git",
        repo_dir(&c, 0).to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not this node's copy"),
        "{}",
        stderr(&o)
    );

    for n in 0..45 {
        history.push(&c, n % 3);
    }
    // Background maintenance after pushes (and after copies a peer sent)
    // has rolled up the nodes' packs into a multi-pack-index.
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..3 {
        let midx = repo_dir(&c, i).join("objects/pack/multi-pack-index");
        while !midx.exists() {
            assert!(
                Instant::now() < deadline,
                "no background maintenance on {}",
                c.nodes[i].name
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    // n3 misses pushes, and is maintained while down: etcd's refs name
    // commits it lacks, and nothing it holds may go for that.
    c.kill_node(2);
    let missed_from = history.pushed.len();
    for n in 0..12 {
        history.push(&c, n % 2);
    }
    maintain_ok(&c, 2, &["refstore.redundantPackExpire=now"]);
    // Its peers roll up (and delete) the packs of the pushes it missed:
    // it catches up from their consolidated packs.
    for i in 0..2 {
        maintain_ok(&c, i, &["refstore.redundantPackExpire=now"]);
    }
    c.start_node(2);
    // Its repair at startup copies them in.
    let deadline = Instant::now() + Duration::from_secs(60);
    let n3 = repo_dir(&c, 2);
    for id in &history.pushed[missed_from..] {
        while !support::git(&c.home, &n3, &["cat-file", "-e", id])
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "n3 never caught up with {id}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    // Maintenance on every node while a larger push is on its way.
    let big = support::noise(history.seed, 3_000_000);
    git_ok(
        &c.home,
        &c.work,
        &["checkout", "-q", "--detach", &history.root],
    );
    std::fs::write(c.work.join("big.bin"), big).unwrap();
    git_ok(&c.home, &c.work, &["add", "big.bin"]);
    git_ok(&c.home, &c.work, &["commit", "-q", "-m", "big"]);
    let big_commit = c.rev("HEAD");
    let in_flight = {
        let url = c.nodes[0].url();
        let (home, work) = (c.home.clone(), c.work.clone());
        let refspec = format!("{big_commit}:refs/heads/big");
        std::thread::spawn(move || support::git(&home, &work, &["push", "-q", &url, &refspec]))
    };
    for round in 0..3 {
        for i in 0..3 {
            let report = maintain_ok(&c, i, &[]);
            if round == 0 {
                eprintln!("{}: {report}", c.nodes[i].name);
            }
        }
    }
    let pushed = in_flight.join().unwrap();
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    history
        .refs
        .insert("refs/heads/big".into(), big_commit.clone());
    history.pushed.push(big_commit);

    // Quiet now: packs made redundant are deleted at once, and each node
    // is left with a geometric progression of few packs.
    for i in 0..3 {
        maintain_ok(&c, i, &["refstore.redundantPackExpire=now"]);
        let n = packs(&c, i);
        eprintln!(
            "{}: {n} packs after {} pushes",
            c.nodes[i].name,
            history.step + 1
        );
        assert!(n <= 12, "{} holds {n} packs", c.nodes[i].name);
    }

    for i in 0..3 {
        clone_checked(&c, i, &history.refs, "after");
    }
    // Repacking moved objects between packs; no node lost any, so every
    // commit (and its tree and blob) is where the pushes put it.
    for id in history.pushed.iter().chain(&history.orphaned) {
        let n = holders(&c, id);
        assert!(n >= COPIES, "{id} is on {n} nodes");
    }
    assert!(!history.orphaned.is_empty(), "the seed orphaned nothing");
}

/// `-c` settings under which maintenance prunes what is older than an hour
/// and deletes the packs it rewrote at once.
const PRUNE: [&str; 2] = [
    "gc.pruneExpire=1.hour.ago",
    "refstore.redundantPackExpire=now",
];

/// Maintenance of node `i` with [`PRUNE`], run again while a run of the
/// node's own holds the repository.
fn prune_ok(c: &TestCluster, i: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let report = maintain_ok(c, i, &PRUNE);
        if report.contains("incremental-repack") {
            return report;
        }
        assert!(Instant::now() < deadline, "{} stays busy", c.nodes[i].name);
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Restarts node `i` and waits for the repair pass it makes at startup.
fn repair(c: &mut TestCluster, i: usize) {
    let log = c.home.join(format!("{}.log", c.nodes[i].name));
    let passes = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("repair pass done")
            .count()
    };
    let before = passes();
    c.kill_node(i);
    c.start_node(i);
    let deadline = Instant::now() + Duration::from_secs(60);
    while passes() == before {
        assert!(
            Instant::now() < deadline,
            "no repair on {}",
            c.nodes[i].name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sets every pack's and loose object's time on node `i` two hours back:
/// everything it holds is older than the grace period.
fn age_objects(c: &TestCluster, i: usize) {
    let objects = repo_dir(c, i).join("objects");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&objects).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "pack" || (name.len() == 2 && dir.is_dir()) {
            for file in std::fs::read_dir(&dir).unwrap() {
                files.push(file.unwrap().path());
            }
        }
    }
    let status = std::process::Command::new("touch")
        .args(["-d", "2 hours ago"])
        .args(&files)
        .status()
        .unwrap();
    assert!(status.success());
}

fn node_has(c: &TestCluster, i: usize, id: &str) -> bool {
    support::git(&c.home, &repo_dir(c, i), &["cat-file", "-e", id])
        .status
        .success()
}

#[test]
fn pruning_drops_old_orphans_from_every_node_for_good() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start_with(tmp.path(), 1, 3, Objects::Replicated { copies: COPIES });
    // No background maintenance: the test says when packs are rewritten.
    c.serve_args = ["--maintenance-workers", "0"].map(str::to_owned).to_vec();
    for i in 0..3 {
        c.kill_node(i);
        c.start_node(i);
    }
    let seed = std::env::var("MAINT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0dd_ba11_u64);
    eprintln!("MAINT_SEED={seed}");
    let mut history = History {
        refs: BTreeMap::new(),
        pushed: Vec::new(),
        orphaned: Vec::new(),
        root: c.rev("main"),
        step: 0,
        seed,
    };
    for n in 0..30 {
        history.push(&c, n % 3);
    }
    // One branch certainly deleted, through another node than its push.
    let root = history.root.clone();
    history.step += 1;
    let gone = history.commit_on(&c, &root);
    for (node, refspec) in [
        (1, format!("{gone}:refs/heads/gone")),
        (2, ":refs/heads/gone".into()),
    ] {
        let o = c.git(&["push", "-q", &c.nodes[node].url(), &refspec]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    history.orphaned.push(gone);
    // Every node holds what etcd's refs reach (a node lacking some prunes
    // nothing), then everything is made old.
    for i in 0..3 {
        repair(&mut c, i);
        age_objects(&c, i);
    }
    // An orphan younger than the grace period.
    history.step += 1;
    let young = history.commit_on(&c, &root);
    for refspec in [
        format!("{young}:refs/heads/young"),
        ":refs/heads/young".into(),
    ] {
        let o = c.git(&["push", "-q", &c.nodes[0].url(), &refspec]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    // n1 prunes alone: its peers still hold the orphans.
    eprintln!("n1: {}", prune_ok(&c, 0));
    for id in &history.orphaned {
        assert!(!node_has(&c, 0, id), "orphan {id} kept on n1");
        assert!((1..3).any(|i| node_has(&c, i, id)), "{id} on no peer");
    }
    assert!(node_has(&c, 0, &young), "the young orphan was pruned");
    // Its repair copies what etcd's refs need of the peers: not those.
    repair(&mut c, 0);
    for id in &history.orphaned {
        assert!(!node_has(&c, 0, id), "orphan {id} came back to n1");
    }
    clone_checked(&c, 0, &history.refs, "n1-pruned");

    // The others prune while a push is on its way through n2.
    git_ok(&c.home, &c.work, &["checkout", "-q", "--detach", &root]);
    std::fs::write(c.work.join("big.bin"), support::noise(seed, 3_000_000)).unwrap();
    git_ok(&c.home, &c.work, &["add", "big.bin"]);
    git_ok(&c.home, &c.work, &["commit", "-q", "-m", "big"]);
    let big = c.rev("HEAD");
    let in_flight = {
        let url = c.nodes[1].url();
        let (home, work) = (c.home.clone(), c.work.clone());
        let refspec = format!("{big}:refs/heads/big");
        std::thread::spawn(move || support::git(&home, &work, &["push", "-q", &url, &refspec]))
    };
    for i in 1..3 {
        eprintln!("{}: {}", c.nodes[i].name, prune_ok(&c, i));
    }
    let pushed = in_flight.join().unwrap();
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    history.refs.insert("refs/heads/big".into(), big);
    for i in 0..3 {
        repair(&mut c, i);
    }

    for id in &history.orphaned {
        assert_eq!(holders(&c, id), 0, "orphan {id} survived");
    }
    assert!(
        holders(&c, &young) >= COPIES,
        "the young orphan lost copies"
    );
    for i in 0..3 {
        clone_checked(&c, i, &history.refs, "pruned");
    }
    let mirror = c.home.join("clone-pruned-n1");
    let reachable = git_ok(&c.home, &mirror, &["rev-list", "--objects", "--all"]);
    for id in reachable.lines().map(|l| &l[..40]) {
        let n = holders(&c, id);
        assert!(n >= COPIES, "{id} is on {n} nodes");
    }
    assert!(history.orphaned.len() > 1, "the seed orphaned little");
}

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
//! still on at least `object_copies` nodes (repacking consolidates and
//! prunes nothing), and the push made during maintenance is intact.

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

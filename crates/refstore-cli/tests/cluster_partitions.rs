//! Network partitions between a cluster node and etcd, or between nodes:
//! each node reaches etcd's members and the other nodes through fault
//! proxies (`refstore_testsupport::fault_proxy`), which a schedule drawn
//! from a seed switches to hold (a partition: connections stay open,
//! nothing is delivered) or reset and back, while clients read and
//! compare-and-swap refs through every node. The history, with reads
//! through every node after the last heal, must be linearizable (so no
//! acknowledged push is lost and no read is stale); a node cut off from
//! etcd must refuse reads and pushes with refstore's message, and pushes
//! within 10 s. A node configured for stale reads answers from its copy
//! within `max_staleness_ms` and refuses past it.
//!
//! `PARTITION_SEED=<n>` replays one schedule; by default the seed comes
//! from the clock and is printed.

mod cluster;
mod support;

use cluster::history::{self, git, push_result, read_value, Record, Rng};
use cluster::{Links, Mode, Objects, TestCluster};
use refstore_testsupport::porcupine;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{stderr, stdout};

const REFS: [&str; 2] = ["refs/heads/k0", "refs/heads/k1"];
const CLIENTS: usize = 4;
/// Cuts in a run; the clients keep going until the last one heals.
const CUTS: usize = 5;
/// Enough distinct values for the longest run.
const OPS_PER_CLIENT: usize = 150;
/// What the test's cluster files say (`etcd_timeout_ms`, `peer_timeout_ms`).
const ETCD_TIMEOUT: Duration = Duration::from_millis(2000);
const PEER_TIMEOUT: Duration = Duration::from_millis(3000);
/// What git itself may take on top of the server's wait.
const GIT_SLACK: Duration = Duration::from_secs(5);
/// The bound on any refused push.
const PUSH_REFUSED_WITHIN: Duration = Duration::from_secs(10);

/// One operation as a client saw it, failed ones included.
struct Seen {
    node: usize,
    push: bool,
    call: u128,
    ret: u128,
    succeeded: bool,
    output: String,
}

/// A cut of one node's links, from `from` to `to` on the test's clock.
struct Cut {
    node: usize,
    links: Links,
    mode: Mode,
    from: u128,
    to: u128,
}

impl Cut {
    /// How long an operation through the cut-off node may take: it waits
    /// for etcd once (reads, and pushes, whose advertisement is refused),
    /// or for the other nodes (pushes through a node cut off from them).
    fn bound(&self, op: &Seen) -> Duration {
        match self.links {
            Links::Peers if op.push => ETCD_TIMEOUT + PEER_TIMEOUT + GIT_SLACK,
            _ => ETCD_TIMEOUT + GIT_SLACK,
        }
    }

    /// Whether `op` went through the cut-off node early enough in the cut
    /// to be answered within its bound before the cut healed.
    fn covers(&self, op: &Seen) -> bool {
        let bound = self.bound(op).as_nanos();
        op.node == self.node && self.from <= op.call && op.call + bound <= self.to
    }

    fn describe(&self) -> String {
        format!(
            "{:?} of node {}'s {:?} links from {:.2} s to {:.2} s",
            self.mode,
            self.node,
            self.links,
            self.from as f64 / 1e9,
            self.to as f64 / 1e9
        )
    }
}

fn seed() -> u64 {
    std::env::var("PARTITION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

#[test]
fn partitions_keep_refs_linearizable_and_cut_off_nodes_refuse() {
    let seed = seed();
    eprintln!("PARTITION_SEED={seed}");
    let tmp = tempfile::tempdir().unwrap();
    let checker = porcupine::build(tmp.path());
    // Pushes need their objects on 2 of the 3 nodes, so that a node cut
    // off from its peers cannot acknowledge one.
    let c = TestCluster::start_configured(
        tmp.path(),
        3,
        3,
        Objects::Replicated { copies: 2 },
        "peer_timeout_ms = 3000",
    );
    let (home, work) = (c.home.clone(), c.work.clone());
    let urls: Vec<String> = c.nodes.iter().map(|n| n.url()).collect();
    let base = c.rev("main");
    let tree = c.rev("main^{tree}");
    let values: Vec<String> = (0..CLIENTS * OPS_PER_CLIENT)
        .map(|n| c.commit_tree(&tree, &base, &format!("value {n}")))
        .collect();

    let started = Instant::now();
    let clock = || started.elapsed().as_nanos();
    let history = Mutex::new(Vec::new());
    let seen = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let mut cuts = Vec::new();
    std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (home, work, urls, values) = (&home, &work, &urls, &values);
                let (history, seen, done) = (&history, &seen, &done);
                s.spawn(move || {
                    let mut rng =
                        Rng(seed ^ 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(client as u64 + 1) | 1);
                    let mut last = [String::new(), String::new()];
                    for op in 0..OPS_PER_CLIENT {
                        if done.load(Ordering::Relaxed) {
                            break;
                        }
                        let r = rng.below(REFS.len());
                        let reference = REFS[r];
                        let node = rng.below(urls.len());
                        let push = rng.below(2) == 1;
                        let call = clock();
                        let (record, o) = if push {
                            let old = last[r].clone();
                            let new = values[client * OPS_PER_CLIENT + op].clone();
                            let lease = format!("--force-with-lease={reference}:{old}");
                            let refspec = format!("{new}:{reference}");
                            let o = git(
                                home,
                                work,
                                &["push", "--porcelain", &lease, &urls[node], &refspec],
                            );
                            let out = format!("{}{}", stdout(&o), stderr(&o));
                            let result = push_result(o.status.success(), &out);
                            if result == "ok" {
                                last[r] = new.clone();
                            }
                            (Some((Some((old, new)), String::new(), result)), o)
                        } else {
                            let o = git(home, work, &["ls-remote", &urls[node], reference]);
                            let value = read_value(&o);
                            let record = o.status.success().then(|| {
                                last[r] = value.clone();
                                (None, value, "ok")
                            });
                            (record, o)
                        };
                        let ret = clock();
                        if let Some((cas, value, result)) = record {
                            history.lock().unwrap().push(Record {
                                client,
                                reference,
                                cas,
                                value,
                                call,
                                ret,
                                result,
                            });
                        }
                        seen.lock().unwrap().push(Seen {
                            node,
                            push,
                            call,
                            ret,
                            succeeded: o.status.success(),
                            output: format!("{}{}", stdout(&o), stderr(&o)),
                        });
                    }
                })
            })
            .collect();

        // The schedule: one cut at a time, each of a node, links, mode
        // and duration drawn from the seed.
        let (c, done, cuts) = (&c, &done, &mut cuts);
        let injector = s.spawn(move || {
            let mut rng = Rng(seed.rotate_left(17) | 1);
            for _ in 0..CUTS {
                std::thread::sleep(Duration::from_millis(300 + rng.below(900) as u64));
                let node = rng.below(c.nodes.len());
                let links = [Links::Etcd, Links::Peers, Links::All][rng.below(3)];
                let mode = if rng.below(4) == 0 {
                    Mode::Reset
                } else {
                    Mode::Hold
                };
                c.cut(node, links, mode);
                let from = clock();
                std::thread::sleep(Duration::from_millis(11000 + rng.below(4000) as u64));
                let to = clock();
                c.cut(node, links, Mode::Pass);
                cuts.push(Cut {
                    node,
                    links,
                    mode,
                    from,
                    to,
                });
            }
            std::thread::sleep(Duration::from_millis(500));
            done.store(true, Ordering::Relaxed);
        });
        let scheduled = injector.join();
        // The clients stop with the schedule, even if it failed.
        done.store(true, Ordering::Relaxed);
        let finished: Vec<_> = clients.into_iter().map(|client| client.join()).collect();
        scheduled.unwrap();
        for client in finished {
            client.unwrap();
        }
    });
    c.heal_all();

    let mut history = history.into_inner().unwrap();
    let seen = seen.into_inner().unwrap();
    let schedule: Vec<String> = cuts.iter().map(Cut::describe).collect();
    let context = format!("PARTITION_SEED={seed}; cuts: {}", schedule.join("; "));

    // What a cut-off node answered while it was cut off.
    let mut refused_reads = 0;
    let mut judged = 0;
    for cut in &cuts {
        for op in seen.iter().filter(|op| cut.covers(op)) {
            judged += 1;
            let took = Duration::from_nanos((op.ret - op.call) as u64);
            let what = format!(
                "{} through node {} during the {}, {took:?}: {}\n{context}",
                if op.push { "push" } else { "read" },
                op.node,
                cut.describe(),
                op.output
            );
            if cut.links != Links::Peers {
                assert!(!op.succeeded, "answered although cut off: {what}");
                assert!(op.output.contains("cluster: etcd"), "{what}");
                refused_reads += usize::from(!op.push);
            } else if op.push {
                assert!(
                    !op.succeeded
                        && (op.output.contains("push refused")
                            || push_result(false, &op.output) == "failed"),
                    "{what}"
                );
            } else {
                assert!(op.succeeded, "cut off from its peers only: {what}");
            }
            assert!(took <= cut.bound(op), "too slow: {what}");
            assert!(!op.push || took <= PUSH_REFUSED_WITHIN, "too slow: {what}");
        }
    }

    // Healed, every node serves the current values: reads of every ref
    // through every node close the history.
    let deadline = Instant::now() + Duration::from_secs(20);
    for (node, url) in urls.iter().enumerate() {
        for reference in REFS {
            loop {
                let call = clock();
                let o = git(&home, &work, &["ls-remote", url, reference]);
                let ret = clock();
                if o.status.success() {
                    history.push(Record {
                        client: CLIENTS + node,
                        reference,
                        cas: None,
                        value: read_value(&o),
                        call,
                        ret,
                        result: "ok",
                    });
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {node} still refuses after the heal: {}\n{context}",
                    stderr(&o)
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    let summary = format!(
        "{}; {judged} operations through cut-off nodes, {refused_reads} reads refused; {context}",
        history::summary(&history)
    );
    eprintln!("{summary}");
    let (applied, read) = history::applied_and_read(&history);
    assert!(applied > 0 && read > 0, "{summary}");
    assert!(!cuts.is_empty() && judged > 0, "{summary}");
    if let Err(verdict) = history::check(&checker, tmp.path(), &history) {
        panic!("{verdict}\n{summary}");
    }
}

#[test]
fn stale_reads_answer_from_the_copy_within_the_bound_and_refuse_past_it() {
    const MAX_STALENESS: Duration = Duration::from_millis(20000);
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCluster::start_configured(
        tmp.path(),
        3,
        2,
        Objects::Shared,
        &format!(
            "stale_reads = true\nmax_staleness_ms = {}",
            MAX_STALENESS.as_millis()
        ),
    );
    let base = c.rev("main");
    let tree = c.rev("main^{tree}");
    let (old, new) = (
        c.commit_tree(&tree, &base, "old"),
        c.commit_tree(&tree, &base, "new"),
    );
    c.share_objects(&[&old, &new]);
    let push = |node: usize, value: &str| {
        let o = c.git(&[
            "push",
            "-f",
            &c.nodes[node].url(),
            &format!("{value}:refs/heads/s"),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    push(0, &old);
    // Node 1's copy is confirmed current as of this read.
    let confirmed = Instant::now();
    assert_eq!(
        c.remote_ref(1, "refs/heads/s").as_deref(),
        Some(old.as_str())
    );
    assert_eq!(c.metric(1, "refstore_cluster_stale_reads_total"), Some(0.0));

    c.cut(1, Links::Etcd, Mode::Hold);
    push(0, &new);
    // Cut off, node 1 answers from its copy: the old value, since it
    // cannot know of the push, and counts it.
    let asked = Instant::now();
    let o = c.git(&["ls-remote", &c.nodes[1].url(), "refs/heads/s"]);
    assert!(
        confirmed.elapsed() < MAX_STALENESS,
        "too slow to test the bound: {:?}",
        confirmed.elapsed()
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_value(&o), old);
    // The first read that finds etcd unreachable waits once; the node's
    // reads within the next etcd timeout do not wait again.
    assert!(
        asked.elapsed() <= ETCD_TIMEOUT + GIT_SLACK,
        "{:?}",
        asked.elapsed()
    );
    let stale = c.metric(1, "refstore_cluster_stale_reads_total").unwrap();
    assert!(stale >= 1.0, "{stale}");
    // The node through which the push went answers current values.
    assert_eq!(
        c.remote_ref(0, "refs/heads/s").as_deref(),
        Some(new.as_str())
    );

    // Past the bound, the copy is too old: refused.
    let past = MAX_STALENESS + Duration::from_millis(300);
    std::thread::sleep(past.saturating_sub(confirmed.elapsed()));
    let o = c.git(&["ls-remote", &c.nodes[1].url(), "refs/heads/s"]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("more than max_staleness_ms"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        c.metric(1, "refstore_cluster_stale_reads_total").unwrap(),
        stale
    );

    c.cut(1, Links::Etcd, Mode::Pass);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let o = c.git(&["ls-remote", &c.nodes[1].url(), "refs/heads/s"]);
        if o.status.success() {
            assert_eq!(read_value(&o), new);
            break;
        }
        assert!(Instant::now() < deadline, "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(200));
    }
}

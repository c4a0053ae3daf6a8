//! The cluster's housekeeping of etcd against a real etcd: reflog records
//! expire by age and nothing else is touched, compaction by the leader
//! leaves the nodes' copies correct, and one node leads at a time, another
//! taking over when the leader's lease ends.

mod support;

use refstore_cluster::housekeeping::{self, Housekeeping, EXPIRY_BATCH};
use refstore_cluster::keys::{range_end, RepoKeys};
use refstore_cluster::leader::Leadership;
use refstore_cluster::lifecycle::NewRepository;
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{Backend, ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::etcd::EtcdCluster;

const DAY: u64 = 86_400;

fn cluster(etcd: &EtcdCluster, node: &str, extra: &str) -> Arc<Cluster> {
    let text = format!(
        "etcd = {}\nnode = \"{node}\"\netcd_timeout_ms = 2000\n{extra}\n[nodes]\nn1 = \"http://127.0.0.1:1\"\nn2 = \"http://127.0.0.1:2\"\n",
        etcd.endpoints_toml()
    );
    Cluster::connect(ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap()).unwrap()
}

/// A client of etcd behind the cluster's back.
struct Direct {
    runtime: tokio::runtime::Runtime,
    client: etcd_client::Client,
}

impl Direct {
    fn new(etcd: &EtcdCluster) -> Direct {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = runtime
            .block_on(etcd_client::Client::connect(etcd.endpoints(), None))
            .unwrap();
        Direct { runtime, client }
    }

    fn put(&self, key: Vec<u8>, value: &[u8]) {
        let mut client = self.client.clone();
        self.runtime.block_on(client.put(key, value, None)).unwrap();
    }

    /// Every key with `prefix`, and its mod revision.
    fn keys(&self, prefix: &[u8]) -> Vec<(Vec<u8>, i64)> {
        let mut client = self.client.clone();
        let options = etcd_client::GetOptions::new().with_range(range_end(prefix));
        let response = self
            .runtime
            .block_on(client.get(prefix, Some(options)))
            .unwrap();
        response
            .kvs()
            .iter()
            .map(|kv| (kv.key().to_vec(), kv.mod_revision()))
            .collect()
    }

    /// etcd's current revision.
    fn revision(&self) -> i64 {
        let mut client = self.client.clone();
        let response = self.runtime.block_on(client.get("x", None)).unwrap();
        response.header().unwrap().revision()
    }

    /// Whether etcd still has the history of `revision`.
    fn has_revision(&self, revision: i64) -> bool {
        let mut client = self.client.clone();
        let options = etcd_client::GetOptions::new().with_revision(revision);
        self.runtime
            .block_on(client.get("x", Some(options)))
            .is_ok()
    }
}

fn id(n: u32) -> ObjectId {
    ObjectId::from_hex(format!("{n:08x}").repeat(5).as_bytes()).unwrap()
}

fn options() -> CommitOptions {
    CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Always,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    }
}

/// Sets refs/heads/b<n> to id(n), whatever it held.
fn push(cluster: &Arc<Cluster>, name: &str, n: u32) {
    let refs = cluster.refs(name, ObjectFormat::Sha1);
    let tx = Transaction {
        updates: vec![Update {
            name: RefName::new(format!("refs/heads/b{}", n % 7)).unwrap(),
            change: Change::Set(Target::Object(id(n))),
            expected: Expected::Any,
            no_deref: false,
        }],
        batch: false,
        message: Some("push".into()),
        create_reflog: true,
    };
    refs.commit(&tx, &options()).unwrap();
}

fn listing(cluster: &Arc<Cluster>, name: &str) -> Vec<(String, Option<ObjectId>)> {
    let refs = cluster.refs(name, ObjectFormat::Sha1);
    refs.list(b"refs/")
        .unwrap()
        .refs
        .iter()
        .map(|r| (r.name.to_string(), r.target.object_id().copied()))
        .collect()
}

/// Ages in seconds, spread over `0..max_days` days from a fixed seed.
fn ages(count: usize, max_days: u64, mut seed: u64) -> Vec<u64> {
    (0..count)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % (max_days * DAY)
        })
        .collect()
}

/// Writes a reflog record of age `age` seconds for each age; their keys.
fn write_records(direct: &Direct, keys: &RepoKeys, ages: &[u64], now: SystemTime) -> Vec<Vec<u8>> {
    ages.iter()
        .enumerate()
        .map(|(i, age)| {
            let at = now - Duration::from_secs(*age);
            let nanos = at.duration_since(UNIX_EPOCH).unwrap().as_nanos();
            let key = keys.log(&format!("{nanos:020}-n9-{i}"));
            direct.put(key.clone(), b"refs/heads/x 0 1 sig\tmsg\n");
            key
        })
        .collect()
}

#[test]
fn reflog_records_older_than_the_horizon_are_deleted_and_nothing_else() {
    let etcd = EtcdCluster::start(1);
    let node = cluster(&etcd, "n1", "");
    let direct = Direct::new(&etcd);
    for name in ["a.git", "b.git"] {
        node.create(name, &NewRepository::default()).unwrap();
        for n in 0..5 {
            push(&node, name, n);
        }
    }
    let now = SystemTime::now();
    let horizon = now - Duration::from_secs(90 * DAY);
    // More old records than one batch deletes, in one repository.
    let generated = ages(2 * EXPIRY_BATCH as usize + 300, 200, 7);
    let keys = RepoKeys::new("/refstore/", "a.git");
    write_records(&direct, &keys, &generated, now);
    let before = |name: &str| {
        let (start, _) = RepoKeys::new("/refstore/", name).all();
        direct.keys(&start)
    };
    let is_log = |key: &[u8]| key.windows(5).any(|w| w == b"/log/");
    let (a_before, b_before) = (before("a.git"), before("b.git"));
    let listing_before = listing(&node, "a.git");

    let expired = housekeeping::expire_reflogs(&node, horizon).unwrap();

    let old = generated.iter().filter(|&&age| age > 90 * DAY).count();
    assert!(old > EXPIRY_BATCH as usize, "{old}");
    assert_eq!(expired, old as u64);
    let a_after = before("a.git");
    // Every ref, the stamp and every newer record are there, unchanged.
    let kept: Vec<_> = a_before
        .iter()
        .filter(|(key, _)| {
            !is_log(key) || {
                let time = &key[keys.log("").len()..][..20];
                let nanos: u128 = std::str::from_utf8(time).unwrap().parse().unwrap();
                nanos >= horizon.duration_since(UNIX_EPOCH).unwrap().as_nanos()
            }
        })
        .cloned()
        .collect();
    assert_eq!(a_after, kept);
    assert_eq!(before("b.git"), b_before);
    assert_eq!(listing(&node, "a.git"), listing_before);
    assert_eq!(housekeeping::expire_reflogs(&node, horizon).unwrap(), 0);
}

#[test]
fn the_leader_expires_records_as_the_cluster_file_says() {
    let etcd = EtcdCluster::start(1);
    let direct = Direct::new(&etcd);
    let generated = ages(300, 60, 11);
    let cases = [
        ("reflog_expire = \"never\"", None),
        ("reflog_expire = \"false\"", None),
        ("reflog_expire = \"30.days.ago\"", Some(30 * DAY)),
        ("", Some(90 * DAY)),
    ];
    for (i, (setting, expire)) in cases.into_iter().enumerate() {
        let node = cluster(&etcd, "n1", setting);
        let name = format!("r{i}.git");
        node.create(&name, &NewRepository::default()).unwrap();
        let keys = RepoKeys::new("/refstore/", &name);
        write_records(&direct, &keys, &generated, SystemTime::now());
        let mut housekeeping = Housekeeping::new(node.clone(), Duration::from_secs(2));
        let report = housekeeping.round().unwrap().clone();
        assert!(report.leading);
        let expected = expire.map_or(0, |e| generated.iter().filter(|&&a| a > e).count());
        assert_eq!(report.expired, expected as u64, "{setting}");
        let left = direct.keys(&keys.log("")).len();
        assert_eq!(left, generated.len() - expected, "{setting}");
        housekeeping.resign();
        // The next case's leader expires every repository's records.
        node.delete(&name).unwrap();
    }
}

#[test]
fn compaction_by_the_leader_keeps_the_nodes_copies_correct() {
    let etcd = EtcdCluster::start(3);
    let settings = "compaction_retention_s = 1\ndefrag_interval_s = 1";
    let leader = cluster(&etcd, "n1", settings);
    let reader = cluster(&etcd, "n2", settings);
    let direct = Direct::new(&etcd);
    leader
        .create("repo.git", &NewRepository::default())
        .unwrap();
    for n in 0..20 {
        push(&leader, "repo.git", n);
    }
    // n2's copy is read and watched from here on.
    let early = listing(&reader, "repo.git");
    assert_eq!(early.len(), 7);
    // The revision the first round samples (taking the leadership comes
    // after).
    let (_, first) = direct
        .keys(b"/refstore/")
        .into_iter()
        .max_by_key(|k| k.1)
        .unwrap();
    let mut housekeeping = Housekeeping::new(leader.clone(), Duration::from_secs(2));
    assert_eq!(housekeeping.round().unwrap().compacted, 0);
    std::thread::sleep(Duration::from_millis(1100));
    for n in 20..40 {
        push(&leader, "repo.git", n);
    }
    let report = housekeeping.round().unwrap().clone();
    assert!(report.leading);
    assert_eq!(report.compacted, first, "{report:?}");
    assert!(!direct.has_revision(report.compacted - 1));
    assert!(direct.has_revision(report.compacted));
    assert_eq!(report.sizes.len(), 3, "every member defragmented");
    assert!(report
        .sizes
        .iter()
        .all(|s| s.db_size > 0 && s.in_use <= s.db_size));
    for n in 40..45 {
        push(&leader, "repo.git", n);
    }
    // The reader's watched copy and a fresh node's read agree with etcd.
    let fresh = cluster(&etcd, "n2", settings);
    let expected: Vec<(String, Option<ObjectId>)> = (38..45)
        .map(|n| (format!("refs/heads/b{}", n % 7), Some(id(n))))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert_eq!(listing(&reader, "repo.git"), expected);
    assert_eq!(listing(&fresh, "repo.git"), expected);
}

#[test]
fn one_leader_at_a_time_and_another_takes_over() {
    let etcd = EtcdCluster::start(1);
    let key = b"/refstore/leaders/test".to_vec();
    let contender = |node: &str| {
        let cluster = cluster(&etcd, node, "");
        Leadership::new(&cluster, key.clone(), Duration::from_secs(1))
    };
    let mut first = contender("n1");
    let mut second = contender("n2");
    assert!(first.try_lead().unwrap());
    for _ in 0..3 {
        assert!(!second.try_lead().unwrap());
        assert!(first.try_lead().unwrap());
    }
    assert_eq!(first.leader().unwrap().as_deref(), Some("n1"));
    // Resigning hands over at once.
    first.resign();
    assert!(second.try_lead().unwrap());
    assert!(!first.try_lead().unwrap());
    // A leader that stops renewing loses the key when its lease ends.
    let stopped = Instant::now();
    drop(second);
    let mut took_over = None;
    while stopped.elapsed() < Duration::from_secs(10) {
        if first.try_lead().unwrap() {
            took_over = Some(stopped.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took_over = took_over.expect("n1 takes over once n2's lease ends");
    assert!(took_over >= Duration::from_millis(500), "{took_over:?}");
    assert_eq!(first.leader().unwrap().as_deref(), Some("n1"));
}

/// Sizing: etcd's database per ref, with and without history and
/// reflogs. Slow; run with `cargo test -p refstore-cluster --test
/// housekeeping -- --ignored --nocapture`.
#[test]
#[ignore]
fn size_of_etcd_per_ref() {
    const REFS: u32 = 100_000;
    const PER_PUSH: u32 = 10_000;
    let etcd = EtcdCluster::start(1);
    let node = cluster(&etcd, "n1", "");
    node.create("big.git", &NewRepository::default()).unwrap();
    let size = |what: &str| {
        let size = housekeeping::member_sizes(&node).unwrap().remove(0);
        println!(
            "{what}: db {} bytes, in use {} bytes",
            size.db_size, size.in_use
        );
        size
    };
    let empty = size("empty");
    let refs = node.refs("big.git", ObjectFormat::Sha1);
    let write = |round: u32| {
        for start in (0..REFS).step_by(PER_PUSH as usize) {
            let updates = (start..start + PER_PUSH)
                .map(|n| Update {
                    name: RefName::new(format!("refs/heads/topic/{n:06}")).unwrap(),
                    change: Change::Set(Target::Object(id(n * 2 + round))),
                    expected: Expected::Any,
                    no_deref: false,
                })
                .collect();
            let tx = Transaction {
                updates,
                batch: false,
                message: Some("push".into()),
                create_reflog: false,
            };
            refs.commit(&tx, &options()).unwrap();
        }
    };
    write(0);
    write(1);
    let written = size("100k refs written twice");
    let direct = Direct::new(&etcd);
    housekeeping::compact(&node, direct.revision()).unwrap();
    let url = node.config.etcd[0].clone();
    housekeeping::defragment_member(&node, &url).unwrap();
    let compacted = size("compacted and defragmented");
    assert!(compacted.db_size < written.db_size);
    let expired = housekeeping::expire_reflogs(&node, SystemTime::now()).unwrap();
    assert_eq!(expired, 2 * u64::from(REFS / PER_PUSH));
    housekeeping::compact(&node, direct.revision()).unwrap();
    housekeeping::defragment_member(&node, &url).unwrap();
    let bare = size("reflog records expired, compacted and defragmented");
    assert!(bare.db_size < compacted.db_size);
    let per_ref =
        |s: &housekeeping::MemberSize| (s.db_size - empty.db_size) as f64 / f64::from(REFS);
    for (what, s) in [("with its reflog lines", &compacted), ("without", &bare)] {
        println!(
            "per ref {what}: {:.0} bytes, {:.1} M refs per GiB",
            per_ref(s),
            (1u64 << 30) as f64 / per_ref(s) / 1e6
        );
    }
}

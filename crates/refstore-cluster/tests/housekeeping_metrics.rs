//! What the etcd housekeeping reports to the process's observer (the
//! server's metrics): leadership, revision and database size every round,
//! expired records within the per-round budget, compactions and
//! defragmentations. A test binary of its own, since the observer is one
//! per process.

mod support;

use refstore_cluster::housekeeping::Housekeeping;
use refstore_cluster::lifecycle::NewRepository;
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_fs::observe::{self, Observer};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{Backend, ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::etcd::EtcdCluster;

/// What the housekeeping reported, as the metrics would add it up.
#[derive(Debug, Default, Clone, PartialEq)]
struct Seen {
    rounds: u64,
    leads: bool,
    revision: i64,
    expired: Vec<u64>,
    compacted: Vec<i64>,
    defrags: u64,
    defrag_failures: u64,
    db_size: i64,
    in_use: i64,
}

#[derive(Default)]
struct Recorder(Mutex<Seen>);

impl Observer for Recorder {
    fn etcd_round(&self, leads: bool, revision: i64) {
        let mut s = self.0.lock().unwrap();
        s.rounds += 1;
        s.leads = leads;
        s.revision = revision;
    }
    fn etcd_reflog_expired(&self, records: u64) {
        self.0.lock().unwrap().expired.push(records);
    }
    fn etcd_compacted(&self, revision: i64) {
        self.0.lock().unwrap().compacted.push(revision);
    }
    fn etcd_defragmented(&self, ok: bool) {
        let mut s = self.0.lock().unwrap();
        if ok {
            s.defrags += 1;
        } else {
            s.defrag_failures += 1;
        }
    }
    fn etcd_db_size(&self, db_size: i64, in_use: i64) {
        let mut s = self.0.lock().unwrap();
        s.db_size = db_size;
        s.in_use = in_use;
    }
}

fn cluster(etcd: &EtcdCluster, extra: &str) -> Arc<Cluster> {
    let text = format!(
        "etcd = {}\nnode = \"n1\"\netcd_timeout_ms = 2000\n{extra}\n[nodes]\nn1 = \"http://127.0.0.1:1\"\n",
        etcd.endpoints_toml()
    );
    Cluster::connect(ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap()).unwrap()
}

/// Sets refs/heads/main to an id made of `n`, with a reflog record.
fn push(cluster: &Arc<Cluster>, n: u32) {
    let tx = Transaction {
        updates: vec![Update {
            name: RefName::new("refs/heads/main").unwrap(),
            change: Change::Set(Target::Object(
                ObjectId::from_hex(format!("{n:08x}").repeat(5).as_bytes()).unwrap(),
            )),
            expected: Expected::Any,
            no_deref: false,
        }],
        batch: false,
        message: Some("push".into()),
        create_reflog: true,
    };
    let options = CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Always,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    };
    let refs = cluster.refs("repo.git", ObjectFormat::Sha1);
    refs.commit(&tx, &options).unwrap();
}

#[test]
fn rounds_report_leadership_size_budgeted_expiry_compaction_and_defragmentation() {
    let recorder = Arc::new(Recorder::default());
    assert!(observe::install(recorder.clone()));
    let seen = || recorder.0.lock().unwrap().clone();
    let etcd = EtcdCluster::start(1);
    let budget = 7;
    let node = cluster(
        &etcd,
        &format!(
            "reflog_expire = \"now\"\nreflog_expire_per_round = {budget}\n\
             compaction_retention_s = 1\ndefrag_interval_s = 1"
        ),
    );
    node.create("repo.git", &NewRepository::default()).unwrap();
    let pushes = 2 * budget + 3;
    for n in 0..pushes {
        push(&node, n as u32);
    }
    std::thread::sleep(Duration::from_millis(50));

    let mut housekeeping = Housekeeping::new(node.clone(), Duration::from_secs(2));
    housekeeping.round().unwrap();
    let first = seen();
    assert_eq!(first.rounds, 1);
    assert!(first.leads);
    assert!(first.revision > pushes as i64, "{first:?}");
    assert!(first.db_size > 0 && first.in_use > 0, "{first:?}");
    assert!(first.in_use <= first.db_size, "{first:?}");
    // One budget's worth, the rest left for the next rounds.
    assert_eq!(first.expired, vec![budget]);
    assert!(first.compacted.is_empty(), "nothing is a second old yet");

    std::thread::sleep(Duration::from_millis(1100));
    housekeeping.round().unwrap();
    housekeeping.round().unwrap();
    let later = seen();
    assert_eq!(later.rounds, 3);
    assert_eq!(later.expired, vec![budget, budget, pushes - 2 * budget]);
    assert_eq!(later.compacted.len(), 1, "{later:?}");
    assert!(later.compacted[0] >= first.revision, "{later:?}");
    assert_eq!(later.compacted[0], housekeeping.report().compacted);
    assert_eq!((later.defrags, later.defrag_failures), (1, 0), "{later:?}");
    assert!(later.revision > first.revision, "{later:?}");

    // A node that does not lead still reports etcd's state.
    let other = cluster(&etcd, "");
    let mut follower = Housekeeping::new(other, Duration::from_secs(2));
    follower.round().unwrap();
    let following = seen();
    assert!(!following.leads);
    assert!(following.db_size > 0);
    assert_eq!(following.expired, later.expired);
}

//! Creating, deleting, renaming and listing repositories against a real
//! etcd: each is one transaction over the record and the repository's
//! keys, names are checked, and the records' watch reports every change.

mod support;

use refstore_cluster::lifecycle::{LifecycleError, NewRepository};
use refstore_cluster::records::{RefFormat, State};
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_refs::value::Target;
use refstore_refs::{Backend, ObjectFormat, RefName};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::etcd::EtcdCluster;

fn cluster(etcd: &EtcdCluster) -> Arc<Cluster> {
    let text = format!(
        "etcd = {}\nnode = \"n1\"\netcd_timeout_ms = 2000\n[nodes]\nn1 = \"http://127.0.0.1:1\"\n",
        etcd.endpoints_toml()
    );
    Cluster::connect(ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap()).unwrap()
}

/// Writes a key behind the cluster's back.
fn put(etcd: &EtcdCluster, key: &[u8], value: &[u8]) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect(etcd.endpoints(), None)
            .await
            .unwrap();
        client.put(key, value, None).await.unwrap();
    });
}

fn head(cluster: &Arc<Cluster>, name: &str) -> Option<Target> {
    let refs = cluster.refs(name, ObjectFormat::Sha1);
    refs.read(&RefName::new("HEAD").unwrap())
        .unwrap()
        .map(|r| r.target)
}

#[test]
fn create_delete_rename_and_list() {
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd);
    let watch = c.watch_records(c.records().unwrap().1);
    let new = NewRepository {
        initial_branch: "main".into(),
        ..NewRepository::default()
    };
    let a = c.create("a.git", &new).unwrap();
    assert_eq!(a.head, "refs/heads/main");
    assert_eq!(
        head(&c, "a.git"),
        Some(Target::Symbolic(RefName::new("refs/heads/main").unwrap()))
    );
    assert!(matches!(
        c.create("a.git", &new),
        Err(LifecycleError::Exists(_))
    ));
    let sha256 = NewRepository {
        object_format: ObjectFormat::Sha256,
        ref_format: RefFormat::Reftable,
        initial_branch: "trunk".into(),
    };
    c.create("team/b.git", &sha256).unwrap();
    let listed: Vec<(String, ObjectFormat, RefFormat)> = c
        .list()
        .unwrap()
        .into_iter()
        .map(|(n, r)| (n, r.object_format, r.ref_format))
        .collect();
    assert_eq!(
        listed,
        [
            ("a.git".into(), ObjectFormat::Sha1, RefFormat::Files),
            (
                "team/b.git".into(),
                ObjectFormat::Sha256,
                RefFormat::Reftable
            ),
        ]
    );

    // A rename moves the keys and the incarnation, and leaves a tombstone.
    let moved = c.rename("a.git", "c.git").unwrap();
    assert_eq!(moved.id, a.id);
    assert_eq!(head(&c, "a.git"), None);
    assert!(head(&c, "c.git").is_some());
    assert_eq!(
        c.current_record("a.git").unwrap().unwrap().state,
        State::Deleted
    );
    assert!(matches!(
        c.rename("c.git", "team/b.git"),
        Err(LifecycleError::Exists(_))
    ));
    assert!(matches!(
        c.rename("a.git", "d.git"),
        Err(LifecycleError::NotFound(_))
    ));

    // Deleted, then created again: a new incarnation.
    let gone = c.delete("c.git").unwrap();
    assert_eq!(gone.state, State::Deleted);
    assert_eq!(head(&c, "c.git"), None);
    assert!(matches!(
        c.delete("c.git"),
        Err(LifecycleError::NotFound(_))
    ));
    let again = c.create("c.git", &new).unwrap();
    assert_ne!(again.id, a.id);
    let names: Vec<String> = c.list().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["c.git", "team/b.git"]);

    // The watch saw every change, in order (a rename's two records in
    // one transaction).
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let batch = watch
            .recv_timeout(Duration::from_secs(10))
            .expect("a change of the records");
        seen.extend(
            batch
                .into_iter()
                .map(|(name, r)| (name, r.map(|r| r.state))),
        );
    }
    let live = Some(State::Live);
    let deleted = Some(State::Deleted);
    let expected: Vec<(String, Option<State>)> = vec![
        ("a.git".into(), live),
        ("team/b.git".into(), live),
        ("c.git".into(), live),
        ("a.git".into(), deleted),
        ("c.git".into(), deleted),
        ("c.git".into(), live),
    ];
    assert_eq!(seen, expected);
}

#[test]
fn hostile_names_change_nothing() {
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd);
    c.create("keep.git", &NewRepository::default()).unwrap();
    let before = c.records().unwrap().0;
    for (name, valid) in refstore_testsupport::names::repository_names() {
        assert_eq!(
            refstore_cluster::records::check_name(&name).is_ok(),
            valid,
            "{name:?}"
        );
        if valid {
            continue;
        }
        let refused = |r: Result<_, LifecycleError>| matches!(r, Err(LifecycleError::BadName(_)));
        assert!(
            refused(c.create(&name, &NewRepository::default())),
            "{name:?}"
        );
        assert!(refused(c.delete(&name)), "{name:?}");
        assert!(refused(c.rename("keep.git", &name)), "{name:?}");
        assert!(refused(c.rename(&name, "other.git")), "{name:?}");
    }
    assert_eq!(c.records().unwrap().0, before);
}

#[test]
fn a_repository_imported_before_records_gets_its_record_alone() {
    use refstore_cluster::import::{record_only, ImportError};
    use refstore_refs::files::transaction::CommitOptions;
    use refstore_refs::transaction::{Change, Expected, Transaction, Update};
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd);
    let refs = c.refs("old.git", ObjectFormat::Sha1);
    let record = || {
        c.new_record(
            ObjectFormat::Sha1,
            RefFormat::Files,
            "refs/heads/main".into(),
        )
    };
    // Without refs in etcd there is nothing to record.
    assert!(matches!(
        record_only(&refs, "old.git", record()),
        Err(ImportError::NoRecordToAdd(_))
    ));
    let tx = Transaction {
        updates: vec![Update {
            name: RefName::new("HEAD").unwrap(),
            change: Change::Set(Target::Symbolic(RefName::new("refs/heads/main").unwrap())),
            expected: Expected::Any,
            no_deref: true,
        }],
        ..Transaction::default()
    };
    let options = CommitOptions {
        flush: refstore_fs::flush::FlushMethod::None,
        lock_timeout: Duration::from_millis(100),
        packed_refs_timeout: Duration::ZERO,
        log_updates: refstore_fs::config::LogRefUpdates::Never,
        signature: String::new(),
    };
    refs.commit(&tx, &options).unwrap();
    assert!(c.list().unwrap().is_empty());
    record_only(&refs, "old.git", record()).unwrap();
    let names: Vec<String> = c.list().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["old.git"]);
    assert!(head(&c, "old.git").is_some(), "the refs stay");
    // Once recorded, not again.
    assert!(matches!(
        record_only(&refs, "old.git", record()),
        Err(ImportError::NoRecordToAdd(_))
    ));
}

#[test]
fn keys_left_under_a_tombstone_are_cleared_and_keys_without_a_record_kept() {
    use refstore_cluster::keys::RepoKeys;
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd);
    c.create("x.git", &NewRepository::default()).unwrap();
    c.delete("x.git").unwrap();
    // A push planned before the deletion and committed after it.
    let stray = RepoKeys::new("/refstore/", "x.git").reference(b"refs/heads/late");
    put(&etcd, &stray, &[b'1'; 40]);
    let again = c.create("x.git", &NewRepository::default()).unwrap();
    assert!(again.is_live());
    let refs = c.refs("x.git", ObjectFormat::Sha1);
    assert!(refs
        .read(&RefName::new("refs/heads/late").unwrap())
        .unwrap()
        .is_none());

    // Refs without any record: a repository imported before records.
    let legacy = RepoKeys::new("/refstore/", "legacy.git").reference(b"HEAD");
    put(&etcd, &legacy, b"ref: refs/heads/main");
    let refused = c.create("legacy.git", &NewRepository::default());
    assert!(
        matches!(&refused, Err(LifecycleError::Invalid(m)) if m.contains("--record-only")),
        "{refused:?}"
    );
    assert!(head(&c, "legacy.git").is_some());
}

/// A push whose repository is deleted, renamed, or deleted and created
/// again while it is in flight (its handle opened before) is refused, and
/// its ref lands nowhere: not under the old name, the new name, or the
/// new incarnation.
#[test]
fn a_push_in_flight_when_its_repository_goes_away_is_refused() {
    use refstore_fs::config::LogRefUpdates;
    use refstore_fs::flush::FlushMethod;
    use refstore_refs::files::transaction::CommitOptions;
    use refstore_refs::transaction::{Change, Expected, Transaction, Update};
    use refstore_refs::{CommitError, ObjectId};

    let options = CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    };
    let create = |name: &str, at: u8| Transaction {
        updates: vec![Update {
            name: RefName::new(name).unwrap(),
            change: Change::Set(Target::Object(
                ObjectId::from_hex(format!("{at:02x}").repeat(20).as_bytes()).unwrap(),
            )),
            expected: Expected::Absent,
            no_deref: false,
        }],
        batch: false,
        message: Some("push".into()),
        create_reflog: false,
    };
    let has = |c: &Arc<Cluster>, repo: &str, name: &str| {
        c.refs(repo, ObjectFormat::Sha1)
            .read(&RefName::new(name).unwrap())
            .unwrap()
            .is_some()
    };

    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd);
    let new = NewRepository::default();
    for (n, way) in ["delete", "rename", "recreate"].into_iter().enumerate() {
        let repo = format!("r{n}.git");
        let moved = format!("moved{n}.git");
        let record = c.create(&repo, &new).unwrap();
        let push = c.refs(&repo, ObjectFormat::Sha1);
        push.pin_incarnation(record.id);
        push.commit(&create("refs/heads/before", 1), &options)
            .unwrap();
        match way {
            "delete" => {
                c.delete(&repo).unwrap();
            }
            "rename" => {
                c.rename(&repo, &moved).unwrap();
            }
            _ => {
                c.delete(&repo).unwrap();
                c.create(&repo, &new).unwrap();
            }
        }
        let late = push.commit(&create("refs/heads/late", 2), &options);
        match late {
            Err(CommitError::Unavailable(message)) => assert!(
                message.contains("was deleted or renamed while the push was in flight"),
                "{way}: {message}"
            ),
            other => panic!("{way}: a push into a repository gone was not refused: {other:?}"),
        }
        assert!(!has(&c, &repo, "refs/heads/late"), "{way}");
        assert!(!has(&c, &moved, "refs/heads/late"), "{way}");
        assert_eq!(has(&c, &moved, "refs/heads/before"), way == "rename");
        // A handle opened now pushes into the repository the name holds.
        if way == "recreate" {
            c.refs(&repo, ObjectFormat::Sha1)
                .commit(&create("refs/heads/after", 3), &options)
                .unwrap();
            assert!(has(&c, &repo, "refs/heads/after"));
        }
    }
}

//! The etcd ref store against a real etcd: updates, compare-and-swap,
//! atomic and batch transactions, symbolic refs, listings, peeled values,
//! several nodes at once, and etcd losing members.

mod support;

use refstore_cluster::lifecycle::NewRepository;
use refstore_cluster::{Cluster, ClusterConfig, EtcdBackend};
use refstore_refs::transaction::{Change, Expected, Rejection, Transaction, Update};
use refstore_refs::value::{Peeled, Target};
use refstore_refs::{Backend, CommitError, ObjectFormat, ObjectId, PeelObjects, RefName};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::etcd::EtcdCluster;

fn cluster(etcd: &EtcdCluster, node: &str) -> Arc<Cluster> {
    cluster_with(etcd, node, "")
}

/// [`cluster`], with `extra` lines in the cluster file.
fn cluster_with(etcd: &EtcdCluster, node: &str, extra: &str) -> Arc<Cluster> {
    let text = format!(
        "etcd = {}\nnode = \"{node}\"\netcd_timeout_ms = 2000\n{extra}\n[nodes]\nn1 = \"http://127.0.0.1:1\"\nn2 = \"http://127.0.0.1:2\"\nn3 = \"http://127.0.0.1:3\"\n",
        etcd.endpoints_toml()
    );
    let config = ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap();
    Cluster::connect(config).unwrap()
}

/// Node n1's view of `repo.git`, the repository most tests use.
fn repo(etcd: &EtcdCluster) -> Arc<EtcdBackend> {
    cluster(etcd, "n1").refs("repo.git", ObjectFormat::Sha1)
}

fn id(n: u8) -> ObjectId {
    ObjectId::from_hex(format!("{n:02x}").repeat(20).as_bytes()).unwrap()
}

fn name(n: &str) -> RefName {
    RefName::new(n).unwrap()
}

fn set(n: &str, new: Target, expected: Expected) -> Update {
    Update {
        name: name(n),
        change: Change::Set(new),
        expected,
        no_deref: false,
    }
}

fn tx(updates: Vec<Update>, batch: bool) -> Transaction {
    Transaction {
        updates,
        batch,
        message: Some("push".into()),
        create_reflog: false,
    }
}

/// A transaction creating the one ref `n` at `id(at)`.
fn create_one(n: &str, at: u8) -> Transaction {
    tx(
        vec![set(n, Target::Object(id(at)), Expected::Absent)],
        false,
    )
}

fn object(refs: &EtcdBackend, n: &str) -> Option<ObjectId> {
    refs.read(&name(n))
        .unwrap()
        .and_then(|r| r.target.object_id().copied())
}

fn names(refs: &EtcdBackend, prefix: &[u8]) -> Vec<String> {
    refs.list(prefix)
        .unwrap()
        .refs
        .iter()
        .map(|r| r.name.to_string())
        .collect()
}

fn rejection(result: Result<refstore_refs::transaction::Outcome, CommitError>) -> Rejection {
    match result {
        Err(CommitError::Rejected(r)) => r.reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn create_update_delete_and_compare_and_swap() {
    let etcd = EtcdCluster::start(1);
    let refs = repo(&etcd);
    let o = support::commit_options();
    let main = "refs/heads/main";
    let create = create_one(main, 1);
    refs.commit(&create, &o).unwrap();
    assert_eq!(object(&refs, main), Some(id(1)));
    assert_eq!(
        rejection(refs.commit(&create, &o)),
        Rejection::AlreadyExists
    );

    let stale = tx(
        vec![set(main, Target::Object(id(3)), Expected::object(id(2)))],
        false,
    );
    assert_eq!(
        rejection(refs.commit(&stale, &o)),
        Rejection::IncorrectOldValue {
            actual: Target::Object(id(1)),
            expected: Target::Object(id(2)),
        }
    );
    let update = tx(
        vec![set(main, Target::Object(id(2)), Expected::object(id(1)))],
        false,
    );
    refs.commit(&update, &o).unwrap();
    assert_eq!(object(&refs, main), Some(id(2)));

    let delete = tx(
        vec![Update {
            name: name(main),
            change: Change::Delete,
            expected: Expected::object(id(2)),
            no_deref: false,
        }],
        false,
    );
    refs.commit(&delete, &o).unwrap();
    assert_eq!(object(&refs, main), None);
    assert!(names(&refs, b"refs/").is_empty());
    assert_eq!(rejection(refs.commit(&delete, &o)), Rejection::Missing);
}

#[test]
fn atomic_transactions_apply_all_or_nothing_and_batches_per_ref() {
    let etcd = EtcdCluster::start(1);
    let refs = repo(&etcd);
    let o = support::commit_options();
    let seed = create_one("refs/heads/a", 1);
    refs.commit(&seed, &o).unwrap();
    let updates = vec![
        set("refs/heads/b", Target::Object(id(2)), Expected::Absent),
        set(
            "refs/heads/a",
            Target::Object(id(3)),
            Expected::object(id(9)),
        ),
        set("refs/heads/c", Target::Object(id(4)), Expected::Absent),
    ];
    let atomic = tx(updates.clone(), false);
    assert!(matches!(
        rejection(refs.commit(&atomic, &o)),
        Rejection::IncorrectOldValue { .. }
    ));
    assert_eq!(names(&refs, b"refs/"), ["refs/heads/a"]);
    assert_eq!(object(&refs, "refs/heads/a"), Some(id(1)));

    let outcome = refs.commit(&tx(updates, true), &o).unwrap();
    assert_eq!(outcome.applied, 2);
    assert_eq!(outcome.rejected.len(), 1);
    assert_eq!(outcome.rejected[0].name, name("refs/heads/a"));
    assert_eq!(
        names(&refs, b"refs/"),
        ["refs/heads/a", "refs/heads/b", "refs/heads/c"]
    );
    assert_eq!(object(&refs, "refs/heads/a"), Some(id(1)));
}

#[test]
fn symbolic_refs_are_followed_and_set_in_place() {
    let etcd = EtcdCluster::start(1);
    let refs = repo(&etcd);
    let o = support::commit_options();
    let head = Update {
        name: name("HEAD"),
        change: Change::Set(Target::Symbolic(name("refs/heads/main"))),
        expected: Expected::Any,
        no_deref: true,
    };
    refs.commit(&tx(vec![head], false), &o).unwrap();
    // An unborn branch: HEAD resolves to a name without an id.
    let resolved = refs.resolve(&name("HEAD")).unwrap().unwrap();
    assert_eq!(
        (resolved.name, resolved.id),
        (name("refs/heads/main"), None)
    );

    let through_head = create_one("HEAD", 5);
    refs.commit(&through_head, &o).unwrap();
    assert_eq!(object(&refs, "refs/heads/main"), Some(id(5)));
    let stored = refs.read(&name("HEAD")).unwrap().unwrap();
    assert_eq!(stored.target, Target::Symbolic(name("refs/heads/main")));
    assert_eq!(
        refs.resolve(&name("HEAD")).unwrap().unwrap().id,
        Some(id(5))
    );
    // Root refs are not listed.
    assert_eq!(names(&refs, b"refs/"), ["refs/heads/main"]);

    let twice = tx(
        vec![
            set("HEAD", Target::Object(id(6)), Expected::Any),
            set("refs/heads/main", Target::Object(id(7)), Expected::Any),
        ],
        false,
    );
    assert_eq!(
        rejection(refs.commit(&twice, &o)),
        Rejection::DuplicateViaSymref {
            symref: name("HEAD")
        }
    );
}

#[derive(Debug)]
struct Peeler;

impl PeelObjects for Peeler {
    fn peel(&self, id_: &ObjectId) -> Option<ObjectId> {
        (*id_ == id(7)).then(|| id(8))
    }
}

#[test]
fn listings_by_prefix_with_peeled_values_and_name_conflicts() {
    let etcd = EtcdCluster::start(1);
    let refs = repo(&etcd);
    refs.set_peeler(Arc::new(Peeler));
    let o = support::commit_options();
    let create = tx(
        vec![
            set("refs/tags/v1", Target::Object(id(7)), Expected::Absent),
            set("refs/heads/b", Target::Object(id(2)), Expected::Absent),
            set("refs/heads/a", Target::Object(id(1)), Expected::Absent),
        ],
        false,
    );
    refs.commit(&create, &o).unwrap();
    assert_eq!(
        names(&refs, b"refs/heads/"),
        ["refs/heads/a", "refs/heads/b"]
    );
    assert_eq!(
        names(&refs, b"refs/"),
        ["refs/heads/a", "refs/heads/b", "refs/tags/v1"]
    );
    let mut peeled = Vec::new();
    refs.visit(b"refs/", &mut |view| {
        peeled.push((String::from_utf8_lossy(view.name).into_owned(), view.peeled));
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(
        peeled,
        [
            ("refs/heads/a".to_owned(), Peeled::Unknown),
            ("refs/heads/b".to_owned(), Peeled::Unknown),
            ("refs/tags/v1".to_owned(), Peeled::Tag(id(8))),
        ]
    );
    // A ref named like a directory of an existing one, and the reverse.
    let below = create_one("refs/heads/a/x", 3);
    assert_eq!(
        rejection(refs.commit(&below, &o)),
        Rejection::NameConflict {
            existing: name("refs/heads/a")
        }
    );
    let above = create_one("refs/tags", 3);
    assert_eq!(
        rejection(refs.commit(&above, &o)),
        Rejection::NameConflict {
            existing: name("refs/tags/v1")
        }
    );
    let both = tx(
        vec![
            set("refs/heads/c", Target::Object(id(3)), Expected::Absent),
            set("refs/heads/c/d", Target::Object(id(3)), Expected::Absent),
        ],
        false,
    );
    assert!(matches!(
        rejection(refs.commit(&both, &o)),
        Rejection::ConflictInTransaction { .. }
    ));
    // Another repository's refs are its own.
    let other = cluster(&etcd, "n1").refs("other.git", ObjectFormat::Sha1);
    assert!(names(&other, b"refs/").is_empty());
}

#[test]
fn a_write_through_one_node_is_listed_by_another_at_once() {
    let etcd = EtcdCluster::start(1);
    let writer = cluster(&etcd, "n1").refs("repo.git", ObjectFormat::Sha1);
    let reader = cluster(&etcd, "n2").refs("repo.git", ObjectFormat::Sha1);
    let o = support::commit_options();
    // The reader's copy and its watch exist before the writes.
    assert!(names(&reader, b"refs/").is_empty());
    for n in 1..=40u8 {
        let update = tx(
            vec![set(
                "refs/heads/main",
                Target::Object(id(n)),
                if n == 1 {
                    Expected::Absent
                } else {
                    Expected::object(id(n - 1))
                },
            )],
            false,
        );
        writer.commit(&update, &o).unwrap();
        let listed = reader.list(b"refs/heads/").unwrap().refs;
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].target, Target::Object(id(n)), "after write {n}");
    }
}

#[test]
fn racing_compare_and_swaps_through_different_nodes_have_one_winner() {
    let etcd = EtcdCluster::start(1);
    let nodes: Vec<Arc<EtcdBackend>> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| cluster(&etcd, n).refs("repo.git", ObjectFormat::Sha1))
        .collect();
    let o = support::commit_options();
    let seed = create_one("refs/heads/main", 250);
    nodes[0].commit(&seed, &o).unwrap();
    let mut current = id(250);
    for round in 0..20u8 {
        let results: Vec<(u8, bool)> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..6u8)
                .map(|racer| {
                    let refs = nodes[usize::from(racer) % nodes.len()].clone();
                    let o = o.clone();
                    let new = id(10 + round * 6 + racer);
                    s.spawn(move || {
                        let update = tx(
                            vec![set(
                                "refs/heads/main",
                                Target::Object(new),
                                Expected::object(current),
                            )],
                            false,
                        );
                        match refs.commit(&update, &o) {
                            Ok(_) => (racer, true),
                            Err(CommitError::Rejected(_)) => (racer, false),
                            Err(e) => panic!("{e}"),
                        }
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners: Vec<u8> = results.iter().filter(|r| r.1).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        current = id(10 + round * 6 + winners[0]);
        for refs in &nodes {
            assert_eq!(object(refs, "refs/heads/main"), Some(current));
        }
    }
}

#[test]
fn without_quorum_writes_and_reads_are_refused_unless_stale_reads_are_allowed() {
    let mut etcd = EtcdCluster::start(3);
    let refs = repo(&etcd);
    let lenient = cluster_with(&etcd, "n2", "stale_reads = true\nmax_staleness_ms = 60000")
        .refs("repo.git", ObjectFormat::Sha1);
    let o = support::commit_options();
    let write = |n: u8| create_one(&format!("refs/heads/b{n}"), n);
    refs.commit(&write(1), &o).unwrap();
    assert_eq!(names(&refs, b"refs/"), ["refs/heads/b1"]);

    etcd.kill_member(0);
    refs.commit(&write(2), &o).unwrap();
    assert_eq!(names(&refs, b"refs/"), ["refs/heads/b1", "refs/heads/b2"]);
    // The lenient node's copy is confirmed current here.
    assert_eq!(
        names(&lenient, b"refs/"),
        ["refs/heads/b1", "refs/heads/b2"]
    );

    etcd.kill_member(1);
    let started = Instant::now();
    let error = refs.commit(&write(3), &o).unwrap_err();
    let took = started.elapsed();
    let message = error.to_string();
    assert!(matches!(error, CommitError::Unavailable(_)), "{error:?}");
    assert!(
        message.starts_with("cluster: etcd has no quorum or cannot be reached ("),
        "{message}"
    );
    // A member that had not noticed the loss yet may have taken the
    // update into its log: then its fate is unknown until the quorum is
    // back, and the message says so.
    assert!(
        message.ends_with("; push refused")
            || message.ends_with("; the update may or may not have been applied"),
        "{message}"
    );
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
    // Reads are refused within the etcd bound, rather than answered from
    // a copy that nothing confirms current...
    let started = Instant::now();
    let listed = refs.list(b"refs/").unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        listed.starts_with("cluster: etcd has no quorum or cannot be reached (")
            && listed.ends_with(
                "this node does not answer from its copy of the refs, which may be stale"
            ),
        "{listed}"
    );
    assert!(refs.read(&name("refs/heads/b2")).is_err());
    // ...except where stale reads are allowed: from the copy.
    assert_eq!(
        names(&lenient, b"refs/"),
        ["refs/heads/b1", "refs/heads/b2"]
    );
    assert_eq!(object(&lenient, "refs/heads/b2"), Some(id(2)));

    // Back to a quorum: writes go on without anything done by hand.
    etcd.start_member(1);
    etcd.wait_healthy();
    let mut attempts = 0;
    loop {
        match refs.commit(&write(4), &o) {
            Ok(_) => break,
            Err(CommitError::Unavailable(_)) if attempts < 100 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let listed = names(&refs, b"refs/");
    assert!(listed.contains(&"refs/heads/b4".to_owned()), "{listed:?}");
}

#[test]
fn import_copies_refs_once_and_force_replaces_them() {
    use refstore_cluster::import::{import, ImportError};
    use refstore_cluster::records::RefFormat;
    let etcd = EtcdCluster::start(1);
    let node = cluster(&etcd, "n1");
    let source = node.refs("source.git", ObjectFormat::Sha1);
    let o = support::commit_options();
    let mut updates: Vec<Update> = (0..250u16)
        .map(|n| {
            set(
                &format!("refs/heads/b{n:03}"),
                Target::Object(id((n % 200) as u8 + 1)),
                Expected::Absent,
            )
        })
        .collect();
    updates.push(Update {
        name: name("HEAD"),
        change: Change::Set(Target::Symbolic(name("refs/heads/b000"))),
        expected: Expected::Any,
        no_deref: true,
    });
    source.commit(&tx(updates, false), &o).unwrap();

    let target = node.refs("target.git", ObjectFormat::Sha1);
    let record = || {
        node.new_record(
            ObjectFormat::Sha1,
            RefFormat::Files,
            "refs/heads/b000".into(),
        )
    };
    assert_eq!(
        import(&target, source.as_ref(), "target.git", record(), false).unwrap(),
        251
    );
    let imported = node.current_record("target.git").unwrap().unwrap();
    assert!(imported.is_live());
    assert_eq!(imported.head, "refs/heads/b000");
    assert_eq!(names(&target, b"refs/"), names(&source, b"refs/"));
    assert_eq!(
        target.resolve(&name("HEAD")).unwrap().unwrap().name,
        name("refs/heads/b000")
    );
    assert!(matches!(
        import(&target, source.as_ref(), "target.git", record(), false),
        Err(ImportError::AlreadyThere(_))
    ));

    // Forced, the target's refs become the source's, and no more.
    let extra = create_one("refs/heads/zzz", 9);
    target.commit(&extra, &o).unwrap();
    assert_eq!(
        import(&target, source.as_ref(), "target.git", record(), true).unwrap(),
        251
    );
    assert_eq!(names(&target, b"refs/"), names(&source, b"refs/"));
    // The repository is the same one: the nodes' copies stay theirs.
    assert_eq!(
        node.current_record("target.git").unwrap().unwrap().id,
        imported.id
    );
}

#[test]
fn a_prepared_transaction_reports_rejections_and_commits_later() {
    use std::borrow::Cow;
    let etcd = EtcdCluster::start(1);
    let refs = repo(&etcd);
    let o = support::commit_options();
    let seed = create_one("refs/heads/a", 1);
    refs.commit(&seed, &o).unwrap();
    let batch = tx(
        vec![
            set("refs/heads/a", Target::Object(id(2)), Expected::Absent),
            set("refs/heads/b", Target::Object(id(3)), Expected::Absent),
        ],
        true,
    );
    let prepared = refs.prepare(Cow::Borrowed(&batch), &o).unwrap();
    assert_eq!(prepared.rejected().len(), 1);
    assert_eq!(prepared.rejected()[0].reason, Rejection::AlreadyExists);
    // Nothing is visible before the commit.
    assert_eq!(object(&refs, "refs/heads/b"), None);
    let outcome = prepared.commit().unwrap();
    assert_eq!(outcome.applied, 1);
    assert_eq!(object(&refs, "refs/heads/b"), Some(id(3)));

    let aborted = refs
        .prepare(Cow::Owned(create_one("refs/heads/c", 4)), &o)
        .unwrap();
    aborted.abort().unwrap();
    assert_eq!(object(&refs, "refs/heads/c"), None);
}

/// How many requests of `method` (`Range`: reads; `Txn`: transactions)
/// etcd answered, from its metrics: the count behind a claim that
/// something reads nothing, or once.
fn requests(etcd: &EtcdCluster, method: &str) -> u64 {
    use std::io::{Read, Write};
    let endpoint = etcd.endpoints()[0].clone();
    let address = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.lines()
        .filter(|line| {
            line.starts_with("grpc_server_handled_total{")
                && line.contains(&format!("grpc_method=\"{method}\""))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn main_of(refs: &EtcdBackend) -> Option<ObjectId> {
    let listed = refs.list(b"refs/heads/main").unwrap().refs;
    listed
        .iter()
        .find(|r| r.name.as_bytes() == b"refs/heads/main")
        .and_then(|r| r.target.object_id().copied())
}

#[test]
fn a_request_lists_one_moment_and_then_what_it_committed() {
    let etcd = EtcdCluster::start(1);
    let o = support::commit_options();
    let node = cluster(&etcd, "n2");
    // A request lists the refs of a repository the cluster holds.
    node.create("repo.git", &NewRepository::default()).unwrap();
    let writer = repo(&etcd);
    writer
        .commit(&create_one("refs/heads/main", 1), &o)
        .unwrap();
    writer
        .commit(
            &tx(
                vec![set(
                    "HEAD",
                    Target::Symbolic(name("refs/heads/main")),
                    Expected::Any,
                )],
                false,
            ),
            &o,
        )
        .unwrap();

    let request = node.request_refs("repo.git", ObjectFormat::Sha1, Instant::now());
    assert_eq!(main_of(&request), Some(id(1)));
    let advance = |from: u8, to: u8| {
        tx(
            vec![set(
                "refs/heads/main",
                Target::Object(id(to)),
                Expected::object(id(from)),
            )],
            false,
        )
    };
    writer.commit(&advance(1, 2), &o).unwrap();
    // Its later listings and HEAD answer the moment of its first one.
    assert_eq!(main_of(&request), Some(id(1)));
    let head = request.resolve(&name("HEAD")).unwrap().unwrap();
    assert_eq!(head.id, Some(id(1)));
    // A request begun after the push was acknowledged lists it.
    let next = node.request_refs("repo.git", ObjectFormat::Sha1, Instant::now());
    assert_eq!(main_of(&next), Some(id(2)));
    // After its own transaction a request lists what it committed, and
    // what others committed meanwhile.
    request
        .commit(&create_one("refs/heads/topic", 3), &o)
        .unwrap();
    assert_eq!(
        names(&request, b"refs/heads/"),
        ["refs/heads/main", "refs/heads/topic"]
    );
    assert_eq!(main_of(&request), Some(id(2)));
    // A handle of no request confirms every listing anew.
    let plain = cluster(&etcd, "n3").refs("repo.git", ObjectFormat::Sha1);
    assert_eq!(main_of(&plain), Some(id(2)));
    writer.commit(&advance(2, 4), &o).unwrap();
    assert_eq!(main_of(&plain), Some(id(4)));
}

#[test]
fn the_read_that_admits_a_request_confirms_its_refs() {
    let etcd = EtcdCluster::start(1);
    let o = support::commit_options();
    let node = cluster(&etcd, "n2");
    node.create("repo.git", &NewRepository::default()).unwrap();
    let writer = repo(&etcd);
    writer
        .commit(&create_one("refs/heads/main", 1), &o)
        .unwrap();
    // The node's copy exists (and is watched) before the request.
    let warm = node.request_refs("repo.git", ObjectFormat::Sha1, Instant::now());
    assert_eq!(main_of(&warm), Some(id(1)));

    let began = Instant::now();
    // The admitting read (one transaction) reads the stamp with the record.
    assert!(node.current_record("repo.git").unwrap().unwrap().is_live());
    let before = (requests(&etcd, "Range"), requests(&etcd, "Txn"));
    let request = node.request_refs("repo.git", ObjectFormat::Sha1, began);
    assert_eq!(main_of(&request), Some(id(1)));
    assert_eq!(
        (requests(&etcd, "Range"), requests(&etcd, "Txn")),
        before,
        "a request admitted by a read sent after it began read its refs again"
    );

    // A request that began after that read reads the record and the stamp
    // itself, in one transaction, and sees the push acknowledged before it
    // began.
    writer
        .commit(
            &tx(
                vec![set(
                    "refs/heads/main",
                    Target::Object(id(2)),
                    Expected::object(id(1)),
                )],
                false,
            ),
            &o,
        )
        .unwrap();
    let before = (requests(&etcd, "Range"), requests(&etcd, "Txn"));
    let later = node.request_refs("repo.git", ObjectFormat::Sha1, Instant::now());
    assert_eq!(main_of(&later), Some(id(2)));
    assert_eq!(
        (requests(&etcd, "Range"), requests(&etcd, "Txn")),
        (before.0, before.1 + 1)
    );
}

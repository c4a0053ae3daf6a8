//! What a node may answer by a record or a copy it confirmed moments ago
//! ([`refstore_cluster::cluster::RECENT`]), against a real etcd, over
//! generated histories of pushes, deletions and creations made through
//! another node:
//!
//! - a request admitted by a recently confirmed record lists or reads
//!   exactly the refs as of now, or is refused as one for a repository
//!   the cluster does not hold when its incarnation is gone: its first
//!   read confirms the record again, even when the node's own listing
//!   (outside requests) confirmed its copy of the refs since;
//! - a request's recent view ([`refstore_refs::Backend::recent`]) lists
//!   the refs of some moment within the last `RECENT`, never older.

mod support;

use proptest::prelude::*;
use refstore_cluster::cluster::RECENT;
use refstore_cluster::lifecycle::NewRepository;
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{Backend, ObjectFormat, ObjectId, ReadError, RefName};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use support::etcd::EtcdCluster;

fn node(etcd: &EtcdCluster, name: &str) -> Arc<Cluster> {
    let text = format!(
        "etcd = {}\nnode = \"{name}\"\netcd_timeout_ms = 2000\n[nodes]\n{name} = \"http://127.0.0.1:1\"\n",
        etcd.endpoints_toml()
    );
    Cluster::connect(ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap()).unwrap()
}

/// One etcd for every generated history; each history has a repository
/// name of its own.
fn etcd() -> &'static EtcdCluster {
    static ETCD: OnceLock<EtcdCluster> = OnceLock::new();
    ETCD.get_or_init(|| EtcdCluster::start(1))
}

/// What another node does, or what the node under test is asked.
#[derive(Debug, Clone)]
enum Step {
    /// Another node sets `refs/heads/b<branch>` to an id made of `value`.
    Push { branch: u8, value: u8 },
    /// Another node deletes the repository (if the cluster holds it).
    Delete,
    /// Another node creates it (if the cluster does not hold it).
    Create,
    /// A client request reaches the node under test and lists the refs;
    /// with `background`, the node lists them for itself (as its
    /// catch-up does, outside any request) after admitting the request.
    List { background: bool },
    /// The same, listing through the request's recent view.
    ListRecent,
    /// A client request reaches the node under test and reads
    /// `refs/heads/b<branch>` alone; `background` as for `List`.
    Read { branch: u8, background: bool },
    /// Time passes beyond what a recent confirmation covers.
    Wait,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..3, 1u8..250).prop_map(|(branch, value)| Step::Push { branch, value }),
        2 => Just(Step::Delete),
        2 => Just(Step::Create),
        6 => any::<bool>().prop_map(|background| Step::List { background }),
        4 => Just(Step::ListRecent),
        4 => (0u8..3, any::<bool>()).prop_map(|(branch, background)| Step::Read { branch, background }),
        1 => Just(Step::Wait),
    ]
}

/// The repository as the cluster holds it: its incarnation and refs below
/// `refs/`, or `None` when it is not held.
type State = Option<(String, BTreeMap<String, ObjectId>)>;

/// The states the repository went through, each with the moment the step
/// making it was acknowledged: the state before it held until then at the
/// latest.
struct History {
    states: Vec<(Instant, State)>,
}

impl History {
    fn now(&self) -> &State {
        &self.states.last().unwrap().1
    }

    fn push(&mut self, state: State) {
        self.states.push((Instant::now(), state));
    }

    /// The refs of every state that held at some moment from `from` on.
    fn refs_since(&self, from: Instant) -> Vec<BTreeMap<String, ObjectId>> {
        let mut found = Vec::new();
        for (i, (_, state)) in self.states.iter().enumerate() {
            let ended = self
                .states
                .get(i + 1)
                .map(|(acknowledged, _)| *acknowledged);
            if ended.is_none_or(|ended| ended >= from) {
                found.push(
                    state
                        .as_ref()
                        .map(|(_, refs)| refs.clone())
                        .unwrap_or_default(),
                );
            }
        }
        found
    }
}

fn listed(refs: &dyn Backend) -> Result<BTreeMap<String, ObjectId>, ReadError> {
    let listing = refs.list(b"")?;
    Ok(listing
        .refs
        .into_iter()
        .map(|r| match r.target {
            Target::Object(id) => (String::from_utf8_lossy(r.name.as_bytes()).into_owned(), id),
            Target::Symbolic(_) => panic!("a symbolic ref below refs/: {}", r.name),
        })
        .collect())
}

/// A request reaching the node under test as a node admits it: by the
/// record a read of this node confirmed within `RECENT` when there is one
/// (and the node's copy is of its incarnation), else by reading it. The
/// handle, pinned to the admitted incarnation, or `None` if refused.
fn admit(node: &Arc<Cluster>, name: &str, copy: &mut Option<String>) -> Option<Arc<dyn Backend>> {
    let since = Instant::now();
    let record = match node.recent_record(name) {
        Some(record) if copy.as_ref() == Some(&record.id) => record,
        _ => node.current_record(name).unwrap().filter(|r| r.is_live())?,
    };
    *copy = Some(record.id.clone());
    let refs = node.request_refs(name, ObjectFormat::Sha1, since);
    refs.pin_incarnation(record.id);
    Some(refs)
}

/// The node lists the refs for itself, outside any request, as its
/// catch-up does: a read of the stamp alone, which confirms the copy but
/// not the record. Whatever it finds; only what it leaves behind matters.
fn list_outside_requests(node: &Arc<Cluster>, name: &str) {
    let _ = node.refs(name, ObjectFormat::Sha1).list(b"");
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    static NAMES: AtomicUsize = AtomicUsize::new(0);
    let name = format!("h{}.git", NAMES.fetch_add(1, Ordering::Relaxed));
    let (other, tested) = (node(etcd(), "n2"), node(etcd(), "n1"));
    let record = other.create(&name, &NewRepository::default()).unwrap();
    let mut history = History {
        states: vec![(Instant::now(), Some((record.id, BTreeMap::new())))],
    };
    // The incarnation the node under test's copy is of.
    let mut copy: Option<String> = None;
    for (at, step) in steps.iter().enumerate() {
        match step {
            Step::Push { branch, value } => {
                let Some((id, mut refs)) = history.now().clone() else {
                    continue;
                };
                let ref_name = format!("refs/heads/b{branch}");
                let oid = ObjectId::from_hex(format!("{value:02x}").repeat(20).as_bytes()).unwrap();
                let push = other.refs(&name, ObjectFormat::Sha1);
                push.pin_incarnation(id.clone());
                let tx = Transaction {
                    updates: vec![Update {
                        name: RefName::new(&ref_name).unwrap(),
                        change: Change::Set(Target::Object(oid)),
                        expected: Expected::Any,
                        no_deref: false,
                    }],
                    batch: false,
                    message: Some("push".into()),
                    create_reflog: false,
                };
                push.commit(&tx, &support::commit_options()).unwrap();
                refs.insert(ref_name, oid);
                history.push(Some((id, refs)));
            }
            Step::Delete => {
                if history.now().is_some() {
                    other.delete(&name).unwrap();
                    history.push(None);
                }
            }
            Step::Create => {
                if history.now().is_none() {
                    let record = other.create(&name, &NewRepository::default()).unwrap();
                    history.push(Some((record.id, BTreeMap::new())));
                }
            }
            Step::Wait => std::thread::sleep(RECENT + Duration::from_millis(50)),
            Step::List { background } | Step::Read { background, .. } => {
                let Some(refs) = admit(&tested, &name, &mut copy) else {
                    prop_assert!(
                        history.now().is_none(),
                        "step {at}: a held repository was refused"
                    );
                    continue;
                };
                if *background {
                    list_outside_requests(&tested, &name);
                }
                // What the request answers, and what it should, as of now.
                let (answer, expected) = match step {
                    Step::Read { branch, .. } => {
                        let ref_name = format!("refs/heads/b{branch}");
                        let read = refs.read(&RefName::new(&ref_name).unwrap());
                        let one = |refs: &BTreeMap<String, ObjectId>| {
                            refs.get_key_value(&ref_name)
                                .map(|(name, id)| (name.clone(), *id))
                                .into_iter()
                                .collect::<BTreeMap<_, _>>()
                        };
                        let answer = read.map(|found| {
                            found
                                .map(|r| match r.target {
                                    Target::Object(id) => (ref_name.clone(), id),
                                    Target::Symbolic(_) => panic!("{ref_name} is symbolic"),
                                })
                                .into_iter()
                                .collect()
                        });
                        (
                            answer,
                            history
                                .now()
                                .as_ref()
                                .map(|(id, refs)| (id.clone(), one(refs))),
                        )
                    }
                    _ => (listed(refs.as_ref()), history.now().clone()),
                };
                match (expected, answer) {
                    (Some((id, expected)), Ok(refs)) if copy.as_ref() == Some(&id) => {
                        prop_assert_eq!(&refs, &expected, "step {}: the answer is not the refs as of now", at);
                    }
                    (_, Err(ReadError::Unavailable(message))) => {
                        prop_assert!(
                            message.contains("is not in the cluster"),
                            "step {at}: {message}"
                        );
                        prop_assert!(
                            history.now().as_ref().is_none_or(|(id, _)| copy.as_ref() != Some(id)),
                            "step {at}: a request for the incarnation held was refused: {message}"
                        );
                    }
                    (now, answer) => {
                        return Err(TestCaseError::fail(format!(
                            "step {at}: a request admitted for incarnation {copy:?} answered {answer:?} \
                             while the cluster holds {now:?}"
                        )))
                    }
                }
            }
            Step::ListRecent => {
                let Some(refs) = admit(&tested, &name, &mut copy) else {
                    continue;
                };
                let began = Instant::now();
                let recent = refs.recent().expect("a request's handle has a recent view");
                match listed(recent.as_ref()) {
                    Ok(refs) => {
                        let allowed = history.refs_since(began - RECENT);
                        prop_assert!(
                            allowed.contains(&refs),
                            "step {at}: the recent view listed {refs:?}, none of {allowed:?}"
                        );
                    }
                    Err(ReadError::Unavailable(message)) => {
                        prop_assert!(
                            message.contains("is not in the cluster"),
                            "step {at}: {message}"
                        );
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("step {at}: {e}"))),
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn requests_admitted_by_recent_records_answer_as_of_now(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        run(&steps)?;
    }
}

/// How a request reads the refs first.
#[derive(Debug, Clone, Copy)]
enum FirstRead {
    List,
    /// One ref alone.
    Read,
    /// A listing, after the node listed the refs for itself (a read of
    /// the stamp alone).
    ListAfterBackground,
}

/// The case the property rests on, named: a repository deleted through
/// another node moments after this node confirmed its record. A request
/// admitted by that record is refused at its first read, however it reads.
#[test]
fn a_request_admitted_by_a_record_deleted_since_is_refused() {
    let (other, tested) = (node(etcd(), "n2"), node(etcd(), "n1"));
    for first in [
        FirstRead::List,
        FirstRead::Read,
        FirstRead::ListAfterBackground,
    ] {
        let name = format!("deleted-since-{first:?}.git");
        let name = name.as_str();
        let record = other.create(name, &NewRepository::default()).unwrap();
        let mut copy = None;
        let refs = admit(&tested, name, &mut copy).expect("a held repository is admitted");
        assert!(listed(refs.as_ref()).unwrap().is_empty());
        other.delete(name).unwrap();
        // Without the watch of the records (which a node's catalog runs),
        // the node still takes the record for live: the request is
        // admitted.
        assert_eq!(copy.as_deref(), Some(record.id.as_str()));
        let refs = admit(&tested, name, &mut copy).expect("admitted by the recent record");
        let answer = match first {
            FirstRead::List => listed(refs.as_ref()).map(|refs| format!("{refs:?}")),
            FirstRead::Read => refs
                .read(&RefName::new("refs/heads/main").unwrap())
                .map(|found| format!("{found:?}")),
            FirstRead::ListAfterBackground => {
                list_outside_requests(&tested, name);
                listed(refs.as_ref()).map(|refs| format!("{refs:?}"))
            }
        };
        match answer {
            Err(ReadError::Unavailable(message)) => {
                assert!(message.contains("is not in the cluster"), "{message}")
            }
            other => panic!("{first:?}: a request for a deleted repository answered {other:?}"),
        }
        // Created again: a request pinned to the old incarnation is
        // refused too.
        other.create(name, &NewRepository::default()).unwrap();
        let old = tested.request_refs(name, ObjectFormat::Sha1, Instant::now());
        old.pin_incarnation(record.id);
        assert!(matches!(
            listed(old.as_ref()),
            Err(ReadError::Unavailable(_))
        ));
    }
}

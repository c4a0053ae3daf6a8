//! What the interleaving explorations share: stores on a [`SimFs`], a
//! history of the operations the actors made on refs, and the independent
//! judge of that history: Porcupine's linearizability checker
//! (`interop/porcupine`), with a register per ref.
//!
//! A transaction is a compare-and-swap of each ref it names (all updates
//! name the value they expect); a read or a listing reads each ref it is
//! about, a listing reading absent the refs it does not show. The model
//! is per ref: a listing's refs are each read at some instant of the
//! listing, which is what the files format promises (it has no snapshot of
//! all refs at one instant; reftable has, and is held here to the weaker
//! promise). An acknowledged deletion that comes back, or a ref that exists
//! throughout a listing and is not in it, is a history no linearization
//! explains.

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::explore::Actor;
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use refstore_refs::backend::Backend;
use refstore_refs::files::transaction::{CommitError, CommitOptions};
use refstore_refs::files::FilesBackend;
use refstore_refs::reftable::{ReftableBackend, ReftableOptions};
use refstore_refs::transaction::{Change, Expected, Rejection, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use refstore_testsupport::porcupine::Batch;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The git directory of every explored repository.
pub const GIT_DIR: &str = "/repo/.git";

/// An object id made from a number.
pub fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

/// The ref called `refs/heads/<short>`.
pub fn branch(short: &str) -> RefName {
    RefName::new(format!("refs/heads/{short}")).unwrap()
}

/// The ref formats explored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Loose refs and `packed-refs`.
    Files,
    /// A reftable stack, compacting automatically after each transaction
    /// or not.
    Reftable {
        /// `reftable.autoCompaction`.
        auto_compaction: bool,
    },
}

/// The store of the repository at [`GIT_DIR`] on `vfs`.
pub fn open(vfs: Arc<dyn Vfs>, format: Format) -> Arc<dyn Backend> {
    match format {
        Format::Files => Arc::new(FilesBackend::new(
            vfs,
            GIT_DIR.into(),
            GIT_DIR.into(),
            ObjectFormat::Sha1,
        )),
        Format::Reftable { auto_compaction } => {
            let mut options = ReftableOptions::new(ObjectFormat::Sha1);
            options.auto_compaction = auto_compaction;
            Arc::new(ReftableBackend::new(
                vfs,
                Path::new(GIT_DIR),
                ObjectFormat::Sha1,
                options,
            ))
        }
    }
}

/// Git's default lock timeouts, durable flushes.
pub fn commit_options() -> CommitOptions {
    CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::from_millis(100),
        packed_refs_timeout: Duration::from_millis(1000),
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    }
}

/// A repository holding `loose` as loose refs and `packed` in
/// `packed-refs` (files), or all of them in a stack of one table per ref
/// (reftable); everything durable, recording started.
pub fn repository(
    format: Format,
    loose: &[(RefName, ObjectId)],
    packed: &[(RefName, ObjectId)],
) -> SimFs {
    let sim = SimFs::new();
    let git_dir = Path::new(GIT_DIR);
    sim.create_dir_all(&git_dir.join("refs/heads")).unwrap();
    sim.create_dir_all(&git_dir.join("refs/tags")).unwrap();
    let mut head = sim.create_exclusive(&git_dir.join("HEAD")).unwrap();
    head.write_all(b"ref: refs/heads/main\n").unwrap();
    drop(head);
    match format {
        Format::Files => {
            for (name, value) in loose {
                let path = git_dir.join(name.to_string());
                sim.create_dir_all(path.parent().unwrap()).unwrap();
                let mut f = sim.create_exclusive(&path).unwrap();
                f.write_all(format!("{value}\n").as_bytes()).unwrap();
            }
            let mut packed = packed.to_vec();
            packed.sort();
            let mut f = sim.create_exclusive(&git_dir.join("packed-refs")).unwrap();
            f.write_all(&refstore_refs::files::packed::write(
                packed.into_iter().map(|(n, v)| (n, v, None)),
            ))
            .unwrap();
        }
        Format::Reftable { .. } => {
            sim.create_dir_all(&git_dir.join("reftable")).unwrap();
            let store = open(
                Arc::new(sim.clone()),
                Format::Reftable {
                    auto_compaction: false,
                },
            );
            for (name, value) in loose.iter().chain(packed) {
                let tx = transaction(&targets(&[(name.clone(), None, Some(*value))]));
                store.commit(&tx, &commit_options()).unwrap();
            }
        }
    }
    sim.sync_all();
    sim.start_recording();
    sim
}

/// A transaction of compare-and-swaps: each ref from its expected value
/// (`None`: absent) to its new one (`None`: deleted), symbolic refs
/// themselves rather than the refs they point to.
pub fn transaction(updates: &[Swap]) -> Transaction {
    Transaction {
        updates: updates
            .iter()
            .map(|(name, old, new)| Update {
                name: name.clone(),
                change: new.clone().map_or(Change::Delete, Change::Set),
                expected: old.clone().map_or(Expected::Absent, Expected::Value),
                no_deref: true,
            })
            .collect(),
        message: Some("explored".into()),
        ..Transaction::default()
    }
}

/// One operation on one ref, as an actor saw it.
#[derive(Debug, Clone)]
pub struct Event {
    /// The actor.
    pub client: usize,
    /// The ref.
    pub name: String,
    /// `"read"` or `"cas"`.
    pub kind: &'static str,
    /// A compare-and-swap's expected value ("" for absent).
    pub old: String,
    /// A compare-and-swap's new value ("" for deleted).
    pub new: String,
    /// What a read saw ("" for absent).
    pub value: String,
    /// `"ok"`, `"failed"`, `"refused"` or `"unknown"`.
    pub result: &'static str,
    /// Logical time of the call and of the answer.
    pub call: u64,
    /// Logical time of the answer.
    pub ret: u64,
    /// Crash points (changing operations recorded) at the call and at the
    /// answer.
    pub call_change: usize,
    /// See `call_change`.
    pub ret_change: usize,
}

/// A ref's value as the checker's registers hold it: "" for absent, the
/// object id, or `ref: <name>` for a symbolic ref.
pub fn value(target: Option<&Target>) -> String {
    match target {
        None => String::new(),
        Some(Target::Object(id)) => id.to_string(),
        Some(Target::Symbolic(to)) => format!("ref: {to}"),
    }
}

/// Compare-and-swaps of refs to objects, as compare-and-swaps of values.
pub fn targets(updates: &[(RefName, Option<ObjectId>, Option<ObjectId>)]) -> Vec<Swap> {
    updates
        .iter()
        .map(|(name, old, new)| {
            (
                name.clone(),
                old.map(Target::Object),
                new.map(Target::Object),
            )
        })
        .collect()
}

/// A compare-and-swap of one ref: its name, the value it must hold
/// (`None`: absent) and its new value (`None`: deleted).
pub type Swap = (RefName, Option<Target>, Option<Target>);

/// The operations of one run, as the actors record them.
#[derive(Debug, Default)]
pub struct History {
    events: Mutex<Vec<Event>>,
    /// The last stamp given: turn and sequence number.
    last: Mutex<(u64, u64)>,
}

/// Where an operation started: logical time and crash point.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    time: u64,
    change: usize,
}

impl History {
    /// The time now, while `actor` has its turn: the run's turns, and a
    /// sequence number within the turn, so that no two events share an
    /// instant.
    fn stamp(&self, actor: &Actor) -> u64 {
        let turn = actor.clock();
        let mut last = self.last.lock().unwrap();
        let seq = if last.0 == turn { last.1 + 1 } else { 0 };
        *last = (turn, seq);
        turn * 1000 + seq
    }

    /// Notes the start of an operation (call it while the actor has its turn:
    /// at the start of its body or right after an operation of its own).
    pub fn call(&self, actor: &Actor, sim: &SimFs) -> Call {
        Call {
            time: self.stamp(actor),
            change: sim.changes(),
        }
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }

    /// Records the answer of a transaction made of `updates`.
    pub fn transaction(
        &self,
        actor: &Actor,
        sim: &SimFs,
        call: Call,
        updates: &[Swap],
        answer: &Result<(), CommitError>,
    ) {
        let ret = self.stamp(actor);
        let ret_change = sim.changes();
        for (name, old, new) in updates {
            let result = match answer {
                Ok(()) => "ok",
                Err(CommitError::Rejected(r)) if r.name == *name => match r.reason {
                    Rejection::AlreadyExists
                    | Rejection::Missing
                    | Rejection::IncorrectOldValue { .. } => "failed",
                    _ => "refused",
                },
                // An atomic transaction refused as a whole for another ref,
                // or a lock not taken in time: nothing was applied.
                Err(CommitError::Rejected(_) | CommitError::Locked(_)) => "refused",
                // A failure part way: the update may or may not have taken
                // effect.
                Err(_) => "unknown",
            };
            self.push(Event {
                client: actor.id(),
                name: name.to_string(),
                kind: "cas",
                old: value(old.as_ref()),
                new: value(new.as_ref()),
                value: String::new(),
                result,
                call: call.time,
                ret,
                call_change: call.change,
                ret_change,
            });
        }
    }

    /// Records reads: each ref of `names` and what the actor saw of it.
    pub fn reads(
        &self,
        actor: &Actor,
        sim: &SimFs,
        call: Call,
        seen: impl IntoIterator<Item = (RefName, Option<Target>)>,
    ) {
        let ret = self.stamp(actor);
        let ret_change = sim.changes();
        for (name, seen) in seen {
            self.push(Event {
                client: actor.id(),
                name: name.to_string(),
                kind: "read",
                old: String::new(),
                new: String::new(),
                value: value(seen.as_ref()),
                result: "ok",
                call: call.time,
                ret,
                call_change: call.change,
                ret_change,
            });
        }
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
}

/// The values a repository starts with, as operations that ended before
/// any other began (the checker's registers start absent).
pub fn initial_writes(refs: &[(RefName, ObjectId)], client: usize) -> Vec<Event> {
    refs.iter()
        .map(|(name, value)| Event {
            client,
            name: name.to_string(),
            kind: "cas",
            old: String::new(),
            new: value.to_string(),
            value: String::new(),
            result: "ok",
            call: 0,
            ret: 1,
            call_change: 0,
            ret_change: 0,
        })
        .collect()
}

/// What `names` hold in `store`, read after everything else (client
/// `client`, logical time `at`): the end of a history.
pub fn final_reads(
    store: &dyn Backend,
    names: &[RefName],
    client: usize,
    at: u64,
) -> Result<Vec<Event>, String> {
    names
        .iter()
        .map(|name| {
            let stored = store
                .read(name)
                .map_err(|e| format!("{name} unreadable at the end: {e}"))?
                .map(|r| r.target);
            Ok(Event {
                client,
                name: name.to_string(),
                kind: "read",
                old: String::new(),
                new: String::new(),
                value: value(stored.as_ref()),
                result: "ok",
                call: at,
                ret: at + 1,
                call_change: usize::MAX,
                ret_change: usize::MAX,
            })
        })
        .collect()
}

/// The history as it stood at crash point `point`: operations answered
/// before it as they were, those under way as unknown, later ones gone.
pub fn before_crash(events: &[Event], point: usize) -> Vec<Event> {
    events
        .iter()
        .filter(|e| e.call_change <= point)
        .filter_map(|e| {
            if e.ret_change <= point {
                Some(e.clone())
            } else if e.kind == "cas" {
                Some(Event {
                    result: "unknown",
                    ..e.clone()
                })
            } else {
                // A read under way when the machine went down answered no one.
                None
            }
        })
        .collect()
}

fn json(events: &[Event]) -> String {
    let mut out = String::from("[");
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            r#"{{"client":{},"ref":"{}","kind":"{}","old":"{}","new":"{}","value":"{}","call":{},"return":{},"result":"{}"}}"#,
            e.client, e.name, e.kind, e.old, e.new, e.value, e.call, e.ret, e.result
        ));
    }
    out.push(']');
    out
}

/// A history, readably: one line per event.
pub fn describe(events: &[Event]) -> String {
    let mut events = events.to_vec();
    events.sort_by_key(|e| (e.call, e.ret, e.client));
    events
        .iter()
        .map(|e| {
            let short = |v: &str| {
                if v.is_empty() {
                    "-".to_owned()
                } else {
                    v.trim_start_matches('0').to_owned()
                }
            };
            match e.kind {
                "cas" => format!(
                    "  [{:>4}, {:>4}] actor {} cas {} {} -> {}: {}",
                    e.call,
                    e.ret,
                    e.client,
                    e.name,
                    short(&e.old),
                    short(&e.new),
                    e.result
                ),
                _ => format!(
                    "  [{:>4}, {:>4}] actor {} read {} = {}",
                    e.call,
                    e.ret,
                    e.client,
                    e.name,
                    short(&e.value)
                ),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Porcupine checker, running in batch mode for the whole test binary.
pub struct Checker(Batch);

impl Checker {
    /// Judges `events`: Ok if some linearization explains them.
    pub fn check(&mut self, events: &[Event]) -> Result<(), String> {
        if self.0.is_linearizable(&json(events)) {
            Ok(())
        } else {
            Err(format!(
                "not linearizable; the history:\n{}",
                describe(events)
            ))
        }
    }

    /// Histories judged so far.
    pub fn checked(&self) -> usize {
        self.0.checked()
    }
}

/// The checker of this test binary (built with Go on first use; the
/// module comes from the Go module proxy).
pub fn checker() -> std::sync::MutexGuard<'static, Checker> {
    static CHECKER: OnceLock<Mutex<Checker>> = OnceLock::new();
    CHECKER
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR"));
            Mutex::new(Checker(Batch::start(out)))
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

//! Committed ref transactions are reported to the process's observer with
//! the number of refs they changed, in both formats; refused and aborted
//! transactions are not, and every commit's flush points are.
//!
//! The observer is process-wide; it records each report on the thread that
//! made it, so the tests of this binary, each on its own thread, see only
//! their own transactions.

use refstore_fs::config::{LogRefUpdates, RefStorage};
use refstore_fs::flush::FlushMethod;
use refstore_fs::observe::{self, Observer};
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use refstore_refs::backend::{self, Backend, Location};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::borrow::Cow;
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Seen {
    commits: Vec<usize>,
    flushes: Vec<&'static str>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

struct Recorder;

impl Observer for Recorder {
    fn flushed(&self, mechanism: &'static str, _took: Duration) {
        SEEN.with(|s| s.borrow_mut().flushes.push(mechanism));
    }

    fn transaction_committed(&self, refs: usize, _took: Duration) {
        SEEN.with(|s| s.borrow_mut().commits.push(refs));
    }
}

/// What was reported on this thread since the last call.
fn take() -> Seen {
    SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

fn options() -> CommitOptions {
    CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0130".into(),
    }
}

/// An empty repository of each format, observed.
fn stores() -> Vec<(&'static str, Arc<dyn Backend>)> {
    observe::install(Arc::new(Recorder));
    let mut out = Vec::new();
    for storage in [RefStorage::Files, RefStorage::Reftable] {
        let sim = SimFs::new();
        sim.create_dir_all(Path::new("/repo/.git/refs/heads"))
            .unwrap();
        sim.create_dir_all(Path::new("/repo/.git/reftable"))
            .unwrap();
        let location = Location {
            git_dir: "/repo/.git".into(),
            common_dir: "/repo/.git".into(),
            object_format: ObjectFormat::Sha1,
            storage,
        };
        let vfs: Arc<dyn Vfs> = Arc::new(sim);
        out.push((storage.name(), backend::open(vfs, &location).unwrap()));
    }
    take();
    out
}

fn create(name: &str, n: u32) -> Update {
    Update {
        name: RefName::new(name).unwrap(),
        change: Change::Set(Target::Object(
            format!("{n:040x}").parse::<ObjectId>().unwrap(),
        )),
        expected: Expected::Absent,
        no_deref: false,
    }
}

fn transaction(updates: Vec<Update>, batch: bool) -> Transaction {
    Transaction {
        updates,
        batch,
        message: Some("test".into()),
        ..Transaction::default()
    }
}

#[test]
fn a_commit_is_reported_with_its_refs_and_flush_points() {
    for (format, store) in stores() {
        let tx = transaction(
            vec![
                create("refs/heads/a", 1),
                create("refs/heads/b", 2),
                create("refs/tags/t", 3),
            ],
            false,
        );
        assert_eq!(store.commit(&tx, &options()).unwrap().applied, 3);
        let seen = take();
        assert_eq!(seen.commits, [3], "{format}");
        assert!(!seen.flushes.is_empty(), "{format}: no flush reported");
        assert!(
            seen.flushes
                .iter()
                .all(|m| ["fdatasync", "syncfs"].contains(m)),
            "{format}: {:?}",
            seen.flushes
        );
    }
}

#[test]
fn a_refused_transaction_is_not_reported() {
    for (format, store) in stores() {
        let tx = transaction(vec![create("refs/heads/a", 1)], false);
        store.commit(&tx, &options()).unwrap();
        take();
        // refs/heads/a exists: the atomic transaction fails as a whole.
        let tx = transaction(
            vec![create("refs/heads/b", 2), create("refs/heads/a", 3)],
            false,
        );
        assert!(store.commit(&tx, &options()).is_err(), "{format}");
        assert!(take().commits.is_empty(), "{format}");
    }
}

#[test]
fn a_batch_transaction_reports_the_refs_it_applied() {
    for (format, store) in stores() {
        let tx = transaction(vec![create("refs/heads/a", 1)], false);
        store.commit(&tx, &options()).unwrap();
        take();
        let tx = transaction(
            vec![
                create("refs/heads/b", 2),
                create("refs/heads/a", 3),
                create("refs/heads/c", 4),
            ],
            true,
        );
        let outcome = store.commit(&tx, &options()).unwrap();
        assert_eq!(outcome.rejected.len(), 1, "{format}");
        assert_eq!(take().commits, [2], "{format}");
    }
}

#[test]
fn an_aborted_transaction_is_not_reported() {
    for (format, store) in stores() {
        let tx = transaction(vec![create("refs/heads/a", 1)], false);
        let options = options();
        let prepared = store.prepare(Cow::Owned(tx), &options).unwrap();
        prepared.abort().unwrap();
        assert!(take().commits.is_empty(), "{format}");
        assert!(store
            .read(&RefName::new("refs/heads/a").unwrap())
            .unwrap()
            .is_none());
    }
}

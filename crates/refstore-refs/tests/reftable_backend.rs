//! The transaction semantics of the `Backend` trait, run over both formats:
//! every scenario must give the same values, the same rejections and the
//! same outcome in the files and in the reftable backend.

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use refstore_refs::backend::{self, Backend, Location};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::reftable::{LogValue, ReftableBackend, ReftableOptions, Stack};
use refstore_refs::transaction::{Change, Expected, Rejected, Rejection, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{CommitError, ObjectFormat, ObjectId, ReadError, RefName};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn name(s: &str) -> RefName {
    RefName::new(s).unwrap()
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

/// An empty repository of each format on its own simulated filesystem,
/// HEAD pointing at `refs/heads/main`.
fn stores() -> Vec<(&'static str, SimFs, Arc<dyn Backend>)> {
    let mut out = Vec::new();
    for storage in [
        refstore_fs::config::RefStorage::Files,
        refstore_fs::config::RefStorage::Reftable,
    ] {
        let sim = SimFs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
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
        let store = backend::open(vfs, &location).unwrap();
        commit(&*store, vec![symref("HEAD", "refs/heads/main")]).unwrap();
        out.push((storage.name(), sim, store));
    }
    out
}

fn set(n: &str, value: u32, expected: Expected) -> Update {
    Update {
        name: name(n),
        change: Change::Set(Target::Object(id(value))),
        expected,
        no_deref: false,
    }
}

fn delete(n: &str, expected: Expected) -> Update {
    Update {
        name: name(n),
        change: Change::Delete,
        expected,
        no_deref: false,
    }
}

fn symref(n: &str, to: &str) -> Update {
    Update {
        name: name(n),
        change: Change::Set(Target::Symbolic(name(to))),
        expected: Expected::Any,
        no_deref: true,
    }
}

fn commit(store: &dyn Backend, updates: Vec<Update>) -> Result<usize, CommitError> {
    let tx = Transaction {
        updates,
        message: Some("test".into()),
        ..Transaction::default()
    };
    Ok(store.commit(&tx, &options())?.applied)
}

fn rejection(result: Result<usize, CommitError>) -> Rejected {
    match result {
        Err(CommitError::Rejected(r)) => r,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

fn value(store: &dyn Backend, n: &str) -> Option<Target> {
    store.read(&name(n)).unwrap().map(|r| r.target)
}

fn value_of(n: u32) -> Option<Target> {
    Some(Target::Object(id(n)))
}

#[test]
fn old_values_are_checked_as_in_the_files_backend() {
    for (format, _, store) in stores() {
        let store = &*store;
        commit(store, vec![set("refs/heads/a", 1, Expected::Absent)]).unwrap();
        let r = rejection(commit(
            store,
            vec![set("refs/heads/a", 2, Expected::Absent)],
        ));
        assert_eq!(r.reason, Rejection::AlreadyExists, "{format}");
        let r = rejection(commit(
            store,
            vec![set(
                "refs/heads/b",
                2,
                Expected::Value(Target::Object(id(1))),
            )],
        ));
        assert_eq!(r.reason, Rejection::Missing, "{format}");
        let r = rejection(commit(
            store,
            vec![set(
                "refs/heads/a",
                3,
                Expected::Value(Target::Object(id(9))),
            )],
        ));
        assert_eq!(
            r.reason,
            Rejection::IncorrectOldValue {
                actual: Target::Object(id(1)),
                expected: Target::Object(id(9))
            },
            "{format}"
        );
        // An atomic transaction with one bad update changes nothing.
        let r = rejection(commit(
            store,
            vec![
                set("refs/heads/c", 4, Expected::Absent),
                set("refs/heads/a", 5, Expected::Absent),
            ],
        ));
        assert_eq!(r.name, name("refs/heads/a"), "{format}");
        assert_eq!(value(store, "refs/heads/c"), None, "{format}");
        commit(
            store,
            vec![
                set("refs/heads/a", 6, Expected::Value(Target::Object(id(1)))),
                delete("refs/heads/a2", Expected::Any),
            ],
        )
        .unwrap();
        assert_eq!(value(store, "refs/heads/a"), value_of(6), "{format}");
        commit(store, vec![delete("refs/heads/a", Expected::Present)]).unwrap();
        assert_eq!(value(store, "refs/heads/a"), None, "{format}");
        assert!(store.list(b"refs/").unwrap().refs.is_empty(), "{format}");
    }
}

#[test]
fn directory_file_conflicts_and_duplicates() {
    for (format, _, store) in stores() {
        let store = &*store;
        commit(
            store,
            vec![
                set("refs/heads/a", 1, Expected::Any),
                set("refs/heads/b/c", 2, Expected::Any),
            ],
        )
        .unwrap();
        let r = rejection(commit(store, vec![set("refs/heads/a/x", 3, Expected::Any)]));
        assert_eq!(
            r.reason,
            Rejection::NameConflict {
                existing: name("refs/heads/a")
            },
            "{format}"
        );
        let r = rejection(commit(store, vec![set("refs/heads/b", 3, Expected::Any)]));
        assert_eq!(
            r.reason,
            Rejection::NameConflict {
                existing: name("refs/heads/b/c")
            },
            "{format}"
        );
        let r = rejection(commit(
            store,
            vec![
                set("refs/heads/x", 3, Expected::Any),
                set("refs/heads/x/y", 4, Expected::Any),
            ],
        ));
        assert_eq!(
            r.reason,
            Rejection::ConflictInTransaction {
                other: name("refs/heads/x/y")
            },
            "{format}"
        );
        let r = rejection(commit(
            store,
            vec![
                set("refs/heads/d", 3, Expected::Any),
                set("refs/heads/d", 4, Expected::Any),
            ],
        ));
        assert_eq!(r.reason, Rejection::Duplicate, "{format}");
        // HEAD points at main: updating both is one ref changed twice.
        let r = rejection(commit(
            store,
            vec![
                set("HEAD", 3, Expected::Any),
                set("refs/heads/main", 4, Expected::Any),
            ],
        ));
        assert_eq!(
            r.reason,
            Rejection::DuplicateViaSymref {
                symref: name("HEAD")
            },
            "{format}"
        );
        // Deleting the ref in the way in the same transaction still
        // conflicts, as in git; deleting it first frees the name.
        let r = rejection(commit(
            store,
            vec![
                delete("refs/heads/a", Expected::Any),
                set("refs/heads/a/x", 3, Expected::Any),
            ],
        ));
        assert_eq!(
            r.reason,
            Rejection::NameConflict {
                existing: name("refs/heads/a")
            },
            "{format}"
        );
        commit(store, vec![delete("refs/heads/a", Expected::Any)]).unwrap();
        commit(store, vec![set("refs/heads/a/x", 3, Expected::Absent)]).unwrap();
        let names: Vec<String> = store
            .list(b"refs/heads/")
            .unwrap()
            .refs
            .iter()
            .map(|r| r.name.to_string())
            .collect();
        assert_eq!(names, ["refs/heads/a/x", "refs/heads/b/c"], "{format}");
    }
}

#[test]
fn batches_commit_what_they_can() {
    for (format, _, store) in stores() {
        let store = &*store;
        commit(store, vec![set("refs/tags/t", 1, Expected::Any)]).unwrap();
        let tx = Transaction {
            updates: vec![
                set("refs/heads/ok1", 2, Expected::Absent),
                set("refs/tags/t", 3, Expected::Absent),
                set("refs/tags/t/under", 4, Expected::Any),
                set("refs/heads/ok2", 5, Expected::Any),
            ],
            batch: true,
            ..Transaction::default()
        };
        let outcome = store.commit(&tx, &options()).unwrap();
        assert_eq!(outcome.applied, 2, "{format}");
        let rejected: Vec<(String, Rejection)> = outcome
            .rejected
            .into_iter()
            .map(|r| (r.name.to_string(), r.reason))
            .collect();
        assert_eq!(
            rejected,
            [
                ("refs/tags/t".to_owned(), Rejection::AlreadyExists),
                (
                    "refs/tags/t/under".to_owned(),
                    Rejection::NameConflict {
                        existing: name("refs/tags/t")
                    }
                ),
            ],
            "{format}"
        );
        assert_eq!(value(store, "refs/heads/ok1"), value_of(2), "{format}");
        assert_eq!(value(store, "refs/heads/ok2"), value_of(5), "{format}");
        assert_eq!(value(store, "refs/tags/t"), value_of(1), "{format}");
    }
}

#[test]
fn symbolic_refs_are_followed_unless_told_not_to() {
    for (format, _, store) in stores() {
        let store = &*store;
        commit(store, vec![set("HEAD", 1, Expected::Absent)]).unwrap();
        assert_eq!(value(store, "refs/heads/main"), value_of(1), "{format}");
        let resolved = store.resolve(&name("HEAD")).unwrap().unwrap();
        assert_eq!(resolved.name, name("refs/heads/main"), "{format}");
        assert_eq!(resolved.id, Some(id(1)), "{format}");
        commit(store, vec![symref("HEAD", "refs/heads/other")]).unwrap();
        let resolved = store.resolve(&name("HEAD")).unwrap().unwrap();
        assert_eq!(
            (resolved.name, resolved.id),
            (name("refs/heads/other"), None)
        );
        let mut no_deref = set("HEAD", 7, Expected::Any);
        no_deref.no_deref = true;
        commit(store, vec![no_deref]).unwrap();
        assert_eq!(value(store, "HEAD"), value_of(7), "{format}");
        assert_eq!(store.resolve(&name("refs/heads/none")).unwrap(), None);
        // A cycle ends at git's depth limit.
        commit(
            store,
            vec![
                symref("refs/heads/loop1", "refs/heads/loop2"),
                symref("refs/heads/loop2", "refs/heads/loop1"),
            ],
        )
        .unwrap();
        assert!(
            matches!(
                store.resolve(&name("refs/heads/loop1")),
                Err(ReadError::SymrefTooDeep(_))
            ),
            "{format}"
        );
        let listed: Vec<(String, Target)> = store
            .list(b"refs/heads/loop")
            .unwrap()
            .refs
            .into_iter()
            .map(|r| (r.name.to_string(), r.target))
            .collect();
        assert_eq!(
            listed,
            [
                (
                    "refs/heads/loop1".to_owned(),
                    Target::Symbolic(name("refs/heads/loop2"))
                ),
                (
                    "refs/heads/loop2".to_owned(),
                    Target::Symbolic(name("refs/heads/loop1"))
                ),
            ],
            "{format}"
        );
    }
}

#[test]
fn prepared_transactions_commit_or_abort() {
    for (format, _, store) in stores() {
        let store = &*store;
        let options = options();
        let tx = Transaction {
            updates: vec![set("refs/heads/p", 1, Expected::Absent)],
            ..Transaction::default()
        };
        let prepared = store.prepare(Cow::Borrowed(&tx), &options).unwrap();
        assert!(prepared.rejected().is_empty());
        assert_eq!(
            value(store, "refs/heads/p"),
            None,
            "{format}: not visible yet"
        );
        prepared.abort().unwrap();
        assert_eq!(value(store, "refs/heads/p"), None, "{format}");
        let prepared = store.prepare(Cow::Borrowed(&tx), &options).unwrap();
        // While prepared, the ref (or the whole stack) is locked.
        let other = commit(store, vec![set("refs/heads/p", 2, Expected::Any)]);
        assert!(
            matches!(
                other,
                Err(CommitError::Locked(_))
                    | Err(CommitError::Rejected(Rejected {
                        reason: Rejection::Locked(_),
                        ..
                    }))
            ),
            "{format}: {other:?}"
        );
        assert_eq!(prepared.commit().unwrap().applied, 1);
        assert_eq!(value(store, "refs/heads/p"), value_of(1), "{format}");
    }
}

/// The reftable reflog of `n`, newest first, as (old, new, message).
fn reftable_log(sim: &SimFs, n: &str) -> Vec<(ObjectId, ObjectId, String)> {
    let stack = Stack::open(Arc::new(sim.clone()), "/repo/.git/reftable").unwrap();
    let merged = stack.merged();
    merged
        .logs_for(n.as_bytes())
        .unwrap()
        .map(|r| match r.unwrap().value {
            LogValue::Update(e) => (e.old_id, e.new_id, String::from_utf8(e.message).unwrap()),
            LogValue::Deletion => panic!("no tombstones in merged logs"),
        })
        .collect()
}

#[test]
fn reflogs_follow_core_log_all_ref_updates() {
    let (_, sim, store) = stores().pop().unwrap();
    let store = &*store;
    commit(store, vec![set("refs/heads/main", 1, Expected::Absent)]).unwrap();
    commit(store, vec![set("refs/tags/v1", 1, Expected::Absent)]).unwrap();
    commit(store, vec![set("HEAD", 2, Expected::Any)]).unwrap();
    let null = ObjectFormat::Sha1.null_id();
    let main = vec![
        (id(1), id(2), "test\n".to_owned()),
        (null, id(1), "test\n".to_owned()),
    ];
    assert_eq!(reftable_log(&sim, "refs/heads/main"), main);
    // HEAD's log moves with the branch it points to.
    assert_eq!(reftable_log(&sim, "HEAD"), main);
    // Tags get no reflog unless asked.
    assert!(reftable_log(&sim, "refs/tags/v1").is_empty());
    // A deleted ref loses its reflog; HEAD records that its branch went.
    commit(store, vec![delete("refs/heads/main", Expected::Any)]).unwrap();
    assert!(reftable_log(&sim, "refs/heads/main").is_empty());
    assert_eq!(
        reftable_log(&sim, "HEAD")[0],
        (id(2), null, "test\n".to_owned())
    );
}

#[test]
fn damaged_tables_are_named_in_errors() {
    let (_, sim, store) = stores().pop().unwrap();
    commit(&*store, vec![set("refs/heads/main", 1, Expected::Absent)]).unwrap();
    let stack = Stack::open(Arc::new(sim.clone()), "/repo/.git/reftable").unwrap();
    let table = Path::new("/repo/.git/reftable").join(stack.names().last().unwrap());
    let original = sim.read(&table).unwrap();
    let replace = |bytes: &[u8]| {
        sim.unlink(&table).unwrap();
        sim.create_exclusive(&table)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    };
    let fresh = || {
        ReftableBackend::new(
            Arc::new(sim.clone()),
            Path::new("/repo/.git"),
            ObjectFormat::Sha1,
            ReftableOptions::new(ObjectFormat::Sha1),
        )
    };

    // A broken footer: the table does not open.
    let mut bytes = original.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    replace(&bytes);
    let error = store
        .read(&name("refs/heads/main"))
        .unwrap_err()
        .to_string();
    assert!(error.contains(table.to_str().unwrap()), "{error}");

    // A broken record inside a block: the table opens, reading through it
    // fails, and the error still names the table.
    // Byte 28 is the first record's prefix length, just after the block
    // header.
    let mut bytes = original.clone();
    bytes[28] ^= 0x55;
    replace(&bytes);
    assert!(Stack::open(Arc::new(sim.clone()), "/repo/.git/reftable").is_ok());
    let error = fresh().list(b"").unwrap_err().to_string();
    assert!(error.contains(table.to_str().unwrap()), "{error}");
}

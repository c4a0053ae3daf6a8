//! JGit, an independent reftable implementation, reads what the reftable
//! backend writes: refs, symbolic refs, tombstones and reflogs, after
//! transactions and auto-compaction.

mod support;

use refstore_fs::config::{LogRefUpdates, RefStorage};
use refstore_fs::flush::FlushMethod;
use refstore_fs::real::RealFs;
use refstore_refs::backend::{self, Location};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn update(name: &str, change: Change, expected: Expected) -> Update {
    Update {
        name: RefName::new(name).unwrap(),
        change,
        expected,
        no_deref: false,
    }
}

fn to(n: u32) -> Change {
    Change::Set(Target::Object(id(n)))
}

/// A bare repository in the reftable format, laid out as git lays it out.
fn reftable_repo(dir: &Path) -> std::path::PathBuf {
    let git_dir = support::git::reftable_repo(dir, "repo.git");
    std::fs::create_dir(git_dir.join("reftable")).unwrap();
    git_dir
}

#[test]
fn jgit_reads_refs_and_reflogs_the_backend_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let git_dir = reftable_repo(tmp.path());
    let store = backend::open(
        Arc::new(RealFs::new()),
        &Location {
            git_dir: git_dir.clone(),
            common_dir: git_dir.clone(),
            object_format: ObjectFormat::Sha1,
            storage: RefStorage::Reftable,
        },
    )
    .unwrap();
    let options = CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0130".into(),
    };
    let commit = |updates: Vec<Update>, message: &str| {
        let tx = Transaction {
            updates,
            message: Some(message.into()),
            ..Transaction::default()
        };
        store.commit(&tx, &options).unwrap();
    };
    let mut head = update(
        "HEAD",
        Change::Set(Target::Symbolic(RefName::new("refs/heads/main").unwrap())),
        Expected::Any,
    );
    head.no_deref = true;
    commit(vec![head], "init");
    commit(
        vec![
            update("HEAD", to(1), Expected::Absent),
            update("refs/heads/topic", to(2), Expected::Absent),
            update("refs/tags/v1", to(3), Expected::Absent),
        ],
        "first",
    );
    commit(
        vec![update(
            "HEAD",
            to(4),
            Expected::Value(Target::Object(id(1))),
        )],
        "second  commit",
    );
    commit(
        vec![update("refs/heads/topic", Change::Delete, Expected::Any)],
        "drop topic",
    );
    for i in 0..20 {
        commit(
            vec![update(
                &format!("refs/pipelines/{i:02}"),
                to(100 + i),
                Expected::Absent,
            )],
            "ci",
        );
    }

    let null = ObjectFormat::Sha1.null_id();
    let mut expected = String::new();
    expected.push_str("symref HEAD refs/heads/main\n");
    expected.push_str(&format!("ref refs/heads/main {}\n", id(4)));
    for i in 0..20 {
        expected.push_str(&format!("ref refs/pipelines/{i:02} {}\n", id(100 + i)));
    }
    expected.push_str(&format!("ref refs/tags/v1 {}\n", id(3)));
    // Messages are stored with a trailing newline, as git stores them, and
    // JGit hands them back as stored.
    let log = |name: &str, old: ObjectId, new: ObjectId, message: &str| {
        format!("log {name} {old} {new} 1700000000 90 c@example.com C O Mitter\t{message}\n\n")
    };
    // HEAD's log moves with main; topic's log went with it; tags and
    // pipelines log nothing under the default policy.
    expected.push_str(&log("HEAD", null, id(1), "first"));
    expected.push_str(&log("HEAD", id(1), id(4), "second commit"));
    expected.push_str(&log("refs/heads/main", null, id(1), "first"));
    expected.push_str(&log("refs/heads/main", id(1), id(4), "second commit"));

    let stack = store.as_reftable().unwrap().stack().unwrap();
    assert!(
        stack.names().len() < 6,
        "24 transactions auto-compacted into {} tables",
        stack.names().len()
    );
    assert_eq!(support::jgit::dump(&git_dir), expected);
}

//! The refs, ids and commit options the crash and fault tests build their
//! transactions from: numbered refs spread over a few directories, each
//! created, updated or deleted by its number.

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};
use std::time::Duration;

/// The signature of every reflog entry the tests write.
pub const SIGNATURE: &str = "C O Mitter <c@example.com> 1700000000 +0000";

/// The object id whose hex is `n`, zero-padded.
pub fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

/// Ref `i`, in one of four directories.
pub fn name(i: usize) -> RefName {
    RefName::new(format!("refs/heads/group{}/branch{i}", i % 4)).unwrap()
}

/// Ref `i` before and after the numbered transaction: refs divisible by 3
/// are created, by 3 plus 1 updated, by 3 plus 2 deleted.
pub fn before_after(i: usize) -> (Option<ObjectId>, Option<ObjectId>) {
    match i % 3 {
        0 => (None, Some(id(1000 + i as u32))),
        1 => (Some(id(i as u32 + 1)), Some(id(2000 + i as u32))),
        _ => (Some(id(i as u32 + 1)), None),
    }
}

/// Commit options flushing with `flush`, never waiting for a lock, and
/// logging branch updates with [`SIGNATURE`].
pub fn commit_options(flush: FlushMethod) -> CommitOptions {
    CommitOptions {
        flush,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: SIGNATURE.into(),
    }
}

/// The update taking `name` from `old` to `new` (`None`: absent).
pub fn update(name: RefName, old: Option<ObjectId>, new: Option<ObjectId>) -> Update {
    Update {
        name,
        change: new.map_or(Change::Delete, |n| Change::Set(Target::Object(n))),
        expected: old.map_or(Expected::Absent, |o| Expected::Value(Target::Object(o))),
        no_deref: false,
    }
}

/// The transaction taking refs `0..refs` from and to what `phase` says of
/// each ([`before_after`] for the numbered transaction); refs absent on
/// both sides are left out.
pub fn numbered_transaction(
    refs: usize,
    phase: impl Fn(usize) -> (Option<ObjectId>, Option<ObjectId>),
) -> Transaction {
    Transaction {
        updates: (0..refs)
            .filter_map(|i| {
                let (old, new) = phase(i);
                (old.is_some() || new.is_some()).then(|| update(name(i), old, new))
            })
            .collect(),
        message: Some("crash test".into()),
        ..Transaction::default()
    }
}

//! Seeding a cluster with a repository's existing refs: `refstore cluster
//! import` copies the refs of a repository's own ref store into etcd once,
//! before the nodes serve it from etcd.
//!
//! The copy refuses to run over refs already in etcd (they would be the
//! cluster's newer state) unless forced, in which case etcd's refs of the
//! repository are deleted first and replaced. The refs are written in transactions of
//! [`CHUNK`] refs, within etcd's default limit on operations per
//! transaction; the first one checks that etcd holds no ref of the
//! repository, so two imports cannot interleave, and writes the
//! repository's record ([`crate::records`]), so the nodes serve it.
//! A forced import over a live repository keeps its incarnation id: the
//! nodes' copies stay theirs.

use crate::cluster::EtcdBackend;
use crate::etcd::{unavailable, Consistency, EtcdError};
use crate::keys::Value;
use crate::records::Record;
use etcd_client::{Compare, CompareOp, DeleteOptions, Txn, TxnOp};
use refstore_refs::value::{Peeled, Target};
use refstore_refs::{Backend, ReadError, RefName};

/// Refs per etcd transaction.
const CHUNK: usize = 100;

/// Why an import did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// etcd holds refs of the repository already.
    #[error("cluster: etcd already holds refs of '{0}'; give --force to replace them with the local ones")]
    AlreadyThere(String),
    /// Reading the local refs or talking to etcd failed.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// `--record-only` for a name with a live record or without refs.
    #[error("cluster: '{0}' has a record already, or etcd holds no refs of it; --record-only only adds the record of a repository imported before the cluster kept records")]
    NoRecordToAdd(String),
    /// The name cannot name a repository of the cluster.
    #[error("cluster: {0}")]
    BadName(#[from] crate::records::BadName),
}

/// Copies every ref of `source` (HEAD and the refs below `refs/`) into the
/// cluster's store `target` for the repository `name`, and writes its
/// `record`. Returns the number of refs copied.
pub fn import(
    target: &EtcdBackend,
    source: &dyn Backend,
    name: &str,
    mut record: Record,
    force: bool,
) -> Result<usize, ImportError> {
    let (record_key, existing, record_revision) = current_record(target, name)?;
    if let Some(existing) = existing.filter(Record::is_live) {
        record.id = existing.id;
    }
    let mut refs = source.list(b"refs/")?.refs;
    let head = RefName::new("HEAD").expect("valid");
    if let Some(head) = source.read(&head)? {
        refs.push(head);
    }
    let keys = target.keys();
    let (start, end) = keys.refs_starting_with(b"");
    if force {
        // etcd refuses a transaction that deletes a range and writes keys
        // inside it, so the old refs go first.
        let (start, end) = (start.clone(), end.clone());
        run(target, move || {
            Txn::new().and_then([TxnOp::delete(
                start.clone(),
                Some(DeleteOptions::new().with_range(end.clone())),
            )])
        })?;
    }
    let chunks: Vec<&[refstore_refs::value::Ref]> = match refs.is_empty() {
        true => vec![&[]],
        false => refs.chunks(CHUNK).collect(),
    };
    for (n, chunk) in chunks.into_iter().enumerate() {
        let mut writes: Vec<TxnOp> = chunk
            .iter()
            .map(|r| {
                let peeled = match (&r.target, r.peeled) {
                    (_, Some(peeled)) => Peeled::Tag(peeled),
                    (Target::Object(id), None) => target.peel(id),
                    (Target::Symbolic(_), None) => Peeled::Unknown,
                };
                let value = Value {
                    target: r.target.clone(),
                    peeled,
                };
                TxnOp::put(keys.reference(r.name.as_bytes()), value.encode(), None)
            })
            .collect();
        writes.push(TxnOp::put(
            keys.stamp(),
            target.cluster().config.node.as_bytes(),
            None,
        ));
        let mut guards = Vec::new();
        if n == 0 {
            guards
                .push(Compare::version(start.clone(), CompareOp::Equal, 0).with_range(end.clone()));
            guards.push(Compare::mod_revision(
                record_key.clone(),
                CompareOp::Equal,
                record_revision,
            ));
            writes.push(TxnOp::put(record_key.clone(), record.encode(), None));
        }
        let applied = run(target, move || {
            Txn::new().when(guards.clone()).and_then(writes.clone())
        })?;
        if !applied {
            return Err(ImportError::AlreadyThere(name.to_owned()));
        }
    }
    Ok(refs.len())
}

/// Writes only the record of `name`, whose refs etcd holds already: for
/// repositories imported before the cluster kept records. Refuses a name
/// whose record is live, or without refs in etcd.
pub fn record_only(target: &EtcdBackend, name: &str, record: Record) -> Result<(), ImportError> {
    let (key, existing, revision) = current_record(target, name)?;
    if existing.as_ref().is_some_and(Record::is_live) || !target.has_refs()? {
        return Err(ImportError::NoRecordToAdd(name.to_owned()));
    }
    let applied = run(target, move || {
        Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::put(key.clone(), record.encode(), None)])
    })?;
    match applied {
        true => Ok(()),
        false => Err(ImportError::NoRecordToAdd(name.to_owned())),
    }
}

/// The key of `name`'s record, the record, and the revision it was last
/// written at; refuses a name the cluster cannot hold.
fn current_record(
    target: &EtcdBackend,
    name: &str,
) -> Result<(Vec<u8>, Option<Record>, i64), ImportError> {
    crate::records::check_name(name)?;
    let cluster = target.cluster();
    let (record, revision) = cluster
        .read_record(name, Consistency::Quorum)
        .map_err(|e| ImportError::Read(unavailable(e)))?;
    Ok((cluster.record_keys().record(name), record, revision))
}

/// Runs the transaction `make` builds; true if its condition held.
fn run(
    target: &EtcdBackend,
    make: impl Fn() -> Txn + Send + Sync + 'static,
) -> Result<bool, ImportError> {
    let make = std::sync::Arc::new(make);
    target
        .cluster()
        .etcd()
        .call(Consistency::Quorum, move |mut client| {
            let txn = make();
            async move { Ok(client.txn(txn).await?.succeeded()) }
        })
        .map_err(|e: EtcdError| ImportError::Read(unavailable(e)))
}

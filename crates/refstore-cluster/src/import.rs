//! Seeding a cluster with a repository's existing refs: `refstore cluster
//! import` copies the refs of a repository's own ref store into etcd once,
//! before the nodes serve it from etcd.
//!
//! The copy refuses to run over refs already in etcd (they would be the
//! cluster's newer state) unless forced, in which case etcd's refs of the
//! repository are deleted first and replaced. The refs are written in transactions of
//! [`CHUNK`] refs, within etcd's default limit on operations per
//! transaction; the first one checks that etcd holds no ref of the
//! repository, so two imports cannot interleave.

use crate::cluster::EtcdBackend;
use crate::etcd::{unavailable, Consistency, EtcdError};
use crate::keys::Value;
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
}

/// Copies every ref of `source` (HEAD and the refs below `refs/`) into the
/// cluster's store `target` for the repository `name`. Returns the number
/// of refs copied.
pub fn import(
    target: &EtcdBackend,
    source: &dyn Backend,
    name: &str,
    force: bool,
) -> Result<usize, ImportError> {
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
    for (n, chunk) in refs.chunks(CHUNK).enumerate() {
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
        let guard = (n == 0)
            .then(|| Compare::version(start.clone(), CompareOp::Equal, 0).with_range(end.clone()));
        let applied = run(target, move || {
            Txn::new()
                .when(guard.clone().into_iter().collect::<Vec<_>>())
                .and_then(writes.clone())
        })?;
        if !applied {
            return Err(ImportError::AlreadyThere(name.to_owned()));
        }
    }
    Ok(refs.len())
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

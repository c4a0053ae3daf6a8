//! A repository's refs in etcd, behind the same [`Backend`] interface as
//! the files and reftable formats, so that upload-pack, receive-pack and
//! the commands work on a cluster's repositories unchanged.
//!
//! A single read (`read`) is a linearizable etcd read. Listings,
//! advertisements and `resolve` come from the node's copy
//! ([`crate::cache`]), checked current by one linearizable read, once per
//! request for a request's handle ([`crate::Cluster::request_refs`]).
//! Transactions are etcd transactions
//! ([`crate::transaction`]). When etcd cannot be reached within its bound
//! (no quorum, or this node cut off by a partition), reads are refused,
//! or, where the cluster file allows stale reads, answered from the
//! node's copy if it is young enough (with a warning in the log); every
//! transaction is refused.

use crate::cluster::EtcdBackend;
use crate::keys::Value;
use refstore_refs::backend::{Backend, PreparedTransaction};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::files::{Listing, Resolved, SYMREF_MAX_DEPTH};
use refstore_refs::transaction::{Outcome, Rejected, Transaction};
use refstore_refs::value::{Ref, RefView, Target, TargetView};
use refstore_refs::{CommitError, ObjectFormat, PeelObjects, ReadError, RefName};
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

fn to_ref(name: &[u8], value: &Value) -> Ref {
    Ref {
        name: RefName::from_trusted(name),
        target: value.target.clone(),
        peeled: value.peeled.id(),
    }
}

impl Backend for EtcdBackend {
    fn object_format(&self) -> ObjectFormat {
        self.format()
    }

    fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        Ok(self
            .value(name)?
            .map(|value| to_ref(name.as_bytes(), &value)))
    }

    /// Follows the chain in one reading of the node's copy (itself
    /// confirmed current by one read through etcd's leader), not one etcd
    /// read per link.
    fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        let refs = self.snapshot()?;
        let mut current = name.clone();
        for depth in 0..=SYMREF_MAX_DEPTH {
            match refs.get(current.as_bytes()) {
                None if depth == 0 => return Ok(None),
                None => {
                    return Ok(Some(Resolved {
                        name: current,
                        id: None,
                    }))
                }
                Some(value) => match &value.target {
                    Target::Object(id) => {
                        return Ok(Some(Resolved {
                            name: current,
                            id: Some(*id),
                        }))
                    }
                    Target::Symbolic(next) => current = next.clone(),
                },
            }
        }
        Err(ReadError::SymrefTooDeep(name.clone()))
    }

    fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError> {
        let mut refs = Vec::new();
        self.visit(prefix, &mut |view| {
            refs.push(view.to_ref());
            ControlFlow::Continue(())
        })?;
        Ok(Listing {
            refs,
            broken: Vec::new(),
        })
    }

    fn visit(
        &self,
        prefix: &[u8],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        self.visit_each(&[prefix], visitor)
    }

    /// All prefixes from one reading of the node's copy: one read through
    /// etcd's leader for a fetch's several `ref-prefix`es, and one moment
    /// for all of them.
    fn visit_each(
        &self,
        prefixes: &[&[u8]],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        let refs = self.snapshot()?;
        for prefix in prefixes {
            let from: Box<[u8]> = (*prefix).into();
            for (name, value) in refs.range(from..) {
                if !name.starts_with(prefix) {
                    break;
                }
                if !name.starts_with(b"refs/") {
                    continue;
                }
                let view = RefView {
                    name,
                    target: match &value.target {
                        Target::Object(id) => TargetView::Object(*id),
                        Target::Symbolic(to) => TargetView::Symbolic(to),
                    },
                    peeled: value.peeled,
                };
                if visitor(view).is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError> {
        let outcome = crate::transaction::commit(self, tx, options);
        self.forget_confirmed();
        outcome
    }

    fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Box<dyn PreparedTransaction + 'a>, CommitError> {
        let rejected = crate::transaction::check(self, &tx, options)?;
        Ok(Box::new(Prepared {
            backend: self,
            tx,
            options,
            rejected,
        }))
    }

    fn set_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        self.lend_peeler(peeler);
    }

    fn recent(&self) -> Option<Arc<dyn Backend>> {
        self.recent_view().map(|view| view as Arc<dyn Backend>)
    }
}

/// A transaction checked against etcd. Nothing is locked: etcd has no
/// locks to hold, and the commit checks again, in its one etcd
/// transaction, every value the check relied on.
struct Prepared<'a> {
    backend: &'a EtcdBackend,
    tx: Cow<'a, Transaction>,
    options: &'a CommitOptions,
    rejected: Vec<Rejected>,
}

impl PreparedTransaction for Prepared<'_> {
    fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    fn commit(self: Box<Self>) -> Result<Outcome, CommitError> {
        let outcome = crate::transaction::commit(self.backend, &self.tx, self.options);
        self.backend.forget_confirmed();
        outcome
    }

    fn abort(self: Box<Self>) -> Result<(), CommitError> {
        Ok(())
    }
}

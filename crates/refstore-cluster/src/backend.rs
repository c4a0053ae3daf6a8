//! A repository's refs in etcd, behind the same [`Backend`] interface as
//! the files and reftable formats, so that upload-pack, receive-pack and
//! the commands work on a cluster's repositories unchanged.
//!
//! Single reads (`read`, `resolve`) are linearizable etcd reads. Listings
//! and advertisements come from the node's copy ([`crate::cache`]), checked
//! current by one linearizable read. Transactions are etcd transactions
//! ([`crate::transaction`]). Without an etcd quorum, reads fall back to
//! what a reachable member holds (with a warning in the log) and every
//! transaction is refused.

use crate::cache::{Caches, Fresh};
use crate::config::ClusterConfig;
use crate::etcd::{Consistency, Etcd, EtcdError};
use crate::keys::{RepoKeys, Value};
use refstore_refs::backend::{Backend, PreparedTransaction};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::files::{Listing, Resolved, SYMREF_MAX_DEPTH};
use refstore_refs::transaction::{Outcome, Rejected, Transaction};
use refstore_refs::value::{Ref, RefView, Target, TargetView};
use refstore_refs::{CommitError, ObjectFormat, PeelObjects, ReadError, RefName};
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A node's link to its cluster's etcd: the connection and the copies of
/// the repositories it serves.
#[derive(Debug)]
pub struct Cluster {
    /// The cluster file.
    pub config: ClusterConfig,
    etcd: Arc<Etcd>,
    caches: Caches,
    transactions: AtomicU64,
}

impl Cluster {
    /// Joins the cluster `config` describes (nothing is sent to etcd yet).
    pub fn connect(config: ClusterConfig) -> Result<Arc<Cluster>, EtcdError> {
        let etcd = Etcd::connect(&config)?;
        Ok(Arc::new(Cluster {
            config,
            etcd,
            caches: Caches::default(),
            transactions: AtomicU64::new(0),
        }))
    }

    /// The refs of the repository called `name` (its path below the
    /// served root), whose ids are in `format`.
    pub fn refs(self: &Arc<Self>, name: &str, format: ObjectFormat) -> Arc<EtcdBackend> {
        Arc::new(EtcdBackend {
            cluster: self.clone(),
            keys: RepoKeys::new(&self.config.key_prefix, name),
            format,
            peeler: Mutex::new(None),
        })
    }

    pub(crate) fn etcd(&self) -> &Arc<Etcd> {
        &self.etcd
    }

    /// A name for a transaction's log record, unique in the cluster.
    pub(crate) fn transaction_id(&self) -> String {
        let n = self.transactions.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos:020}-{}-{n}", self.config.node)
    }
}

/// The refs of one repository of the cluster.
#[derive(Debug)]
pub struct EtcdBackend {
    cluster: Arc<Cluster>,
    keys: RepoKeys,
    format: ObjectFormat,
    peeler: Mutex<Option<Arc<dyn PeelObjects>>>,
}

impl EtcdBackend {
    pub(crate) fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    pub(crate) fn keys(&self) -> &RepoKeys {
        &self.keys
    }

    pub(crate) fn format(&self) -> ObjectFormat {
        self.format
    }

    /// The peeled value of `id` to record, when the store was lent a way
    /// to peel.
    pub(crate) fn peel(&self, id: &refstore_refs::ObjectId) -> refstore_refs::value::Peeled {
        use refstore_refs::value::Peeled;
        let peeler = self
            .peeler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match peeler.and_then(|p| p.peel(id)) {
            Some(peeled) => Peeled::Tag(peeled),
            None => Peeled::Unknown,
        }
    }

    /// True if etcd holds any ref of the repository.
    pub fn has_refs(&self) -> Result<bool, ReadError> {
        let (start, end) = self.keys.refs_starting_with(b"");
        self.cluster
            .etcd
            .call(Consistency::Quorum, move |mut client| {
                let options = etcd_client::GetOptions::new()
                    .with_range(end.clone())
                    .with_count_only();
                let start = start.clone();
                async move { Ok(client.get(start, Some(options)).await?.count() > 0) }
            })
            .map_err(unavailable)
    }

    /// The stored value of `name`: linearizable, or, without a quorum,
    /// what a reachable member holds.
    fn value(&self, name: &RefName) -> Result<Option<Value>, ReadError> {
        let key = self.keys.reference(name.as_bytes());
        let get = |consistency: Consistency| {
            let key = key.clone();
            self.cluster.etcd.call(consistency, move |mut client| {
                let options = match consistency {
                    Consistency::Quorum => None,
                    Consistency::Local => Some(etcd_client::GetOptions::new().with_serializable()),
                };
                let key = key.clone();
                async move {
                    let mut response = client.get(key, options).await?;
                    Ok(response.take_kvs().pop().map(|kv| kv.into_key_value().1))
                }
            })
        };
        let raw = match get(Consistency::Quorum) {
            Ok(raw) => raw,
            Err(EtcdError::Unreachable(e)) => {
                tracing::warn!("{e}; reading {name} from a member's own copy");
                get(Consistency::Local).map_err(unavailable)?
            }
            Err(e) => return Err(unavailable(e)),
        };
        raw.map(|raw| Value::decode(name.as_bytes(), &raw, self.format))
            .transpose()
            .map_err(|e| ReadError::Unavailable(e.to_string()))
    }

    /// The node's current copy of the repository's refs.
    fn snapshot(&self) -> Result<Arc<crate::cache::Refs>, ReadError> {
        let cache = self.cluster.caches.repo(&self.keys);
        match cache.refs(&self.cluster.etcd, &self.keys, self.format) {
            Ok(Fresh::Current(refs)) => Ok(refs),
            Ok(Fresh::Stale(refs, e)) => {
                tracing::warn!("{e}; listing refs from the last copy this node has");
                Ok(refs)
            }
            Err(e) => Err(unavailable(e)),
        }
    }
}

/// A failed etcd call as a read error.
pub(crate) fn unavailable(e: EtcdError) -> ReadError {
    ReadError::Unavailable(e.to_string())
}

fn to_ref(name: &[u8], value: &Value) -> Ref {
    Ref {
        name: RefName::from_trusted(name),
        target: value.target.clone(),
        peeled: value.peeled.id(),
    }
}

impl Backend for EtcdBackend {
    fn object_format(&self) -> ObjectFormat {
        self.format
    }

    fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        Ok(self
            .value(name)?
            .map(|value| to_ref(name.as_bytes(), &value)))
    }

    fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        let mut current = name.clone();
        for depth in 0..=SYMREF_MAX_DEPTH {
            match self.value(&current)? {
                None if depth == 0 => return Ok(None),
                None => {
                    return Ok(Some(Resolved {
                        name: current,
                        id: None,
                    }))
                }
                Some(value) => match value.target {
                    Target::Object(id) => {
                        return Ok(Some(Resolved {
                            name: current,
                            id: Some(id),
                        }))
                    }
                    Target::Symbolic(next) => current = next,
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
        let refs = self.snapshot()?;
        let from: Box<[u8]> = prefix.into();
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
                break;
            }
        }
        Ok(())
    }

    fn commit(&self, tx: &Transaction, options: &CommitOptions) -> Result<Outcome, CommitError> {
        crate::transaction::commit(self, tx, options)
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
        *self.peeler.lock().unwrap_or_else(|e| e.into_inner()) = Some(peeler);
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
        crate::transaction::commit(self.backend, &self.tx, self.options)
    }

    fn abort(self: Box<Self>) -> Result<(), CommitError> {
        Ok(())
    }
}

//! A node's link to its cluster ([`Cluster`]) and the handle on one
//! repository's refs in etcd ([`EtcdBackend`]): what the ref store
//! ([`crate::backend`]), its transactions and the import share.

use crate::cache::{Caches, Fresh, Refs};
use crate::config::ClusterConfig;
use crate::etcd::{unavailable, Consistency, Etcd, EtcdError};
use crate::keys::{RepoKeys, Value};
use refstore_refs::{ObjectFormat, PeelObjects, ReadError, RefName};
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
    pub(crate) fn value(&self, name: &RefName) -> Result<Option<Value>, ReadError> {
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
    pub(crate) fn snapshot(&self) -> Result<Arc<Refs>, ReadError> {
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

    /// Lends the store a way to peel tags, for the peeled values it
    /// records.
    pub(crate) fn lend_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        *self.peeler.lock().unwrap_or_else(|e| e.into_inner()) = Some(peeler);
    }
}

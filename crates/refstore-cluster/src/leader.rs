//! Which node does the cluster's housekeeping ([`crate::housekeeping`]):
//! one node at a time holds a leader key bound to an etcd lease.
//!
//! A node becomes the leader by writing the key on condition that it does
//! not exist, attached to a lease of its own; it stays the leader while it
//! renews the lease within the lease's time to live. A leader that dies or
//! loses etcd stops renewing, the lease expires, etcd removes the key, and
//! the next node that tries takes over. Leading is advisory: every task
//! the leader runs is safe to run twice (compacting to a revision already
//! compacted, defragmenting again, deleting records already gone), so a
//! leader paused past its lease while another took over does no harm.

use crate::cluster::Cluster;
use crate::etcd::{Consistency, Etcd, EtcdError};
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use std::sync::Arc;
use std::time::Duration;

/// One node's claim on the leadership of a task.
#[derive(Debug)]
pub struct Leadership {
    etcd: Arc<Etcd>,
    key: Vec<u8>,
    node: String,
    ttl: Duration,
    /// The lease this node holds the key with, while it leads.
    lease: Option<i64>,
}

impl Leadership {
    /// This node's claim on the leader key `key`, with leases of `ttl`
    /// (at least a second; renew more often than that).
    pub fn new(cluster: &Cluster, key: Vec<u8>, ttl: Duration) -> Leadership {
        Leadership {
            etcd: cluster.etcd().clone(),
            key,
            node: cluster.config.node.clone(),
            ttl: ttl.max(Duration::from_secs(1)),
            lease: None,
        }
    }

    /// Renews this node's lease, or tries to take the key if nobody holds
    /// it; true if this node leads now.
    pub fn try_lead(&mut self) -> Result<bool, EtcdError> {
        if let Some(lease) = self.lease {
            if self.renew(lease)? && self.holder()? == Some(lease) {
                return Ok(true);
            }
            self.lease = None;
        }
        let ttl = self.ttl.as_secs() as i64;
        let lease = self
            .etcd
            .call(Consistency::Quorum, move |mut client| async move {
                Ok(client.lease_grant(ttl, None).await?.id())
            })?;
        let key = self.key.clone();
        let node = self.node.clone();
        let won = self.etcd.call(Consistency::Quorum, move |mut client| {
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    key.clone(),
                    node.clone(),
                    Some(PutOptions::new().with_lease(lease)),
                )]);
            async move { Ok(client.txn(txn).await?.succeeded()) }
        })?;
        if won {
            self.lease = Some(lease);
        } else {
            self.revoke(lease);
        }
        Ok(won)
    }

    /// Gives the leadership up at once, for another node to take.
    pub fn resign(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.revoke(lease);
        }
    }

    /// The node named in the leader key, if any.
    pub fn leader(&self) -> Result<Option<String>, EtcdError> {
        let key = self.key.clone();
        self.etcd.call(Consistency::Quorum, move |mut client| {
            let key = key.clone();
            async move {
                let response = client.get(key, None).await?;
                Ok(response
                    .kvs()
                    .first()
                    .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
            }
        })
    }

    /// Renews `lease`; false if it has expired.
    fn renew(&self, lease: i64) -> Result<bool, EtcdError> {
        self.etcd
            .call(Consistency::Quorum, move |mut client| async move {
                let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
                keeper.keep_alive().await?;
                Ok(stream.message().await?.is_some_and(|r| r.ttl() > 0))
            })
    }

    /// The lease the leader key is held with, if it exists.
    fn holder(&self) -> Result<Option<i64>, EtcdError> {
        let key = self.key.clone();
        self.etcd.call(Consistency::Quorum, move |mut client| {
            let key = key.clone();
            async move {
                let response = client.get(key, None).await?;
                Ok(response.kvs().first().map(|kv| kv.lease()))
            }
        })
    }

    /// Revokes `lease`, which removes the key if it holds it; a failure is
    /// only logged, since the lease expires by itself.
    fn revoke(&self, lease: i64) {
        let revoked = self
            .etcd
            .call(Consistency::Quorum, move |mut client| async move {
                client.lease_revoke(lease).await.map(|_| ())
            });
        if let Err(e) = revoked {
            tracing::warn!("{e}; the lease expires by itself");
        }
    }
}

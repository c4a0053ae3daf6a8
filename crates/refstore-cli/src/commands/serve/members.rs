//! A cluster node follows the cluster's membership
//! ([`refstore_cluster::membership`]): at startup it takes the members
//! from etcd (the cluster file's `[nodes]` until etcd holds any) and
//! refuses to start if it is not one of them; then it reads them again
//! every [`POLL`] and points its replication at them, so quorums and
//! catch-ups reach an added node and leave a removed one without a
//! restart. A node that finds itself removed refuses every request with a
//! message that says so (its replication endpoint stays open, so what it
//! holds can still be copied from it).

use super::catalog::NodeCatalog;
use crate::context::Fatal;
use refstore_cluster::Cluster;
use refstore_replica::Replica;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How often a node reads the membership again: one small linearizable
/// etcd read.
pub const POLL: Duration = Duration::from_secs(2);

/// The members a node starts with: etcd's, or the file's while etcd holds
/// none or cannot be reached (the poll corrects it once etcd answers).
pub fn at_start(cluster: &Cluster) -> Result<BTreeMap<String, String>, Fatal> {
    let config = &cluster.config;
    let members = match cluster.members() {
        Ok(members) => members,
        Err(e) => {
            tracing::warn!("{e}; starting with the cluster file's [nodes] as the members");
            return Ok(config.nodes.clone());
        }
    };
    if members.in_etcd && !members.nodes.contains_key(&config.node) {
        return Err(Fatal::new(not_a_member(&config.node, &members.nodes)));
    }
    Ok(members.nodes)
}

fn not_a_member(node: &str, members: &BTreeMap<String, String>) -> String {
    let known: Vec<&str> = members.keys().map(String::as_str).collect();
    format!(
        "cluster: node '{node}' is not a member of the cluster (members: {}); add it with \
         `refstore cluster node add --cluster <file> {node} <url>`",
        known.join(", ")
    )
}

/// Follows the membership on a thread of its own for as long as the
/// process runs.
pub fn follow(cluster: Arc<Cluster>, replica: Option<Arc<Replica>>, catalog: Arc<NodeCatalog>) {
    std::thread::Builder::new()
        .name("refstore-members".into())
        .spawn(move || loop {
            std::thread::sleep(POLL);
            let members = match cluster.members() {
                Ok(members) => members,
                Err(e) => {
                    tracing::debug!("cannot read the cluster's members: {e}");
                    continue;
                }
            };
            let node = &cluster.config.node;
            let removed = members.in_etcd && !members.nodes.contains_key(node);
            catalog.set_removed(removed.then(|| {
                format!(
                    "cluster: node '{node}' was removed from the cluster; it serves nothing \
                     (use another node)"
                )
            }));
            if let Some(replica) = &replica {
                // A removed node neither sends packs nor catches up: it is
                // no longer counted among anyone's copies.
                match removed {
                    true => replica.set_members(Vec::new()),
                    false => replica.set_members(members.nodes.into_iter().collect()),
                }
            }
        })
        .expect("starting a thread at startup");
}

//! A push's objects on a quorum of refstore nodes.
//!
//! Every node of a cluster serves the same repositories. A push received
//! by one node is acknowledged only once `object_copies` nodes, this one
//! included, hold its packs durably; a node that missed packs (it was
//! down) fetches them from its peers before it serves a fetch that needs
//! them, and a background repair brings it up to date.
//!
//! - [`Peers`]: the configuration, as plain values.
//! - [`secret`]: how nodes authenticate to each other.
//! - [`packs`]: the local side of the replication endpoint (list, read,
//!   index a received pack durably), which `refstore serve` exposes.
//! - [`Replica`]: the remote side: sending a push's packs to peers until
//!   a quorum holds them, and catching up from peers
//!   ([`Replica::catch_up`], [`repair`]): in a cluster, only what etcd's
//!   refs reach and the node lacks ([`ClusterTips`]); and keeping every
//!   object on `object_copies` members ([`copies`]). [`Replica::for_repository`]
//!   gives a repository's steps: receive-pack's
//!   [`refstore_protocol::ObjectsStored`] and upload-pack's
//!   [`refstore_protocol::ObjectsWanted`].
#![deny(missing_docs, unsafe_code)]

mod catch_up;
mod catch_up_lacking;
mod client;
mod closure;
#[cfg(test)]
mod closure_tests;
pub mod copies;
mod idx;
pub mod packs;
mod peers;
mod quorum;
pub mod repair;
pub mod secret;
mod steps;
mod tips;

pub use packs::ENDPOINT_PREFIX;
pub use peers::Peers;
pub use peers::DEFAULT_TIMEOUT as DEFAULT_PEER_TIMEOUT;
pub use steps::ForRepository;
pub use tips::ClusterTips;

use client::Client;
use std::sync::atomic::AtomicU64;
use std::sync::RwLock;

/// What the repair of copies ([`copies`]) found and did, for the metrics.
#[derive(Debug, Default)]
pub struct CopiesStats {
    /// Packs of this node still held by fewer than `object_copies`
    /// members at the end of the last repair pass (after its copies).
    pub below_copies: AtomicU64,
    /// Packs sent to other members to restore `object_copies`, ever.
    pub packs_copied: AtomicU64,
}

/// A node's replication: its peers and a client to reach them.
#[derive(Debug)]
pub struct Replica {
    peers: Peers,
    client: Client,
    /// The cluster's refs, which decide what catching up copies.
    tips: std::sync::OnceLock<std::sync::Arc<dyn ClusterTips>>,
    /// Where the last catch-up's walk may stop.
    complete: tips::CompleteTips,
    /// The cluster's members now (name, URL), this node included: the
    /// configuration's at first, then whatever [`Replica::set_members`]
    /// says as the membership changes. Quorums and catch-ups read it
    /// afresh each time, so a removed node stops being sent packs and an
    /// added one starts being sent them without a restart.
    members: RwLock<Vec<(String, String)>>,
    /// What the repair of `object_copies` found and did.
    pub copies: CopiesStats,
}

impl Replica {
    /// Replication as `peers` configures it.
    pub fn new(peers: Peers) -> Replica {
        let client = Client::new(&peers.secret, peers.timeout);
        let members = RwLock::new(peers.nodes.clone());
        Replica {
            peers,
            client,
            tips: std::sync::OnceLock::new(),
            complete: Default::default(),
            members,
            copies: CopiesStats::default(),
        }
    }

    /// Its configuration.
    pub fn peers(&self) -> &Peers {
        &self.peers
    }

    /// Makes `members` (name, URL; this node included or not) the nodes
    /// the replication talks to from now on.
    pub fn set_members(&self, members: Vec<(String, String)>) {
        let mut current = self.members.write().unwrap_or_else(|e| e.into_inner());
        if *current != members {
            tracing::info!(?members, "the cluster's members changed");
            *current = members;
        }
    }

    /// The other members now: name and base URL.
    pub fn others(&self) -> Vec<(String, String)> {
        let members = self.members.read().unwrap_or_else(|e| e.into_inner());
        members
            .iter()
            .filter(|(name, _)| *name != self.peers.this_node)
            .cloned()
            .collect()
    }
}

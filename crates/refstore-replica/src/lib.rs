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
//!   refs reach and the node lacks ([`ClusterTips`]). [`Replica::for_repository`]
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

/// A node's replication: its peers and a client to reach them.
#[derive(Debug)]
pub struct Replica {
    peers: Peers,
    client: Client,
    /// The cluster's refs, which decide what catching up copies.
    tips: std::sync::OnceLock<std::sync::Arc<dyn ClusterTips>>,
    /// Where the last catch-up's walk may stop.
    complete: tips::CompleteTips,
}

impl Replica {
    /// Replication as `peers` configures it.
    pub fn new(peers: Peers) -> Replica {
        let client = Client::new(&peers.secret, peers.timeout);
        Replica {
            peers,
            client,
            tips: std::sync::OnceLock::new(),
            complete: Default::default(),
        }
    }

    /// Its configuration.
    pub fn peers(&self) -> &Peers {
        &self.peers
    }
}

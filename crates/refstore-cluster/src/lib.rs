//! refstore's cluster mode: several nodes serve the same repositories, and
//! the refs of every repository live in etcd, so that a push through any
//! node is atomic, compare-and-swap against every other node, and seen by
//! every node as soon as it is acknowledged.
//!
//! - [`config`]: the cluster file.
//! - [`etcd`]: the connection to etcd's members, with failover and bounded
//!   waits.
//! - [`keys`]: the key layout and how values are stored.
//! - [`cluster`]: a node's link to the cluster, and the handle on a
//!   repository's refs in etcd.
//! - [`backend`]: the ref store ([`refstore_refs::Backend`]) of a
//!   repository in etcd.
//! - [`transaction`]: ref transactions as etcd transactions.
//! - [`cache`]: each node's watched copy of a repository's refs, for
//!   advertisements.
//! - [`import`]: seeding etcd with a repository's existing refs.
//! - [`records`]: each repository's record (held or deleted, formats,
//!   HEAD, incarnation) and the names repositories may have.
//! - [`lifecycle`]: creating, deleting, renaming and listing repositories,
//!   and watching their records.
//! - [`membership`]: which nodes make up the cluster, kept in etcd.
//! - [`housekeeping`]: expiring reflog records, compacting and
//!   defragmenting etcd, by one node at a time ([`leader`]).
#![deny(missing_docs, unsafe_code)]

pub mod backend;
pub mod cache;
pub mod cluster;
pub mod config;
pub mod etcd;
pub mod housekeeping;
pub mod import;
pub mod keys;
pub mod leader;
pub mod lifecycle;
pub mod membership;
pub mod records;
mod transaction;

pub use cluster::{Cluster, EtcdBackend};
pub use config::ClusterConfig;

//! The network server of `refstore serve`: smart HTTP and HTTPS
//! ([`http`]) and a built-in SSH server ([`ssh`]), and what they share:
//! logins and access rules, path confinement, limits and turns to run
//! services, access logs and metrics, background maintenance after
//! pushes, graceful shutdown, the replication endpoint of a cluster's
//! nodes, and the catalog of servable repositories with its admin
//! endpoint.
//!
//! Serving over standard input and output, as sshd and git's `file://`
//! transport run a service, is not here: `refstore upload-pack` and
//! `refstore receive-pack` (refstore-cli) call [`refstore_protocol`]
//! directly.
#![deny(missing_docs, unsafe_code)]

pub mod access;
pub mod auth;
pub mod authorize;
pub mod capacity;
pub mod catalog;
pub mod confine;
pub mod health;
pub mod http;
pub mod maintenance;
pub mod metrics;
pub mod metrics_endpoint;
pub mod options;
pub mod per_address;
mod permits;
pub mod ref_source;
pub mod service;
pub mod shutdown;
pub mod ssh;
pub mod throttle;

pub use auth::Credentials;
pub use capacity::Capacity;
pub use http::Server;
pub use options::ServeOptions;

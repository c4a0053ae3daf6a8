//! Transports for the wire protocol: stdio (for ssh and `file://`), smart
//! HTTP and a built-in SSH server, with authentication, path confinement
//! and access logging.
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

//! Serving repositories whose refs are kept somewhere other than their own
//! ref store (a cluster's etcd): the server opens each repository as usual
//! and then asks the [`RefSource`] for its refs
//! ([`ServeOptions::open_repository`](crate::ServeOptions::open_repository)).

use refstore_protocol::repository::Repository;
use refstore_refs::backend::Backend;
use std::sync::Arc;
use std::time::Instant;

/// Where the refs of served repositories come from.
pub trait RefSource: Send + Sync + std::fmt::Debug {
    /// The ref store of `repo`, the repository below the served root
    /// named `name` ([`Served::name`](crate::confine::Served::name)):
    /// with `request`, for the one client request that began then
    /// ([`Served::found`](crate::confine::Served::found)), whose reads may
    /// share what was confirmed since; without, for work that outlives a
    /// request (housekeeping), each of whose reads is current when made.
    fn refs(&self, repo: &Repository, name: &str, request: Option<Instant>) -> Arc<dyn Backend>;
}

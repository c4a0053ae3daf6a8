//! The HTTP and HTTPS transport with the machine's real git, the server
//! running in the test's process: clone, fetch, ls-remote and push in
//! protocol v0 and v2, who may read and push, shallow and partial clones,
//! malformed pushes, large objects, the pack cache, what is counted in the
//! metrics, and how a stop treats the connections it finds.

#[path = "../support/mod.rs"]
mod support;

mod access;
mod bad_push;
mod clients;
mod https;
mod large;
mod metrics;
mod pack_cache;
mod shallow;
mod shutdown;

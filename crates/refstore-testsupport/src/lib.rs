//! What the integration tests of every refstore crate share, so that a
//! set-up lives in one place: running git and JGit, the environment they
//! run in, the repositories tests start from, server processes, etcd
//! clusters, HAProxy in front of servers and SSH clients, the
//! linearizability checker, a strict reader of Prometheus metrics, the
//! bounds and seeds of stress tests with one seeded generator, the
//! fault-matrix driver, a TCP proxy that plays network partitions,
//! fetches compared between refstore's upload-pack and git's, and a relay
//! that lets git reach a server run inside the test process.
//!
//! Only tests use this crate (as a dev-dependency); it is not published.
//! A crate's `tests/support` keeps what is specific to that crate and
//! re-exports what it takes from here.

pub mod env;
pub mod etcd;
pub mod explore;
pub mod fault_proxy;
pub mod faults;
pub mod fetch_history;
pub mod fetch_pair;
pub mod fixtures;
pub mod git;
pub mod haproxy;
pub mod jgit;
pub mod names;
pub mod pkt_line;
pub mod porcupine;
pub mod process;
pub mod prometheus;
pub mod relay;
pub mod rng;
pub mod server;
pub mod ssh;
pub mod stress;

pub use env::isolate;
pub use git::{git, git_ok, Git};
pub use process::{run_with_input, stderr, stdout};

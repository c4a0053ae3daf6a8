//! The parts of the third-party client interop suite (`interop_clients.rs`):
//! the clients and their drivers, the servers (refstore's and git's own as
//! the control), the repositories served, the operations and the matrix.

pub mod cgi;
pub mod clients;
pub mod fixtures;
pub mod jgit_sessions;
pub mod matrix;
pub mod ops;
pub mod servers;
pub mod sshd;

//! The byte-level comparison of refstore's upload-pack and receive-pack
//! with git's: generated repositories and requests, the servers run on
//! the same bytes, and the answers compared as pkt-line streams.

pub mod compare;
pub mod differences;
pub mod fetch_requests;
pub mod history;
pub mod packs;
pub mod push_requests;
pub mod rng;
pub mod server;
pub mod stream;

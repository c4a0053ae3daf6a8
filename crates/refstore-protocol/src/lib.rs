//! Git's wire protocol, independent of the transport that carries it:
//! pkt-line I/O ([`pkt_line`]), upload-pack (protocol v0, v1 and v2) with
//! its pack cache ([`upload_pack`], [`pack_cache`]), receive-pack
//! ([`receive_pack`]), the limits every transport applies ([`limits`]),
//! and the repository opened for serving, with the steps a deployment adds
//! around a push's objects and a fetch's wants ([`repository`]).
#![deny(missing_docs, unsafe_code)]

#[doc(hidden)]
pub mod fuzzing;
pub mod limits;
mod objects_wanted;
pub mod pack_cache;
pub mod pkt_line;
pub mod receive_pack;
pub mod repository;
pub mod upload_pack;
pub mod version;

pub use repository::{ObjectsStored, ObjectsWanted, Repository};
pub use version::ProtocolVersion;

//! Git's wire protocol: buffered pkt-line I/O, upload-pack (protocol v0 and
//! v2) and receive-pack, independent of the transport that carries them.
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

//! Object ids and object formats: the one id type of refstore.
//!
//! Every layer names objects with [`ObjectId`]: the ref store (values of
//! refs), the object database, the protocol and housekeeping. gitoxide's
//! crates, which read objects and packs, use their own id type; the
//! conversions between the two live here, once
//! ([`ObjectId::to_gix`], [`ObjectId::as_gix`], [`ObjectId::from_gix`]).
//! Maps keyed by ids hash them with [`IdHasher`].
#![deny(missing_docs, unsafe_code)]

mod hex;
mod id_hasher;
mod oid;

pub use id_hasher::{IdHash, IdHasher};
pub use oid::{ObjectFormat, ObjectId, ParseOidError};

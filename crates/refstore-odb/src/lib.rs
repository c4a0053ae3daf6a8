//! Objects: reading through gitoxide, durable loose-object and pack ingestion,
//! and connectivity checks.
//!
//! [`Odb`] reads objects of either format (SHA-1, SHA-256) from loose files,
//! packs and alternates, and peels annotated tags:
//!
//! ```no_run
//! use refstore_odb::{ObjectKind, Odb};
//! use refstore_refs::{ObjectFormat, ObjectId};
//!
//! let odb = Odb::open(".git/objects".as_ref(), ObjectFormat::Sha1)?;
//! let id: ObjectId = "0123456789abcdef0123456789abcdef01234567".parse()?;
//! if odb.kind(&id)? == Some(ObjectKind::Tag) {
//!     println!("{id} peels to {:?}", odb.peel(&id)?);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod error;
mod kind;
mod odb;

pub use error::OdbError;
pub use kind::ObjectKind;
pub use odb::Odb;

//! An opened repository: the handle every service, housekeeping and
//! plumbing command works on.
//!
//! [`Repository::open_location`] is the one place a repository is opened:
//! its configuration is loaded and checked, abandoned lock files are
//! recovered (`refstore.staleLockAge`), and the ref store and the object
//! database are opened on first use, once, and shared by everything that
//! holds the handle, the tag peeler the ref store is lent included.
#![deny(missing_docs, unsafe_code)]

mod error;
mod objects;
mod repository;
mod tag_peeler;

pub use error::OpenError;
pub use repository::Repository;
pub use tag_peeler::TagPeeler;

//! Resolving a path a client chose to a place inside a served root.
//!
//! A server maps request paths onto directories below its root. Rejecting
//! `..` in the request is not enough: a symbolic link inside the root may
//! point outside it. [`confine`] follows every link the way the kernel
//! would and accepts the result only if it still lies within the root.
//! [`repository`] finds the repository a request names the way git does
//! and confines the directory it would open, which is what servers use.

mod error;
mod path;
mod repository;

pub use error::ConfineError;
pub use path::{confine, resolve};
pub use repository::{repository, Served};

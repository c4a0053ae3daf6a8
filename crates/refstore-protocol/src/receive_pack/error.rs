//! Why a push could not be served at all. Failures of single ref updates
//! and of the pack are not errors of the call: the client is told about
//! them in the report.

use crate::pkt_line;
use refstore_refs::files::ReadError;

/// A failure of [`receive_pack`](super::receive_pack).
#[derive(Debug, thiserror::Error)]
pub enum ReceivePackError {
    /// The client's request is malformed or asks for something this server
    /// does not do; the message says which, in git's wording where git has
    /// one (`protocol error: expected old/new/ref, got '...'`).
    #[error("{0}")]
    Request(String),
    /// Reading or writing pkt-lines failed (malformed framing, a closed
    /// connection).
    #[error("{0}")]
    Packet(#[from] pkt_line::Error),
    /// The refs could not be read.
    #[error("cannot read the refs: {0}")]
    Refs(#[from] ReadError),
    /// The objects of the push cannot be read.
    #[error("{0}")]
    Objects(String),
    /// The configuration cannot be used for writing refs.
    #[error("{0}")]
    Config(String),
    /// The client sent more than the limits allow
    /// ([`crate::limits`]): the request, or its push options.
    #[error("{0}")]
    TooLarge(String),
}

impl ReceivePackError {
    /// A request error with `message`.
    pub(crate) fn request(message: impl Into<String>) -> Self {
        ReceivePackError::Request(message.into())
    }
}

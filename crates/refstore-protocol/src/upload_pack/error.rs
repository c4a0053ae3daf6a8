//! Why serving a fetch failed, split by who has to act: the client (a bad
//! request, told to it in an `ERR` packet or on side-band 3) or the server
//! (its repository or the connection).

use crate::pkt_line;
use refstore_refs::files::ReadError;

/// A failure of [`upload_pack`](super::upload_pack).
#[derive(Debug, thiserror::Error)]
pub enum UploadPackError {
    /// The client's request is invalid; the message was sent to the client
    /// as well, in git's wording (e.g. `upload-pack: not our ref <id>`).
    #[error("{0}")]
    Request(String),
    /// Reading or writing pkt-lines failed (malformed input, a closed
    /// connection).
    #[error("{0}")]
    Packet(#[from] pkt_line::Error),
    /// The refs could not be read.
    #[error("cannot read the refs: {0}")]
    Refs(#[from] ReadError),
    /// An object could not be read or the pack could not be written.
    #[error("{0}")]
    Objects(String),
}

impl UploadPackError {
    /// A request error with `message`.
    pub(crate) fn request(message: impl Into<String>) -> Self {
        UploadPackError::Request(message.into())
    }

    /// An object database error described by `context` and its cause.
    pub(crate) fn objects(context: &str, cause: impl std::fmt::Display) -> Self {
        UploadPackError::Objects(format!("{context}: {cause}"))
    }

    /// What to show the client: the message of a request error, or a
    /// short description of a server-side failure.
    pub(crate) fn client_message(&self) -> String {
        match self {
            UploadPackError::Request(message) => message.clone(),
            other => format!("upload-pack: {other}"),
        }
    }
}

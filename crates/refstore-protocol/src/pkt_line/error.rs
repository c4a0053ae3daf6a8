//! Everything that can go wrong reading or writing pkt-lines. Messages follow
//! git's wording where git has one, so a user sees what they would see from
//! git itself.

use std::io;

use super::lengths::{MAX_DATA_LEN, MAX_PACKET_LEN};

/// A pkt-line failure. After any error other than [`Error::Remote`] the
/// stream's position is unknown and it should not be read or written further.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The underlying stream failed.
    #[error("pkt-line I/O failed: {0}")]
    Io(io::Error),
    /// The length header holds something other than four hex digits.
    #[error("protocol error: bad line length character: {}", .0.escape_ascii())]
    BadLengthCharacter([u8; 4]),
    /// The length header announces a packet shorter than its own header
    /// (`0003`).
    #[error("protocol error: bad line length {0}")]
    BadLength(usize),
    /// The length header announces more than [`MAX_PACKET_LEN`] bytes.
    #[error(
        "protocol error: bad line length {0} (a packet is at most {MAX_PACKET_LEN} bytes, \
         its 4-byte header included)"
    )]
    LengthTooLarge(usize),
    /// A protocol v2 special packet arrived in a v0/v1 stream.
    #[error("protocol error: unexpected {0} in a protocol v0/v1 stream")]
    V2PacketOutsideV2(&'static str),
    /// The stream ended inside a packet.
    #[error(
        "the remote end hung up unexpectedly (after {received} of the {expected} bytes of a \
         packet's {part})"
    )]
    UnexpectedEof {
        /// `"length header"` or `"payload"`.
        part: &'static str,
        /// Bytes of that part that did arrive.
        received: usize,
        /// Bytes of that part that were due.
        expected: usize,
    },
    /// The peer reported an error: an `ERR ` packet, or a message on
    /// side-band 3. The text is the peer's, without the marker.
    #[error("remote error: {0}")]
    Remote(String),
    /// A payload too large for one packet was given to a writer.
    #[error(
        "pkt-line payload of {0} bytes is too long: one packet carries at most {MAX_DATA_LEN} \
         bytes; split the data into several packets"
    )]
    PayloadTooLong(usize),
    /// A `Display` implementation failed while formatting a packet.
    #[error("a value could not be formatted into a pkt-line")]
    Format,
    /// A side-band packet without the band byte.
    #[error("protocol error: no band designator")]
    NoBand,
    /// A side-band packet for a band other than 1, 2 or 3.
    #[error("protocol error: bad band #{0}")]
    BadBand(u8),
    /// A side-band stream held a special packet other than its closing
    /// flush-pkt.
    #[error("protocol error: unexpected {0} in a side-band stream")]
    SidebandFraming(&'static str),
    /// A side-band stream ended without its closing flush-pkt.
    #[error("the remote end hung up unexpectedly: the side-band stream ended without a flush-pkt")]
    SidebandUnterminated,
}

impl From<io::Error> for Error {
    /// Wraps an I/O error, unwrapping instead when it carries an [`Error`]
    /// (as the side-band adapters' `io::Read`/`io::Write` errors do).
    fn from(err: io::Error) -> Self {
        if err.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            let inner = err.into_inner().expect("checked above");
            return *inner.downcast::<Error>().expect("checked above");
        }
        Error::Io(err)
    }
}

impl From<Error> for io::Error {
    /// Carries a pkt-line error through `io::Read`/`io::Write`; it can be
    /// recovered with `Error::from`.
    fn from(err: Error) -> Self {
        match err {
            Error::Io(err) => err,
            Error::UnexpectedEof { .. } | Error::SidebandUnterminated => {
                io::Error::new(io::ErrorKind::UnexpectedEof, err)
            }
            err => io::Error::new(io::ErrorKind::InvalidData, err),
        }
    }
}

//! How long a packet may be: the sizes the header, the reader, the writer
//! and the errors that name them share.

/// Size of the length header that starts every packet.
pub(crate) const HEADER_LEN: usize = 4;

/// The largest packet, its four-byte length header included (git's
/// `LARGE_PACKET_MAX`).
pub const MAX_PACKET_LEN: usize = 65520;

/// The largest payload of one packet: [`MAX_PACKET_LEN`] less the header.
pub const MAX_DATA_LEN: usize = MAX_PACKET_LEN - HEADER_LEN;

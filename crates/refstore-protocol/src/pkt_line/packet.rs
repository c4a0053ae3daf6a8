//! The packets a reader yields, and which special packets a stream may carry.

/// One packet read from a stream. Data borrows the reader's buffer and is
/// valid until the next read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A data packet's payload (possibly empty: git accepts `0004`).
    Data(&'a [u8]),
    /// `0000` flush-pkt: the end of a message.
    Flush,
    /// `0001` delim-pkt: separates the sections of a protocol v2 message.
    Delim,
    /// `0002` response-end-pkt: the end of a stateless protocol v2 response.
    ResponseEnd,
}

impl<'a> Packet<'a> {
    /// The payload of a data packet, or `None` for a special packet.
    pub fn data(self) -> Option<&'a [u8]> {
        match self {
            Packet::Data(data) => Some(data),
            _ => None,
        }
    }

    /// The same packet with one trailing LF removed from a data payload:
    /// text lines are sent with an LF that receivers must not require.
    pub fn without_lf(self) -> Self {
        match self {
            Packet::Data(data) => Packet::Data(data.strip_suffix(b"\n").unwrap_or(data)),
            special => special,
        }
    }
}

/// Which special packets a stream may contain. Reading `0001` or `0002` from
/// a [`Dialect::V0`] stream is an error, so a v0/v1 peer cannot slip protocol
/// v2 framing into a conversation that never negotiated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Protocol v0 and v1: flush-pkt is the only special packet.
    V0,
    /// Protocol v2: flush-pkt, delim-pkt and response-end-pkt.
    V2,
}

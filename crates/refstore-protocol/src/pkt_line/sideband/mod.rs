//! Side-band multiplexing (capabilities `side-band` and `side-band-64k`):
//! once negotiated, every packet's first byte names a band — 1 for pack
//! data, 2 for progress text, 3 for a fatal error — so progress can be
//! shown while the pack streams. A flush-pkt ends the stream.
//!
//! [`SidebandWriter`] splits data into packets of the negotiated size;
//! [`SidebandReader`] joins band 1 back into an [`std::io::Read`], hands band
//! 2 to a callback and turns band 3 into [`Error::Remote`](super::Error::Remote).

mod demux;
mod mux;

pub use demux::SidebandReader;
pub use mux::SidebandWriter;

use super::MAX_PACKET_LEN;

/// A band of a side-band stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    /// Band 1: the primary data (pack bytes).
    Data = 1,
    /// Band 2: progress messages for the user.
    Progress = 2,
    /// Band 3: a fatal error message; the stream ends after it.
    Error = 3,
}

/// The negotiated side-band capability, which bounds the packet size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidebandMode {
    /// `side-band`: packets of at most 1000 bytes.
    SideBand,
    /// `side-band-64k`: packets of up to the full 65520 bytes.
    SideBand64k,
}

impl SidebandMode {
    /// The most bytes of a band's content one packet carries: the packet
    /// limit less the 4-byte header and the band byte (995 or 65515).
    pub fn max_content_len(self) -> usize {
        let packet_len = match self {
            SidebandMode::SideBand => 1000,
            SidebandMode::SideBand64k => MAX_PACKET_LEN,
        };
        packet_len - 4 - 1
    }
}

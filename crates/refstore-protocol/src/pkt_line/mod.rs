//! pkt-line framing, the packet format every part of Git's wire protocol
//! rides on: a strict [`PacketReader`], a buffered [`PacketWriter`], and the
//! side-band multiplexing of data, progress and errors on top of them.
//!
//! A packet is four hexadecimal digits giving its total length (the four
//! digits included) followed by that many bytes less four of payload, at most
//! [`MAX_PACKET_LEN`] bytes in all. Lengths below four are special packets:
//! `0000` flush-pkt ends a message; protocol v2 adds `0001` delim-pkt between
//! sections and `0002` response-end-pkt after a stateless response.
//!
//! # Reading
//!
//! [`PacketReader`] reads exactly one packet at a time from any
//! [`std::io::Read`] into one reusable buffer and never reads ahead, because in
//! receive-pack raw pack bytes follow the last packet on the same stream. Pass
//! a [`std::io::BufReader`] when the source is a raw descriptor and take it
//! back with [`PacketReader::into_inner`]: its buffered bytes are kept.
//! Malformed input is a typed [`Error`] whose message follows git's wording
//! (`protocol error: bad line length character: zz0a`), never a panic.
//!
//! # Writing
//!
//! [`PacketWriter`] owns its buffer: packets accumulate and reach the inner
//! writer only when a flush-pkt or response-end-pkt is written, when
//! [`PacketWriter::flush_buffered`] is called, or when the next packet would
//! take the buffer past [`WRITE_BUFFER_LIMIT`]. An advertisement of a million
//! refs is thus a few hundred `write(2)` calls, not a million.
//!
//! # Why not gix-packetline
//!
//! gitoxide's `gix-packetline` was considered and not used, because three
//! requirements here differ from its choices: its decoder rejects the empty
//! packet `0004`, which git itself accepts as empty data (so a strict but
//! git-compatible reader must take it); it accepts `0001`/`0002` in every
//! stream, where a v0/v1 server must refuse them; and its writer encodes each
//! packet straight into the inner writer, leaving buffering to a wrapping
//! `BufWriter` whose flushes are not tied to flush-pkts. The framing itself is
//! a four-digit header, so owning it costs less than adapting around those
//! differences, and lets the errors carry git's messages.
//!
//! # Example
//!
//! ```
//! use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader, PacketWriter};
//!
//! let mut writer = PacketWriter::new(Vec::new());
//! writer.write_text("want 0123")?;
//! writer.write_flush()?;
//! let bytes = writer.into_inner()?;
//! assert_eq!(bytes, b"000ewant 0123\n0000");
//!
//! let mut reader = PacketReader::new(&bytes[..], Dialect::V0);
//! assert_eq!(reader.read_text()?, Some(Packet::Data(b"want 0123")));
//! assert_eq!(reader.read()?, Some(Packet::Flush));
//! assert_eq!(reader.read()?, None);
//! # Ok::<(), refstore_protocol::pkt_line::Error>(())
//! ```

mod error;
mod header;
mod lengths;
mod packet;
mod reader;
pub mod sideband;
mod writer;

pub use error::Error;
pub use lengths::{MAX_DATA_LEN, MAX_PACKET_LEN};
pub use packet::{Dialect, Packet};
pub use reader::PacketReader;
pub use writer::PacketWriter;

/// How many bytes [`PacketWriter`] hands to its inner writer at most in one
/// buffered write. A whole packet always fits, since it is smaller.
pub const WRITE_BUFFER_LIMIT: usize = 64 * 1024;

//! The buffered packet writer.

use std::fmt;
use std::io::{self, IoSlice, Write};

use super::header;
use super::lengths::HEADER_LEN;
use super::{Error, MAX_DATA_LEN, WRITE_BUFFER_LIMIT};

/// A packet's last part at least this large is not copied into the buffer
/// when the packet does not fit: it goes out straight from the caller's
/// memory, in one vectored write with the pending bytes. Pack data on
/// side-band 1 takes this path; small packets are cheaper to copy.
const ZERO_COPY_MIN: usize = 16 * 1024;

/// Writes packets into its own buffer and hands them to `W` in large writes.
///
/// Bytes reach `W` only when a flush-pkt or response-end-pkt is written (each
/// ends a message the peer waits for, so `W` is flushed too), on
/// [`flush_buffered`](PacketWriter::flush_buffered), or when the next packet
/// would take the buffer past [`WRITE_BUFFER_LIMIT`]: then the pending bytes
/// are written first, and the packet starts the next buffer — unless its last
/// part is large (pack data), which then goes out in the same vectored write,
/// uncopied. A delim-pkt does not end a message and stays buffered.
///
/// Bytes still buffered when the writer is dropped are discarded, since a
/// drop cannot report a failed write: end with a flush or use
/// [`into_inner`](PacketWriter::into_inner). After an I/O error the peer may
/// have received part of the buffer; the writer should be abandoned.
#[derive(Debug)]
pub struct PacketWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> PacketWriter<W> {
    /// A writer with an empty buffer of [`WRITE_BUFFER_LIMIT`] bytes.
    pub fn new(inner: W) -> Self {
        PacketWriter {
            inner,
            buf: Vec::with_capacity(WRITE_BUFFER_LIMIT),
        }
    }

    /// Writes one data packet carrying `data`.
    pub fn write_data(&mut self, data: &[u8]) -> Result<(), Error> {
        self.write_parts(&[data])
    }

    /// Writes one data packet carrying `line` and an LF.
    pub fn write_text(&mut self, line: &str) -> Result<(), Error> {
        self.write_parts(&[line.as_bytes(), b"\n"])
    }

    /// Writes one data packet whose payload is `parts` joined, without
    /// joining them first (e.g. `[oid, b" ", name, b"\n"]`).
    pub fn write_parts(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        let payload_len = parts
            .iter()
            .fold(0usize, |sum, part| sum.saturating_add(part.len()));
        if payload_len > MAX_DATA_LEN {
            return Err(Error::PayloadTooLong(payload_len));
        }
        let packet_len = HEADER_LEN + payload_len;
        if self.buf.len() + packet_len > WRITE_BUFFER_LIMIT {
            if let Some((last, leading)) = parts.split_last() {
                if last.len() >= ZERO_COPY_MIN {
                    self.push(packet_len, leading);
                    let mut slices = [IoSlice::new(&self.buf), IoSlice::new(last)];
                    write_all_vectored(&mut self.inner, &mut slices)?;
                    self.buf.clear();
                    return Ok(());
                }
            }
            self.write_pending()?;
        }
        self.push(packet_len, parts);
        Ok(())
    }

    /// Writes one data packet whose payload is the formatted `args`, built in
    /// place in the buffer without a temporary string. This makes
    /// `writeln!(writer, "{oid} {name}")` write one packet (LF included).
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), Error> {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0; HEADER_LEN]);
        if fmt::write(&mut VecSink(&mut self.buf), args).is_err() {
            self.buf.truncate(start);
            return Err(Error::Format);
        }
        let packet_len = self.buf.len() - start;
        if packet_len - HEADER_LEN > MAX_DATA_LEN {
            self.buf.truncate(start);
            return Err(Error::PayloadTooLong(packet_len - HEADER_LEN));
        }
        self.buf[start..start + HEADER_LEN].copy_from_slice(&header::encode(packet_len));
        if self.buf.len() > WRITE_BUFFER_LIMIT {
            // The size was only known after formatting: send what preceded
            // this packet and keep the packet as the start of the next write.
            self.inner.write_all(&self.buf[..start])?;
            self.buf.drain(..start);
        }
        Ok(())
    }

    /// Writes a flush-pkt (`0000`), then everything buffered, and flushes
    /// the inner writer: the peer can act on the message now.
    pub fn write_flush(&mut self) -> Result<(), Error> {
        self.buf.extend_from_slice(b"0000");
        self.flush_buffered()
    }

    /// Writes a delim-pkt (`0001`, protocol v2). It stays buffered.
    pub fn write_delim(&mut self) -> Result<(), Error> {
        self.buf.extend_from_slice(b"0001");
        Ok(())
    }

    /// Writes a response-end-pkt (`0002`, protocol v2), then everything
    /// buffered, and flushes the inner writer.
    pub fn write_response_end(&mut self) -> Result<(), Error> {
        self.buf.extend_from_slice(b"0002");
        self.flush_buffered()
    }

    /// Writes everything buffered and flushes the inner writer, e.g. before
    /// waiting for the peer in the middle of a message.
    pub fn flush_buffered(&mut self) -> Result<(), Error> {
        self.write_pending()?;
        self.inner.flush()?;
        Ok(())
    }

    /// How many bytes are buffered and not yet written.
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes everything buffered and returns the inner writer, e.g. to send
    /// raw bytes after the packets.
    pub fn into_inner(mut self) -> Result<W, Error> {
        self.flush_buffered()?;
        Ok(self.inner)
    }

    /// Appends a packet of `packet_len` bytes made of `parts` to the buffer.
    fn push(&mut self, packet_len: usize, parts: &[&[u8]]) {
        self.buf.extend_from_slice(&header::encode(packet_len));
        for part in parts {
            self.buf.extend_from_slice(part);
        }
    }

    fn write_pending(&mut self) -> Result<(), Error> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// `fmt::Write` into the buffer, for [`PacketWriter::write_fmt`].
struct VecSink<'a>(&'a mut Vec<u8>);

impl fmt::Write for VecSink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Writes all of `slices`, resuming after partial and interrupted writes
/// (`Write::write_all_vectored` is not stable).
fn write_all_vectored(inner: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match inner.write_vectored(slices) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the peer accepted no more bytes",
                ))
            }
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

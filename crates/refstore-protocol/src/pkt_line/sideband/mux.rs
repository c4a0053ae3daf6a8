//! Writing a side-band stream.

use std::io::{self, Write};

use super::{Band, SidebandMode};
use crate::pkt_line::{Error, PacketWriter};

/// Multiplexes data, progress and errors onto a [`PacketWriter`].
///
/// Content larger than one packet is split at the mode's limit. Large chunks
/// of band 1 reach the inner writer without being copied into the packet
/// buffer (see [`PacketWriter::write_parts`]). As an [`io::Write`] it carries
/// band 1, so a pack can be written into it directly; `io::Write::flush`
/// flushes the packet writer.
#[derive(Debug)]
pub struct SidebandWriter<'a, W: Write> {
    packets: &'a mut PacketWriter<W>,
    max_content_len: usize,
}

impl<'a, W: Write> SidebandWriter<'a, W> {
    /// A side-band writer on `packets` for the negotiated `mode`.
    pub fn new(packets: &'a mut PacketWriter<W>, mode: SidebandMode) -> Self {
        SidebandWriter {
            packets,
            max_content_len: mode.max_content_len(),
        }
    }

    /// Writes `data` on band 1.
    pub fn write_data(&mut self, data: &[u8]) -> Result<(), Error> {
        self.write_band(Band::Data, data)
    }

    /// Writes a progress message on band 2. Git's clients print it after
    /// `remote: `; end lines with LF, or CR to redraw a counter.
    pub fn write_progress(&mut self, message: &[u8]) -> Result<(), Error> {
        self.write_band(Band::Progress, message)
    }

    /// Writes a fatal error message on band 3 and sends everything buffered,
    /// so the peer sees it even if the stream is abandoned next.
    pub fn write_error(&mut self, message: &[u8]) -> Result<(), Error> {
        self.write_band(Band::Error, message)?;
        self.packets.flush_buffered()
    }

    /// Ends the stream with a flush-pkt and sends everything buffered.
    pub fn finish(self) -> Result<(), Error> {
        self.packets.write_flush()
    }

    fn write_band(&mut self, band: Band, content: &[u8]) -> Result<(), Error> {
        for chunk in content.chunks(self.max_content_len) {
            self.packets.write_parts(&[&[band as u8], chunk])?;
        }
        Ok(())
    }
}

impl<W: Write> Write for SidebandWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_data(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(self.packets.flush_buffered()?)
    }
}

//! Reading a side-band stream.

use std::io::{self, Read};
use std::ops::Range;

use crate::pkt_line::{Error, Packet, PacketReader};

/// Demultiplexes a side-band stream read from a [`PacketReader`]: band 1 is
/// this reader's bytes, band 2 goes to the `progress` callback as it arrives,
/// band 3 is an [`Error::Remote`]. The stream's flush-pkt is end of file; the
/// packet reader is then positioned just after it.
///
/// Errors come out of `io::Read` as `io::Error`s carrying a pkt-line
/// [`Error`]; `Error::from` recovers it.
pub struct SidebandReader<'a, R, P> {
    packets: &'a mut PacketReader<R>,
    progress: P,
    /// The part of the current band-1 payload not yet returned.
    unread: Range<usize>,
    finished: bool,
}

impl<'a, R: Read, P: FnMut(&[u8])> SidebandReader<'a, R, P> {
    /// A reader of the side-band stream that `packets` reads next.
    pub fn new(packets: &'a mut PacketReader<R>, progress: P) -> Self {
        SidebandReader {
            packets,
            progress,
            unread: 0..0,
            finished: false,
        }
    }

    /// Reads packets until band-1 bytes or the end of the stream.
    fn next_data(&mut self) -> Result<(), Error> {
        while self.unread.is_empty() && !self.finished {
            let content = match self.packets.read()? {
                None => return Err(Error::SidebandUnterminated),
                Some(Packet::Flush) => {
                    self.finished = true;
                    return Ok(());
                }
                Some(Packet::Delim) => return Err(Error::SidebandFraming("delim-pkt (0001)")),
                Some(Packet::ResponseEnd) => {
                    return Err(Error::SidebandFraming("response-end-pkt (0002)"))
                }
                Some(Packet::Data(content)) => content,
            };
            match content.first() {
                None => return Err(Error::NoBand),
                Some(1) => self.unread = 1..content.len(),
                Some(2) => (self.progress)(&content[1..]),
                Some(3) => {
                    let message = &content[1..];
                    let message = message.strip_suffix(b"\n").unwrap_or(message);
                    return Err(Error::Remote(String::from_utf8_lossy(message).into_owned()));
                }
                Some(&band) => return Err(Error::BadBand(band)),
            }
        }
        Ok(())
    }
}

impl<R: Read, P: FnMut(&[u8])> Read for SidebandReader<'_, R, P> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        self.next_data()?;
        let available = self.packets.payload(self.unread.clone());
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.unread.start += n;
        Ok(n)
    }
}

//! The strict packet reader.

use std::io::{self, Read};

use super::header::{self, Header};
use super::lengths::HEADER_LEN;
use super::{Dialect, Error, Packet, MAX_DATA_LEN};

/// Reads packets one at a time from `R` into a single reused buffer.
///
/// It reads exactly the bytes of each packet and nothing beyond, so whatever
/// follows the packets on the stream (a pack, in receive-pack) is left for the
/// caller in `R`. Each packet costs two reads of `R`: wrap a raw descriptor in
/// a [`std::io::BufReader`].
///
/// By default a data packet starting with `ERR ` is returned as
/// [`Error::Remote`], as git's clients treat it; see
/// [`PacketReader::fail_on_err_packets`].
#[derive(Debug)]
pub struct PacketReader<R> {
    inner: R,
    /// Payload of the current packet, at `buf[..len]`.
    buf: Box<[u8]>,
    dialect: Dialect,
    fail_on_err_packets: bool,
    /// A packet already read by `peek` and not yet returned by `read`
    /// (`Some(None)`: the stream's end).
    peeked: Option<Option<Header>>,
}

impl<R: Read> PacketReader<R> {
    /// A reader of a stream framed in `dialect`.
    pub fn new(inner: R, dialect: Dialect) -> Self {
        PacketReader {
            inner,
            buf: vec![0; MAX_DATA_LEN].into_boxed_slice(),
            dialect,
            fail_on_err_packets: true,
            peeked: None,
        }
    }

    /// Whether a data packet starting with `ERR ` is reported as
    /// [`Error::Remote`] (the default) or returned as data. Servers reading
    /// client requests that may legitimately start with `ERR ` turn it off.
    pub fn fail_on_err_packets(mut self, fail: bool) -> Self {
        self.fail_on_err_packets = fail;
        self
    }

    /// The next packet, or `None` when the stream ends cleanly between
    /// packets.
    pub fn read(&mut self) -> Result<Option<Packet<'_>>, Error> {
        let header = match self.peeked.take() {
            Some(header) => header,
            None => self.read_packet()?,
        };
        self.packet(header)
    }

    /// The next packet without consuming it: the following [`read`] returns
    /// it again.
    ///
    /// [`read`]: PacketReader::read
    pub fn peek(&mut self) -> Result<Option<Packet<'_>>, Error> {
        let header = match self.peeked {
            Some(header) => header,
            None => {
                let header = self.read_packet()?;
                *self.peeked.insert(header)
            }
        };
        self.packet(header)
    }

    /// Like [`read`](PacketReader::read), with one trailing LF removed from a
    /// data packet, for the text lines of the protocol.
    pub fn read_text(&mut self) -> Result<Option<Packet<'_>>, Error> {
        Ok(self.read()?.map(Packet::without_lf))
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The stream being read, to take over raw bytes that follow the packets.
    /// A packet left by [`peek`](PacketReader::peek) is lost.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Bytes of the current packet's payload, for the side-band reader that
    /// hands a band-1 payload out in pieces.
    pub(super) fn payload(&self, range: std::ops::Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    fn packet(&self, header: Option<Header>) -> Result<Option<Packet<'_>>, Error> {
        Ok(Some(match header {
            None => return Ok(None),
            Some(Header::Flush) => Packet::Flush,
            Some(Header::Delim) => Packet::Delim,
            Some(Header::ResponseEnd) => Packet::ResponseEnd,
            Some(Header::Data(len)) => {
                let data = &self.buf[..len];
                if self.fail_on_err_packets {
                    if let Some(message) = data.strip_prefix(b"ERR ") {
                        let message = message.strip_suffix(b"\n").unwrap_or(message);
                        return Err(Error::Remote(String::from_utf8_lossy(message).into_owned()));
                    }
                }
                Packet::Data(data)
            }
        }))
    }

    /// Reads one whole packet; its payload lands in `buf`.
    fn read_packet(&mut self) -> Result<Option<Header>, Error> {
        let mut bytes = [0; HEADER_LEN];
        match read_full(&mut self.inner, &mut bytes)? {
            0 => return Ok(None),
            HEADER_LEN => {}
            received => {
                return Err(Error::UnexpectedEof {
                    part: "length header",
                    received,
                    expected: HEADER_LEN,
                })
            }
        }
        let header = header::decode(bytes, self.dialect)?;
        if let Header::Data(len) = header {
            let received = read_full(&mut self.inner, &mut self.buf[..len])?;
            if received < len {
                return Err(Error::UnexpectedEof {
                    part: "payload",
                    received,
                    expected: len,
                });
            }
        }
        Ok(Some(header))
    }
}

/// Fills `buf` unless the stream ends first; returns how much was filled.
fn read_full(inner: &mut impl Read, buf: &mut [u8]) -> Result<usize, Error> {
    let mut filled = 0;
    while filled < buf.len() {
        match inner.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(filled)
}

//! Request bodies as the services read them: framed by `Content-Length`
//! or chunked transfer coding, gzip undone when the client compressed, and
//! a ceiling on how much one request may send.

use super::head::Head;
use std::io::{self, BufRead, Read};

/// Fails with `InvalidData` once more than `limit` bytes were read, so a
/// client cannot make the server read (or inflate) without end.
pub struct Limited<R> {
    inner: R,
    remaining: u64,
    limit: u64,
}

impl<R: Read> Limited<R> {
    /// Wraps `inner`.
    pub fn new(inner: R, limit: u64) -> Self {
        Limited {
            inner,
            remaining: limit,
            limit,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // One more byte tells a body of exactly `limit` bytes from a
            // longer one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    TooLarge(self.limit),
                )),
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// A request body went past the server's limit.
#[derive(Debug, thiserror::Error)]
#[error("the request body is larger than this server accepts ({0} bytes)")]
pub struct TooLarge(pub u64);

/// What went wrong while a request body was read, as the HTTP status that
/// answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 408: the client sent too slowly.
    TooSlow,
    /// 413: more than the limit.
    TooLarge,
    /// 400: not a well-formed body (bad chunk, bad gzip, cut short).
    Malformed,
}

impl Failure {
    /// Classifies a read error.
    pub fn of(e: &io::Error) -> Failure {
        if e.kind() == io::ErrorKind::TimedOut {
            Failure::TooSlow
        } else if e.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) {
            Failure::TooLarge
        } else {
            Failure::Malformed
        }
    }

    /// The HTTP status that reports it.
    pub fn status(self) -> u16 {
        match self {
            Failure::TooSlow => 408,
            Failure::TooLarge => 413,
            Failure::Malformed => 400,
        }
    }
}

/// Remembers the first error reading through it, for services that turn
/// read errors into their own messages.
pub struct Watched<'a, R> {
    inner: R,
    failure: &'a std::cell::Cell<Option<Failure>>,
}

impl<'a, R> Watched<'a, R> {
    /// Wraps `inner`; the first failure is stored in `failure`.
    pub fn new(inner: R, failure: &'a std::cell::Cell<Option<Failure>>) -> Self {
        Watched { inner, failure }
    }
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            if self.failure.get().is_none() {
                self.failure.set(Some(Failure::of(e)));
            }
        })
    }
}

/// The body of a request, decompressed if `encoding` (the
/// `Content-Encoding` header) says gzip, at most `limit` bytes after
/// decompression.
pub fn decoded<'a, R: Read + 'a>(
    raw: R,
    encoding: Option<&str>,
    limit: u64,
) -> Result<Box<dyn Read + 'a>, UnsupportedEncoding> {
    match encoding.map(str::trim) {
        None | Some("") | Some("identity") => Ok(Box::new(Limited::new(raw, limit))),
        Some("gzip") | Some("x-gzip") => Ok(Box::new(Limited::new(
            flate2::read::MultiGzDecoder::new(raw),
            limit,
        ))),
        Some(other) => Err(UnsupportedEncoding(other.to_owned())),
    }
}

/// A `Content-Encoding` the server does not decode.
#[derive(Debug, thiserror::Error)]
#[error("unsupported Content-Encoding '{0}'")]
pub struct UnsupportedEncoding(pub String);

/// How a request's body is delimited on the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
}

/// The framing a request head announces. Requests that could be read two
/// ways (both `Content-Length` and `Transfer-Encoding`, or two different
/// lengths) are refused, as RFC 9112 6.3 allows, since a proxy in front
/// may read them the other way.
pub fn framing(head: &Head) -> Result<Framing, &'static str> {
    let lengths: Vec<&str> = head
        .fields
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.as_str())
        .collect();
    if head.field("transfer-encoding").is_some() {
        if !lengths.is_empty() {
            return Err("both Content-Length and Transfer-Encoding");
        }
        let codings: Vec<&str> = head
            .fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        return match codings[..] {
            [c] if c.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Err("unsupported Transfer-Encoding (only chunked is accepted)"),
        };
    }
    match lengths[..] {
        [] => Ok(Framing::Empty),
        [first, ref rest @ ..] => {
            if rest.iter().any(|l| l != &first)
                || first.is_empty()
                || !first.bytes().all(|b| b.is_ascii_digit())
            {
                return Err("bad Content-Length");
            }
            first
                .parse()
                .map(Framing::Length)
                .map_err(|_| "bad Content-Length")
        }
    }
}

/// A request body read off the connection, ending where its framing says.
pub struct Framed<R> {
    inner: R,
    state: FramedState,
}

enum FramedState {
    /// Bytes left of a `Content-Length` body or of the current chunk.
    Left { left: u64, chunked: bool },
    /// A chunked body between chunks.
    ChunkStart,
    /// Everything read.
    Done,
}

/// The longest chunk-size line (with extensions) or trailer line read.
const MAX_CHUNK_LINE: usize = 4096;

impl<R: BufRead> Framed<R> {
    /// The body framed as `framing` says, read from `inner`.
    pub fn new(inner: R, framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => FramedState::Done,
            Framing::Length(n) => FramedState::Left {
                left: n,
                chunked: false,
            },
            Framing::Chunked => FramedState::ChunkStart,
        };
        Framed { inner, state }
    }

    /// True once the whole body was read, so the connection is at the next
    /// request.
    pub fn is_done(&self) -> bool {
        matches!(self.state, FramedState::Done)
    }

    /// Reads and discards what is left of the body, up to `max` bytes;
    /// true if it ended within them.
    pub fn skip_rest(&mut self, max: u64) -> bool {
        let mut skipped = 0;
        let mut buf = [0u8; 8192];
        while !self.is_done() && skipped <= max {
            match self.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => skipped += n as u64,
                Err(_) => return false,
            }
        }
        self.is_done()
    }

    fn line(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            let available = self.inner.fill_buf()?;
            if available.is_empty() {
                return Err(bad("the request body ends inside a chunk header"));
            }
            let (taken, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if line.len() + taken > MAX_CHUNK_LINE {
                return Err(bad("a chunk header of the request body is too long"));
            }
            line.extend_from_slice(&available[..taken]);
            self.inner.consume(taken);
            if done {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
        }
    }

    fn chunk_size(&mut self) -> io::Result<u64> {
        let line = self.line()?;
        let size = line.split(|&b| b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(size)
            .ok()
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 15)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| bad("bad chunk size in the request body"))?;
        Ok(size)
    }
}

fn bad(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl<R: BufRead> Read for Framed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.state {
                FramedState::Done => return Ok(0),
                FramedState::ChunkStart => match self.chunk_size()? {
                    0 => {
                        // Trailer fields are read and ignored.
                        while !self.line()?.is_empty() {}
                        self.state = FramedState::Done;
                    }
                    size => {
                        self.state = FramedState::Left {
                            left: size,
                            chunked: true,
                        }
                    }
                },
                FramedState::Left { left, chunked } => {
                    if buf.is_empty() {
                        return Ok(0);
                    }
                    let max = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = self.inner.read(&mut buf[..max])?;
                    if n == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the request body ends early",
                        ));
                    }
                    let left = left - n as u64;
                    self.state = match (left, chunked) {
                        (0, false) => FramedState::Done,
                        (0, true) => {
                            if !self.line()?.is_empty() {
                                return Err(bad(
                                    "a chunk of the request body is longer than its size",
                                ));
                            }
                            FramedState::ChunkStart
                        }
                        (left, _) => FramedState::Left { left, chunked },
                    };
                    return Ok(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn the_limit_allows_exactly_limit_bytes() {
        assert_eq!(read_all(Limited::new(&b"12345"[..], 5)).unwrap(), b"12345");
        let err = read_all(Limited::new(&b"123456"[..], 5)).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::TooLarge);
    }

    #[test]
    fn gzip_is_undone_and_limited_after_inflating() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&[b'a'; 10_000]).unwrap();
        let compressed = gz.finish().unwrap();
        let mut raw = &compressed[..];
        let body = decoded(&mut raw, Some("gzip"), 10_000).unwrap();
        assert_eq!(read_all(body).unwrap().len(), 10_000);
        let mut raw = &compressed[..];
        let body = decoded(&mut raw, Some("gzip"), 9_999).unwrap();
        assert_eq!(Failure::of(&read_all(body).unwrap_err()), Failure::TooLarge);
        let mut raw = &compressed[..compressed.len() / 2];
        let body = decoded(&mut raw, Some("gzip"), 10_000).unwrap();
        assert_eq!(
            Failure::of(&read_all(body).unwrap_err()),
            Failure::Malformed
        );
        let mut raw = &b""[..];
        assert!(decoded(&mut raw, Some("br"), 10).is_err());
    }

    fn head(fields: &[(&str, &str)]) -> Head {
        Head {
            method: "POST".into(),
            target: "/".into(),
            http11: true,
            fields: fields
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn framing_from_the_head() {
        assert_eq!(framing(&head(&[])), Ok(Framing::Empty));
        assert_eq!(
            framing(&head(&[("Content-Length", "12")])),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            framing(&head(&[("content-length", "3"), ("Content-Length", "3")])),
            Ok(Framing::Length(3))
        );
        assert_eq!(
            framing(&head(&[("Transfer-Encoding", "chunked")])),
            Ok(Framing::Chunked)
        );
        for bad in [
            &[("Content-Length", "3"), ("Content-Length", "4")][..],
            &[("Content-Length", "-1")],
            &[("Content-Length", "+1")],
            &[("Content-Length", "99999999999999999999999")],
            &[("Transfer-Encoding", "chunked"), ("Content-Length", "3")],
            &[("Transfer-Encoding", "gzip, chunked")],
            &[("Transfer-Encoding", "identity")],
        ] {
            assert!(framing(&head(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chunked_bodies_are_decoded_and_end_where_they_say() {
        let wire = b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        let mut input = &wire[..];
        let mut body = Framed::new(&mut input, Framing::Chunked);
        let mut out = Vec::new();
        body.read_to_end(&mut out).unwrap();
        assert!(body.is_done());
        assert_eq!(out, b"abc0123456789abcdef");
        assert_eq!(input, b"NEXT");

        for bad in [
            &b"3\r\nab"[..],
            b"3\r\nabcd\r\n0\r\n\r\n",
            b"zz\r\n",
            b"10000000000000000\r\n",
            b"3\r\nabc\r\n",
        ] {
            let mut input = bad;
            let mut out = Vec::new();
            assert!(
                Framed::new(&mut input, Framing::Chunked)
                    .read_to_end(&mut out)
                    .is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = format!("1;{}\r\n", "x".repeat(MAX_CHUNK_LINE));
        let mut input = long.as_bytes();
        assert!(Framed::new(&mut input, Framing::Chunked)
            .read_to_end(&mut Vec::new())
            .is_err());
    }

    proptest::proptest! {
        #[test]
        fn chunked_bodies_decode_to_what_was_encoded(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
            sizes in proptest::collection::vec(1usize..700, 1..20),
            next in proptest::collection::vec(proptest::num::u8::ANY, 0..20),
        ) {
            let mut wire = Vec::new();
            let mut rest = &data[..];
            for size in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (chunk, tail) = rest.split_at((*size).min(rest.len()));
                wire.extend_from_slice(format!("{:X}\r\n", chunk.len()).as_bytes());
                wire.extend_from_slice(chunk);
                wire.extend_from_slice(b"\r\n");
                rest = tail;
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            wire.extend_from_slice(&next);
            let mut input = &wire[..];
            let mut body = Framed::new(&mut input, Framing::Chunked);
            let mut out = Vec::new();
            body.read_to_end(&mut out).unwrap();
            proptest::prop_assert!(body.is_done());
            proptest::prop_assert_eq!(out, data);
            proptest::prop_assert_eq!(input, &next[..]);
        }

        #[test]
        fn any_bytes_as_a_chunked_body_end_or_fail_without_panic(
            wire in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
        ) {
            let mut input = &wire[..];
            let mut out = Vec::new();
            if Framed::new(&mut input, Framing::Chunked).read_to_end(&mut out).is_ok() {
                proptest::prop_assert!(out.len() < wire.len());
            }
        }
    }

    #[test]
    fn length_bodies_stop_at_their_length() {
        let mut input = &b"hello, next"[..];
        let mut body = Framed::new(&mut input, Framing::Length(5));
        let mut out = Vec::new();
        body.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"hello");
        assert_eq!(input, b", next");
        let mut input = &b"hel"[..];
        let err = Framed::new(&mut input, Framing::Length(5))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}

//! Request bodies as the services read them: gzip undone when the client
//! compressed, and a ceiling on how much one request may send, counted
//! after decompression ([`refstore_protocol::limits`], the bound every
//! transport applies).

use super::pace::PacedBody;
pub use refstore_protocol::limits::{Limited, TooLarge};
use std::io::{self, Read, Write};

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
        } else if refstore_protocol::limits::is_too_large(e) {
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

/// How a request body is compressed (`Content-Encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Not at all.
    Identity,
    /// gzip, as git sends large requests.
    Gzip,
}

impl Encoding {
    /// The encoding a `Content-Encoding` header names.
    pub fn parse(header: Option<&str>) -> Result<Encoding, UnsupportedEncoding> {
        match header.map(str::trim) {
            None | Some("") => Ok(Encoding::Identity),
            Some(e) if e.eq_ignore_ascii_case("identity") => Ok(Encoding::Identity),
            Some(e) if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => {
                Ok(Encoding::Gzip)
            }
            Some(other) => Err(UnsupportedEncoding(other.to_owned())),
        }
    }
}

/// The body of a request, decompressed as `encoding` says, at most
/// `limit` bytes after decompression.
pub fn decoded<'a, R: Read + 'a>(raw: R, encoding: Encoding, limit: u64) -> Box<dyn Read + 'a> {
    match encoding {
        Encoding::Identity => Box::new(Limited::new(raw, limit)),
        Encoding::Gzip => Box::new(Limited::new(flate2::read::MultiGzDecoder::new(raw), limit)),
    }
}

/// A `Content-Encoding` the server does not decode.
#[derive(Debug, thiserror::Error)]
#[error("unsupported Content-Encoding '{0}'")]
pub struct UnsupportedEncoding(pub String);

/// A buffer that refuses to grow past a limit.
struct Capped {
    data: Vec<u8>,
    limit: u64,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.data.len() as u64 + buf.len() as u64 > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooLarge(self.limit),
            ));
        }
        self.data.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads a whole request body, decompressed, of at most `limit` bytes.
/// Inflating is quick next to the wait for the client, so it happens as
/// the pieces arrive.
pub async fn collect(body: &mut PacedBody, encoding: Encoding, limit: u64) -> io::Result<Vec<u8>> {
    let capped = Capped {
        data: Vec::new(),
        limit,
    };
    match encoding {
        Encoding::Identity => {
            let mut out = capped;
            while let Some(piece) = body.next().await? {
                out.write_all(&piece)?;
            }
            Ok(out.data)
        }
        Encoding::Gzip => {
            let mut out = flate2::write::MultiGzDecoder::new(capped);
            while let Some(piece) = body.next().await? {
                out.write_all(&piece).map_err(malformed_unless_too_large)?;
            }
            let capped = out.finish().map_err(malformed_unless_too_large)?;
            Ok(capped.data)
        }
    }
}

/// Errors of inflating are the client's (bad gzip), except the limit.
fn malformed_unless_too_large(e: io::Error) -> io::Error {
    if Failure::of(&e) == Failure::TooLarge {
        e
    } else {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot decompress the request body: {e}"),
        )
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
        let body = decoded(&mut raw, Encoding::Gzip, 10_000);
        assert_eq!(read_all(body).unwrap().len(), 10_000);
        let mut raw = &compressed[..];
        let body = decoded(&mut raw, Encoding::Gzip, 9_999);
        assert_eq!(Failure::of(&read_all(body).unwrap_err()), Failure::TooLarge);
        let mut raw = &compressed[..compressed.len() / 2];
        let body = decoded(&mut raw, Encoding::Gzip, 10_000);
        assert_eq!(
            Failure::of(&read_all(body).unwrap_err()),
            Failure::Malformed
        );
        assert!(Encoding::parse(Some("br")).is_err());
        assert_eq!(Encoding::parse(Some(" GZIP ")).unwrap(), Encoding::Gzip);
        assert_eq!(Encoding::parse(None).unwrap(), Encoding::Identity);
    }
}

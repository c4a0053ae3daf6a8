//! Request bodies as the services read them: gzip undone when the client
//! compressed, and a ceiling on how much one request may send.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
                    format!("request body larger than {} bytes", self.limit),
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

/// The body of a request, decompressed if `encoding` (the
/// `Content-Encoding` header) says gzip, at most `limit` bytes after
/// decompression.
pub fn decoded<'a>(
    raw: &'a mut dyn Read,
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

/// Counts the bytes read through it, for the access log.
pub struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// Wraps `inner`; the total is added to `count`.
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Counting { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
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
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
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
        assert!(read_all(body).is_err());
        let mut raw = &b""[..];
        assert!(decoded(&mut raw, Some("br"), 10).is_err());
    }
}

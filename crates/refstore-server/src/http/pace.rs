//! Time limits on a client, so slow or silent clients are dropped.
//!
//! A client may keep the server waiting for `timeout`, plus one second for
//! every [`MIN_RATE`] bytes it has moved so far. Only time spent waiting on
//! the client counts, not the time the server takes between reads or
//! writes. A real client on any usable network stays far ahead of that
//! allowance; a client that sends (or reads) a byte now and then falls
//! behind it after about `timeout` whatever the per-byte gaps, which a
//! plain idle timeout per read would not catch.
//!
//! Request heads are limited by hyper's header read timeout (a head is a
//! few hundred bytes, so the allowance is `timeout`); request bodies by
//! [`PacedBody`]; responses by [`PacedIo`], the socket below TLS. What the
//! client sends is [`Watched`] above TLS, for the framing of its heads.

use super::framing::Scan;
use hyper::body::{Body, Bytes, Incoming};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
// tokio's clock, which tests can pause and advance: the waits measured
// here are the ones tokio's timers end.
use tokio::time::Instant;

/// The slowest transfer rate a client may keep up for long, in bytes per
/// second.
pub const MIN_RATE: u64 = 64 << 10;

/// Time a client may still keep the server waiting.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    timeout: Duration,
    waited: Duration,
    moved: u64,
}

impl Allowance {
    fn new(timeout: Duration) -> Self {
        Allowance {
            timeout,
            waited: Duration::ZERO,
            moved: 0,
        }
    }

    /// What is left; zero once used up.
    fn left(&self) -> Duration {
        let allowed = self.timeout + Duration::from_secs_f64(self.moved as f64 / MIN_RATE as f64);
        allowed.saturating_sub(self.waited)
    }
}

/// The error a transfer that ran out of time fails with.
pub fn too_slow(writing: bool) -> io::Error {
    let what = if writing {
        "the client did not read the response in time"
    } else {
        "the client did not send its request in time"
    };
    io::Error::new(io::ErrorKind::TimedOut, what)
}

/// What a connection's socket and its requests share.
#[derive(Debug, Default)]
pub struct Wire {
    /// Requests started on the connection; each starts a new allowance
    /// for writing its response.
    requests: AtomicU64,
    /// Bytes read since the last request started: a head timing out with
    /// some of it sent is answered 408, a silent client is just dropped.
    read_since_request: AtomicU64,
    /// Requests being answered.
    active: AtomicUsize,
    /// When the connection last finished answering (or opened), in
    /// milliseconds of [`since_start`]: the oldest idle connection of an
    /// address is the first closed to make room.
    last_done: AtomicU64,
}

/// Milliseconds since the first call, a clock connections share.
fn since_start() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

/// A request being answered, until dropped.
#[derive(Debug)]
pub struct Active(Arc<Wire>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.last_done.store(since_start(), Ordering::Relaxed);
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Wire {
    /// A request's head was read; it is answered until the guard is
    /// dropped.
    pub fn request_started(self: &Arc<Self>) -> Active {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.read_since_request.store(0, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
        Active(self.clone())
    }

    /// How many requests were read on the connection.
    pub fn requests_started(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// True once a request was read on the connection.
    pub fn served_any(&self) -> bool {
        self.requests.load(Ordering::Relaxed) > 0
    }

    /// True while a request is being answered.
    pub fn answering(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    /// True if the client sent something since the last request started.
    pub fn partial_head(&self) -> bool {
        self.read_since_request.load(Ordering::Relaxed) > 0
    }

    /// A connection's wire, opened now.
    pub fn opened() -> Wire {
        Wire {
            last_done: AtomicU64::new(since_start()),
            ..Wire::default()
        }
    }

    /// When the connection became idle (in milliseconds of a clock all
    /// connections share), or `None` while it answers a request or
    /// receives the head of the next one.
    pub fn idle_since(&self) -> Option<u64> {
        (!self.answering() && !self.partial_head()).then(|| self.last_done.load(Ordering::Relaxed))
    }
}

/// A socket whose writes are paced.
pub struct PacedIo<S> {
    inner: S,
    wire: Arc<Wire>,
    write: Allowance,
    request: u64,
    blocked_since: Option<Instant>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> PacedIo<S> {
    /// Wraps `inner`; each request on `wire` starts a new allowance.
    pub fn new(inner: S, timeout: Duration, wire: Arc<Wire>) -> Self {
        PacedIo {
            inner,
            wire,
            write: Allowance::new(timeout),
            request: 0,
            blocked_since: None,
            deadline: None,
        }
    }

    fn unblocked(&mut self) {
        if let Some(since) = self.blocked_since.take() {
            self.write.waited += since.elapsed();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for PacedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

/// The plain text a client sends (above TLS, if any), shown to the
/// framing watch and counted for the head-timeout answer.
pub struct Watched<S> {
    inner: S,
    wire: Arc<Wire>,
    scan: Arc<std::sync::Mutex<Scan>>,
}

impl<S> Watched<S> {
    /// Wraps `inner`; `scan` sees every byte read.
    pub fn new(inner: S, wire: Arc<Wire>, scan: Arc<std::sync::Mutex<Scan>>) -> Self {
        Watched { inner, wire, scan }
    }

    /// The framing watch.
    pub fn scan(&self) -> Arc<std::sync::Mutex<Scan>> {
        self.scan.clone()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let new = &buf.filled()[before..];
        this.wire
            .read_since_request
            .fetch_add(new.len() as u64, Ordering::Relaxed);
        this.scan
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(new);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PacedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let request = this.wire.requests.load(Ordering::Relaxed);
        if request != this.request {
            this.request = request;
            this.write = Allowance::new(this.write.timeout);
        }
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(result) => {
                this.unblocked();
                if let Ok(n) = &result {
                    this.write.moved += *n as u64;
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let now = Instant::now();
                let since = *this.blocked_since.get_or_insert(now);
                let left = this.write.left().saturating_sub(now - since);
                let at = now + left;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
                deadline.as_mut().reset(at);
                if left.is_zero() || deadline.as_mut().poll(cx).is_ready() {
                    this.unblocked();
                    return Poll::Ready(Err(too_slow(true)));
                }
                Poll::Pending
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A request body read under the allowance.
pub struct PacedBody {
    body: Incoming,
    allowance: Allowance,
    /// Bytes received, for the access log and metrics.
    received: Arc<AtomicU64>,
}

impl PacedBody {
    /// Reads `body` within `timeout` (plus the rate allowance), counting
    /// what arrives in `received`.
    pub fn new(body: Incoming, timeout: Duration, received: Arc<AtomicU64>) -> Self {
        PacedBody {
            body,
            allowance: Allowance::new(timeout),
            received,
        }
    }

    /// The next piece of the body; `None` at its end. Errors are
    /// `TimedOut` for a client too slow, `InvalidData` for a body hyper
    /// cannot read (bad chunks, cut short).
    pub async fn next(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            let left = self.allowance.left();
            if left.is_zero() {
                return Err(too_slow(false));
            }
            let since = Instant::now();
            let frame = tokio::time::timeout(
                left,
                std::future::poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx)),
            )
            .await;
            self.allowance.waited += since.elapsed();
            let frame = match frame {
                Err(_) => return Err(too_slow(false)),
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("cannot read the request body: {e}"),
                    ))
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    self.allowance.moved += data.len() as u64;
                    self.received
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    return Ok(Some(data));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn paced(timeout: Duration) -> (PacedIo<tokio::io::DuplexStream>, tokio::io::DuplexStream) {
        let (server, client) = tokio::io::duplex(4096);
        let io = PacedIo::new(server, timeout, Arc::default());
        (io, client)
    }

    // On tokio's paused clock: time moves only when every task waits, and
    // then straight to the next timer, so these run in no real time and
    // the same way on any machine.

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_is_dropped() {
        let timeout = Duration::from_millis(200);
        let (mut io, _client) = paced(timeout);
        let block = vec![7u8; 1024];
        let started = Instant::now();
        let err = loop {
            if let Err(e) = io.write_all(&block).await {
                break e;
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        // Dropped once the allowance, 200 ms plus the time the 4 KiB the
        // pipe took are worth, is used up waiting: not before, and not
        // later than tokio's timers round (to the millisecond).
        let allowance = timeout + Duration::from_secs_f64(4096.0 / MIN_RATE as f64);
        let waited = started.elapsed();
        assert!(
            waited >= allowance && waited <= allowance + Duration::from_millis(1),
            "dropped after {waited:?}, allowance {allowance:?}"
        );
        assert_eq!(
            err.to_string(),
            "the client did not read the response in time"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reading_client_is_never_cut_off_nor_charged_for_the_servers_pauses() {
        let (mut io, mut client) = paced(Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            client.read_to_end(&mut sink).await.unwrap();
            sink.len()
        });
        let block = vec![7u8; 64 << 10];
        for round in 0..64 {
            io.write_all(&block).await.unwrap();
            if round % 16 == 0 {
                // The server computing for longer than the timeout (the
                // pause is what is tested, on the paused clock).
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        io.shutdown().await.unwrap();
        drop(io);
        assert_eq!(reader.await.unwrap(), 64 * (64 << 10));
    }

    #[tokio::test]
    async fn reads_are_shown_to_the_framing_watch_and_counted() {
        let (server, mut client) = tokio::io::duplex(4096);
        let wire = Arc::new(Wire::default());
        let scan = Arc::new(std::sync::Mutex::new(Scan::default()));
        let mut io = Watched::new(server, wire.clone(), scan.clone());
        assert!(!wire.partial_head());
        client
            .write_all(
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            )
            .await
            .unwrap();
        drop(client);
        let mut sink = Vec::new();
        io.read_to_end(&mut sink).await.unwrap();
        assert!(wire.partial_head());
        assert!(scan.lock().unwrap().next_request().ambiguous);
        let _active = wire.request_started();
        assert!(!wire.partial_head() && wire.answering());
    }
}

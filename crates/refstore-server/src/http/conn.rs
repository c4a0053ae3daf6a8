//! One client connection: TLS if configured, then HTTP/1.1 by hyper
//! (keep-alive, pipelining, chunked bodies, limits on request heads),
//! each request answered by the handler; heads that hyper refuses or that
//! time out are logged here; the connection closes so that the client
//! reads the last answer.

use super::framing::Scan;
use super::handler;
use super::pace::{PacedIo, Watched, Wire};
use super::respond::log;
use super::state::State;
use crate::metrics::{Rejection, Transport};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};

/// The largest request head accepted, request line and fields together.
/// Git's requests have heads of a few hundred bytes.
pub const MAX_HEAD: usize = 16 << 10;

/// The most header fields one request may have.
pub const MAX_FIELDS: usize = 100;

/// The most hyper reads from a client at once (at least `MAX_HEAD`).
const READ_BUFFER: usize = 64 << 10;

/// Serves `stream` until the client closes it, a request asks to close, a
/// time limit is hit, or the server shuts down (`stopping` turns true).
pub(super) async fn serve(
    state: Arc<State>,
    stream: TcpStream,
    client: SocketAddr,
    stopping: watch::Receiver<bool>,
    wire: Arc<Wire>,
    evicted: Arc<Notify>,
) {
    let mut stopping = Stop {
        server: stopping,
        evicted,
    };
    let _counted = state.options.metrics.connection(Transport::Http);
    // Protocol responses are flushed at points the client waits on.
    let _ = stream.set_nodelay(true);
    // A second handle on the socket outlives hyper's: for answers hyper
    // does not write and for the lingering close.
    let Ok(spare) = stream.into_std().and_then(|s| Ok((s.try_clone()?, s))) else {
        return;
    };
    let (spare, stream) = spare;
    let Ok(stream) = TcpStream::from_std(stream) else {
        return;
    };
    let timeout = state.options.timeout;
    let scan = Arc::new(Mutex::new(Scan::default()));
    let io = PacedIo::new(stream, timeout, wire.clone());
    let tls = state.options.tls.as_ref().map(|tls| tls.get());
    let outcome = match tls {
        None => {
            let io = Watched::new(io, wire.clone(), scan.clone());
            http(&state, io, client, &wire, &mut stopping).await
        }
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            // A handshake under way when the server stops is given the
            // moment an owed request gets (see `serve_owed_request`), not
            // cut off; one closing the connection to make room is.
            let stopped = async {
                until_stopped(&mut stopping).await;
                if *stopping.server.borrow() {
                    tokio::time::sleep(OWED_REQUEST_GRACE).await;
                }
            };
            let handshake = tokio::select! {
                done = tokio::time::timeout(timeout, acceptor.accept(io)) => Some(done),
                () = stopped => None,
            };
            match handshake {
                Some(Ok(Ok(io))) => {
                    let io = Watched::new(io, wire.clone(), scan.clone());
                    http(&state, io, client, &wire, &mut stopping).await
                }
                Some(Ok(Err(e))) => {
                    tracing::debug!(%client, "TLS handshake failed: {e}");
                    state.options.metrics.rejected(Rejection::BadRequest);
                    Outcome::Done
                }
                Some(Err(_)) => {
                    state.options.metrics.rejected(Rejection::Timeout);
                    Outcome::Done
                }
                None => Outcome::Done,
            }
        }
    };
    let Ok(mut spare) = TcpStream::from_std(spare) else {
        return;
    };
    if let (Outcome::HeadTimedOut(started), None) = (outcome, &state.options.tls) {
        // hyper closes without a word; the client is told why, on the
        // plain socket (under TLS, hyper's stream is gone with its keys).
        let message = "the client did not send its request in time\n";
        let answer = format!(
            "HTTP/1.1 408 Request Timeout\r\nServer: refstore\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
            message.len()
        );
        let _ =
            tokio::time::timeout(Duration::from_secs(1), spare.write_all(answer.as_bytes())).await;
        log(Some(client), "-", "-", 408, None, 0, started);
    }
    linger(&mut spare).await;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    /// A request head started arriving and did not complete in time
    /// (the connection's HTTP began at the instant given): the client is
    /// told (408) unless TLS is in the way.
    HeadTimedOut(Instant),
}

async fn http<I>(
    state: &Arc<State>,
    io: Watched<I>,
    client: SocketAddr,
    wire: &Arc<Wire>,
    stopping: &mut Stop,
) -> Outcome
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = {
        let (state, wire, scan) = (state.clone(), wire.clone(), io.scan());
        hyper::service::service_fn(move |request| {
            let active = wire.request_started();
            let framing = scan
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .next_request();
            let state = state.clone();
            async move {
                Ok::<_, std::convert::Infallible>(
                    handler::handle(state, request, Some(client), framing, active).await,
                )
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(state.options.timeout)
        .max_header_size(MAX_HEAD)
        .max_headers(MAX_FIELDS)
        .max_buf_size(READ_BUFFER);
    let started = Instant::now();
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = until_stopped(stopping) => 'stopped: {
            // (Not for a connection closed to make room: that one is idle.)
            let server_stops = *stopping.server.borrow();
            if server_stops {
                if let Some(ended) = serve_owed_request(&mut connection, wire).await {
                    break 'stopped ended;
                }
            }
            // Requests in flight complete; a head still arriving beyond
            // that is given up on, so a slow client cannot hold up the
            // exit.
            connection.as_mut().graceful_shutdown();
            let mut idle_checks = 0;
            loop {
                tokio::select! {
                    result = connection.as_mut() => break result,
                    _ = tokio::time::sleep(STOP_POLL) => {
                        // Twice in a row, so the end of a response just
                        // handed to hyper still goes out.
                        idle_checks = if wire.answering() { 0 } else { idle_checks + 1 };
                        if idle_checks == 2 {
                            break Ok(());
                        }
                    }
                }
            }
        }
    };
    let Err(e) = result else {
        return Outcome::Done;
    };
    let metrics = &state.options.metrics;
    if e.is_parse_too_large() {
        metrics.rejected(Rejection::HeadTooLarge);
        log(Some(client), "-", "-", 431, None, 0, started);
    } else if e.is_parse() || e.is_parse_status() {
        metrics.rejected(Rejection::BadRequest);
        log(Some(client), "-", "-", 400, None, 0, started);
    } else if e.is_timeout() {
        // An idle keep-alive connection closing is no refusal; a head
        // begun and not finished, or a connection that never sent one, is.
        if wire.partial_head() {
            metrics.rejected(Rejection::Timeout);
            return Outcome::HeadTimedOut(started);
        }
        if !wire.served_any() {
            metrics.rejected(Rejection::Timeout);
        }
    } else {
        if timed_out(&e) {
            metrics.rejected(Rejection::Timeout);
        }
        tracing::debug!(%client, "connection ended: {e}");
    }
    Outcome::Done
}

/// How long a connection of a server shutting down is given to send the
/// request it is owed an answer to ([`serve_owed_request`]): clients send
/// a request as soon as they connect, so a moment; one that sends nothing
/// holds up the exit no longer than this.
const OWED_REQUEST_GRACE: Duration = Duration::from_secs(2);

/// How often a connection waiting for an owed request looks whether it
/// started.
const OWED_REQUEST_POLL: Duration = Duration::from_millis(10);

/// When the server stops, a connection it accepted but read no request
/// from yet is owed the answer to its first request, and one whose next
/// request is arriving the answer to that: their clients sent them to a
/// server that had taken the connection, and a close would cut them off
/// unanswered (a kept-alive connection that is idle is closed at once, as
/// clients expect of one). Drives `connection` until such a request has
/// started (hyper then finishes it before closing), for at most
/// [`OWED_REQUEST_GRACE`]; returns the connection's end if it ended
/// meanwhile.
async fn serve_owed_request<C>(
    connection: &mut std::pin::Pin<&mut C>,
    wire: &Wire,
) -> Option<C::Output>
where
    C: std::future::Future,
{
    if wire.answering() || (wire.served_any() && !wire.partial_head()) {
        return None;
    }
    let started = wire.requests_started();
    let deadline = tokio::time::Instant::now() + OWED_REQUEST_GRACE;
    while !wire.answering()
        && wire.requests_started() == started
        && tokio::time::Instant::now() < deadline
    {
        tokio::select! {
            ended = connection.as_mut() => return Some(ended),
            () = tokio::time::sleep(OWED_REQUEST_POLL) => {}
        }
    }
    None
}

/// What ends a connection early: the server shutting down, or the
/// connection closed to make room for another ([`super::connections`]).
struct Stop {
    server: watch::Receiver<bool>,
    evicted: Arc<Notify>,
}

/// Returns once the server is shutting down or the connection is to
/// close.
async fn until_stopped(stopping: &mut Stop) {
    let Stop { server, evicted } = stopping;
    let server = async {
        if server.wait_for(|stop| *stop).await.is_err() {
            // The server is gone without saying so: never.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = server => {}
        () = evicted.notified() => {}
    }
}

/// True if an error comes from a client too slow to read its response.
fn timed_out(e: &hyper::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::TimedOut;
        }
        source = error.source();
    }
    false
}

/// How often a connection of a server shutting down looks whether it
/// still answers a request.
const STOP_POLL: Duration = Duration::from_millis(100);

/// How long a closing connection keeps reading what the client still
/// sends.
const LINGER: Duration = Duration::from_millis(500);

/// Closes the connection so that the client reads the last answer: a
/// socket closed with unread input resets the connection, and the reset
/// can destroy the answer before the client reads it (a 408 or 413 sent
/// while the client is still sending). So the sending side is closed
/// first, and input is read and dropped for a moment before the close.
async fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 8192];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

//! `--metrics-listen`: a small HTTP listener, apart from the Git
//! transports, that serves `GET /metrics` (every `refstore_…` series of
//! [`Metrics`]) and `GET /healthz` (`200 ok` while the process is ready
//! for requests, `503` with `starting: …` or `draining` otherwise; see
//! [`Health`]).
//!
//! It runs hyper on a single-threaded tokio runtime in a thread of its own,
//! so a scrape never waits for a Git worker and a busy Git server never
//! delays a scrape. `/metrics` answers Prometheus' text format 0.0.4 unless
//! the scraper asks for OpenMetrics in `Accept` (see [`exposition`]).
//! The listener is meant for a monitoring network: it takes no
//! credentials, and it bounds what one client can hold (a few connections,
//! each for a limited time).

mod exposition;

use crate::health::Health;
use crate::metrics::Metrics;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Connections served at once; more are closed as they arrive. A scraper
/// needs one, a few people looking by hand a few more.
const MAX_CONNECTIONS: usize = 16;

/// How long a client may take to send a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one connection may stay open, idle keep-alive included, so
/// clients that never close cannot hold every slot. Then it is closed
/// after the request in progress, if any, is answered (within
/// [`HEAD_TIMEOUT`]).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// How often the accept loop looks at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(100);

/// A pause after a failed accept (out of descriptors, say), so the loop
/// does not spin while the cause lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsEndpointError {
    /// The address cannot be listened on.
    #[error("--metrics-listen: cannot listen on {addr}: {reason}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The runtime or its thread could not be started.
    #[error("--metrics-listen: cannot start: {0}")]
    Start(String),
}

/// A running metrics listener.
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    thread: JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Listens on `addr` (`host:port`; port 0 picks a free one) and serves
    /// `metrics` and `health` until `shutdown` is set.
    pub fn start(
        addr: &str,
        metrics: Arc<Metrics>,
        health: Health,
        shutdown: Arc<AtomicBool>,
    ) -> Result<MetricsEndpoint, MetricsEndpointError> {
        let listen_error = |e: std::io::Error| MetricsEndpointError::Listen {
            addr: addr.to_owned(),
            reason: e.to_string(),
        };
        // Bound here, not in the thread, so a bad address fails startup.
        let listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
        let bound = listener.local_addr().map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| MetricsEndpointError::Start(e.to_string()))?;
        let thread = std::thread::Builder::new()
            .name("refstore-metrics".into())
            .spawn(move || runtime.block_on(accept_loop(listener, metrics, health, shutdown)))
            .map_err(|e| MetricsEndpointError::Start(e.to_string()))?;
        Ok(MetricsEndpoint {
            addr: bound,
            thread,
        })
    }

    /// The address the listener listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until the listener has stopped (once the shutdown flag is set).
    pub fn join(self) {
        if self.thread.join().is_err() {
            tracing::error!("the metrics listener panicked");
        }
    }
}

/// Accepts connections until `shutdown` is set; connections in progress
/// are dropped with the runtime.
async fn accept_loop(
    listener: std::net::TcpListener,
    metrics: Arc<Metrics>,
    health: Health,
    shutdown: Arc<AtomicBool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("metrics listener stopped: {e}");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut poll = tokio::time::interval(SHUTDOWN_POLL);
    loop {
        tokio::select! {
            _ = poll.tick() => {
                if shutdown.load(Ordering::Relaxed) {
                    break;
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Full: the connection is closed unanswered.
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        continue;
                    };
                    let metrics = metrics.clone();
                    let health = health.clone();
                    tokio::spawn(async move {
                        serve_connection(stream, metrics, health).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    tracing::warn!("metrics listener: cannot accept: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}

/// Answers the requests of one connection, for about
/// [`CONNECTION_LIFETIME`]. A client that goes away or is too slow is
/// nothing to report.
async fn serve_connection(stream: tokio::net::TcpStream, metrics: Arc<Metrics>, health: Health) {
    let service = hyper::service::service_fn(move |request| {
        let metrics = metrics.clone();
        let health = health.clone();
        async move { Ok::<_, Infallible>(answer(&request, &metrics, &health)) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = tokio::time::sleep(CONNECTION_LIFETIME) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(HEAD_TIMEOUT, connection).await;
}

/// The response to one request.
fn answer(
    request: &Request<Incoming>,
    metrics: &Metrics,
    health: &Health,
) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    if path != "/metrics" && path != "/healthz" {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    if path == "/healthz" {
        let (ready, text) = health.report();
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let mut response = Response::new(Full::new(Bytes::from(text)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    }
    let openmetrics = request
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(exposition::accepts_openmetrics);
    let text = metrics.encode();
    let (body, content_type) = if openmetrics {
        (text, exposition::OPENMETRICS_CONTENT_TYPE)
    } else {
        (
            exposition::to_prometheus_text(&text),
            exposition::PROMETHEUS_CONTENT_TYPE,
        )
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A short text response.
fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Sends `request` on a connection of its own and returns the whole
    /// response.
    fn exchange(addr: SocketAddr, request: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    fn get(addr: SocketAddr, path: &str, accept: &str) -> String {
        exchange(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n"),
        )
    }

    #[test]
    fn serves_metrics_and_health_and_stops_with_the_flag() {
        let metrics = Arc::new(Metrics::new());
        refstore_fs::observe::Observer::push_received(&*metrics, 2);
        let shutdown = Arc::new(AtomicBool::new(false));
        let health = Health::starting("catching up 2 repositories");
        let endpoint = MetricsEndpoint::start(
            "127.0.0.1:0",
            metrics.clone(),
            health.clone(),
            shutdown.clone(),
        )
        .unwrap();
        let addr = endpoint.local_addr();

        let text = get(addr, "/metrics", "");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.contains("content-type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            "{text}"
        );
        assert!(
            text.contains("\n# TYPE refstore_pushes_total counter\n"),
            "{text}"
        );
        assert!(text.contains("\nrefstore_pushes_total 1\n"), "{text}");
        assert!(!text.contains("# EOF"), "{text}");

        let text = get(
            addr,
            "/metrics",
            "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n",
        );
        assert!(
            text.contains(
                "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n# TYPE refstore_pushes counter\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");

        let text = get(addr, "/healthz", "");
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{text}"
        );
        assert!(
            text.ends_with("\r\n\r\nstarting: catching up 2 repositories\n"),
            "{text}"
        );
        health.set_ready();
        let text = get(addr, "/healthz", "");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nok\n"), "{text}");
        health.begin_draining();
        let text = get(addr, "/healthz", "");
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\ndraining\n"), "{text}");

        let text = get(addr, "/metrics/x", "");
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
        let text = exchange(
            addr,
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        assert!(
            text.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")
                && text.contains("allow: GET, HEAD\r\n"),
            "{text}"
        );
        let text = exchange(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: x\r\n\x01garbage\r\n\r\n",
        );
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");

        shutdown.store(true, Ordering::Relaxed);
        endpoint.join();
        assert!(std::net::TcpStream::connect(addr).is_err());
    }

    #[test]
    fn connections_beyond_the_limit_are_closed_unanswered() {
        let shutdown = Arc::new(AtomicBool::new(false));
        let endpoint = MetricsEndpoint::start(
            "127.0.0.1:0",
            Arc::default(),
            Health::ready(),
            shutdown.clone(),
        )
        .unwrap();
        let addr = endpoint.local_addr();
        let mut held: Vec<_> = (0..MAX_CONNECTIONS)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // Closed with the request unread: an end or a reset, no answer.
        let mut beyond = std::net::TcpStream::connect(addr).unwrap();
        let _ = beyond.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut answer = Vec::new();
        let _ = beyond.read_to_end(&mut answer);
        assert!(
            answer.is_empty(),
            "a connection beyond the limit was answered"
        );
        // The connections that hold the slots are served.
        let mut first = held.remove(0);
        first
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        first.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        shutdown.store(true, Ordering::Relaxed);
        endpoint.join();
    }

    #[test]
    fn a_bad_address_fails_at_start() {
        let shutdown = Arc::new(AtomicBool::new(false));
        let err = MetricsEndpoint::start(
            "no-such-host.invalid:x",
            Arc::default(),
            Health::ready(),
            shutdown,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--metrics-listen: cannot listen on no-such-host.invalid:x: "),
            "{err}"
        );
    }
}

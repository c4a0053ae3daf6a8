//! Smart HTTP (and HTTPS): `refstore serve`.
//!
//! HTTP/1.1 is hyper's, on a tokio runtime the server builds for itself.
//! A client that sends slowly, or not at all, holds nothing but its
//! connection; it is dropped once it falls behind the time limits of
//! [`pace`](self::pace). At most `workers` requests run a service at a
//! time, on tokio's blocking pool, and one client address at most half of
//! them; a request takes its turn only once it has been read (fetches) or
//! authenticated (pushes). Beyond `max_connections`, or beyond
//! `max_connections_per_ip` from one address, the connection idle the
//! longest makes room ([`connections`]); when every one is busy the new
//! connection is answered 503 at once (through TLS on an HTTPS listener).
//!
//! Each request is routed to a repository below the served root (paths
//! that leave it, through `..` or symbolic links, are refused with 404
//! like non-repositories), access is decided before the repository is
//! opened, and the service's output is streamed back through a bounded
//! channel so memory stays bounded whatever the size of a clone. Setting
//! the shutdown flag stops taking new connections; requests in flight
//! complete, and so does the first request of every connection taken
//! before the listener closed (those the kernel had queued included).

mod admin;
mod body;
mod bridge;
mod conn;
mod connections;
mod framing;
mod handler;
mod jobs;
mod login;
mod pace;
mod push;
mod refusal;
pub(crate) mod replicate;
mod respond;
pub mod route;
mod services;
mod state;
pub mod tls;

use crate::capacity::Capacity;
use crate::metrics::Rejection;
pub use crate::options::ServeOptions;
use refstore_fs::Vfs;
use state::State;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The root is not a directory.
    #[error("cannot serve '{}': not a directory", .0.display())]
    Root(PathBuf),
}

/// A bound, not yet running, server.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    state: Arc<State>,
}

/// How often the accept loop looks at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(100);

/// Threads of the blocking pool besides the `workers` that run services:
/// locating repositories and checking passwords. Few: every thread that
/// allocates keeps a malloc arena of its own, which shows in the
/// server's resident memory.
const SPARE_BLOCKING_THREADS: usize = 2;

/// Checks that `root` is a directory and listens on `addr` without
/// blocking, as each transport of `refstore serve` starts.
pub(crate) fn listen(
    addr: &str,
    root: &Path,
    vfs: &dyn Vfs,
) -> Result<(TcpListener, SocketAddr), ServeError> {
    if !vfs
        .stat(root)
        .is_ok_and(|m| m.kind == refstore_fs::FileKind::Dir)
    {
        return Err(ServeError::Root(root.to_owned()));
    }
    let listen_error = |e: std::io::Error| ServeError::Listen {
        addr: addr.to_owned(),
        reason: e.to_string(),
    };
    let listener = TcpListener::bind(addr).map_err(listen_error)?;
    let bound = listener.local_addr().map_err(listen_error)?;
    listener.set_nonblocking(true).map_err(listen_error)?;
    Ok((listener, bound))
}

impl Server {
    /// Listens on `addr` (`host:port`; port 0 picks a free one).
    pub fn bind(
        addr: &str,
        options: ServeOptions,
        vfs: Arc<dyn Vfs>,
    ) -> Result<Server, ServeError> {
        let (listener, bound) = listen(addr, &options.root, vfs.as_ref())?;
        let capacity = Capacity::new(&options, vfs.clone());
        Ok(Server {
            listener,
            addr: bound,
            state: Arc::new(State {
                options,
                vfs,
                permits: capacity.permits,
                maintenance: capacity.maintenance,
                throttle: crate::throttle::Throttle::new(),
            }),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its turns to run services and its maintenance queue, for another
    /// transport of the same server to share.
    pub fn capacity(&self) -> Capacity {
        Capacity {
            permits: self.state.permits.clone(),
            maintenance: self.state.maintenance.clone(),
        }
    }

    /// Serves until `shutdown` is set, then waits for requests in flight.
    pub fn run(self, shutdown: &AtomicBool) {
        let options = &self.state.options;
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(options.workers.max(1) + SPARE_BLOCKING_THREADS)
            .thread_name("refstore-http")
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                tracing::error!("cannot start serving: {e}");
                return;
            }
        };
        tracing::info!(addr = %self.addr, root = %options.root.display(),
            push = options.allow_push, workers = options.workers.max(1),
            tls = options.tls.is_some(),
            timeout_s = options.timeout.as_secs_f64(), "serving");
        runtime.block_on(self.accept_until(shutdown));
        // Services still running for clients that went away finish here.
        drop(runtime);
        tracing::info!("shut down");
    }

    async fn accept_until(self, shutdown: &AtomicBool) {
        let listener = match tokio::net::TcpListener::from_std(self.listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(addr = %self.addr, "cannot listen: {e}");
                return;
            }
        };
        let state = self.state;
        let open = Arc::new(AtomicUsize::new(0));
        let connections = connections::Connections::new(
            state.options.max_connections,
            state.options.max_connections_per_ip,
        );
        let turning_away = Arc::new(tokio::sync::Semaphore::new(MAX_TURNING_AWAY));
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let mut poll = tokio::time::interval(SHUTDOWN_POLL);
        // Once stopping: the listening socket, read without waiting.
        let mut backlog: Option<TcpListener> = None;
        loop {
            if backlog.is_none() && shutdown.load(Ordering::Relaxed) {
                // Connections the kernel completed before the listener
                // closes belong to clients told the server took them:
                // they are served too (their first request is owed an
                // answer), not reset with the listener. The socket is
                // asked directly, since the runtime may not have seen
                // them arrive yet.
                match listener.as_fd().try_clone_to_owned() {
                    Ok(fd) => backlog = Some(TcpListener::from(fd)),
                    Err(_) => break,
                }
            }
            let accepted = match &backlog {
                Some(backlog) => match backlog.accept() {
                    Ok((stream, client)) => stream
                        .set_nonblocking(true)
                        .and_then(|()| tokio::net::TcpStream::from_std(stream))
                        .map(|stream| (stream, client)),
                    // Nothing more waiting (WouldBlock), or the socket
                    // failed: either way the listener closes now.
                    Err(_) => break,
                },
                None => tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = poll.tick() => continue,
                },
            };
            let (stream, client) = match accepted {
                Ok(accepted) => accepted,
                Err(e) if backlog.is_some() => {
                    tracing::debug!("a connection waiting as the server stopped failed: {e}");
                    continue;
                }
                Err(e) => {
                    // EMFILE and the like: give connections time to end.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(SHUTDOWN_POLL).await;
                    continue;
                }
            };
            let metrics = &state.options.metrics;
            let wire = Arc::new(pace::Wire::opened());
            let place = match connections.admit(client.ip(), wire.clone()) {
                Ok(place) => place,
                Err(full) => {
                    let (reason, message) = match full {
                        connections::Full::Server => {
                            tracing::warn!(%client, "too many connections; answering 503");
                            (
                                Rejection::Overloaded,
                                "too many connections, try again later",
                            )
                        }
                        connections::Full::Address => {
                            tracing::warn!(%client,
                                "too many connections from one address; answering 503");
                            (
                                Rejection::OverloadedAddress,
                                "too many connections from your address, try again later",
                            )
                        }
                    };
                    metrics.rejected(reason);
                    // Only so many at once: beyond, the connection just
                    // closes (a handshake costs the server more than the
                    // client).
                    if let Ok(turn) = turning_away.clone().try_acquire_owned() {
                        let tls = state.options.tls.as_ref().map(|tls| tls.get());
                        let timeout = state.options.timeout.min(TURN_AWAY_TIME);
                        tokio::spawn(async move {
                            turn_away(stream, tls, timeout, message).await;
                            drop(turn);
                        });
                    }
                    continue;
                }
            };
            open.fetch_add(1, Ordering::Relaxed);
            let (state, open, stopping) = (state.clone(), open.clone(), stopping.clone());
            tokio::spawn(async move {
                conn::serve(state, stream, client, stopping, wire, place.close.clone()).await;
                drop(place);
                open.fetch_sub(1, Ordering::Relaxed);
            });
        }
        drop((listener, backlog));
        let _ = stop.send(true);
        while open.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(SHUTDOWN_POLL / 4).await;
        }
    }
}

/// Connections being turned away at once; more are closed without an
/// answer.
const MAX_TURNING_AWAY: usize = 32;

/// The most time spent answering a connection that is turned away.
const TURN_AWAY_TIME: Duration = Duration::from_secs(5);

/// Answers a connection over a limit with 503 and closes it, without
/// waiting for its request. On an HTTPS listener the answer goes through
/// TLS, after the handshake: a client that gets plain text there reports
/// a TLS error instead of the server's reason.
async fn turn_away(
    stream: tokio::net::TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    timeout: Duration,
    message: &str,
) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nServer: refstore\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{message}\n",
        message.len() + 1
    );
    let _ = tokio::time::timeout(timeout, async {
        match tls {
            None => answer_and_drain(stream, answer.as_bytes()).await,
            Some(config) => {
                let stream = tokio_rustls::TlsAcceptor::from(config)
                    .accept(stream)
                    .await?;
                answer_and_drain(stream, answer.as_bytes()).await
            }
        }
    })
    .await;
}

/// Writes `answer`, closes the sending side and drains the request,
/// unread, for a moment: a socket closed with unread input resets the
/// connection, and the reset can destroy the answer before the client
/// reads it.
async fn answer_and_drain<S>(mut stream: S, answer: &[u8]) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    stream.write_all(answer).await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
    Ok(())
}

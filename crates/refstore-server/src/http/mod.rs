//! Smart HTTP: `refstore serve`.
//!
//! Every connection gets a thread of its own that reads its requests, so a
//! client that sends slowly, or not at all, holds nothing but its
//! connection; it is dropped once it falls behind the time limits of
//! [`pace`](self::pace). At most `workers` requests run a service at a time,
//! and a request takes its turn only once it has been read (fetches) or
//! authenticated (pushes). Connections beyond `max_connections` are
//! answered 503 at once.
//!
//! Each request is routed to a repository below the served root (paths
//! that leave it, through `..` or symbolic links, are refused with 404
//! like non-repositories), pushes are authenticated, and the service's
//! output is streamed back with chunked transfer encoding so memory stays
//! bounded whatever the size of a clone. Setting the shutdown flag stops
//! taking new connections; requests in flight complete.

mod body;
mod conn;
mod handler;
mod head;
mod pace;
mod permits;
mod respond;
pub mod route;
mod services;

use crate::access::{AccessRules, Reloadable};
use crate::auth::Credentials;
use crate::metrics::Metrics;
use refstore_fs::Vfs;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Repositories are served from below this directory.
    pub root: PathBuf,
    /// Accept pushes (from authenticated users only).
    pub allow_push: bool,
    /// Who may push.
    pub credentials: Credentials,
    /// Requests that run a service at once.
    pub workers: usize,
    /// Connections open at once; more are answered 503.
    pub max_connections: usize,
    /// Connections open at once from one client address (IPv6: one /64);
    /// more are answered 503, so that one client cannot take them all.
    pub max_connections_per_ip: usize,
    /// How long a client may take to send a request, or to start reading
    /// a response, before it is dropped (plus one second per 64 KiB it
    /// moved, so large transfers at any usable speed are not cut off).
    pub timeout: Duration,
    /// The largest fetch request body accepted, after decompression.
    pub max_fetch_request: u64,
    /// The largest push request body (commands and pack) accepted.
    pub max_push_request: u64,
    /// Configuration given on the command line (`-c name=value`), applied
    /// to every served repository.
    pub config_overrides: Vec<refstore_fs::config::Override>,
    /// Threads running `maintenance run --auto` after pushes (0: none).
    pub maintenance_workers: usize,
    /// Who may read and push what (`--access`); `None`: everyone reads,
    /// `credentials` users push when `allow_push`. Replaced on SIGHUP.
    pub access: Option<Arc<Reloadable<AccessRules>>>,
    /// Where every transport counts what it does.
    pub metrics: Arc<Metrics>,
    /// The most a push's objects may inflate to, in bytes (0: no bound);
    /// given to receive-pack as `refstore.maxPushInflated`, over what the
    /// repository's configuration says.
    pub max_push_inflated: u64,
}

impl ServeOptions {
    /// Read-only serving of `root` with default limits.
    pub fn new(root: PathBuf) -> Self {
        ServeOptions {
            root,
            allow_push: false,
            credentials: Credentials::default(),
            workers: 16,
            max_connections: 512,
            max_connections_per_ip: 32,
            timeout: Duration::from_secs(60),
            // As git http-backend (GIT_HTTP_MAX_REQUEST_BUFFER): room for
            // some 200k "have" lines, and a fetch request is held in memory.
            max_fetch_request: 10 << 20,
            max_push_request: 8 << 30,
            config_overrides: Vec::new(),
            maintenance_workers: 1,
            access: None,
            metrics: Arc::new(Metrics::new()),
            max_push_inflated: refstore_protocol::receive_pack::DEFAULT_MAX_PUSH_INFLATED,
        }
    }

    /// The configuration a served repository is opened with: the command
    /// line's, and the server's bound on what a push inflates to.
    pub fn repository_overrides(&self) -> Vec<refstore_fs::config::Override> {
        let mut overrides = self.config_overrides.clone();
        overrides.push(refstore_fs::config::Override {
            key: refstore_protocol::receive_pack::MAX_PUSH_INFLATED_KEY.to_owned(),
            value: Some(self.max_push_inflated.to_string()),
        });
        overrides
    }
}

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
    state: Arc<handler::State>,
}

/// How long the accept loop waits before it looks at the shutdown flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);

impl Server {
    /// Listens on `addr` (`host:port`; port 0 picks a free one).
    pub fn bind(
        addr: &str,
        options: ServeOptions,
        vfs: Arc<dyn Vfs>,
    ) -> Result<Server, ServeError> {
        if !vfs
            .stat(&options.root)
            .is_ok_and(|m| m.kind == refstore_fs::FileKind::Dir)
        {
            return Err(ServeError::Root(options.root));
        }
        let listen_error = |e: std::io::Error| ServeError::Listen {
            addr: addr.to_owned(),
            reason: e.to_string(),
        };
        let listener = TcpListener::bind(addr).map_err(listen_error)?;
        let bound = listener.local_addr().map_err(listen_error)?;
        let permits = permits::Permits::new(options.workers);
        let maintenance = crate::maintenance::Maintenance::start(
            options.maintenance_workers,
            vfs.clone(),
            options.config_overrides.clone(),
        );
        Ok(Server {
            listener,
            addr: bound,
            state: Arc::new(handler::State {
                options,
                vfs,
                permits,
                maintenance,
            }),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` is set, then waits for requests in flight.
    pub fn run(self, shutdown: &AtomicBool) {
        let options = &self.state.options;
        tracing::info!(addr = %self.addr, root = %options.root.display(),
            push = options.allow_push, workers = options.workers.max(1),
            timeout_s = options.timeout.as_secs_f64(), "serving");
        let open = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            while !shutdown.load(Ordering::Relaxed) {
                let Some(stream) = self.accept() else {
                    continue;
                };
                if open.load(Ordering::Relaxed) >= options.max_connections {
                    turn_away(stream);
                    continue;
                }
                open.fetch_add(1, Ordering::Relaxed);
                let (state, open) = (&*self.state, &open);
                let spawned = std::thread::Builder::new()
                    .name("refstore-conn".into())
                    .spawn_scoped(scope, move || {
                        conn::serve(state, stream, shutdown);
                        open.fetch_sub(1, Ordering::Relaxed);
                    });
                if let Err(e) = spawned {
                    // The stream went down with the closure.
                    open.fetch_sub(1, Ordering::Relaxed);
                    tracing::warn!("cannot start a thread for a connection: {e}");
                }
            }
        });
        tracing::info!("shut down");
    }

    /// The next connection, or `None` after a short wait or a failure
    /// (which is logged: running out of file descriptors must not stop
    /// the server).
    fn accept(&self) -> Option<TcpStream> {
        let mut fds = [rustix::event::PollFd::new(
            &self.listener,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: ACCEPT_POLL.as_nanos() as _,
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => return None,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("waiting for connections failed: {e}");
                std::thread::sleep(ACCEPT_POLL);
                return None;
            }
        }
        match self.listener.accept() {
            Ok((stream, _)) => Some(stream),
            Err(e) => {
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) {
                    tracing::warn!("accepting a connection failed: {e}");
                    // EMFILE and the like: give connections time to end.
                    std::thread::sleep(ACCEPT_POLL);
                }
                None
            }
        }
    }
}

/// Answers a connection over the limit with 503 and closes it, without
/// waiting for its request.
fn turn_away(mut stream: TcpStream) {
    tracing::warn!(client = ?stream.peer_addr().ok(), "too many connections; answering 503");
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let message = "too many connections, try again later\n";
    let _ = write!(
        stream,
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{message}",
        message.len()
    );
}

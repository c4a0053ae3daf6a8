//! Smart HTTP: `refstore serve`.
//!
//! A fixed pool of worker threads takes requests from one listening socket.
//! Each request is routed to a repository below the served root (paths that
//! leave it, through `..` or symbolic links, are refused with 404 like
//! non-repositories), pushes are authenticated, and the service's output
//! is streamed back with chunked transfer encoding so memory stays bounded
//! whatever the size of a clone. Setting the shutdown flag stops taking new
//! requests; requests in flight complete.

mod body;
mod handler;
pub mod route;
mod services;

use crate::auth::Credentials;
use refstore_fs::Vfs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Requests handled at once.
    pub workers: usize,
    /// The largest fetch request body accepted, after decompression.
    pub max_fetch_request: u64,
    /// The largest push request body (commands and pack) accepted.
    pub max_push_request: u64,
    /// Configuration given on the command line (`-c name=value`), applied
    /// to every served repository.
    pub config_overrides: Vec<refstore_fs::config::Override>,
}

impl ServeOptions {
    /// Read-only serving of `root` with default limits.
    pub fn new(root: PathBuf) -> Self {
        ServeOptions {
            root,
            allow_push: false,
            credentials: Credentials::default(),
            workers: 16,
            max_fetch_request: 256 << 20,
            max_push_request: 8 << 30,
            config_overrides: Vec::new(),
        }
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
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    state: Arc<handler::State>,
}

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
        let http = tiny_http::Server::http(addr).map_err(|e| ServeError::Listen {
            addr: addr.to_owned(),
            reason: e.to_string(),
        })?;
        let bound = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| ServeError::Listen {
                addr: addr.to_owned(),
                reason: "not an IP address".to_owned(),
            })?;
        Ok(Server {
            http: Arc::new(http),
            addr: bound,
            state: Arc::new(handler::State { options, vfs }),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` is set, then waits for requests in flight.
    pub fn run(self, shutdown: &AtomicBool) {
        tracing::info!(addr = %self.addr, root = %self.state.options.root.display(),
            push = self.state.options.allow_push, "serving");
        std::thread::scope(|scope| {
            for _ in 0..self.state.options.workers.max(1) {
                let http = self.http.clone();
                let state = self.state.clone();
                scope.spawn(move || {
                    while !shutdown.load(Ordering::Relaxed) {
                        match http.recv_timeout(Duration::from_millis(100)) {
                            Ok(Some(request)) => handler::handle(&state, request),
                            Ok(None) => {}
                            Err(e) => tracing::warn!("accepting a request failed: {e}"),
                        }
                    }
                });
            }
        });
        tracing::info!("shut down");
    }
}

//! The built-in SSH server of `refstore serve --ssh-listen` (russh): git's
//! clients clone, fetch and push over `ssh://git@host:port/repo.git` with
//! their keys, and the key decides who the user is.
//!
//! It runs beside smart HTTP, on a thread of its own with its own tokio
//! runtime, and stops with the same shutdown flag: it takes no new
//! connections once the flag is set and returns when the services in
//! flight are done. It shares HTTP's limits: `--max-connections`,
//! `--max-connections-per-ip`, `--timeout` (a connection that runs no
//! service within it is dropped, whether it authenticated or not), and
//! HTTP's very turns to run services ([`Capacity`]: `--workers` services
//! at once over both transports, half of them at most for one address;
//! an address over its share is refused at once) and maintenance queue.
//! A connection may have at most [`MAX_CHANNELS`] channels.

mod bridge;
pub mod exec;
mod handler;
mod idle;
pub mod keys;
mod service;
mod shared;

pub use handler::MAX_CHANNELS;
pub use keys::{AuthorizedKeys, KeyError};

use crate::access::Reloadable;
use crate::capacity::Capacity;
use crate::http::ServeError;
use crate::metrics::{Rejection, Transport};
use crate::options::ServeOptions;
use crate::per_address::PerAddress;
use refstore_fs::Vfs;
use russh::keys::PrivateKey;
use russh::server::Config;
use russh::{MethodKind, MethodSet, SshId};
use shared::Shared;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the SSH server needs beyond [`ServeOptions`].
#[derive(Clone)]
pub struct SshOptions {
    /// The server's host key.
    pub host_key: PrivateKey,
    /// The users' keys (`--ssh-authorized-keys`), replaced on SIGHUP.
    pub authorized_keys: Arc<Reloadable<AuthorizedKeys>>,
}

impl std::fmt::Debug for SshOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshOptions")
            .field("host_key", &self.host_key.algorithm())
            .finish_non_exhaustive()
    }
}

/// How often the accepting loop looks at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(100);

/// A bound, not yet running, SSH server.
pub struct SshServer {
    listener: TcpListener,
    addr: SocketAddr,
    config: Arc<Config>,
    shared: Arc<Shared>,
}

impl SshServer {
    /// Listens on `addr` for the repositories below `options.root`,
    /// running services in the turns of `capacity` (shared with the HTTP
    /// server: [`Server::capacity`](crate::Server::capacity)).
    pub fn bind(
        addr: &str,
        ssh: SshOptions,
        options: ServeOptions,
        vfs: Arc<dyn Vfs>,
        capacity: Capacity,
    ) -> Result<SshServer, ServeError> {
        let (listener, bound) = crate::http::listen(addr, &options.root, vfs.as_ref())?;
        let config = Arc::new(config(ssh.host_key, options.timeout));
        Ok(SshServer {
            listener,
            addr: bound,
            config,
            shared: Arc::new(Shared {
                vfs,
                keys: ssh.authorized_keys,
                capacity,
                running: AtomicUsize::new(0),
                options,
            }),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` is set, then waits for the services in
    /// flight.
    pub fn run(self, shutdown: &AtomicBool) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("refstore-ssh")
            .enable_all()
            .build();
        let runtime = match runtime {
            Ok(runtime) => runtime,
            Err(e) => {
                tracing::error!("ssh: cannot start: {e}");
                return;
            }
        };
        let options = &self.shared.options;
        tracing::info!(addr = %self.addr, root = %options.root.display(),
            keys = self.shared.keys.get().len(), "serving ssh");
        runtime.block_on(self.serve(shutdown));
        // Connections without a running service are simply dropped.
        runtime.shutdown_timeout(Duration::from_secs(1));
        tracing::info!("ssh: shut down");
    }

    async fn serve(self, shutdown: &AtomicBool) {
        let listener = match tokio::net::TcpListener::from_std(self.listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!("ssh: cannot listen: {e}");
                return;
            }
        };
        let shared = &self.shared;
        let per_address = PerAddress::new(shared.options.max_connections_per_ip);
        let open = Arc::new(AtomicUsize::new(0));
        while !shutdown.load(Ordering::Relaxed) {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = tokio::time::sleep(SHUTDOWN_POLL) => continue,
            };
            let (socket, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and the like: give connections time to end.
                    tracing::warn!("ssh: accepting a connection failed: {e}");
                    tokio::time::sleep(SHUTDOWN_POLL).await;
                    continue;
                }
            };
            let metrics = &shared.options.metrics;
            if open.load(Ordering::Relaxed) >= shared.options.max_connections {
                tracing::warn!(client = %peer, "ssh: too many connections; closing");
                metrics.rejected(Rejection::Overloaded);
                continue;
            }
            let Some(address_slot) = per_address.try_take(peer.ip()) else {
                tracing::warn!(client = %peer, "ssh: too many connections from the address; closing");
                metrics.rejected(Rejection::OverloadedAddress);
                continue;
            };
            let counted = Counted::new(&open);
            let connected = metrics.connection(Transport::Ssh);
            let (shared, config) = (shared.clone(), self.config.clone());
            tokio::spawn(async move {
                connection(shared, config, socket, peer).await;
                drop((address_slot, counted, connected));
            });
        }
        while shared.running.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(SHUTDOWN_POLL).await;
        }
    }
}

/// Serves one connection until it ends or stays idle too long.
async fn connection(
    shared: Arc<Shared>,
    config: Arc<Config>,
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
) {
    // Small protocol packets (acknowledgements, ref updates) go out at once.
    let _ = socket.set_nodelay(true);
    let limit = shared.options.timeout;
    let idle = Arc::new(idle::Idle::new(limit));
    let handler = handler::Connection::new(shared.clone(), peer, idle.clone());
    let metrics = &shared.options.metrics;
    // russh reads the client's identification line before it returns.
    let session =
        match tokio::time::timeout(limit, russh::server::run_stream(config, socket, handler)).await
        {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => {
                tracing::debug!(client = %peer, "ssh: connection failed: {e}");
                return;
            }
            Err(_) => {
                metrics.rejected(Rejection::Timeout);
                return;
            }
        };
    let handle = session.handle();
    tokio::pin!(session);
    tokio::select! {
        ended = &mut session => {
            if let Err(e) = ended {
                tracing::debug!(client = %peer, "ssh: connection ended: {e}");
            }
            return;
        }
        () = idle.expired() => {}
    }
    tracing::info!(client = %peer, "ssh: dropping a connection idle for {limit:?}");
    metrics.rejected(Rejection::Timeout);
    let _ = handle
        .disconnect(
            russh::Disconnect::ByApplication,
            "timed out waiting for a command".to_owned(),
            String::new(),
        )
        .await;
    let _ = session.await;
}

/// The russh configuration: public keys only, `timeout` for silent
/// clients, keepalives so that a live client running a quiet service is
/// not mistaken for a silent one.
fn config(host_key: PrivateKey, timeout: Duration) -> Config {
    Config {
        server_id: SshId::Standard(concat!("SSH-2.0-refstore_", env!("CARGO_PKG_VERSION")).into()),
        methods: MethodSet::from(&[MethodKind::PublicKey][..]),
        // OpenSSH's clients start with "none" to learn the methods.
        auth_rejection_time_initial: Some(Duration::ZERO),
        keys: vec![host_key],
        max_auth_attempts: 6,
        inactivity_timeout: Some(timeout),
        keepalive_interval: Some((timeout / 2).max(Duration::from_millis(500))),
        keepalive_max: 3,
        ..Config::default()
    }
}

/// One open connection, counted until dropped.
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(open: &Arc<AtomicUsize>) -> Counted {
        open.fetch_add(1, Ordering::Relaxed);
        Counted(open.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

//! The server under test, in the test's own process: [`Serve`] is what it
//! is started with, [`Served`] the running server (HTTP, and SSH and the
//! metrics listener where asked for) on free loopback ports, each
//! transport on a thread of its own. Dropping it stops it as SIGTERM
//! stops `refstore serve` without a drain time, and waits for every
//! thread, whether the test passed or panicked; a server that does not
//! stop within [`STOP_LIMIT`] fails its test rather than hang it.

use super::alone;
use super::keys::ssh_options;
use refstore_fs::config::Override;
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_protocol::limits::SERVE_BIG_FILE_THRESHOLD;
use refstore_server::access::{AccessRules, Reloadable};
use refstore_server::health::Health;
use refstore_server::metrics::Metrics;
use refstore_server::metrics_endpoint::MetricsEndpoint;
use refstore_server::ssh::{SshOptions, SshServer};
use refstore_server::{Credentials, ServeOptions, Server};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A server to start: its options, as `refstore serve`'s defaults make
/// them, and what else runs beside HTTP.
pub struct Serve {
    /// The options, for a test to change.
    pub options: ServeOptions,
    listen: String,
    ssh: Option<SshOptions>,
    metrics_listener: bool,
    repair: bool,
}

impl Serve {
    /// Serving `root` as `refstore serve --root <root> --workers 4` does:
    /// `serve`'s defaults (the pack cache on in `.refstore-pack-cache`
    /// below the root, here given as `-c` values, its large-object
    /// threshold, one maintenance worker), read-only, on a free loopback
    /// port.
    pub fn new(root: &Path) -> Serve {
        let mut options = ServeOptions::new(root.to_owned());
        options.workers = 4;
        options.limits.big_file_threshold = Some(SERVE_BIG_FILE_THRESHOLD);
        options.config_overrides = vec![
            set("refstore.packCache.enabled", "true"),
            set(
                "refstore.packCache.path",
                root.join(".refstore-pack-cache").to_str().unwrap(),
            ),
        ];
        Serve {
            options,
            listen: "127.0.0.1:0".to_owned(),
            ssh: None,
            metrics_listener: false,
            repair: false,
        }
    }

    /// Pushes allowed to the users of `credentials` (`user:password`
    /// lines).
    pub fn pushes(mut self, credentials: &str) -> Serve {
        self.options.allow_push = true;
        self.credentials(credentials)
    }

    /// Pushes allowed, to the users the credentials or the SSH keys name
    /// (`--allow-push`).
    pub fn allow_push(mut self) -> Serve {
        self.options.allow_push = true;
        self
    }

    /// The users of `credentials` (`user:password` lines), as
    /// `--credentials` reads them.
    pub fn credentials(mut self, credentials: &str) -> Serve {
        self.options.credentials = Credentials::parse(credentials).unwrap();
        self
    }

    /// Who may read and push what (`--access`).
    pub fn access(mut self, rules: &str) -> Serve {
        self.options.access = Some(Arc::new(Reloadable::new(
            AccessRules::parse(rules).unwrap(),
        )));
        self
    }

    /// One more configuration value for every served repository (`-c`).
    pub fn config(mut self, key: &str, value: &str) -> Serve {
        self.options.config_overrides.push(set(key, value));
        self
    }

    /// Listens on `addr` rather than a free port.
    pub fn listen(mut self, addr: &str) -> Serve {
        self.listen = addr.to_owned();
        self
    }

    /// SSH too, on a free port, for the keys of `authorized`
    /// (authorized_keys lines).
    pub fn ssh(mut self, authorized: &str) -> Serve {
        self.ssh = Some(ssh_options(authorized));
        self
    }

    /// SSH too, with `options`.
    pub fn ssh_with(mut self, options: SshOptions) -> Serve {
        self.ssh = Some(options);
        self
    }

    /// The metrics listener too (`--metrics-listen`).
    pub fn metrics_listener(mut self) -> Serve {
        self.metrics_listener = true;
        self
    }

    /// The background repair of a replicating server too, as `serve`
    /// starts it unless `--replicate-no-repair`.
    pub fn repair(mut self) -> Serve {
        self.repair = true;
        self
    }

    /// Starts the server.
    pub fn start(self) -> Served {
        Served::start(self)
    }
}

fn set(key: &str, value: &str) -> Override {
    Override {
        key: key.to_owned(),
        value: Some(value.to_owned()),
    }
}

/// A running server.
pub struct Served {
    /// The HTTP listener's address.
    pub addr: SocketAddr,
    /// The SSH listener's address, if it serves SSH.
    pub ssh: Option<SocketAddr>,
    /// The metrics listener's address, if it has one.
    pub metrics_addr: Option<SocketAddr>,
    /// Where its transports count what they do.
    pub metrics: Arc<Metrics>,
    /// What `/healthz` reports.
    pub health: Health,
    /// The options it was started with.
    pub options: ServeOptions,
    /// Repair passes done, with [`Serve::repair`].
    pub repairs: Arc<std::sync::atomic::AtomicUsize>,
    shutdown: Arc<AtomicBool>,
    transports: Vec<JoinHandle<()>>,
    transports_done: Arc<AtomicBool>,
    endpoint: Option<MetricsEndpoint>,
}

impl Served {
    /// Starts what `serve` says; the test's thread shares the process
    /// with other tests' servers unless it is alone
    /// ([`alone::alone`]).
    pub fn start(serve: Serve) -> Served {
        alone::shared();
        let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
        let options = serve.options;
        let server = Server::bind(&serve.listen, options.clone(), vfs.clone()).unwrap();
        let addr = server.local_addr();
        let shutdown = Arc::new(AtomicBool::new(false));
        let ssh = serve.ssh.map(|ssh| {
            SshServer::bind(
                "127.0.0.1:0",
                ssh,
                options.clone(),
                vfs.clone(),
                server.capacity(),
            )
            .unwrap()
        });
        let transports_done = Arc::new(AtomicBool::new(false));
        let endpoint = serve.metrics_listener.then(|| {
            MetricsEndpoint::start(
                "127.0.0.1:0",
                options.metrics.clone(),
                options.health.clone(),
                transports_done.clone(),
            )
            .unwrap()
        });
        let mut transports = Vec::new();
        let repairs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        if serve.repair {
            let replica = options.replication.clone().expect("repair of a replica");
            let passes = repairs.clone();
            let repair = refstore_replica::repair::spawn(
                replica,
                vfs.clone(),
                options.root.clone(),
                options.repository_overrides(),
                shutdown.clone(),
                Box::new(move |done, total| {
                    if done == total {
                        passes.fetch_add(1, Ordering::SeqCst);
                    }
                }),
            );
            transports.push(repair.unwrap());
        }
        let ssh_addr = ssh.as_ref().map(SshServer::local_addr);
        if let Some(ssh) = ssh {
            let shutdown = shutdown.clone();
            transports.push(std::thread::spawn(move || ssh.run(&shutdown)));
        }
        {
            let shutdown = shutdown.clone();
            transports.push(std::thread::spawn(move || server.run(&shutdown)));
        }
        Served {
            addr,
            ssh: ssh_addr,
            metrics_addr: endpoint.as_ref().map(MetricsEndpoint::local_addr),
            metrics: options.metrics.clone(),
            health: options.health.clone(),
            options,
            repairs,
            shutdown,
            transports,
            transports_done,
            endpoint,
        }
    }

    /// `http://<addr>/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// `http://<user>:<password>@<addr>/<path>`.
    pub fn url_as(&self, user: &str, password: &str, path: &str) -> String {
        format!("http://{user}:{password}@{}/{path}", self.addr)
    }

    /// `https://<addr>/<path>`.
    pub fn https(&self, path: &str) -> String {
        format!("https://{}/{path}", self.addr)
    }

    /// `ssh://git@<ssh addr>/<path>`.
    pub fn ssh_url(&self, path: &str) -> String {
        format!("ssh://git@{}/{path}", self.ssh_addr())
    }

    /// The SSH listener's address.
    pub fn ssh_addr(&self) -> SocketAddr {
        self.ssh.expect("a server with SSH")
    }

    /// A raw HTTP/1.0 request of `request_line`: the status and the
    /// answer.
    pub fn raw(&self, request_line: &str) -> (u16, String) {
        super::clients::raw(self.addr, request_line)
    }

    /// Sends `request` as it is: the status and the answer.
    pub fn exchange(&self, request: &[u8]) -> (u16, String) {
        super::clients::exchange(self.addr, request)
    }

    /// A GET of `path` on the metrics listener: status, head, body.
    pub fn metrics_get(&self, path: &str) -> (u16, String, String) {
        let addr = self.metrics_addr.expect("a server with a metrics listener");
        let (status, answer) = super::clients::exchange(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }

    /// `/metrics` of the metrics listener, read by the strict reader.
    pub fn scrape(&self) -> refstore_testsupport::prometheus::Exposition {
        let (status, head, body) = self.metrics_get("/metrics");
        assert_eq!(status, 200, "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8"),
            "{head}"
        );
        refstore_testsupport::prometheus::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
    }

    /// Stops taking new connections, as SIGTERM does; [`Drop`] waits for
    /// the rest.
    pub fn shut_down(&self) {
        self.shutdown.store(true, Ordering::Relaxed);
    }

    /// Stops the server and waits until every request in flight is done.
    pub fn stop(self) {
        drop(self);
    }
}

/// How long a stopped server may take to finish what it was doing: far
/// more than any request of these tests takes, so that a server that
/// never stops fails its test instead of hanging it.
const STOP_LIMIT: Duration = Duration::from_secs(180);

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + STOP_LIMIT;
        while !self.transports.iter().all(JoinHandle::is_finished) {
            if Instant::now() >= deadline {
                if std::thread::panicking() {
                    eprintln!("the server did not stop within {STOP_LIMIT:?}");
                    return;
                }
                panic!("the server did not stop within {STOP_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut panicked = false;
        for transport in self.transports.drain(..) {
            panicked |= transport.join().is_err();
        }
        self.transports_done.store(true, Ordering::Relaxed);
        if let Some(endpoint) = self.endpoint.take() {
            endpoint.join();
        }
        if panicked && !std::thread::panicking() {
            panic!("a transport of the server panicked");
        }
    }
}

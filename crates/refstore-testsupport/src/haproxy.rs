//! A real HAProxy (Debian's `haproxy`, which scripts/install-deps
//! installs) in HTTP mode in front of servers under test, configured as a
//! host would run it: each server health-checked on its `/healthz`, taken
//! out of rotation at the first failed check and put back after two good
//! ones, client and server timeouts, and retries only of connections that
//! could not be made (so no request that reached a server is ever sent
//! twice). Its log goes to its standard error, which is collected; its
//! stats socket, in the test's directory, tells which servers it sends
//! requests to.

use crate::server::ServerProcess;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The name of the backend, in the configuration and the stats.
pub const BACKEND: &str = "nodes";

/// The name of the frontend clients connect to.
pub const FRONTEND: &str = "git";

/// One server behind the balancer.
#[derive(Debug, Clone)]
pub struct Backend {
    /// Its name in HAProxy's configuration and stats.
    pub name: String,
    /// Where it serves HTTP (on 127.0.0.1).
    pub port: u16,
    /// Where it answers `GET /healthz` (on 127.0.0.1).
    pub health_port: u16,
}

/// A running HAProxy, stopped when dropped.
pub struct Haproxy {
    process: ServerProcess,
    port: u16,
    socket: PathBuf,
}

/// The HAProxy configuration for `backends` behind `127.0.0.1:port`, its
/// stats socket at `socket`.
pub fn config(port: u16, socket: &Path, backends: &[Backend]) -> String {
    let servers: String = backends
        .iter()
        .map(|b| {
            format!(
                "    server {} 127.0.0.1:{} check port {}\n",
                b.name, b.port, b.health_port
            )
        })
        .collect();
    format!(
        "\
global
    # The log goes to standard error (the test collects it), not syslog.
    log stderr format raw local0 info
    stats socket {socket} mode 600 level admin
    maxconn 1024

defaults
    mode http
    log global
    option httplog
    option dontlognull
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout check 1s
    # Only a connection that could not be made is tried again, on another
    # server: its request was never sent, so nothing is replayed.
    retry-on conn-failure
    retries 2
    option redispatch 1

frontend {FRONTEND}
    bind 127.0.0.1:{port}
    default_backend {BACKEND}

backend {BACKEND}
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 200ms fall 1 rise 2
{servers}",
        socket = socket.display()
    )
}

/// The haproxy binary (on PATH, or in /usr/sbin, where Debian puts it and
/// where users' PATH does not look), or a failure that says how to
/// install it.
fn binary() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|p| p.is_file())
        .expect(
            "haproxy is not installed: this test runs the cluster behind a real HAProxy; \
             scripts/install-deps installs it (Debian's haproxy)",
        )
}

impl Haproxy {
    /// Starts HAProxy in front of `backends`, its configuration and socket
    /// in `dir`, and waits until it listens and counts every backend up.
    pub fn start(dir: &Path, backends: &[Backend]) -> Haproxy {
        let port = crate::etcd::free_port();
        let socket = dir.join("haproxy.sock");
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config(port, &socket, backends)).unwrap();
        let check = Command::new(binary())
            .arg("-c")
            .arg("-f")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "haproxy rejects {}: {}",
            file.display(),
            String::from_utf8_lossy(&check.stderr)
        );
        // -db: in the foreground, not as a daemon.
        let (process, _) =
            ServerProcess::spawn(Command::new(binary()).arg("-db").arg("-f").arg(&file));
        let haproxy = Haproxy {
            process,
            port,
            socket,
        };
        for backend in backends {
            haproxy.wait_for(&backend.name, "UP", Duration::from_secs(30));
        }
        haproxy
    }

    /// The port clients connect to (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// One command on the stats socket; its answer.
    fn ask(&self, command: &str) -> Option<String> {
        let mut stream = UnixStream::connect(&self.socket).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(format!("{command}\n").as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        Some(answer)
    }

    /// The field `field` of HAProxy's stats (`show stat`) for `server` of
    /// `proxy` (`FRONTEND` and `BACKEND` name a proxy's totals), if it
    /// answers.
    pub fn stat(&self, proxy: &str, server: &str, field: &str) -> Option<String> {
        let stats = self.ask("show stat")?;
        let mut lines = stats.lines();
        let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
        let column = |name: &str| header.iter().position(|h| *h == name);
        let (px, sv, wanted) = (column("pxname")?, column("svname")?, column(field)?);
        lines.find_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields.get(px) == Some(&proxy) && fields.get(sv) == Some(&server))
                .then(|| fields.get(wanted).map(|s| (*s).to_owned()))
                .flatten()
        })
    }

    /// What HAProxy's stats say of backend server `name`'s state (`UP`,
    /// `DOWN`, `DOWN 1/2` while rising...), if it answers.
    pub fn state(&self, name: &str) -> Option<String> {
        self.stat(BACKEND, name, "status")
    }

    /// Waits up to `limit` until server `name`'s state is `state`.
    pub fn wait_for(&self, name: &str, state: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let now = self.state(name);
            if now.as_deref() == Some(state) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "haproxy never counted {name} {state} (it says {now:?}): {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

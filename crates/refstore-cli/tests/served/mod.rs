//! A `refstore serve` child process for tests, and git clients for it.
#![allow(dead_code)]

use crate::support::isolate;
use refstore_testsupport::server::ServerProcess;
use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A running `refstore serve`, stopped with SIGTERM by [`Served::stop`]
/// (killed when dropped). Its log is collected as it is written, so a
/// chatty server never blocks on a full pipe.
pub struct Served {
    process: ServerProcess,
    pub addr: String,
}

impl Served {
    /// Serves `root` on a free loopback port with four workers unless
    /// `extra` says otherwise.
    pub fn start(home: &Path, root: &Path, extra: &[&str]) -> Served {
        Served::start_with_env(home, root, extra, &[])
    }

    /// [`Served::start`] with environment variables set (`RUST_LOG`).
    pub fn start_with_env(
        home: &Path,
        root: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Served {
        Served::start_listening(home, root, "127.0.0.1:0", extra, env)
    }

    /// [`Served::start_with_env`] on the address `listen`.
    pub fn start_listening(
        home: &Path,
        root: &Path,
        listen: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Served {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home)
            .envs(env.iter().copied())
            .args(["serve", "--listen", listen, "--print-address"])
            .arg("--root")
            .arg(root)
            .args(extra);
        if !extra.contains(&"--workers") {
            cmd.args(["--workers", "4"]);
        }
        let (process, mut stdout) = ServerProcess::spawn(&mut cmd);
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "serve printed no address");
        Served {
            process,
            addr: line.trim().to_owned(),
        }
    }

    /// Whether the log shows `text` within `limit`.
    pub fn logged_within(&self, text: &str, limit: Duration) -> bool {
        let started = Instant::now();
        loop {
            if self.process.log().contains(text) {
                return true;
            }
            if started.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the log holds `text` (or the server exits).
    pub fn wait_for_log(&self, text: &str) {
        self.process.wait_for_log(text);
    }

    /// Sends SIGHUP.
    pub fn hang_up(&self) {
        self.process.signal("HUP");
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn url_as(&self, user: &str, password: &str, path: &str) -> String {
        format!("http://{user}:{password}@{}/{path}", self.addr)
    }

    /// A raw HTTP/1.0 request; returns the status code and the whole answer.
    pub fn raw(&self, request_line: &str) -> (u16, String) {
        self.exchange(format!("{request_line} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
    }

    /// Sends `request` as it is and reads the answer until the server
    /// closes the connection; returns the status code and the answer.
    pub fn exchange(&self, request: &[u8]) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let _ = stream.write_all(request);
        read_answer(&mut stream)
    }

    /// Stops the server with SIGTERM; returns its exit code and log.
    pub fn stop(self) -> (Option<i32>, String) {
        self.process.stop()
    }
}

/// Reads an HTTP answer until the connection closes; the status code (0
/// if there is none) and the text.
/// A bare repository `<home>/root/proj.git` with `settings` in its
/// configuration, served with pushes allowed to the user `bob` (password
/// `pw`), and `<home>/work`, an empty repository to push from: the server
/// and the repository's URL for bob.
pub fn served_for_pushes(
    home: &Path,
    settings: &[[&str; 2]],
    env: &[(&str, &str)],
) -> (Served, String) {
    use crate::support::git_ok;
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let served = root.join("proj.git");
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", served.to_str().unwrap()],
    );
    for [key, value] in settings {
        git_ok(home, &served, &["config", key, value]);
    }
    let credentials = home.join("users");
    std::fs::write(&credentials, "bob:pw\n").unwrap();
    let server = Served::start_with_env(
        home,
        &root,
        &[
            "--allow-push",
            "--credentials",
            credentials.to_str().unwrap(),
        ],
        env,
    );
    let url = server.url_as("bob", "pw", "proj.git");
    git_ok(home, home, &["init", "-q", "work"]);
    (server, url)
}

pub fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// git with prompts off, so a refused push fails instead of asking.
pub fn git_net(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    isolate(&mut Command::new("git"), home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// Waits until the server has taken the connection `stream` in and read
/// everything sent on it so far, as the kernel shows it: the server's end
/// of the connection has a file (one still in the listen queue has none)
/// and nothing left in its receive queue. Fails after a minute.
pub fn wait_until_read(stream: &TcpStream) {
    let client = stream.local_addr().unwrap();
    let server = stream.peer_addr().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let end = socket_state(server, client);
        if end.is_some_and(|s| s.inode != 0 && s.unread == 0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server never read what {client} sent: {end:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An IPv4 TCP socket of this machine as `/proc/net/tcp` lists it.
#[derive(Debug, Clone, Copy)]
struct SocketState {
    /// The inode of its file; 0 before a process accepted it.
    inode: u64,
    /// Bytes received that its process has not read.
    unread: u64,
}

/// The socket whose own address is `local` and whose peer is `remote`.
fn socket_state(local: SocketAddr, remote: SocketAddr) -> Option<SocketState> {
    // The kernel prints the address as the 32-bit number it holds, in
    // the machine's byte order, and the port in hex.
    let hex = |addr: SocketAddr| match addr {
        SocketAddr::V4(a) => format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(a.ip().octets()),
            a.port()
        ),
        SocketAddr::V6(_) => panic!("{addr}: only IPv4 connections are looked up"),
    };
    let (local, remote) = (hex(local), hex(remote));
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table.lines().skip(1).find_map(|line| {
        // sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) != Some(&local.as_str()) || fields.get(2) != Some(&remote.as_str()) {
            return None;
        }
        let (_, rx) = fields.get(4)?.split_once(':')?;
        Some(SocketState {
            inode: fields.get(9)?.parse().ok()?,
            unread: u64::from_str_radix(rx, 16).ok()?,
        })
    })
}

/// [`git_net`], which must succeed: its standard output.
pub fn git_net_ok(home: &Path, cwd: &Path, args: &[&str]) -> String {
    let o = git_net(home, cwd, args);
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

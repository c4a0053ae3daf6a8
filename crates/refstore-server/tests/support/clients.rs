//! Clients of a server under test: the machine's git over HTTP, HTTPS
//! and SSH (prompts off, so a refusal fails instead of asking), OpenSSH
//! alone, raw HTTP requests over TCP, and what the kernel shows of a
//! connection's state, to wait until the server has taken or read it.

use refstore_testsupport::ssh::ssh_command;
use refstore_testsupport::{git_ok, stderr, stdout, Git};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// git with prompts off, so a refused push fails instead of asking.
pub fn git_net(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    git_net_env(home, cwd, args, &[])
}

/// [`git_net`] with more environment variables.
pub fn git_net_env(home: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut git = Git::new(home, cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env);
    git.command()
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS");
    git.run(args)
}

/// [`git_net`], which must succeed: its standard output.
pub fn git_net_ok(home: &Path, cwd: &Path, args: &[&str]) -> String {
    let o = git_net(home, cwd, args);
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// git over HTTPS trusting the certificate `ca`, prompts off.
pub fn git_tls(home: &Path, cwd: &Path, ca: &Path, args: &[&str]) -> Output {
    let mut git = Git::new(home, cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSL_CAINFO", ca);
    git.command()
        .env_remove("GIT_SSL_NO_VERIFY")
        .env_remove("GIT_ASKPASS");
    git.run(args)
}

/// git over ssh with `key`.
pub fn git_ssh(home: &Path, cwd: &Path, key: &Path, args: &[&str]) -> Output {
    git_ssh_env(home, cwd, key, args, &[])
}

/// git over ssh with `key`, which must succeed: its standard output.
pub fn git_ssh_ok(home: &Path, cwd: &Path, key: &Path, args: &[&str]) -> String {
    let o = git_ssh(home, cwd, key, args);
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// [`git_ssh`] with more environment variables.
pub fn git_ssh_env(
    home: &Path,
    cwd: &Path,
    key: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    Git::new(home, cwd)
        .env("GIT_SSH_COMMAND", ssh_command(key))
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env)
        .run(args)
}

/// The OpenSSH client with `key` to the server's `port`, as a command
/// line split in words.
pub fn ssh_words(key: &Path, port: u16) -> Vec<String> {
    format!("{} -p {port} git@127.0.0.1", ssh_command(key))
        .split(' ')
        .map(str::to_owned)
        .collect()
}

/// Runs `remote` through the OpenSSH client itself (a login shell if
/// empty).
pub fn ssh(home: &Path, key: &Path, port: u16, remote: &str) -> Output {
    let mut words = ssh_words(key, port);
    if !remote.is_empty() {
        words.push(remote.to_owned());
    }
    refstore_testsupport::isolate(&mut std::process::Command::new(&words[0]), home)
        .args(&words[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The refs of the repository at `git_dir`, as git lists them.
pub fn refs_of(home: &Path, git_dir: &Path) -> String {
    git_ok(
        home,
        git_dir,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    )
}

/// Sends `request` as it is and reads the answer until the server closes
/// the connection: the status code (0 if there is none) and the answer.
pub fn exchange(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let _ = stream.write_all(request);
    read_answer(&mut stream)
}

/// A raw HTTP/1.0 request of `request_line`: the status and the answer.
pub fn raw(addr: SocketAddr, request_line: &str) -> (u16, String) {
    exchange(
        addr,
        format!("{request_line} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes(),
    )
}

/// Reads an HTTP answer until the connection closes: the status code (0
/// if there is none) and the text.
pub fn read_answer(stream: &mut impl Read) -> (u16, String) {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    (status_of(&answer), answer)
}

/// The status code of an HTTP answer; 0 if it has none.
pub fn status_of(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Connects to `server` from the local address `from` (a loopback
/// address other than 127.0.0.1 stands for another client).
pub fn connect_from(from: &str, server: SocketAddr) -> TcpStream {
    let from: SocketAddr = format!("{from}:0").parse().unwrap();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&from.into()).unwrap();
    socket.connect(&server.into()).unwrap();
    socket.into()
}

/// Waits until the server has taken the connection `stream` in and read
/// everything sent on it so far, as the kernel shows it: the server's end
/// of the connection has a file (one still in the listen queue has none)
/// and nothing left in its receive queue. Fails after a minute.
pub fn wait_until_read(stream: &TcpStream) {
    wait_for_server_end(stream, "read what was sent", |s| {
        s.inode != 0 && s.unread == 0
    });
}

/// Waits until the server has accepted the connection `stream`: its end
/// has a file. Fails after a minute.
pub fn wait_until_accepted(stream: &TcpStream) {
    wait_for_server_end(stream, "accepted the connection", |s| s.inode != 0);
}

fn wait_for_server_end(stream: &TcpStream, what: &str, done: impl Fn(&SocketState) -> bool) {
    let client = stream.local_addr().unwrap();
    let server = stream.peer_addr().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let end = socket_state(server, client);
        if end.as_ref().is_some_and(&done) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server never {what} ({client}): {end:?}"
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

/// A child process a test started, killed and waited for when dropped
/// unless the test waited for it: none outlives its test, whether the
/// test passed or panicked.
pub struct Running(Option<std::process::Child>);

impl Running {
    /// Starts `cmd`.
    pub fn spawn(cmd: &mut std::process::Command) -> Running {
        Running(Some(cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot run {:?}: {e}", cmd.get_program())
        })))
    }

    /// The process, to write to or read from.
    pub fn child(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("running")
    }

    /// Waits for the process to end: what it printed and its status.
    pub fn finish(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

//! A `refstore serve --ssh-listen` child process for tests, and SSH
//! clients for it: OpenSSH (alone and under git) with keys made by
//! ssh-keygen, raw TCP, and russh's client.
#![allow(dead_code)]

use crate::support::*;
use refstore_testsupport::server::ServerProcess;
use std::io::{BufRead, Read};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub use refstore_testsupport::ssh::{keygen, ssh_command};

/// A running `refstore serve` with SSH, killed when dropped.
pub struct SshServed {
    process: ServerProcess,
    pub port: u16,
    /// The HTTP listener's `host:port`.
    pub http: String,
}

impl SshServed {
    /// Serves `root` over HTTP and SSH (both on free ports) to the keys in
    /// `authorized`, with `extra` arguments.
    pub fn start(home: &Path, root: &Path, authorized: &str, extra: &[&str]) -> SshServed {
        let host_key = home.join("host_key");
        if !host_key.exists() {
            keygen(home, "host_key", "ed25519", "host");
        }
        let keys = home.join("authorized_keys");
        std::fs::write(&keys, authorized).unwrap();
        let (process, stdout) = ServerProcess::spawn(
            isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
                .args(["serve", "--listen", "127.0.0.1:0", "--print-address"])
                .args(["--ssh-listen", "127.0.0.1:0"])
                .arg("--ssh-host-key")
                .arg(&host_key)
                .arg("--ssh-authorized-keys")
                .arg(&keys)
                .arg("--root")
                .arg(root)
                .args(extra)
                .args(if extra.contains(&"--workers") {
                    &[][..]
                } else {
                    &["--workers", "4"][..]
                }),
        );
        let mut lines = stdout.lines();
        let (Some(Ok(http)), Some(Ok(ssh))) = (lines.next(), lines.next()) else {
            panic!("serve printed no addresses: {}", process.kill());
        };
        let port = ssh.rsplit(':').next().unwrap().parse().unwrap();
        SshServed {
            process,
            port,
            http,
        }
    }

    /// Sends SIGHUP: read the configuration files again.
    pub fn hang_up(&self) {
        self.process.signal("HUP");
    }

    /// Waits until the log shows `text` (the server acts in the
    /// background); fails after a minute.
    pub fn wait_for_log(&self, text: &str) {
        self.process.wait_for_log(text);
    }

    /// Whether the log shows `text` within `limit`.
    pub fn logged_within(&self, text: &str, limit: Duration) -> bool {
        let started = std::time::Instant::now();
        loop {
            if self.process.log().contains(text) {
                return true;
            }
            if started.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn url(&self, repo: &str) -> String {
        format!("ssh://git@127.0.0.1:{}/{repo}", self.port)
    }

    /// Stops the server with SIGTERM; returns its exit code and log.
    pub fn stop(self) -> (Option<i32>, String) {
        self.process.stop()
    }
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

pub fn git_ssh_env(
    home: &Path,
    cwd: &Path,
    key: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    isolate(&mut Command::new("git"), home)
        .env("GIT_SSH_COMMAND", ssh_command(key))
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env.iter().copied())
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// Runs `remote` through the OpenSSH client itself (a login shell if
/// empty).
pub fn ssh(home: &Path, key: &Path, port: u16, remote: &str) -> Output {
    let command = format!("{} -p {port} git@127.0.0.1", ssh_command(key));
    let mut words: Vec<&str> = command.split(' ').collect();
    if !remote.is_empty() {
        words.push(remote);
    }
    isolate(&mut Command::new(words[0]), home)
        .args(&words[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A work repository with two branches and a tag, and bare copies of it
/// at `repos` below `root`.
pub fn setup(home: &Path, root: &Path, repos: &[&str]) -> PathBuf {
    let work = fixtures::three_commits(home);
    for repo in repos {
        work.bare_clone(&root.join(repo));
    }
    work.path
}

/// Commits `len` bytes of [`noise`] as `big` in `work` and serves a bare
/// copy of it at `big.git` below `root`, which it returns.
pub fn serve_big_file(home: &Path, root: &Path, work: &Path, len: usize, seed: u64) -> PathBuf {
    std::fs::write(work.join("big"), crate::support::noise(seed, len)).unwrap();
    git_ok(home, work, &["add", "big"]);
    git_ok(home, work, &["commit", "-q", "-m", "big"]);
    let served = root.join("big.git");
    bare_clone(home, work, &served);
    served
}

pub fn refs_of(home: &Path, git_dir: &Path) -> String {
    git_ok(
        home,
        git_dir,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    )
}

/// Connects from `from` (a loopback address) and reads the server's
/// identification line; `None` if the server closed the connection
/// instead.
pub fn connect_from(from: &str, to: &str) -> Option<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(to.parse().unwrap()).await.unwrap()
    });
    let mut stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut banner = [0u8; 8];
    match stream.read_exact(&mut banner) {
        Ok(()) => {
            assert_eq!(&banner, b"SSH-2.0-");
            Some(stream)
        }
        Err(e) => {
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
            None
        }
    }
}

/// A russh client that accepts any host key.
pub struct Client;

impl russh::client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        _key: &russh::keys::PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

/// What a channel's command gave: its output (until the advertisement's
/// flush-pkt if `until_flush`), its stderr and its exit status.
#[derive(Debug, Default)]
pub struct Ran {
    pub out: Vec<u8>,
    pub err: String,
    pub exit: Option<u32>,
}

pub async fn run(channel: &mut russh::Channel<russh::client::Msg>, until_flush: bool) -> Ran {
    let mut ran = Ran::default();
    while let Some(message) = channel.wait().await {
        match message {
            russh::ChannelMsg::Data { data } => {
                ran.out.extend_from_slice(&data);
                if until_flush && ran.out.ends_with(b"0000") {
                    break;
                }
            }
            russh::ChannelMsg::ExtendedData { data, ext: 1 } => {
                ran.err.push_str(&String::from_utf8_lossy(&data));
            }
            russh::ChannelMsg::ExitStatus { exit_status } => ran.exit = Some(exit_status),
            russh::ChannelMsg::Close => break,
            _ => {}
        }
    }
    ran
}

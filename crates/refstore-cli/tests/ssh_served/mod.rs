//! A `refstore serve --ssh-listen` child process for tests, and SSH
//! clients for it: OpenSSH (alone and under git) with keys made by
//! ssh-keygen, raw TCP, and russh's client.
#![allow(dead_code)]

use crate::support::*;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Makes a key pair `home/<name>` with ssh-keygen; returns the private
/// key's path and the public key's line with `user` as its comment.
pub fn keygen(home: &Path, name: &str, kind: &str, user: &str) -> (PathBuf, String) {
    let path = home.join(name);
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-C", user, "-f"])
        .arg(&path)
        .output()
        .expect("cannot run ssh-keygen: install openssh-client (scripts/install-deps does)");
    assert!(o.status.success(), "ssh-keygen: {}", stderr(&o));
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, public)
}

/// A running `refstore serve` with SSH, killed when dropped.
pub struct SshServed {
    child: Child,
    pub port: u16,
    /// The HTTP listener's `host:port`.
    pub http: String,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
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
        let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), home)
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
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let reader = {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            })
        };
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let http = lines.next();
        let ssh = lines.next();
        let (Some(Ok(http)), Some(Ok(ssh))) = (http, ssh) else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            panic!("serve printed no addresses: {}", log.lock().unwrap());
        };
        let port = ssh.rsplit(':').next().unwrap().parse().unwrap();
        SshServed {
            child,
            port,
            http,
            log,
            reader: Some(reader),
        }
    }

    /// Sends SIGHUP: read the configuration files again.
    pub fn hang_up(&self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Waits until the log shows `text` (the server acts in the
    /// background); fails after a minute.
    pub fn wait_for_log(&self, text: &str) {
        if !self.logged_within(text, Duration::from_secs(60)) {
            panic!("'{text}' never logged: {}", self.log.lock().unwrap());
        }
    }

    /// Whether the log shows `text` within `limit`.
    pub fn logged_within(&self, text: &str, limit: Duration) -> bool {
        let started = std::time::Instant::now();
        loop {
            if self.log.lock().unwrap().contains(text) {
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
    pub fn stop(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let status = self.child.wait().unwrap();
        let _ = self.reader.take().unwrap().join();
        let log = self.log.lock().unwrap().clone();
        (status.code(), log)
    }
}

impl Drop for SshServed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The OpenSSH client as git runs it, with only `key` and no host checks.
pub fn ssh_command(key: &Path) -> String {
    format!(
        "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        key.display()
    )
}

/// git over ssh with `key`.
pub fn git_ssh(home: &Path, cwd: &Path, key: &Path, args: &[&str]) -> Output {
    git_ssh_env(home, cwd, key, args, &[])
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
    let work = home.join("work");
    git_ok(home, home, &["init", "-q", "-b", "main", "work"]);
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        std::fs::write(work.join(name), format!("{i}\n")).unwrap();
        git_ok(home, &work, &["add", name]);
        git_ok(home, &work, &["commit", "-q", "-m", name]);
    }
    git_ok(home, &work, &["branch", "topic", "HEAD~1"]);
    git_ok(home, &work, &["tag", "-a", "-m", "release", "v1", "HEAD~2"]);
    for repo in repos {
        let served = root.join(repo);
        std::fs::create_dir_all(served.parent().unwrap()).unwrap();
        bare_clone(home, &work, &served);
    }
    work
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

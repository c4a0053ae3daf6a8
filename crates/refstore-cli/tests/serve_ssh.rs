//! `refstore serve --ssh-listen` with the machine's real git and OpenSSH
//! client: clone, fetch, push and ls-remote over ssh:// with ed25519 and
//! RSA keys made by ssh-keygen, protocol v0 and v2; unknown keys, pushes
//! of read-only users and private repositories refused in git's words;
//! and clients that misbehave (protocol garbage, too many channels, no
//! authentication at all) dropped while others are served.

mod support;
use russh::keys::PrivateKeyWithHashAlg;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Makes a key pair `home/<name>` with ssh-keygen; returns the private
/// key's path and the public key's line with `user` as its comment.
fn keygen(home: &Path, name: &str, kind: &str, user: &str) -> (PathBuf, String) {
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
struct SshServed {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl SshServed {
    /// Serves `root` over HTTP and SSH (both on free ports) to the keys in
    /// `authorized`, with `extra` arguments.
    fn start(home: &Path, root: &Path, authorized: &str, extra: &[&str]) -> SshServed {
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
        let (Some(Ok(_http)), Some(Ok(ssh))) = (http, ssh) else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            panic!("serve printed no addresses: {}", log.lock().unwrap());
        };
        let port = ssh.rsplit(':').next().unwrap().parse().unwrap();
        SshServed {
            child,
            port,
            log,
            reader: Some(reader),
        }
    }

    /// Sends SIGHUP: read the configuration files again.
    fn hang_up(&self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Waits until the log shows `text` (the server acts in the
    /// background); fails after a minute.
    fn wait_for_log(&self, text: &str) {
        for _ in 0..1200 {
            if self.log.lock().unwrap().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("'{text}' never logged: {}", self.log.lock().unwrap());
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn url(&self, repo: &str) -> String {
        format!("ssh://git@127.0.0.1:{}/{repo}", self.port)
    }

    /// Stops the server with SIGTERM; returns its exit code and log.
    fn stop(mut self) -> (Option<i32>, String) {
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
fn ssh_command(key: &Path) -> String {
    format!(
        "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        key.display()
    )
}

/// git over ssh with `key`.
fn git_ssh(home: &Path, cwd: &Path, key: &Path, args: &[&str]) -> Output {
    git_ssh_env(home, cwd, key, args, &[])
}

fn git_ssh_env(home: &Path, cwd: &Path, key: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
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
fn ssh(home: &Path, key: &Path, port: u16, remote: &str) -> Output {
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
fn setup(home: &Path, root: &Path, repos: &[&str]) -> PathBuf {
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
        git_ok(
            home,
            home,
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                served.to_str().unwrap(),
            ],
        );
    }
    work
}

fn refs_of(home: &Path, git_dir: &Path) -> String {
    git_ok(
        home,
        git_dir,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    )
}

#[test]
fn clone_fetch_push_and_ls_remote_over_ssh_in_protocol_v0_and_v2() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["team/proj.git"]);
    let served = root.join("team/proj.git");
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(home, &root, &alice_pub, &["--allow-push"]);
    let url = server.url("team/proj.git");

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let clone = home.join(format!("clone-v{version}"));
        let o = git_ssh_env(
            home,
            home,
            &alice,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                &url,
                clone.to_str().unwrap(),
            ],
            &[("GIT_TRACE_PACKET", "1")],
        );
        assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        // The version the server answered in: v2 starts "version 2".
        let trace = stderr(&o);
        assert_eq!(
            trace.contains("< version 2"),
            version == "2",
            "v{version}: {trace}"
        );
        git_ok(home, &clone, &["fsck", "--no-progress"]);
        assert_eq!(
            git_ok(
                home,
                &clone,
                &["rev-parse", "HEAD", "origin/topic", "v1^{}"]
            ),
            git_ok(home, &served, &["rev-parse", "HEAD", "topic", "v1^{}"])
        );

        let ours = git_ssh(
            home,
            home,
            &alice,
            &["-c", &protocol, "ls-remote", "--symref", &url],
        );
        let theirs = git_ok(
            home,
            home,
            &[
                "-c",
                &protocol,
                "ls-remote",
                "--symref",
                served.to_str().unwrap(),
            ],
        );
        assert!(ours.status.success(), "{}", stderr(&ours));
        assert_eq!(stdout(&ours), theirs, "ls-remote v{version}");

        // A push from the clone, then a fetch of it into the work tree.
        std::fs::write(clone.join("d"), format!("v{version}\n")).unwrap();
        git_ok(home, &clone, &["add", "d"]);
        git_ok(home, &clone, &["commit", "-q", "-m", "more"]);
        let branch = format!("refs/heads/from-v{version}");
        let o = git_ssh(
            home,
            &clone,
            &alice,
            &["-c", &protocol, "push", "origin", &format!("HEAD:{branch}")],
        );
        assert!(o.status.success(), "push v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &served, &["rev-parse", &branch]),
            git_ok(home, &clone, &["rev-parse", "HEAD"])
        );
        let o = git_ssh(
            home,
            &work,
            &alice,
            &[
                "-c",
                &protocol,
                "fetch",
                "-q",
                &url,
                &format!("{branch}:{branch}"),
            ],
        );
        assert!(o.status.success(), "fetch v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &work, &["rev-parse", &branch]),
            git_ok(home, &clone, &["rev-parse", "HEAD"])
        );
    }
    git_ok(home, &served, &["fsck", "--no-progress"]);
    // Deleting a branch is a push too.
    let o = git_ssh(home, &work, &alice, &["push", &url, ":refs/heads/from-v0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!refs_of(home, &served).contains("from-v0"));

    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("user=alice"), "{log}");
    assert!(
        log.contains("transport=\"ssh\"") || log.contains("transport=ssh"),
        "{log}"
    );
}

#[test]
fn rsa_keys_log_in_and_unknown_keys_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    let (bob, bob_pub) = keygen(home, "bob", "rsa", "bob");
    let (mallory, _) = keygen(home, "mallory", "ed25519", "mallory");
    let server = SshServed::start(home, &root, &bob_pub, &[]);

    let o = git_ssh(home, home, &bob, &["ls-remote", &server.url("proj.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        git_ok(home, home, &["ls-remote", served.to_str().unwrap()])
    );

    let before = refs_of(home, &served);
    for args in [
        vec!["ls-remote", "URL"],
        vec!["push", "URL", "main:refs/heads/new"],
    ] {
        let url = server.url("proj.git");
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "URL" { url.as_str() } else { a })
            .collect();
        let o = git_ssh(home, &home.join("work"), &mallory, &args);
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("Permission denied (publickey)"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(refs_of(home, &served), before);

    // The refusal is logged once the connection is over.
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("no authorized key offered"), "{log}");
    // With the fingerprint ssh-keygen shows for the key.
    let fingerprint = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(mallory.with_extension("pub"))
        .output()
        .unwrap();
    let fingerprint = stdout(&fingerprint);
    let fingerprint = fingerprint.split_whitespace().nth(1).unwrap();
    assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");
    assert!(log.contains(fingerprint), "{fingerprint} not in {log}");
    let server = SshServed::start(home, &root, &bob_pub, &[]);

    // Without --allow-push even a known key only reads.
    let o = git_ssh(
        home,
        &home.join("work"),
        &bob,
        &["push", &server.url("proj.git"), "main:refs/heads/new"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fatal: pushing is disabled on this server"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &served), before);
}

#[test]
fn access_rules_decide_and_never_reveal_private_repositories() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["pub/proj.git", "priv/secret.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let (bob, bob_pub) = keygen(home, "bob", "ed25519", "bob");
    let access = home.join("access");
    std::fs::write(&access, "* read pub/*\nalice write *\n").unwrap();
    let server = SshServed::start(
        home,
        &root,
        &format!("{alice_pub}{bob_pub}"),
        &["--access", access.to_str().unwrap()],
    );
    let public = root.join("pub/proj.git");
    let before = refs_of(home, &public);

    // A read-only user pushing: refused with the reason.
    let o = git_ssh(
        home,
        &work,
        &bob,
        &["push", &server.url("pub/proj.git"), "main:refs/heads/new"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fatal: user 'bob' may not push to 'pub/proj.git'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &public), before);

    // A private repository looks exactly like a missing one to bob.
    let hidden = git_ssh(
        home,
        home,
        &bob,
        &["ls-remote", &server.url("priv/secret.git")],
    );
    let missing = git_ssh(
        home,
        home,
        &bob,
        &["ls-remote", &server.url("priv/none.git")],
    );
    assert!(!hidden.status.success() && !missing.status.success());
    assert!(
        stderr(&hidden)
            .contains("fatal: '/priv/secret.git' does not appear to be a git repository"),
        "{}",
        stderr(&hidden)
    );
    assert_eq!(stderr(&hidden).replace("secret", "none"), stderr(&missing));
    let o = ssh(
        home,
        &bob,
        server.port,
        "git-upload-pack '/priv/secret.git'",
    );
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));

    // Alice reads and writes everything.
    let o = git_ssh(
        home,
        &work,
        &alice,
        &[
            "push",
            &server.url("priv/secret.git"),
            "main:refs/heads/new",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_ssh(
        home,
        home,
        &alice,
        &["ls-remote", &server.url("priv/secret.git")],
    );
    assert!(stdout(&o).contains("refs/heads/new"), "{}", stderr(&o));
}

#[test]
fn only_git_commands_on_repositories_below_the_root_are_run() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git", "../outside.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(home, &root, &alice_pub, &[]);

    // A login checks the key and ends.
    let o = ssh(home, &alice, server.port, "");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Hi alice! You have logged in"),
        "{}",
        stderr(&o)
    );

    let o = ssh(home, &alice, server.port, "ls -la");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("only git-upload-pack and git-receive-pack are served here"),
        "{}",
        stderr(&o)
    );
    for path in ["/nothing.git", "/../outside.git", "~/../outside.git"] {
        let o = ssh(
            home,
            &alice,
            server.port,
            &format!("git-upload-pack '{path}'"),
        );
        assert_eq!(o.status.code(), Some(128), "{path}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("fatal: '{path}' does not appear to be a git repository\n")
        );
    }
    // The forms git's clients send: `git upload-pack`, scp-like paths
    // without a slash, `~/`.
    for command in [
        "git upload-pack '/proj.git'",
        "git-upload-pack 'proj.git'",
        "git-upload-pack '~/proj.git'",
    ] {
        let o = ssh(home, &alice, server.port, command);
        // The client sends nothing; the advertisement came first.
        assert!(
            stdout(&o).contains("refs/heads/main"),
            "{command}: {}",
            stderr(&o)
        );
    }
}

/// A russh client that accepts any host key.
struct Client;

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
struct Ran {
    out: Vec<u8>,
    err: String,
    exit: Option<u32>,
}

async fn run(channel: &mut russh::Channel<russh::client::Msg>, until_flush: bool) -> Ran {
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

#[test]
fn a_connection_gets_a_few_channels_and_an_address_half_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(home, &root, &alice_pub, &["--workers", "2"]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = Arc::new(russh::client::Config::default());
        let mut session = russh::client::connect(config, server.addr(), Client)
            .await
            .unwrap();
        let key = russh::keys::load_secret_key(&alice, None).unwrap();
        let auth = session
            .authenticate_publickey("git", PrivateKeyWithHashAlg::new(Arc::new(key), None))
            .await
            .unwrap();
        assert!(auth.success());
        let mut open = Vec::new();
        for _ in 0..4 {
            open.push(session.channel_open_session().await.unwrap());
        }
        for _ in 0..3 {
            assert!(session.channel_open_session().await.is_err());
        }

        // The channels it has work. The first fetch waits for the
        // client's wants after its advertisement, holding a worker.
        let fetch = "git-upload-pack '/proj.git'";
        let (mut first, mut second, mut third) = (
            open.pop().unwrap(),
            open.pop().unwrap(),
            open.pop().unwrap(),
        );
        first.exec(true, fetch).await.unwrap();
        let ran = run(&mut first, true).await;
        assert!(
            String::from_utf8_lossy(&ran.out).contains("refs/heads/main"),
            "{ran:?}"
        );
        // One of the two workers is all an address gets.
        second.exec(true, fetch).await.unwrap();
        let ran = run(&mut second, false).await;
        assert_eq!(ran.exit, Some(128), "{ran:?}");
        assert_eq!(
            ran.err,
            "fatal: too many requests from your address at once; try again later\n"
        );
        // The first fetch ends (no wants), and its worker is free again.
        first.data_bytes(&b"0000"[..]).await.unwrap();
        first.eof().await.unwrap();
        let ran = run(&mut first, false).await;
        assert_eq!(ran.exit, Some(0), "{ran:?}");
        third.exec(true, fetch).await.unwrap();
        let ran = run(&mut third, true).await;
        assert!(
            String::from_utf8_lossy(&ran.out).contains("refs/heads/main"),
            "{ran:?}"
        );
    });
}

#[test]
fn garbage_and_silent_clients_are_dropped_while_others_are_served() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(home, &root, &alice_pub, &["--timeout", "2"]);

    // Garbage instead of an identification line, and garbage after one.
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &b"SSH-2.0-junk\r\n\x00\x00\x01\x00\xffgarbage garbage garbage"[..],
    ] {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let _ = stream.write_all(garbage);
        let mut answer = Vec::new();
        let ended = stream.read_to_end(&mut answer);
        assert!(
            ended.is_ok()
                || ended
                    .as_ref()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "the server kept a garbage connection: {ended:?}"
        );
    }

    // A client that identifies itself and then says nothing is dropped
    // (after --timeout): the server closes the connection.
    let mut silent = TcpStream::connect(server.addr()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    silent.write_all(b"SSH-2.0-silent\r\n").unwrap();
    let mut answer = Vec::new();
    let ended = silent.read_to_end(&mut answer);
    assert!(
        ended.is_ok(),
        "the silent client was not dropped: {ended:?}"
    );
    assert!(String::from_utf8_lossy(&answer).starts_with("SSH-2.0-refstore"));

    // Someone who logs in in time is served.
    let o = git_ssh(home, home, &alice, &["ls-remote", &server.url("proj.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("refs/heads/main"));
}

/// Connects from `from` (a loopback address) and reads the server's
/// identification line; `None` if the server closed the connection
/// instead.
fn connect_from(from: &str, to: &str) -> Option<TcpStream> {
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

#[test]
fn one_address_cannot_take_every_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(
        home,
        &root,
        &alice_pub,
        &["--max-connections", "8", "--max-connections-per-ip", "4"],
    );
    let addr = server.addr();

    // 127.0.0.2 gets its four connections and no more.
    let held: Vec<TcpStream> = (0..10)
        .filter_map(|_| connect_from("127.0.0.2", &addr))
        .collect();
    assert_eq!(held.len(), 4);
    // Meanwhile 127.0.0.1 clones.
    let clone = home.join("clone");
    let o = git_ssh(
        home,
        home,
        &alice,
        &[
            "clone",
            "-q",
            &server.url("proj.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // With 127.0.0.3 holding four more, the server holds all it may.
    let more: Vec<TcpStream> = (0..4)
        .filter_map(|_| connect_from("127.0.0.3", &addr))
        .collect();
    assert_eq!(more.len(), 4);
    assert!(connect_from("127.0.0.1", &addr).is_none());
    drop(more);
    // The server notices the closed connections when it reads from
    // them, which takes a moment.
    let mut served = false;
    for _ in 0..100 {
        let o = git_ssh(home, home, &alice, &["ls-remote", &server.url("proj.git")]);
        if o.status.success() {
            served = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(served, "127.0.0.1 was not served again");
    drop(held);
}

#[test]
fn bad_key_files_stop_the_server_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let (_, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let (host, _) = keygen(home, "host", "ed25519", "host");
    let not_a_key = home.join("not-a-key");
    std::fs::write(&not_a_key, "hello\n").unwrap();
    let good_keys = home.join("keys");
    std::fs::write(&good_keys, &alice_pub).unwrap();
    let bad_keys = home.join("bad-keys");
    std::fs::write(&bad_keys, format!("# team\nrestrict {alice_pub}")).unwrap();
    for (host_key, keys, expected) in [
        (&not_a_key, &good_keys, "not an OpenSSH private key"),
        (&host, &bad_keys, "line 2: options before the key"),
        (&home.join("missing"), &good_keys, "missing"),
    ] {
        let o = refstore(
            home,
            home,
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--root",
                root.to_str().unwrap(),
                "--ssh-listen",
                "127.0.0.1:0",
                "--ssh-host-key",
                host_key.to_str().unwrap(),
                "--ssh-authorized-keys",
                keys.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
    }
    // The SSH flags go together.
    let o = refstore(
        home,
        home,
        &[
            "serve",
            "--root",
            root.to_str().unwrap(),
            "--ssh-listen",
            "127.0.0.1:0",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--ssh-host-key"), "{}", stderr(&o));
}

#[test]
fn authorized_keys_are_read_again_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let (carol, carol_pub) = keygen(home, "carol", "ed25519", "carol");
    let server = SshServed::start(home, &root, &alice_pub, &[]);
    let url = server.url("proj.git");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(
        stderr(&o).contains("Permission denied (publickey)"),
        "{}",
        stderr(&o)
    );

    // Carol in, alice out.
    std::fs::write(home.join("authorized_keys"), &carol_pub).unwrap();
    server.hang_up();
    server.wait_for_log("authorized keys reloaded");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_ssh(home, home, &alice, &["ls-remote", &url]);
    assert!(
        stderr(&o).contains("Permission denied (publickey)"),
        "{}",
        stderr(&o)
    );

    // A file that no longer parses leaves the keys in force.
    std::fs::write(home.join("authorized_keys"), "garbage\n").unwrap();
    server.hang_up();
    server.wait_for_log("keeping the authorized keys in force");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `len` bytes that do not compress.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn packs_larger_than_the_channel_window_stream_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &[]);
    std::fs::write(work.join("big"), noise(6 << 20, 7)).unwrap();
    git_ok(home, &work, &["add", "big"]);
    git_ok(home, &work, &["commit", "-q", "-m", "big"]);
    let served = root.join("big.git");
    git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            served.to_str().unwrap(),
        ],
    );
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(home, &root, &alice_pub, &["--allow-push"]);

    let clone = home.join("clone");
    let o = git_ssh(
        home,
        home,
        &alice,
        &[
            "clone",
            "-q",
            &server.url("big.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    git_ok(home, &clone, &["fsck", "--no-progress"]);
    assert_eq!(std::fs::read(clone.join("big")).unwrap(), noise(6 << 20, 7));

    std::fs::write(clone.join("big2"), noise(6 << 20, 11)).unwrap();
    git_ok(home, &clone, &["add", "big2"]);
    git_ok(home, &clone, &["commit", "-q", "-m", "big2"]);
    let o = git_ssh(
        home,
        &clone,
        &alice,
        &["push", "-q", "origin", "HEAD:refs/heads/big2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &served, &["rev-parse", "big2"]),
        git_ok(home, &clone, &["rev-parse", "HEAD"])
    );
    git_ok(home, &served, &["fsck", "--no-progress"]);
}

#[test]
fn a_client_that_stops_reading_gives_its_worker_back_after_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &[]);
    std::fs::write(work.join("big"), noise(8 << 20, 5)).unwrap();
    git_ok(home, &work, &["add", "big"]);
    git_ok(home, &work, &["commit", "-q", "-m", "big"]);
    let served = root.join("big.git");
    git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            served.to_str().unwrap(),
        ],
    );
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(
        home,
        &root,
        &alice_pub,
        &["--workers", "1", "--timeout", "2"],
    );

    // A fetch of everything whose pack is never read: the server fills
    // the channel's window, then waits for the client.
    let head = git_ok(home, &served, &["rev-parse", "HEAD"]);
    let want = format!("want {}\n", head.trim());
    let request = format!("{:04x}{want}00000009done\n", want.len() + 4);
    let request_file = home.join("request");
    std::fs::write(&request_file, request).unwrap();
    let command = format!("{} -p {} git@127.0.0.1", ssh_command(&alice), server.port);
    let words: Vec<&str> = command.split(' ').collect();
    let mut stalled = isolate(&mut Command::new(words[0]), home)
        .args(&words[1..])
        .arg("git-upload-pack '/big.git'")
        .stdin(std::fs::File::open(&request_file).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_log("timeout reached: the client stopped reading");

    // The only worker is free again.
    let clone = home.join("clone");
    let o = git_ssh(
        home,
        home,
        &alice,
        &[
            "clone",
            "-q",
            &server.url("big.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = stalled.kill();
    let _ = stalled.wait();
}

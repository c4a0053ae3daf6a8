//! The SSH server's limits against clients that misbehave: too many
//! channels or requests at once, protocol garbage, silence after
//! connecting, one address holding connections, a client that stops
//! reading; each is dropped or refused while other clients are served.

use crate::support::alone::alone;
use crate::support::keys::user_key;
use crate::support::*;
use crate::{serve_big_file, setup};
use russh::keys::PrivateKeyWithHashAlg;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connects from `from` (a loopback address) and reads the server's
/// identification line; `None` if the server closed the connection
/// instead.
fn ssh_connect_from(from: &str, to: SocketAddr) -> Option<TcpStream> {
    let mut stream = connect_from(from, to);
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

/// Waits until the server counts at most `most` open SSH connections
/// (it gives their places back as it does); fails after a minute.
fn wait_for_ssh_connections(server: &Served, most: u64) {
    let series = "refstore_active_connections{transport=\"ssh\"} ";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = server.metrics.encode();
        let open: u64 = text
            .lines()
            .find_map(|line| line.strip_prefix(series))
            .map_or(0, |n| n.trim().parse().unwrap());
        if open <= most {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{open} SSH connections stay open"
        );
        std::thread::sleep(Duration::from_millis(10));
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
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public);
    serve.options.workers = 2;
    let server = serve.start();
    let alice = alice.path;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = Arc::new(russh::client::Config::default());
        let mut session = russh::client::connect(config, server.ssh_addr(), Client)
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

/// HTTP and SSH run their services in the same turns: a push over HTTP
/// that holds its address's only turn (its body never comes) makes the
/// same address's fetch over SSH be refused, as a second SSH fetch would.
/// The push asks to be told when the server reads its body
/// (`Expect: 100-continue`), which it does once it holds the turn.
#[test]
fn http_and_ssh_share_the_turns_of_an_address() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public).pushes("alice:pw\n");
    serve.options.workers = 1;
    let server = serve.start();
    let alice = alice.path;

    // A push whose pack never arrives: once authenticated it takes the
    // turn and waits for its body; the server's `100 Continue` says it
    // has begun reading it.
    let mut push = TcpStream::connect(server.addr).unwrap();
    write!(
        push,
        "POST /proj.git/git-receive-pack HTTP/1.1\r\nHost: test\r\n\
         Authorization: Basic YWxpY2U6cHc=\r\n\
         Content-Type: application/x-git-receive-pack-request\r\n\
         Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n"
    )
    .unwrap();
    push.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = push.read(&mut byte).expect("the server's 100 Continue");
        assert_eq!(n, 1, "the server hung up before 100 Continue");
        answer.push(byte[0]);
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ran = runtime.block_on(async {
        let key = Arc::new(russh::keys::load_secret_key(&alice, None).unwrap());
        let config = Arc::new(russh::client::Config::default());
        let mut session = russh::client::connect(config, server.ssh_addr(), Client)
            .await
            .unwrap();
        let auth = session
            .authenticate_publickey("git", PrivateKeyWithHashAlg::new(key, None))
            .await
            .unwrap();
        assert!(auth.success());
        let mut channel = session.channel_open_session().await.unwrap();
        channel
            .exec(true, "git-upload-pack '/proj.git'")
            .await
            .unwrap();
        run(&mut channel, true).await
    });
    assert_eq!(ran.exit, Some(128), "{ran:?}");
    assert_eq!(
        ran.err,
        "fatal: too many requests from your address at once; try again later\n"
    );
    drop(push);
}

#[test]
fn garbage_and_silent_clients_are_dropped_while_others_are_served() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public);
    serve.options.timeout = Duration::from_secs(2);
    let server = serve.start();
    let alice = alice.path;

    // Garbage instead of an identification line, and garbage after one.
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &b"SSH-2.0-junk\r\n\x00\x00\x01\x00\xffgarbage garbage garbage"[..],
    ] {
        let mut stream = TcpStream::connect(server.ssh_addr()).unwrap();
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
    let mut silent = TcpStream::connect(server.ssh_addr()).unwrap();
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
    let o = git_ssh(
        home,
        home,
        &alice,
        &["ls-remote", &server.ssh_url("proj.git")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("refs/heads/main"));
}

#[test]
fn one_address_cannot_take_every_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public);
    serve.options.max_connections = 8;
    serve.options.max_connections_per_ip = 4;
    let server = serve.start();
    let alice = alice.path;
    let addr = server.ssh_addr();

    // 127.0.0.2 gets its four connections and no more.
    let held: Vec<TcpStream> = (0..10)
        .filter_map(|_| ssh_connect_from("127.0.0.2", addr))
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
            &server.ssh_url("proj.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // With 127.0.0.3 holding four more, the server holds all it may.
    let more: Vec<TcpStream> = (0..4)
        .filter_map(|_| ssh_connect_from("127.0.0.3", addr))
        .collect();
    assert_eq!(more.len(), 4);
    assert!(ssh_connect_from("127.0.0.1", addr).is_none());
    drop(more);
    // The server notices the closed connections when it reads from
    // them: once it holds only 127.0.0.2's four, 127.0.0.1 is served.
    wait_for_ssh_connections(&server, 4);
    let o = git_ssh(
        home,
        home,
        &alice,
        &["ls-remote", &server.ssh_url("proj.git")],
    );
    assert!(
        o.status.success(),
        "127.0.0.1 was not served again: {}",
        stderr(&o)
    );
    drop(held);
}

#[test]
fn a_client_that_stops_reading_gives_its_worker_back_after_the_timeout() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &[]);
    let served = serve_big_file(home, &root, &work, 8 << 20, 5);
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public);
    serve.options.workers = 1;
    serve.options.timeout = Duration::from_secs(2);
    let server = serve.start();
    let alice = alice.path;

    // A fetch of everything whose pack is never read: the server fills
    // the channel's window, then waits for the client.
    let head = git_ok(home, &served, &["rev-parse", "HEAD"]);
    let want = format!("want {}\n", head.trim());
    let request = format!("{:04x}{want}00000009done\n", want.len() + 4);
    let request_file = home.join("request");
    std::fs::write(&request_file, request).unwrap();
    let words = ssh_words(&alice, server.ssh_addr().port());
    let stalled = Running::spawn(
        isolate(&mut Command::new(&words[0]), home)
            .args(&words[1..])
            .arg("git-upload-pack '/big.git'")
            .stdin(std::fs::File::open(&request_file).unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    // The time limit under test passes before the server gives up.
    log.wait_for_log("timeout reached: the client stopped reading");

    // The only worker is free again.
    let clone = home.join("clone");
    let o = git_ssh(
        home,
        home,
        &alice,
        &[
            "clone",
            "-q",
            &server.ssh_url("big.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The stalled request ends too, though its client still reads
    // nothing: it is logged, refused, and a stop need not wait for it.
    log.wait_for_log("status=500 exit=128");
    drop(stalled);
}

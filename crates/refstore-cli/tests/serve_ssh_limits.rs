//! The SSH server's limits against clients that misbehave: too many
//! channels or requests at once, protocol garbage, silence after
//! connecting, one address holding connections, a client that stops
//! reading; each is dropped or refused while other clients are served.

mod ssh_served;
mod support;
use russh::keys::PrivateKeyWithHashAlg;
use ssh_served::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use support::*;

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

/// HTTP and SSH run their services in the same turns: a push over HTTP
/// that holds its address's only turn (its body never comes) makes the
/// same address's fetch over SSH be refused, as a second SSH fetch would.
#[test]
fn http_and_ssh_share_the_turns_of_an_address() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let users = home.join("users");
    std::fs::write(&users, "alice:pw\n").unwrap();
    let server = SshServed::start(
        home,
        &root,
        &alice_pub,
        &[
            "--workers",
            "1",
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
        ],
    );

    // A push whose pack never arrives: once authenticated it takes the
    // turn and waits for its body.
    let mut push = TcpStream::connect(&server.http).unwrap();
    write!(
        push,
        "POST /proj.git/git-receive-pack HTTP/1.1\r\nHost: test\r\n\
         Authorization: Basic YWxpY2U6cHc=\r\n\
         Content-Type: application/x-git-receive-pack-request\r\n\
         Content-Length: 100000\r\n\r\n"
    )
    .unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refused = runtime.block_on(async {
        let key = Arc::new(russh::keys::load_secret_key(&alice, None).unwrap());
        // Until the push holds the turn, a fetch may still get it; such a
        // fetch is ended (no wants) and tried again on a new connection.
        for _ in 0..1200 {
            let config = Arc::new(russh::client::Config::default());
            let mut session = russh::client::connect(config, server.addr(), Client)
                .await
                .unwrap();
            let auth = session
                .authenticate_publickey("git", PrivateKeyWithHashAlg::new(key.clone(), None))
                .await
                .unwrap();
            assert!(auth.success());
            let mut channel = session.channel_open_session().await.unwrap();
            channel
                .exec(true, "git-upload-pack '/proj.git'")
                .await
                .unwrap();
            let ran = run(&mut channel, true).await;
            if ran.exit == Some(128) {
                return Some(ran.err);
            }
            assert!(
                String::from_utf8_lossy(&ran.out).contains("refs/heads/main"),
                "{ran:?}"
            );
            channel.data_bytes(&b"0000"[..]).await.unwrap();
            channel.eof().await.unwrap();
            let ended = run(&mut channel, false).await;
            assert_eq!(ended.exit, Some(0), "{ended:?}");
            drop(session);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    });
    assert_eq!(
        refused.as_deref(),
        Some("fatal: too many requests from your address at once; try again later\n"),
        "the SSH fetch was never refused while the HTTP push held the turn"
    );
    drop(push);
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
fn a_client_that_stops_reading_gives_its_worker_back_after_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &[]);
    let served = serve_big_file(home, &root, &work, 8 << 20, 5);
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

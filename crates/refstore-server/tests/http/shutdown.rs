//! A stop (the shutdown flag, which SIGTERM sets in `refstore serve`)
//! closes the listener at once, yet a connection the server took before
//! it, whose client had not sent anything yet, gets its first request
//! answered (over HTTPS, its handshake too): the client was told the
//! server took it.

use crate::support::keys::Certificate;
use crate::support::repos::serve_three_commits;
use crate::support::*;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Waits until connections to `addr` are refused: the listener is
/// closed.
fn wait_until_refused(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting after the stop");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_connection_taken_before_the_stop_gets_its_first_request_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    serve_three_commits(home, &root.join("team/proj.git"));
    let server = Serve::new(&root).start();
    let mut early = TcpStream::connect(server.addr).unwrap();
    // Taken by the server, request not sent yet.
    wait_until_accepted(&early);
    server.shut_down();
    // The server has stopped accepting (a new connection is refused)...
    wait_until_refused(server.addr);
    // ...and the early connection's request is answered all the same.
    early
        .write_all(
            b"GET /team/proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .unwrap();
    let (status, answer) = read_answer(&mut early);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("refs/heads/main"), "{answer}");
    server.stop();
}

#[test]
fn a_connection_taken_before_the_stop_gets_its_handshake_and_first_request() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    serve_three_commits(home, &root.join("proj.git"));
    let certificate = Certificate::new(home, "server");
    let mut serve = Serve::new(&root);
    serve.options.tls = Some(certificate.server_config());
    let server = serve.start();
    let early = TcpStream::connect(server.addr).unwrap();
    // Taken by the server, nothing sent yet.
    wait_until_accepted(&early);
    server.shut_down();
    wait_until_refused(server.addr);
    // git's one connection (protocol v0: one request) is relayed to the
    // early one.
    let relay = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = relay.local_addr().unwrap().port();
    let relaying = std::thread::spawn(move || {
        let (client, _) = relay.accept().unwrap();
        let pipe = |mut from: TcpStream, mut to: TcpStream| {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Write);
            })
        };
        let up = pipe(client.try_clone().unwrap(), early.try_clone().unwrap());
        let down = pipe(early, client);
        let _ = (up.join(), down.join());
    });
    let o = git_tls(
        home,
        home,
        &certificate.cert,
        &[
            "-c",
            "protocol.version=0",
            "ls-remote",
            &format!("https://127.0.0.1:{port}/proj.git"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\tHEAD\n"), "{}", stdout(&o));
    relaying.join().unwrap();
    server.stop();
}

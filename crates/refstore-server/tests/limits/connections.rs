//! Connections over `--max-connections-per-ip`, over HTTP and HTTPS:
//!
//! - a client that opens a new connection for each request and leaves the
//!   earlier ones idle (as JGit over HTTPS does) is never refused: idle
//!   connections make room;
//! - a connection refused because its address's connections are all busy
//!   gets its 503 through TLS on an HTTPS listener, so git and curl report
//!   the server's reason instead of a failed handshake.

use crate::support::keys::Certificate;
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

fn setup(home: &Path, root: &Path) {
    Work::init(home, "work")
        .commit_empty("a")
        .bare_clone(&root.join("proj.git"));
}

/// Sends one keep-alive request for the advertisement and reads its whole
/// answer (chunked); the status. The connection stays open.
fn advertisement(stream: &mut impl ReadWrite) -> u16 {
    let request = "GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n";
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer);
        if text.ends_with("\r\n0\r\n\r\n") || (text.contains(" 503 ") && text.ends_with('\n')) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

#[test]
fn idle_keep_alive_connections_never_lock_an_address_out() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let certificate = Certificate::new(home, "server");
    let mut plain = Serve::new(&root);
    plain.options.max_connections_per_ip = 4;
    let plain = plain.start();
    let mut secure = Serve::new(&root);
    secure.options.max_connections_per_ip = 4;
    secure.options.tls = Some(certificate.server_config());
    let secure = secure.start();
    // Forty requests, each on a new connection, the earlier ones left
    // open and idle.
    let mut held: Vec<Box<dyn ReadWrite>> = Vec::new();
    for round in 0..40 {
        let mut stream: Box<dyn ReadWrite> = Box::new(TcpStream::connect(plain.addr).unwrap());
        assert_eq!(advertisement(&mut stream), 200, "plain HTTP, round {round}");
        held.push(stream);
        let tcp = TcpStream::connect(secure.addr).unwrap();
        let mut stream: Box<dyn ReadWrite> = Box::new(certificate.client(tcp));
        assert_eq!(advertisement(&mut stream), 200, "HTTPS, round {round}");
        held.push(stream);
    }
}

#[test]
fn an_https_client_over_the_limit_is_answered_through_tls() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let certificate = Certificate::new(home, "server");
    let cert = &certificate.cert;
    let mut serve = Serve::new(&root);
    serve.options.max_connections_per_ip = 1;
    serve.options.timeout = std::time::Duration::from_secs(30);
    serve.options.tls = Some(certificate.server_config());
    let server = serve.start();
    // The address's one connection is busy: a request whose body is on
    // its way. The server's `100 Continue` says its handler has the
    // request (before that, the connection could pass for an idle one).
    let mut busy = certificate.client(TcpStream::connect(server.addr).unwrap());
    let head = "POST /proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n";
    busy.write_all(head.as_bytes()).unwrap();
    busy.flush().unwrap();
    busy.sock
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = busy.read(&mut byte).expect("the server's 100 Continue");
        assert_eq!(n, 1, "the server hung up before 100 Continue");
        answer.push(byte[0]);
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    busy.write_all(b"0032want ").unwrap();
    busy.flush().unwrap();
    wait_until_read(&busy.sock);

    let url = format!("https://{}/proj.git", server.addr);
    let o = git_tls(home, home, cert, &["ls-remote", &url]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("503"), "{err}");
    assert!(!err.to_lowercase().contains("handshake"), "{err}");

    let o = Command::new("curl")
        .args([
            "-sS",
            "--cacert",
            cert.to_str().unwrap(),
            "-w",
            "\n%{http_code}",
        ])
        .arg(format!("{url}/info/refs?service=git-upload-pack"))
        .output()
        .expect("cannot run curl");
    let out = stdout(&o);
    assert!(out.ends_with("\n503"), "{out} {}", stderr(&o));
    assert!(
        out.contains("too many connections from your address"),
        "{out}"
    );
    drop(busy);
}

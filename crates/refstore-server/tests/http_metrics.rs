//! What the HTTP transport records in the server's metrics: requests by
//! service and status, bytes, connections, and refusals by reason,
//! checked against the requests this test makes.

use refstore_server::metrics::Metrics;
use refstore_server::{Credentials, ServeOptions, Server};
use refstore_testsupport::git_ok;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Sends `request` and reads the answer until the server closes.
fn exchange(addr: SocketAddr, request: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let status = String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// The value of the series `name` (labels included) in `text`.
fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn requests_bytes_and_refusals_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    git_ok(tmp.path(), &root, &["init", "-q", "--bare", "r.git"]);

    let metrics = Arc::new(Metrics::new());
    let mut options = ServeOptions::new(root);
    options.allow_push = true;
    options.credentials = Credentials::parse("bob:pw\n").unwrap();
    options.metrics = metrics.clone();
    let vfs = Arc::new(refstore_fs::real::RealFs::new());
    let server = Server::bind("127.0.0.1:0", options, vfs).unwrap();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let running = {
        let stop = stop.clone();
        std::thread::spawn(move || server.run(&stop))
    };

    let mut received = 0;
    for (request, status) in [
        ("GET /r.git/info/refs?service=git-upload-pack HTTP/1.0\r\n\r\n", 200),
        ("GET /r.git/info/refs?service=git-upload-pack HTTP/1.0\r\n\r\n", 200),
        ("GET /none.git/info/refs?service=git-upload-pack HTTP/1.0\r\n\r\n", 404),
        ("GET /r.git/info/refs?service=git-receive-pack HTTP/1.0\r\n\r\n", 401),
        (
            "POST /r.git/git-upload-pack HTTP/1.0\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 99999999999\r\n\r\n",
            413,
        ),
    ] {
        let (got, answer) = exchange(addr, request);
        assert_eq!(got, status, "{}", String::from_utf8_lossy(&answer));
        received += answer.len();
    }
    let long = format!("GET /{} HTTP/1.0\r\n\r\n", "a".repeat(20_000));
    assert_eq!(exchange(addr, &long).0, 431);
    stop.store(true, Ordering::Relaxed);
    running.join().unwrap();

    let text = metrics.encode();
    let requests = |service: &str, status: u16| {
        value(
            &text,
            &format!(
                "refstore_requests_total{{transport=\"http\",service=\"{service}\",status=\"{status}\"}}"
            ),
        )
    };
    assert_eq!(requests("git-upload-pack", 200), 2.0);
    assert_eq!(requests("git-upload-pack", 404), 1.0);
    assert_eq!(requests("git-receive-pack", 401), 1.0);
    assert_eq!(requests("git-upload-pack", 413), 1.0);
    let rejected = |reason: &str| {
        value(
            &text,
            &format!("refstore_rejected_requests_total{{reason=\"{reason}\"}}"),
        )
    };
    assert_eq!(rejected("unauthorized"), 1.0);
    assert_eq!(rejected("body_too_large"), 1.0);
    assert_eq!(rejected("head_too_large"), 1.0);
    // Bodies only: less than what the client read with the heads.
    let sent = value(&text, "refstore_sent_bytes_total{transport=\"http\"}");
    assert!(sent > 0.0 && sent < received as f64, "{sent} of {received}");
    assert_eq!(
        value(&text, "refstore_active_connections{transport=\"http\"}"),
        0.0
    );
}

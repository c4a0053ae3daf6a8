//! What the HTTP transport and the storage layers under it count in the
//! server's metrics, read from `/metrics` of the metrics listener with a
//! strict Prometheus text parser and checked against what git clients
//! did: clones, ls-remote, pushes into a files and a reftable repository,
//! a refused push and a 404; requests by service and status, bytes,
//! connections and refusals by reason; `/healthz`.

use crate::support::alone::alone;
use crate::support::repos;
use crate::support::repos::reftable_repo;
use crate::support::*;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

/// A work repository with two branches and a tag, and a bare copy of it
/// below `root` as `proj.git`; a reftable repository `rt.git` beside it.
fn setup(home: &Path, root: &Path) -> PathBuf {
    let work = repos::three_commits_work(home);
    work.bare_clone(&root.join("proj.git"));
    reftable_repo(home, &root.join("rt.git"));
    work.path
}

/// Clones (v2 and v0), ls-remote, three pushes updating four refs in a
/// files and a reftable repository, a refused push and a 404 against
/// `server`; returns the number of pushes and of refs they updated.
fn exercise(home: &Path, work: &Path, server: &Served) -> (f64, f64) {
    for version in ["2", "0"] {
        let clone = home.join(format!("clone-v{version}"));
        git_net_ok(
            home,
            home,
            &[
                "-c",
                &format!("protocol.version={version}"),
                "clone",
                "-q",
                &server.url("proj.git"),
                clone.to_str().unwrap(),
            ],
        );
    }
    git_net_ok(home, home, &["ls-remote", &server.url("proj.git")]);
    // Refused before receive-pack runs: no credentials.
    let o = git_net(
        home,
        work,
        &["push", &server.url("proj.git"), "main:refs/heads/x"],
    );
    assert!(!o.status.success());
    let bob = server.url_as("bob", "pw", "proj.git");
    git_net_ok(
        home,
        work,
        &["push", &bob, "main:refs/heads/one", "topic:refs/heads/two"],
    );
    git_net_ok(home, work, &["push", &bob, ":refs/heads/one"]);
    let rt = server.url_as("bob", "pw", "rt.git");
    git_net_ok(home, work, &["push", &rt, "main"]);
    // An up-to-date push sends no command: not a push that updated refs.
    git_net_ok(home, work, &["push", &rt, "main"]);
    let o = git_net(home, home, &["ls-remote", &server.url("nothing.git")]);
    assert!(!o.status.success());
    (3.0, 4.0)
}

#[test]
fn metrics_count_what_git_clients_did() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root);
    let serve = Serve::new(&root).pushes("bob:pw\n").metrics_listener();
    log.observe(&serve.options.metrics);
    let server = serve.start();

    let before = server.scrape();
    assert_eq!(before.value("refstore_pushes_total", &[]), Some(0.0));
    assert_eq!(
        before.value("refstore_pack_objects_sent_total", &[]),
        Some(0.0)
    );

    let (pushes, refs) = exercise(home, &work, &server);
    let metrics = server.scrape();
    for sample in metrics.samples() {
        assert!(sample.name.starts_with("refstore_"), "{sample:?}");
    }
    for family in &metrics.families {
        assert!(family.help.is_some(), "{} has no help", family.name);
    }
    assert_eq!(metrics.value("refstore_pushes_total", &[]), Some(pushes));
    assert_eq!(
        metrics.value("refstore_refs_updated_total", &[]),
        Some(refs)
    );
    let commits = metrics
        .value("refstore_ref_transaction_commit_seconds_count", &[])
        .unwrap();
    assert!(commits >= pushes, "{commits} commits for {pushes} pushes");

    let flushes = metrics.family("refstore_flush_seconds").unwrap();
    assert_eq!(flushes.kind, "histogram");
    let mechanisms: Vec<&str> = flushes
        .samples
        .iter()
        .filter(|s| s.name == "refstore_flush_seconds_count")
        .map(|s| s.labels["mechanism"].as_str())
        .collect();
    assert!(!mechanisms.is_empty(), "no flush reported");
    for mechanism in &mechanisms {
        assert!(
            ["fsync", "fdatasync", "syncfs"].contains(mechanism),
            "{mechanism}"
        );
    }
    assert!(metrics.sum("refstore_flush_seconds_count", &[]) > 0.0);

    // Two clones of a repository with 3 commits, 3 trees, 3 blobs, a tag.
    let objects = metrics
        .value("refstore_pack_objects_sent_total", &[])
        .unwrap();
    assert!(objects >= 20.0, "{objects}");
    let bytes = metrics
        .value("refstore_pack_sent_bytes_total", &[])
        .unwrap();
    assert!(bytes > 12.0 * 2.0, "{bytes}");

    assert_eq!(
        metrics.family("refstore_active_connections").unwrap().kind,
        "gauge"
    );
    assert!(metrics
        .value("refstore_active_connections", &[("transport", "http")])
        .is_some());

    let (status, _, body) = server.metrics_get("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, _, _) = server.metrics_get("/nothing");
    assert_eq!(status, 404);

    let metrics_addr = server.metrics_addr.unwrap();
    server.stop();
    assert!(TcpStream::connect(metrics_addr).is_err());
}

/// Request counters come from the HTTP transport.
#[test]
fn http_requests_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root);
    let server = Serve::new(&root)
        .pushes("bob:pw\n")
        .metrics_listener()
        .start();
    exercise(home, &work, &server);
    let metrics = server.scrape();
    let http = [("transport", "http")];
    let requests = |service: &str, status: &str| {
        metrics.sum(
            "refstore_requests_total",
            &[
                ("transport", "http"),
                ("service", service),
                ("status", status),
            ],
        )
    };
    // Each clone and ls-remote asks for the advertisement and each clone
    // posts one fetch (v2: ls-refs too); each push one advertisement and
    // one post.
    assert!(requests("git-upload-pack", "200") >= 5.0);
    assert!(requests("git-receive-pack", "200") >= 7.0);
    assert!(metrics.sum("refstore_requests_total", &[("status", "401")]) >= 1.0);
    assert!(metrics.sum("refstore_requests_total", &[("status", "404")]) >= 1.0);
    assert!(
        metrics.sum(
            "refstore_request_duration_seconds_count",
            &[("transport", "http"), ("service", "git-upload-pack")]
        ) >= 5.0
    );
    assert!(metrics.value("refstore_sent_bytes_total", &http).unwrap() > 0.0);
    assert!(
        metrics
            .value("refstore_received_bytes_total", &http)
            .unwrap()
            > 0.0
    );
    assert!(
        metrics.sum(
            "refstore_rejected_requests_total",
            &[("reason", "unauthorized")]
        ) >= 1.0
    );
}

/// The value of the series `name` (labels included) in `text`.
fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

/// Counted against raw requests: requests by service and status, the
/// refusals by reason, bytes, and no connection left open.
#[test]
fn requests_bytes_and_refusals_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    git_ok(tmp.path(), &root, &["init", "-q", "--bare", "r.git"]);

    let server = Serve::new(&root).pushes("bob:pw\n").start();
    let metrics = server.metrics.clone();

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
        let (got, answer) = server.exchange(request.as_bytes());
        assert_eq!(got, status, "{answer}");
        received += answer.len();
    }
    let long = format!("GET /{} HTTP/1.0\r\n\r\n", "a".repeat(20_000));
    assert_eq!(server.exchange(long.as_bytes()).0, 431);
    server.stop();

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

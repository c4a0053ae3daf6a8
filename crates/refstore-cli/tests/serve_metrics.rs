//! `refstore serve --metrics-listen` with the machine's real git: clones,
//! ls-remote, pushes and a 404 over HTTP, then `/metrics` read with a
//! strict Prometheus text parser and its counters checked against what the
//! test did; `/healthz`; and `--log-format json` lines read as JSON.

mod served;
mod support;
use refstore_testsupport::server::ServerProcess;
use served::*;
use std::io::BufRead;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::prometheus::{self, Exposition};
use support::*;

/// A work repository with two branches and a tag, and a bare copy of it
/// below `root` as `proj.git`; a reftable repository `rt.git` beside it.
fn setup(home: &Path, root: &Path) -> PathBuf {
    let work = fixtures::three_commits(home);
    work.bare_clone(&root.join("proj.git"));
    let init = refstore(
        home,
        root,
        &["init", "-q", "--bare", "--ref-format=reftable", "rt.git"],
    );
    assert!(init.status.success(), "{}", stderr(&init));
    work.path
}

/// A running `refstore serve` with a metrics listener, stopped with
/// SIGTERM by [`Observed::stop`] (killed when dropped).
struct Observed {
    process: ServerProcess,
    addr: String,
    metrics_addr: String,
}

impl Observed {
    fn start(home: &Path, root: &Path, extra: &[&str]) -> Observed {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home)
            .args(["serve", "--listen", "127.0.0.1:0", "--print-address"])
            .args(["--metrics-listen", "127.0.0.1:0", "--workers", "4"])
            .arg("--root")
            .arg(root)
            .args(extra);
        let (process, stdout) = ServerProcess::spawn(&mut cmd);
        let mut lines = stdout.lines();
        let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
        let (addr, metrics_addr) = (next(), next());
        assert!(
            !addr.is_empty() && !metrics_addr.is_empty(),
            "serve printed no addresses"
        );
        Observed {
            process,
            addr,
            metrics_addr,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    fn url_as(&self, user: &str, password: &str, path: &str) -> String {
        format!("http://{user}:{password}@{}/{path}", self.addr)
    }

    /// A GET of `path` on the metrics listener: status, headers, body.
    fn metrics_get(&self, path: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.metrics_addr).unwrap();
        std::io::Write::write_all(
            &mut stream,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let (status, answer) = read_answer(&mut stream);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }

    /// `/metrics`, parsed.
    fn scrape(&self) -> Exposition {
        let (status, head, body) = self.metrics_get("/metrics");
        assert_eq!(status, 200, "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8"),
            "{head}"
        );
        prometheus::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
    }

    /// Stops the server with SIGTERM; returns its exit code and log.
    fn stop(self) -> (Option<i32>, String) {
        self.process.stop()
    }
}

fn credentials(home: &Path) -> PathBuf {
    let path = home.join("users");
    std::fs::write(&path, "bob:pw\n").unwrap();
    path
}

/// Clones (v2 and v0), ls-remote, three pushes updating four refs in a
/// files and a reftable repository, a refused push and a 404 against
/// `server`; returns the number of pushes and of refs they updated.
fn exercise(home: &Path, work: &Path, server: &Observed) -> (f64, f64) {
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
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root);
    let users = credentials(home);
    let server = Observed::start(
        home,
        &root,
        &["--allow-push", "--credentials", users.to_str().unwrap()],
    );

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

    let metrics_addr = server.metrics_addr.clone();
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("serving metrics addr={metrics_addr}")),
        "{log}"
    );
    assert!(TcpStream::connect(&metrics_addr).is_err());
}

/// SIGTERM: `/healthz` answers `draining` at once while git is still
/// served for the drain time; a second SIGTERM ends the drain time, and
/// the server exits 0, having logged each phase.
#[test]
fn sigterm_drains_and_a_second_one_stops_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    // Long enough that only the second signal can end it within the test.
    let server = Observed::start(home, &root, &["--drain-time", "120"]);
    let (status, _, body) = server.metrics_get("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));

    server.process.signal("TERM");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, _, body) = server.metrics_get("/healthz");
        if (status, body.as_str()) == (503, "draining\n") {
            break;
        }
        assert_eq!((status, body.as_str()), (200, "ok\n"));
        assert!(std::time::Instant::now() < deadline, "never draining");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Still serving, on new connections too, while draining.
    for _ in 0..3 {
        let refs = git_net_ok(home, home, &["ls-remote", &server.url("proj.git")]);
        assert!(refs.contains("refs/heads/main"), "{refs}");
    }
    let (status, _, body) = server.metrics_get("/healthz");
    assert_eq!((status, body.as_str()), (503, "draining\n"));

    let (addr, metrics_addr) = (server.addr.clone(), server.metrics_addr.clone());
    let second = std::time::Instant::now();
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        second.elapsed() < std::time::Duration::from_secs(30),
        "the second SIGTERM did not end the drain time: {:?}",
        second.elapsed()
    );
    let phases = [
        "draining: /healthz answers draining",
        "signalled again: draining cut short",
        "stopping: no new connections; finishing the requests in flight",
        "shut down",
    ];
    let mut rest = log.as_str();
    for phase in phases {
        let at = rest
            .find(phase)
            .unwrap_or_else(|| panic!("{phase:?} not logged in order: {log}"));
        rest = &rest[at..];
    }
    assert!(TcpStream::connect(&addr).is_err());
    assert!(TcpStream::connect(&metrics_addr).is_err());
}

/// Request counters come from the HTTP transport.
#[test]
fn http_requests_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root);
    let users = credentials(home);
    let server = Observed::start(
        home,
        &root,
        &["--allow-push", "--credentials", users.to_str().unwrap()],
    );
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

#[test]
fn a_bad_metrics_address_fails_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let o = refstore(
        home,
        home,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--root",
            ".",
            "--metrics-listen",
            "nowhere",
        ],
    );
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--metrics-listen: cannot listen on nowhere: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn json_logs_are_one_object_a_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let server = Served::start(home, &root, &["--log-format", "json"]);
    let o = git_net(home, home, &["ls-remote", &server.url("proj.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (status, _) = server.raw("GET /nothing.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 404);
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");

    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line:?}"))
        })
        .collect();
    for line in &lines {
        assert!(line["fields"]["message"].is_string(), "{line}");
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
    let access: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "refstore::access")
        .collect();
    let statuses: Vec<u64> = access
        .iter()
        .map(|l| l["fields"]["status"].as_u64().expect("a status number"))
        .collect();
    assert!(statuses.contains(&200), "{log}");
    assert!(statuses.contains(&404), "{log}");
    assert!(
        lines.iter().any(|l| l["fields"]["message"] == "serving"),
        "{log}"
    );
}

/// The reader the tests above rely on refuses what the format does not
/// allow, and reads what it does.
#[test]
fn the_text_format_reader_is_strict() {
    let good = "\
# HELP a_total Things.\n# TYPE a_total counter\na_total{k=\"v\\\"q\\\\\"} 2\n\
# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n\
# a comment\nu 1e3 1700000000000\n";
    let parsed = prometheus::parse(good).unwrap();
    assert_eq!(parsed.value("a_total", &[("k", "v\"q\\")]), Some(2.0));
    assert_eq!(parsed.family("h").unwrap().samples.len(), 4);
    assert_eq!(parsed.family("u").unwrap().kind, "untyped");
    assert_eq!(parsed.value("u", &[]), Some(1000.0));
    for (bad, why) in [
        ("a 1", "no final newline"),
        ("a\n", "no value"),
        ("a one\n", "not a number"),
        ("1a 1\n", "bad metric name"),
        ("a{k=v} 1\n", "label value not quoted"),
        ("a{k=\"v\" j=\"w\"} 1\n", "no comma"),
        ("a{__k=\"v\"} 1\n", "reserved label name"),
        ("a{k=\"v\",k=\"w\"} 1\n", "label twice"),
        ("a{k=\"v\\x\"} 1\n", "bad escape"),
        ("a 1\na 2\n", "series twice"),
        ("a 1\nb 1\na{k=\"v\"} 1\n", "family not together"),
        ("a 1\n# TYPE a gauge\n", "TYPE after samples"),
        ("# TYPE a gauge\n# TYPE a gauge\na 1\n", "TYPE twice"),
        ("# TYPE a meter\na 1\n", "unknown type"),
        ("# TYPE a counter\na -1\n", "counter below zero"),
        ("a 1 2 3\n", "text after timestamp"),
        ("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "no +Inf"),
        ("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "counts falling"),
        ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", "_count not the +Inf bucket"),
    ] {
        assert!(prometheus::parse(bad).is_err(), "accepted {why}: {bad:?}");
    }
}

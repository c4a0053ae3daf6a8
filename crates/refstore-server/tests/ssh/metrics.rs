//! The SSH server's metrics, counted against what real clients (git and
//! OpenSSH) did: requests by service and status, bytes, refused logins,
//! open connections; and the server stops once its services are done.

use crate::support::keys::user_key;
use crate::support::*;

/// The value of the series `series` starts (name and labels).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn ssh_requests_are_counted_as_clients_made_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    Work::init(home, "work")
        .commit_file("a", "a\n")
        .bare_clone(&root.join("proj.git"));

    let alice = user_key("alice", "ed25519");
    let mallory = user_key("mallory", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public);
    serve.options.maintenance_workers = 0;
    let server = serve.start();
    let metrics = server.metrics.clone();
    let url = server.ssh_url("proj.git");

    for args in [
        vec!["ls-remote", url.as_str()],
        vec!["clone", "-q", url.as_str(), "clone"],
    ] {
        git_ssh_ok(home, home, &alice.path, &args);
    }
    let o = git_ssh(home, home, &mallory.path, &["ls-remote", &url]);
    assert!(!o.status.success());
    let o = ssh(home, &alice.path, server.ssh_addr().port(), "ls");
    assert_eq!(o.status.code(), Some(1));

    server.stop();
    let text = metrics.encode();
    let ssh = "transport=\"ssh\"";
    assert_eq!(
        value(
            &text,
            &format!("refstore_requests_total{{{ssh},service=\"git-upload-pack\",status=\"200\"}}")
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            &format!("refstore_requests_total{{{ssh},service=\"other\",status=\"400\"}}")
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            &format!(
                "refstore_request_duration_seconds_count{{{ssh},service=\"git-upload-pack\"}}"
            )
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "refstore_rejected_requests_total{reason=\"unauthorized\"}"
        ),
        1.0
    );
    // The clone's pack alone is more than a few hundred bytes; the client
    // sent its wants.
    assert!(value(&text, &format!("refstore_sent_bytes_total{{{ssh}}}")) > 500.0);
    assert!(value(&text, &format!("refstore_received_bytes_total{{{ssh}}}")) > 50.0);
    assert_eq!(
        value(&text, &format!("refstore_active_connections{{{ssh}}}")),
        0.0
    );
}

//! Third-party Git clients against `refstore serve` over HTTP, HTTPS and
//! the built-in SSH server: the machine's git, JGit, dulwich, pygit2
//! (libgit2) and go-git, each through every operation of
//! [`interop::ops::OPS`] (clones shallow and full, fetches, pushes of every
//! kind, ls-remote in both protocols, SHA-256 and reftable repositories,
//! refusals for credentials and access rules), each checked by what it
//! left on the server and in the clone.
//!
//! What fails against refstore runs again against git's own server
//! (`git http-backend` for HTTP and HTTPS, OpenSSH's sshd running git for
//! SSH); failing there too, it is a thing the client cannot do ("client
//! cannot"), otherwise a FAIL of refstore's, which fails the test. The
//! matrix is printed either way (`--nocapture` shows it on success).
//!
//! The clients come from `scripts/install-deps`; a missing one fails the
//! test unless `REFSTORE_TEST_ALLOW_NO_CLIENTS=1`, which skips it loudly.

mod interop;
mod served;
mod ssh_served;
mod support;

use interop::clients::{self, Client};
use interop::fixtures::Fixtures;
use interop::matrix::{self, Cell};
use interop::ops::OPS;
use interop::servers::{Servers, Transport};
use std::time::Instant;

#[test]
fn third_party_clients_against_refstore_over_http_https_and_ssh() {
    let started = Instant::now();
    let found = clients::find_all();
    if !found.missing.is_empty() {
        let list: Vec<String> = found
            .missing
            .iter()
            .map(|(name, why)| format!("  {name}: {why}"))
            .collect();
        let allowed = std::env::var("REFSTORE_TEST_ALLOW_NO_CLIENTS").is_ok_and(|v| v == "1");
        assert!(
            allowed,
            "interop clients missing (scripts/install-deps installs them; \
             REFSTORE_TEST_ALLOW_NO_CLIENTS=1 skips them):\n{}",
            list.join("\n")
        );
        eprintln!(
            "\n!!! SKIPPING interop clients (REFSTORE_TEST_ALLOW_NO_CLIENTS=1):\n{}\n",
            list.join("\n")
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let servers = Servers::start(home);
    // dulwich takes the certificate to trust from git's configuration.
    let ca = servers.target(Transport::Https, false, interop::servers::Who::Alice);
    std::fs::write(
        home.join(".gitconfig"),
        format!(
            "[http]\n\tsslCAInfo = {}\n",
            ca.unwrap().ca.unwrap().display()
        ),
    )
    .unwrap();
    let fixtures = Fixtures::make(home);

    // One thread per client and transport: the clients wait on the
    // network and on their start-up (JGit's JVM) more than they compute.
    let cells: Vec<(String, Transport, usize, Cell)> = std::thread::scope(|s| {
        let runs: Vec<_> = found
            .clients
            .iter()
            .flat_map(|client| Transport::ALL.map(|transport| (client, transport)))
            .map(|(client, transport): (&Client, Transport)| {
                let (servers, fixtures) = (&servers, &fixtures);
                s.spawn(move || {
                    let started = Instant::now();
                    let cells: Vec<_> = OPS
                        .iter()
                        .enumerate()
                        .map(|(i, op)| {
                            let cell =
                                matrix::judge(home, servers, fixtures, client, transport, (i, op));
                            (client.name.to_owned(), transport, i, cell)
                        })
                        .collect();
                    eprintln!(
                        "interop: {} over {} took {:.0?}",
                        client.name,
                        transport.name(),
                        started.elapsed()
                    );
                    cells
                })
            })
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("a client's thread panicked"))
            .collect()
    });

    let names: Vec<&str> = found.clients.iter().map(|c| c.name).collect();
    let versions: Vec<&str> = found.clients.iter().map(|c| c.version.as_str()).collect();
    let mut report = format!("interop clients: {}\n", versions.join(", "));
    if !servers.has_ssh_control() {
        report += "no sshd: SSH failures have no control and count as FAIL\n";
    }
    report += &matrix::render(OPS, &names, &cells);
    report += "\n";
    for (name, why) in &found.missing {
        report += &format!("!!! SKIPPED client {name} (REFSTORE_TEST_ALLOW_NO_CLIENTS=1): {why}\n");
    }
    let failures = cells.iter().filter(|(_, _, _, c)| c.is_failure()).count();
    let passes = cells
        .iter()
        .filter(|(_, _, _, c)| matches!(c, Cell::Pass))
        .count();
    report += &format!(
        "interop matrix: {passes} cells pass, {failures} FAIL, of {} in {:.0?}\n",
        cells.len(),
        started.elapsed()
    );
    print!("{report}");
    // Kept for scripts/test, which shows it after the suite: the test
    // harness shows a passing test's output only on request.
    let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-matrix.txt");
    std::fs::write(&kept, &report).unwrap();
    assert_eq!(
        failures, 0,
        "refstore failed interop cells (see the matrix above)"
    );
}

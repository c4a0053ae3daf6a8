//! A rolling restart of a three-node cluster under steady load, behind a
//! real HAProxy that health-checks each node's `/healthz`, as a host runs
//! one: git clients clone, fetch and push through the balancer without
//! pause while each node in turn is sent SIGTERM, drains (its `/healthz`
//! answers `draining` and the balancer takes it out of rotation while it
//! still serves), finishes what is in flight, exits 0, and is started
//! again on the same root; the next node is stopped only once the
//! restarted one reports `ok` and the balancer sends it requests again.
//! Meanwhile one more client goes to the draining node directly, not
//! through the balancer, until the node refuses its connection: what the
//! node took on as it stopped accepting is finished, not cut off.
//!
//! Not one client operation may fail, on its first and only try, and
//! every acknowledged push must be visible through every node at the end.

mod cluster;
mod support;

use cluster::{Objects, TestCluster};
use refstore_testsupport::haproxy::{Backend, Haproxy, BACKEND, FRONTEND};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{git_ok, isolate, stderr};

/// Client loops running at once.
const WORKERS: usize = 4;

/// Load before the first restart and after the last.
const STEADY: Duration = Duration::from_secs(3);

/// The kinds of client operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A full clone into a new directory.
    Clone,
    /// A fetch into a clone the loop keeps.
    Fetch,
    /// A push of a new commit, to the loop's branch or to a new branch.
    Push,
}

const KINDS: [Kind; 3] = [Kind::Clone, Kind::Fetch, Kind::Push];

/// What the client loops did.
#[derive(Default)]
struct Ledger {
    /// When each operation that succeeded finished, and its kind.
    done: Vec<(Instant, Kind)>,
    /// Every failed operation, described with git's standard error.
    failures: Vec<String>,
    /// Every ref an acknowledged push set, and its value after the last
    /// of them (each ref has one writer).
    pushed: BTreeMap<String, String>,
}

impl Ledger {
    fn count(&self, kind: Kind, within: Option<(Instant, Instant)>) -> usize {
        self.done
            .iter()
            .filter(|(at, k)| {
                *k == kind && within.is_none_or(|(from, to)| from <= *at && *at <= to)
            })
            .count()
    }
}

/// Sets the flag when dropped, so that the client loops end even when
/// the test fails while they run.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// git over the network, never prompting.
fn net_git(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new("git"), home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// One client loop, `k`: clones `url` once, then, until `stop`, pushes a
/// new commit (to its branch `load/w<k>`, every third one to a new branch
/// too), fetches, and every other round clones afresh. Every operation
/// is tried once and recorded in `ledger`.
fn client_loop(
    k: usize,
    home: &Path,
    url: &str,
    stop: &AtomicBool,
    ledger: &Mutex<Ledger>,
    t0: Instant,
) {
    let record = |kind: Kind, what: &str, o: &Output| -> bool {
        let mut ledger = ledger.lock().unwrap();
        if o.status.success() {
            ledger.done.push((Instant::now(), kind));
            true
        } else {
            ledger.failures.push(format!(
                "client {k}: {what} failed at {:.1}s: {}",
                t0.elapsed().as_secs_f64(),
                stderr(o)
            ));
            false
        }
    };
    let work = home.join(format!("w{k}"));
    let o = net_git(home, home, &["clone", "-q", url, work.to_str().unwrap()]);
    if !record(Kind::Clone, "the first clone", &o) {
        return;
    }
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        std::fs::write(work.join(format!("w{k}.txt")), format!("round {round}\n")).unwrap();
        git_ok(home, &work, &["add", "."]);
        git_ok(
            home,
            &work,
            &["commit", "-q", "-m", &format!("client {k} round {round}")],
        );
        let id = git_ok(home, &work, &["rev-parse", "HEAD"])
            .trim()
            .to_owned();
        let mut refs = vec![format!("refs/heads/load/w{k}")];
        if round % 3 == 0 {
            refs.push(format!("refs/heads/load/w{k}-{round}"));
        }
        let refspecs: Vec<String> = refs.iter().map(|r| format!("HEAD:{r}")).collect();
        let mut args = vec!["push", "-q", "origin"];
        args.extend(refspecs.iter().map(String::as_str));
        let o = net_git(home, &work, &args);
        if record(Kind::Push, &format!("push of {id} to {refs:?}"), &o) {
            let mut ledger = ledger.lock().unwrap();
            for name in refs {
                ledger.pushed.insert(name, id.clone());
            }
        }
        let o = net_git(home, &work, &["fetch", "-q", "origin"]);
        record(Kind::Fetch, "fetch", &o);
        if round % 2 == 0 {
            let fresh = home.join(format!("c{k}"));
            let o = net_git(home, home, &["clone", "-q", url, fresh.to_str().unwrap()]);
            record(Kind::Clone, "clone", &o);
            let _ = std::fs::remove_dir_all(&fresh);
        }
    }
}

/// Waits up to `limit` until node `i`'s `/healthz` answers `status` and
/// `body`; what it answered last otherwise.
fn wait_health(
    c: &TestCluster,
    i: usize,
    status: u16,
    body: &str,
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let seen = c.nodes[i].healthz();
        if seen
            .as_ref()
            .is_some_and(|(s, b)| *s == status && b == body)
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{seen:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Node `i`'s log so far.
fn node_log(c: &TestCluster, i: usize) -> String {
    std::fs::read_to_string(c.home.join(format!("{}.log", c.nodes[i].name))).unwrap_or_default()
}

/// Whether git failed because nothing accepted its connection (a node
/// that stopped accepting), rather than during a request.
fn refused(o: &Output) -> bool {
    let err = stderr(o);
    err.contains("Failed to connect") || err.contains("Couldn't connect to server")
}

/// A client that goes to the draining node `url` directly, not through
/// the balancer (as one that resolved a node's own address does, or as
/// requests the balancer sent just before its check): it clones, then
/// pushes new commits to new branches and fetches, one after another,
/// until the node refuses a connection. Every operation the node took on
/// must succeed, the last of them in flight as it stopped accepting; the
/// acknowledged pushes go to `ledger` like the others. Returns how many
/// operations succeeded.
fn straggler(home: &Path, name: &str, url: &str, ledger: &Mutex<Ledger>, t0: Instant) -> usize {
    let mut done = 0;
    let fail = |what: &str, o: &Output| {
        ledger.lock().unwrap().failures.push(format!(
            "a client of {name} alone: {what} failed at {:.1}s: {}",
            t0.elapsed().as_secs_f64(),
            stderr(o)
        ));
    };
    let work = home.join(format!("straggler-{name}"));
    let o = net_git(home, home, &["clone", "-q", url, work.to_str().unwrap()]);
    if !o.status.success() {
        if !refused(&o) {
            fail("the clone", &o);
        }
        return done;
    }
    done += 1;
    for round in 1.. {
        std::fs::write(work.join("straggler.txt"), format!("round {round}\n")).unwrap();
        git_ok(home, &work, &["add", "."]);
        git_ok(
            home,
            &work,
            &["commit", "-q", "-m", &format!("straggler round {round}")],
        );
        let id = git_ok(home, &work, &["rev-parse", "HEAD"])
            .trim()
            .to_owned();
        let branch = format!("refs/heads/straggler/{name}-{round}");
        let o = net_git(
            home,
            &work,
            &["push", "-q", "origin", &format!("HEAD:{branch}")],
        );
        if !o.status.success() {
            if !refused(&o) {
                fail(&format!("push of {id} to {branch}"), &o);
            }
            return done;
        }
        ledger.lock().unwrap().pushed.insert(branch, id);
        done += 1;
        let o = net_git(home, &work, &["fetch", "-q", "origin"]);
        if !o.status.success() {
            if !refused(&o) {
                fail("fetch", &o);
            }
            return done;
        }
        done += 1;
    }
    unreachable!()
}

/// Restarts node `i` as an operator rolling through the cluster does:
/// SIGTERM; `/healthz` answers `draining` and the balancer takes the node
/// out of rotation while it still serves, a [`straggler`] among its
/// clients; it exits 0; it is started again on the same root and is back
/// in rotation once `/healthz` says `ok`.
fn restart(c: &mut TestCluster, lb: &Haproxy, i: usize, ledger: &Mutex<Ledger>, t0: Instant) {
    let name = c.nodes[i].name.clone();
    let at = |what: &str| eprintln!("{:6.2}s {name}: {what}", t0.elapsed().as_secs_f64());
    at("SIGTERM");
    c.signal_node(i, "TERM");
    if let Err(seen) = wait_health(c, i, 503, "draining\n", Duration::from_secs(2)) {
        panic!(
            "{name}'s /healthz did not say draining after SIGTERM: {seen}\n{}",
            node_log(c, i)
        );
    }
    at("/healthz: draining");
    lb.wait_for(&name, "DOWN", Duration::from_secs(5));
    // Out of rotation, and still serving whoever comes: a request that
    // reached it just before the balancer's check would be served too.
    let o = net_git(&c.home, &c.home, &["ls-remote", &c.nodes[i].url()]);
    assert!(
        o.status.success() && !c.nodes[i].exited(),
        "{name} no longer served once the balancer took it out of rotation: {}\n{}",
        stderr(&o),
        node_log(c, i)
    );
    at("out of the balancer's rotation, still serving");
    let (home, url) = (c.home.clone(), c.nodes[i].url());
    let (stragglers, status) = std::thread::scope(|s| {
        let straggler = s.spawn(|| straggler(&home, &name, &url, ledger, t0));
        let status = c.wait_node(i);
        (straggler.join().unwrap(), status)
    });
    at(&format!(
        "{stragglers} operations of a client of it alone succeeded while it drained"
    ));
    assert!(
        stragglers > 0,
        "{name} served its own client nothing while it drained"
    );
    assert!(
        status.success(),
        "{name} exited with {status}: {}",
        node_log(c, i)
    );
    at("exited 0");
    c.start_node(i);
    if let Err(seen) = wait_health(c, i, 200, "ok\n", Duration::from_secs(60)) {
        panic!(
            "{name}'s /healthz did not say ok after a restart: {seen}\n{}",
            node_log(c, i)
        );
    }
    at("restarted, /healthz: ok");
    lb.wait_for(&name, "UP", Duration::from_secs(30));
    at("back in the balancer's rotation");
}

#[test]
fn a_rolling_restart_behind_haproxy_fails_no_client_operation() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let mut c = TestCluster::start_with(home, 1, 3, Objects::Replicated { copies: 2 });
    let backends: Vec<Backend> = c
        .nodes
        .iter()
        .map(|n| Backend {
            name: n.name.clone(),
            port: n.port,
            health_port: n.metrics_port,
        })
        .collect();
    let lb = Haproxy::start(home, &backends);
    let url = format!("http://alice:pw@127.0.0.1:{}/repo.git", lb.port());

    let stop = AtomicBool::new(false);
    let ledger = Mutex::new(Ledger::default());
    let t0 = Instant::now();
    let mut windows = Vec::new();
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        for k in 0..WORKERS {
            let (url, stop, ledger) = (&url, &stop, &ledger);
            s.spawn(move || client_loop(k, home, url, stop, ledger, t0));
        }
        std::thread::sleep(STEADY);
        for i in 0..c.nodes.len() {
            let from = Instant::now();
            restart(&mut c, &lb, i, &ledger, t0);
            windows.push((c.nodes[i].name.clone(), from, Instant::now()));
        }
        std::thread::sleep(STEADY);
    });
    let elapsed = t0.elapsed();
    let ledger = ledger.into_inner().unwrap();
    assert!(
        ledger.failures.is_empty(),
        "{} client operations failed:\n{}\nhaproxy's log:\n{}",
        ledger.failures.len(),
        ledger.failures.join("\n"),
        lb.log()
    );

    let counts: Vec<String> = KINDS
        .iter()
        .map(|kind| format!("{} {kind:?}", ledger.count(*kind, None)))
        .collect();
    eprintln!(
        "load: {} by {WORKERS} clients in {:.1}s through haproxy ({} refs pushed), 0 failed",
        counts.join(", "),
        elapsed.as_secs_f64(),
        ledger.pushed.len()
    );
    // No request reached a node that no longer accepted it: the balancer
    // had no connection to retry elsewhere (its retries would hide one),
    // none failed, and no answer was a server error.
    // A proxy's totals are its row named FRONTEND or BACKEND.
    let stat = |proxy: &str, field: &str| {
        let totals = if proxy == FRONTEND {
            "FRONTEND"
        } else {
            "BACKEND"
        };
        lb.stat(proxy, totals, field)
            .unwrap_or_else(|| panic!("no {field} in haproxy's stats of {proxy}"))
    };
    let counters: Vec<(&str, String)> = [
        (BACKEND, "wretr"),
        (BACKEND, "wredis"),
        (BACKEND, "econ"),
        (BACKEND, "eresp"),
        (FRONTEND, "hrsp_5xx"),
    ]
    .into_iter()
    .map(|(proxy, field)| (field, stat(proxy, field)))
    .collect();
    eprintln!(
        "haproxy: {} HTTP requests, {counters:?}",
        stat(FRONTEND, "req_tot")
    );
    for (field, value) in &counters {
        assert_eq!(value, "0", "haproxy's {field}: {}", lb.log());
    }

    for (name, from, to) in &windows {
        let during: Vec<String> = KINDS
            .iter()
            .map(|kind| format!("{} {kind:?}", ledger.count(*kind, Some((*from, *to)))))
            .collect();
        eprintln!(
            "while {name} drained, stopped and restarted ({:.1}s): {}",
            (*to - *from).as_secs_f64(),
            during.join(", ")
        );
        // The load really ran while the node was away.
        assert!(
            ledger.count(Kind::Push, Some((*from, *to))) > 0
                && ledger.count(Kind::Fetch, Some((*from, *to))) > 0,
            "no push or no fetch finished while {name} restarted"
        );
    }

    // Every acknowledged push is there through every node, objects too.
    for i in 0..c.nodes.len() {
        let refs: BTreeMap<String, String> = c.ls_remote(i).into_iter().collect();
        for (name, id) in &ledger.pushed {
            assert_eq!(
                refs.get(name),
                Some(id),
                "{name} through {} after the rolling restart",
                c.nodes[i].name
            );
        }
        let mirror = home.join(format!("mirror-{i}"));
        let o = net_git(
            home,
            home,
            &[
                "clone",
                "-q",
                "--mirror",
                &c.nodes[i].url(),
                mirror.to_str().unwrap(),
            ],
        );
        assert!(
            o.status.success(),
            "mirror clone through {}: {}",
            c.nodes[i].name,
            stderr(&o)
        );
    }
}

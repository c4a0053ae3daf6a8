//! Soak: `refstore serve --allow-push` under many concurrent real git
//! clients (clones, fetches and ls-remote over protocol v0 and v2, pushes
//! to a branch of their own and to one contended branch, forced and not)
//! plus local `refstore update-ref` writers, on a files and a reftable
//! repository at once, for a bounded time. Afterwards every acknowledged
//! push and local update is present (or superseded by a later
//! acknowledged one), every ref reads, `git fsck` passes on both
//! repositories, and the server's peak memory stays under a bound.
//!
//! `SOAK_SECONDS` sets the load phase (default 20).

use crate::served::*;
use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The server's resident memory may not grow past this (a debug build
/// serving 16 concurrent clients peaks near 25 MiB).
const PEAK_RSS_BOUND_KIB: u64 = 128 << 10;

/// One acknowledged write: when it was asked for, when it was confirmed,
/// and the id it set.
#[derive(Debug, Clone)]
struct Acked {
    asked: Instant,
    confirmed: Instant,
    id: String,
}

#[derive(Default)]
struct Tally {
    acked: Mutex<BTreeMap<(String, String), Vec<Acked>>>,
    pushes_ok: AtomicU64,
    pushes_refused: AtomicU64,
    fetches: AtomicU64,
    clones: AtomicU64,
    ls_remotes: AtomicU64,
    local_writes: AtomicU64,
    lock_busy: AtomicU64,
    stale_wants: AtomicU64,
}

/// A write refused because another writer held the lock longer than the
/// lock timeout (`core.filesRefLockTimeout`, `reftable.lockTimeout`, 100 ms
/// by default as in git), or because the ref moved between the
/// advertisement and the push: not acknowledged, so nothing is lost.
fn is_lock_busy(text: &str) -> bool {
    text.contains("Unable to create") && text.contains(".lock': File exists")
        || text.contains("cannot lock ref")
}

impl Tally {
    /// Accounts for a push that was not acknowledged, and fails the test
    /// unless git's own server could refuse it the same way: not a fast
    /// forward, the ref moved since the advertisement, or a busy lock.
    fn refused(&self, o: &std::process::Output) {
        let (out, err) = (stdout(o), stderr(o));
        if out.contains("[rejected]") {
            self.pushes_refused.fetch_add(1, Ordering::Relaxed);
        } else if out.contains("[remote rejected]") && is_lock_busy(&err) {
            self.lock_busy.fetch_add(1, Ordering::Relaxed);
        } else {
            panic!("push failed unexpectedly:\n{out}{err}");
        }
    }

    /// Accounts for a fetch or clone; true if it succeeded. A fetch may ask
    /// for a tip that a forced push has made unreachable since the
    /// advertisement (the request is a second HTTP round); git's server
    /// refuses it the same way: counted, not a failure.
    fn fetched(&self, o: &std::process::Output) -> bool {
        if o.status.success() {
            self.fetches.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let err = stderr(o);
        assert!(
            err.contains("not our ref"),
            "fetch failed unexpectedly: {err}"
        );
        self.stale_wants.fetch_add(1, Ordering::Relaxed);
        false
    }

    fn ack(&self, repo: &str, name: &str, asked: Instant, id: &str) {
        self.acked
            .lock()
            .unwrap()
            .entry((repo.to_owned(), name.to_owned()))
            .or_default()
            .push(Acked {
                asked,
                confirmed: Instant::now(),
                id: id.to_owned(),
            });
    }
}

/// The ids a ref may hold after `acked`: the last write is not known when
/// writes overlap, so any write that no other write was asked for after it
/// was confirmed.
fn allowed_finals(acked: &[Acked]) -> Vec<&str> {
    acked
        .iter()
        .filter(|a| !acked.iter().any(|b| b.asked > a.confirmed))
        .map(|a| a.id.as_str())
        .collect()
}

fn commit_on(home: &Path, repo: &Path, parent: &str, message: &str) -> String {
    git_ok(
        home,
        repo,
        &[
            "commit-tree",
            "-p",
            parent,
            "-m",
            message,
            &format!("{parent}^{{tree}}"),
        ],
    )
    .trim()
    .to_owned()
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status")
}

#[test]
fn many_clients_and_local_writers_lose_nothing() {
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();

    // A history to start from, in a files and in a reftable repository.
    let work = home.join("work");
    git_ok(home, home, &["init", "-q", "-b", "main", "work"]);
    for i in 0..5 {
        std::fs::write(work.join(format!("f{i}")), format!("{i}\n").repeat(100)).unwrap();
        git_ok(home, &work, &["add", "."]);
        git_ok(home, &work, &["commit", "-q", "-m", &format!("base {i}")]);
    }
    let base: Vec<String> = git_ok(home, &work, &["rev-list", "main"])
        .lines()
        .map(str::to_owned)
        .collect();
    bare_clone(home, &work, &root.join("files.git"));
    let init = refstore(
        home,
        &root,
        &["init", "-q", "--bare", "--ref-format=reftable", "rt.git"],
    );
    assert!(init.status.success(), "{}", stderr(&init));
    std::fs::write(home.join("users"), "soak:soak-pw\n").unwrap();
    let users = home.join("users");
    let server = Served::start(
        home,
        &root,
        &[
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
            "--timeout",
            "30",
        ],
    );
    let o = git_net(
        home,
        &work,
        &[
            "push",
            "-q",
            &server.url_as("soak", "soak-pw", "rt.git"),
            "main",
            "main:contended",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_net(
        home,
        &work,
        &[
            "push",
            "-q",
            &server.url_as("soak", "soak-pw", "files.git"),
            "main:contended",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    let tally = Tally::default();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let running = || Instant::now() < until;
    let scratch = |name: String| -> PathBuf { home.join("clients").join(name) };
    std::fs::create_dir_all(home.join("clients")).unwrap();

    std::thread::scope(|scope| {
        for repo in ["files.git", "rt.git"] {
            let (tally, server, base, work) = (&tally, &server, &base, &work);
            let push_url = server.url_as("soak", "soak-pw", repo);
            let read_url = server.url(repo);

            // Pushers to a branch of their own.
            for i in 0..2 {
                let (push_url, dir) = (push_url.clone(), scratch(format!("{repo}-own-{i}")));
                scope.spawn(move || {
                    bare_clone(home, work, &dir);
                    let name = format!("refs/heads/own-{i}");
                    let mut tip = base[0].clone();
                    let mut n = 0;
                    while running() {
                        n += 1;
                        let next = commit_on(home, &dir, &tip, &format!("{repo} own {i} {n}"));
                        let asked = Instant::now();
                        let o = git_net(
                            home,
                            &dir,
                            &["push", "--porcelain", &push_url, &format!("{next}:{name}")],
                        );
                        if o.status.success() {
                            tally.ack(repo, &name, asked, &next);
                            tally.pushes_ok.fetch_add(1, Ordering::Relaxed);
                            tip = next;
                        } else {
                            tally.refused(&o);
                        }
                    }
                });
            }

            // Pushers to one contended branch: one builds on what it
            // fetched and may be refused, one forces.
            for (i, force) in [(0, false), (1, true)] {
                let (push_url, read_url) = (push_url.clone(), read_url.clone());
                let dir = scratch(format!("{repo}-contended-{i}"));
                scope.spawn(move || {
                    bare_clone(home, work, &dir);
                    let name = "refs/heads/contended";
                    let mut n = 0;
                    while running() {
                        n += 1;
                        let parent = if force {
                            base[n % base.len()].clone()
                        } else {
                            let o = git_net(home, &dir, &["fetch", "-q", &read_url, name]);
                            if !tally.fetched(&o) {
                                continue;
                            }
                            git_ok(home, &dir, &["rev-parse", "FETCH_HEAD"])
                                .trim()
                                .to_owned()
                        };
                        let next =
                            commit_on(home, &dir, &parent, &format!("{repo} contended {i} {n}"));
                        let spec = format!("{}{next}:{name}", if force { "+" } else { "" });
                        let asked = Instant::now();
                        let o = git_net(home, &dir, &["push", "--porcelain", &push_url, &spec]);
                        if o.status.success() {
                            tally.ack(repo, name, asked, &next);
                            tally.pushes_ok.fetch_add(1, Ordering::Relaxed);
                        } else {
                            tally.refused(&o);
                        }
                    }
                });
            }

            // Fetchers and ls-remote, protocol v0 and v2.
            let (read_url_f, dir) = (read_url.clone(), scratch(format!("{repo}-fetcher")));
            scope.spawn(move || {
                let o = git_net(
                    home,
                    home,
                    &["clone", "-q", "--bare", &read_url_f, dir.to_str().unwrap()],
                );
                assert!(o.status.success(), "{}", stderr(&o));
                tally.clones.fetch_add(1, Ordering::Relaxed);
                let mut n = 0u64;
                while running() {
                    n += 1;
                    let protocol = format!("protocol.version={}", if n % 2 == 0 { 0 } else { 2 });
                    let o = git_net(
                        home,
                        &dir,
                        &[
                            "-c",
                            &protocol,
                            "fetch",
                            "-q",
                            "--prune",
                            &read_url_f,
                            "+refs/*:refs/*",
                        ],
                    );
                    tally.fetched(&o);
                    let o = git_net(home, home, &["-c", &protocol, "ls-remote", &read_url_f]);
                    assert!(o.status.success(), "ls-remote {protocol}: {}", stderr(&o));
                    for line in stdout(&o).lines() {
                        let (id, name) = line.split_once('\t').expect("id<TAB>name");
                        assert!(
                            id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                            "torn line {line:?}"
                        );
                        assert!(name == "HEAD" || name.starts_with("refs/"), "{line:?}");
                    }
                    tally.ls_remotes.fetch_add(1, Ordering::Relaxed);
                }
                git_ok(home, &dir, &["fsck", "--no-progress"]);
            });

            // Clones from scratch.
            let (read_url_c, parent) = (read_url.clone(), scratch(format!("{repo}-clones")));
            scope.spawn(move || {
                std::fs::create_dir_all(&parent).unwrap();
                let mut n = 0;
                while running() {
                    n += 1;
                    let dir = parent.join(n.to_string());
                    let protocol = format!("protocol.version={}", if n % 2 == 0 { 0 } else { 2 });
                    let o = git_net(
                        home,
                        home,
                        &[
                            "-c",
                            &protocol,
                            "clone",
                            "-q",
                            "--bare",
                            &read_url_c,
                            dir.to_str().unwrap(),
                        ],
                    );
                    if tally.fetched(&o) {
                        tally.clones.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = std::fs::remove_dir_all(&dir);
                }
            });

            // A local writer on the same repository.
            let repo_dir = root.join(repo);
            scope.spawn(move || {
                let name = "refs/heads/local";
                let mut n = 0;
                while running() {
                    n += 1;
                    let id = &base[n % base.len()];
                    let asked = Instant::now();
                    let o = refstore(home, &repo_dir, &["update-ref", "-m", "soak", name, id]);
                    if o.status.success() {
                        tally.ack(repo, name, asked, id);
                        tally.local_writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        assert!(is_lock_busy(&stderr(&o)), "update-ref: {}", stderr(&o));
                        tally.lock_busy.fetch_add(1, Ordering::Relaxed);
                    }
                    // The local writer's pace, part of the load.
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    let load = started.elapsed();
    let peak_kib = vm_hwm_kib(server.pid());

    // Every acknowledged write is there, or one that may have come after it.
    for repo in ["files.git", "rt.git"] {
        let dir = root.join(repo);
        let listed = refstore(
            home,
            &dir,
            &["for-each-ref", "--format=%(objectname) %(refname)"],
        );
        assert!(listed.status.success(), "{repo}: {}", stderr(&listed));
        let refs: BTreeMap<String, String> = stdout(&listed)
            .lines()
            .map(|l| {
                let (id, name) = l.split_once(' ').unwrap();
                (name.to_owned(), id.to_owned())
            })
            .collect();
        let acked = tally.acked.lock().unwrap();
        for ((r, name), writes) in acked.iter().filter(|((r, _), _)| r == repo) {
            let now = refs
                .get(name)
                .unwrap_or_else(|| panic!("{r}: {name} is gone"));
            let allowed = allowed_finals(writes);
            assert!(
                allowed.contains(&now.as_str()),
                "{r}: {name} is {now}, the last acknowledged writes set {allowed:?}"
            );
        }
        for name in [
            "refs/heads/own-0",
            "refs/heads/own-1",
            "refs/heads/contended",
            "refs/heads/local",
        ] {
            assert!(
                acked.contains_key(&(repo.to_owned(), name.to_owned())),
                "{repo}: no write to {name} was acknowledged"
            );
        }
        let verify = refstore(home, &dir, &["refs", "verify"]);
        assert!(
            verify.status.success(),
            "{repo}: {}{}",
            stdout(&verify),
            stderr(&verify)
        );
    }
    // git fsck: directly on the files repository; for the reftable one
    // (which this git cannot open) on a files repository that borrows its
    // objects and holds the same refs.
    git_ok(
        home,
        &root.join("files.git"),
        &["fsck", "--no-progress", "--full"],
    );
    let check = home.join("rt-check.git");
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", check.to_str().unwrap()],
    );
    std::fs::write(
        check.join("objects/info/alternates"),
        format!("{}\n", root.join("rt.git/objects").display()),
    )
    .unwrap();
    let listed = refstore(
        home,
        &root.join("rt.git"),
        &["for-each-ref", "--format=update %(refname) %(objectname)"],
    );
    let o = run_with_input(
        isolate(&mut std::process::Command::new("git"), home)
            .args(["update-ref", "--stdin"])
            .current_dir(&check),
        &listed.stdout,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    git_ok(home, &check, &["fsck", "--no-progress", "--full"]);

    let (code, log) = server.stop();
    assert_eq!(code, Some(0));
    let requests = log.matches("refstore::access").count();
    let failed = log.matches("status=5").count();
    assert_eq!(failed, 0, "server errors:\n{log}");
    eprintln!(
        "soak: {load:.1?} of load, {requests} HTTP requests ({:.1}/s), pushes ok {} refused {} (lock busy or moved {}), fetches {} (wants gone stale {}), clones {}, ls-remote {}, local updates {}, server peak RSS {} MiB",
        requests as f64 / load.as_secs_f64(),
        tally.pushes_ok.load(Ordering::Relaxed),
        tally.pushes_refused.load(Ordering::Relaxed),
        tally.lock_busy.load(Ordering::Relaxed),
        tally.fetches.load(Ordering::Relaxed),
        tally.stale_wants.load(Ordering::Relaxed),
        tally.clones.load(Ordering::Relaxed),
        tally.ls_remotes.load(Ordering::Relaxed),
        tally.local_writes.load(Ordering::Relaxed),
        peak_kib / 1024,
    );
    assert!(
        peak_kib < PEAK_RSS_BOUND_KIB,
        "server peak RSS {peak_kib} KiB is over {PEAK_RSS_BOUND_KIB} KiB"
    );
}

//! The memory one `refstore serve` process spends on large objects below
//! `core.bigFileThreshold`: concurrent pushes of a 500 MiB blob (of zeros,
//! so its pack is 0.6 MB) into repositories that keep it loose and as a
//! pack, then concurrent clones of it, loose and packed. All requests run
//! in the one server process, so the bound is on that process: the peak
//! of its `RssAnon` read every 2 ms stays below 64 MiB for all requests
//! at once (so below 64 MiB per request), and its `VmHWM` (the kernel's
//! exact record of its peak resident memory, file pages included, which
//! no sampling can miss) below 64 MiB per request. Git reads every pushed blob back and
//! `git fsck --strict` finds the repositories sound.
//!
//! `REFSTORE_TEST_LARGE_CLONES=<n>` runs `n` clones of each at once
//! instead of four of the pack and two of the loose blob (16 is the
//! issue's figure; each client inflates and hashes 500 MiB, and each clone
//! of the loose blob has the server inflate and compress it).

use crate::served::{git_net, Served};
use crate::support::{git_ok, stderr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The blob: below git's default `core.bigFileThreshold` (512 MiB).
const BLOB_SIZE: u64 = 500 << 20;

/// The most one request may cost the server process.
const MAX_MEMORY: u64 = 64 << 20;

/// Concurrent pushes.
const PUSHES: usize = 4;

/// Concurrent clones of the blob stored as a pack (each one a copy of its
/// compressed bytes) and loose, unless the environment says.
const CLONES: [usize; 2] = [4, 2];

/// Room for this many requests at once from one address.
const MAX_AT_ONCE: usize = 16;

/// A field of `/proc/<pid>/status`, in bytes.
fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    let kilobytes: u64 = line.trim().trim_end_matches("kB").trim().parse().unwrap();
    kilobytes * 1024
}

/// Reads `RssAnon` of `pid` every 2 ms until stopped, keeping the peak.
struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(status_field(pid, "RssAnon:"), Ordering::Relaxed);
                    // The sampling period of the measurement.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            })
        };
        Sampler {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    /// The peak seen.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        self.peak.load(Ordering::Relaxed)
    }
}

/// A repository whose one commit holds the blob as `big` (a sparse file:
/// no disk for the zeros), and its commit id.
fn source(home: &Path) -> (PathBuf, String) {
    let src = home.join("src");
    git_ok(home, home, &["init", "-q", "-b", "main", "src"]);
    std::fs::File::create(src.join("big"))
        .unwrap()
        .set_len(BLOB_SIZE)
        .unwrap();
    git_ok(home, &src, &["add", "."]);
    git_ok(home, &src, &["commit", "-q", "-m", "zeros"]);
    // Packed, so that each push copies its 0.6 MB rather than compressing
    // 500 MiB again.
    git_ok(home, &src, &["repack", "-adq"]);
    let head = git_ok(home, &src, &["rev-parse", "HEAD"]);
    (src, head.trim().to_owned())
}

/// Runs `each(i)` for `0..n` on threads at once and requires that all
/// succeed.
fn at_once(n: usize, each: impl Fn(usize) -> std::process::Output + Sync) {
    std::thread::scope(|scope| {
        let each = &each;
        let runs: Vec<_> = (0..n).map(|i| scope.spawn(move || each(i))).collect();
        for (i, run) in runs.into_iter().enumerate() {
            let out = run.join().unwrap();
            assert!(out.status.success(), "request {i}: {}", stderr(&out));
        }
    });
}

/// Requires that the peak of the server's anonymous memory `sampled`
/// during `requests` concurrent requests is below the bound, and its peak
/// resident memory so far below the bound for each.
fn within_bound(server: &Served, requests: usize, sampled: u64, what: &str) {
    let peak = status_field(server.pid(), "VmHWM:");
    eprintln!("{what}: server peak {peak} bytes, anonymous {sampled} bytes");
    assert!(
        peak < MAX_MEMORY * requests as u64,
        "{what}: the server peaked at {peak} bytes"
    );
    assert!(
        sampled < MAX_MEMORY,
        "{what}: the server's anonymous memory peaked at {sampled} bytes"
    );
}

#[test]
fn concurrent_pushes_and_clones_of_a_500_mib_blob_stay_within_64_mib() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (src, commit) = source(home);
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    // The first keeps the push as a pack, the others as loose objects.
    let repos: Vec<PathBuf> = (0..PUSHES)
        .map(|i| {
            let name = format!("r{i}.git");
            git_ok(home, &root, &["init", "-q", "--bare", &name]);
            let repo = root.join(&name);
            git_ok(home, &repo, &["config", "receive.fsckObjects", "true"]);
            let limit = if i == 0 { "1" } else { "100" };
            git_ok(home, &repo, &["config", "receive.unpackLimit", limit]);
            repo
        })
        .collect();
    let users = home.join("users");
    std::fs::write(&users, "bob:pw\n").unwrap();
    // Room for every request at once (one address runs half the workers).
    let workers = (2 * MAX_AT_ONCE).to_string();
    let server = Served::start(
        home,
        &root,
        &[
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
            "--workers",
            &workers,
        ],
    );

    let sampler = Sampler::start(server.pid());
    at_once(PUSHES, |i| {
        let url = server.url_as("bob", "pw", &format!("r{i}.git"));
        git_net(home, &src, &["push", "-q", &url, "main"])
    });
    within_bound(&server, PUSHES, sampler.finish(), "pushes");
    for (i, repo) in repos.iter().enumerate() {
        let size = git_ok(home, repo, &["cat-file", "-s", &format!("{commit}:big")]);
        assert_eq!(size.trim(), BLOB_SIZE.to_string());
        // One kept as a pack, one unpacked: the others are stored alike.
        if i < 2 {
            git_ok(home, repo, &["fsck", "--no-dangling", "--strict"]);
        }
    }
    let packs = |repo: &Path| {
        std::fs::read_dir(repo.join("objects/pack"))
            .unwrap()
            .count()
    };
    assert!(packs(&repos[0]) > 0, "the first push is kept as a pack");
    assert_eq!(packs(&repos[1]), 0, "the second is unpacked");

    let clones = home.join("clones");
    std::fs::create_dir_all(&clones).unwrap();
    let asked: Option<usize> = std::env::var("REFSTORE_TEST_LARGE_CLONES")
        .ok()
        .and_then(|n| n.parse().ok());
    let counts = asked.map_or(CLONES, |n| [n.min(MAX_AT_ONCE); 2]);
    for (repo, n) in [("r0.git", counts[0]), ("r1.git", counts[1])] {
        let sampler = Sampler::start(server.pid());
        at_once(n, |i| {
            let to = clones.join(format!("{repo}-{i}"));
            git_net(
                home,
                home,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    &server.url(repo),
                    to.to_str().unwrap(),
                ],
            )
        });
        within_bound(
            &server,
            n,
            sampler.finish(),
            &format!("{n} clones of {repo}"),
        );
        let one = clones.join(format!("{repo}-0"));
        git_ok(home, &one, &["fsck", "--no-dangling", "--strict"]);
        for i in 0..n {
            let _ = std::fs::remove_dir_all(clones.join(format!("{repo}-{i}")));
        }
    }
}

//! Several refstore and git processes increment a counter stored in a ref
//! with compare-and-swap transactions on one repository while readers keep
//! reading it: no increment is lost, the ref is never unreadable, and a
//! writer that cannot get the lock fails with a clear message rather than
//! hanging.

mod support;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

const WRITERS: usize = 4;
const INCREMENTS: usize = 10;

/// `rev-parse`-like read of the counter through either implementation.
fn read(program: &str, home: &Path, repo: &Path) -> Result<String, String> {
    let mut cmd = Command::new(program);
    let out = isolate(&mut cmd, home)
        .args(["show-ref", "--verify", "--hash", "refs/heads/counter"])
        .current_dir(repo)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(stdout(&out).trim().to_owned())
    } else {
        Err(stderr(&out))
    }
}

#[test]
fn compare_and_swap_increments_are_never_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    git_ok(&home, tmp.path(), &["init", "-q", "-b", "main", "r"]);
    let repo = tmp.path().join("r");
    // The counter's values: a chain of commits c0 .. cN.
    let tree = git_ok(&home, &repo, &["write-tree"]).trim().to_owned();
    let mut chain = Vec::new();
    for i in 0..=WRITERS * INCREMENTS {
        let out = git_ok(
            &home,
            &repo,
            &["commit-tree", &tree, "-m", &format!("value {i}")],
        );
        chain.push(out.trim().to_owned());
    }
    git_ok(
        &home,
        &repo,
        &["update-ref", "refs/heads/counter", &chain[0]],
    );
    let chain = Arc::new(chain);
    let stop = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = [env!("CARGO_BIN_EXE_refstore"), "git"]
        .into_iter()
        .map(|program| {
            let (home, repo, chain, stop) =
                (home.clone(), repo.clone(), chain.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    let value = read(program, &home, &repo)
                        .unwrap_or_else(|e| panic!("{program} could not read the counter: {e}"));
                    assert!(
                        chain.contains(&value),
                        "{program} read a value never written: {value}"
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (home, repo, chain) = (home.clone(), repo.clone(), chain.clone());
            let program = if w % 2 == 0 {
                env!("CARGO_BIN_EXE_refstore")
            } else {
                "git"
            };
            std::thread::spawn(move || {
                let (mut done, mut contended) = (0, 0);
                let deadline = Instant::now() + Duration::from_secs(120);
                while done < INCREMENTS {
                    assert!(Instant::now() < deadline, "writer {w} made no progress");
                    let current = read(program, &home, &repo).unwrap();
                    let index = chain.iter().position(|c| *c == current).unwrap();
                    let mut cmd = Command::new(program);
                    let out = isolate(&mut cmd, &home)
                        .args([
                            "update-ref",
                            "refs/heads/counter",
                            &chain[index + 1],
                            &current,
                        ])
                        .current_dir(&repo)
                        .output()
                        .unwrap();
                    if out.status.success() {
                        done += 1;
                    } else {
                        let err = stderr(&out);
                        assert!(
                            err.contains("is at")
                                || err.contains("Unable to create")
                                || err.contains("unable to resolve"),
                            "writer {w} ({program}) failed unclearly: {err}"
                        );
                        contended += 1;
                    }
                }
                contended
            })
        })
        .collect();
    let contended: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let reads: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();

    let final_value = read("git", &home, &repo).unwrap();
    assert_eq!(
        final_value,
        chain[WRITERS * INCREMENTS],
        "an increment was lost"
    );
    assert!(reads > 0);
    git_ok(&home, &repo, &["fsck", "--no-progress"]);
    // Every successful increment left one reflog line, in order.
    let log = std::fs::read_to_string(repo.join(".git/logs/refs/heads/counter")).unwrap();
    let news: Vec<&str> = log.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(news, chain.iter().map(String::as_str).collect::<Vec<_>>());
    eprintln!("{reads} reads, {contended} failed compare-and-swap attempts retried");
}

//! refstore's upload-pack and receive-pack answer what git's answer, byte
//! for byte: for generated repositories and a generated corpus of
//! requests (protocol v0, v1 and v2, stateless and not, side-band or not,
//! shallow and deepen requests, filters, `have` rounds, `ls-refs`, pushes
//! that create, update and delete, atomic or not, with push options), git
//! and refstore serve the same bytes and their answers are compared as
//! pkt-line streams. git is its executable; refstore is this crate's
//! upload-pack and receive-pack, called in this process. Pack data is
//! compared by the objects it holds, progress by being there; everything
//! else must be the same bytes but for the deliberate differences listed
//! in `differences.rs`.
//!
//! By default the corpora of several seeds run, each with its own
//! repositories (`SEEDS`, `PUSH_SEEDS`); `REFSTORE_WIRE_SEED` runs one
//! seed alone and `REFSTORE_WIRE_REQUESTS` sets the requests per seed.
//! `REFSTORE_TEST_GIT_NEW=/path/to/git` runs the fetch corpus against a
//! newer git too (the version-dependent differences then apply as that
//! version needs). The test prints how many requests it compared and how
//! many had one of the known differences.

mod compare;
mod differences;
mod fetch_requests;
mod history;
mod packs;
mod push_requests;
mod server;
#[path = "../support/stdio.rs"]
mod stdio;
mod stream;

use compare::{compare, Place};
use differences::Context;
use history::Served;
use refstore_testsupport::rng::Rng;
use server::Server;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// The seeds a run covers when the environment does not say: each gives
/// its own repositories and corpus.
const SEEDS: &[u64] = &[3, 4, 5, 6378453527];

/// Fetch requests per seed when the environment does not say.
const FETCH_REQUESTS: usize = 140;

/// The seeds to run: `REFSTORE_WIRE_SEED` alone, or [`SEEDS`].
fn seeds() -> Vec<u64> {
    match std::env::var("REFSTORE_WIRE_SEED") {
        Ok(seed) => vec![seed.parse().expect("REFSTORE_WIRE_SEED is a number")],
        Err(_) => SEEDS.to_vec(),
    }
}

fn requests(default: usize) -> usize {
    std::env::var("REFSTORE_WIRE_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Generated repositories in a temporary home. The corpora only read
/// them (pushes go into copies), so the tests running at the same time
/// share one per seed ([`setup`]).
struct Setup {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repos: [Served; 3],
    seed: u64,
}

impl Setup {
    fn new(seed: u64) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("repos");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let (full, unborn, empty) = history::generate(&home, &root, seed);
        let tmp = match std::env::var_os("REFSTORE_WIRE_KEEP") {
            Some(_) => {
                eprintln!("the repositories are kept in {}", root.display());
                std::mem::forget(tmp);
                tempfile::tempdir().unwrap()
            }
            None => tmp,
        };
        Setup {
            _tmp: tmp,
            home,
            repos: [full, unborn, empty],
            seed,
        }
    }

    /// A directory of the caller's own for what it writes (packs it
    /// indexes, copies it pushes into), removed when dropped.
    fn scratch(&self) -> tempfile::TempDir {
        tempfile::tempdir_in(&self.home).unwrap()
    }
}

/// The repositories of `seed`: the ones another test is using, or new.
fn setup(seed: u64) -> Arc<Setup> {
    static SETUPS: Mutex<Option<HashMap<u64, Weak<Setup>>>> = Mutex::new(None);
    // Held while generating: a test wanting the same seed waits for it.
    let mut setups = SETUPS.lock().unwrap_or_else(|e| e.into_inner());
    let setups = setups.get_or_insert_with(HashMap::new);
    if let Some(setup) = setups.get(&seed).and_then(Weak::upgrade) {
        return setup;
    }
    let setup = Arc::new(Setup::new(seed));
    setups.insert(seed, Arc::downgrade(&setup));
    setup
}

/// The git a corpus is compared with, and its version.
fn git_server(path: &Path) -> (Server, (u32, u32)) {
    let out = std::process::Command::new(path)
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut numbers = text
        .trim()
        .trim_start_matches("git version ")
        .split('.')
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    (Server::Git(path.to_owned()), version)
}

/// Serves the fetch corpus with `git` and refstore; returns the number of
/// requests compared, and fails with every difference found.
fn run_fetch_corpus(setup: &Setup, git: &Server, git_version: (u32, u32), count: usize) -> usize {
    let repos = [&setup.repos[0], &setup.repos[1], &setup.repos[2]];
    let mut rng = Rng::new(setup.seed);
    let scratch = setup.scratch();
    let mut failures = Vec::new();
    let mut known_pack_differences = 0;
    for n in 0..count {
        let request = fetch_requests::generate(&mut rng, &repos, n);
        let repo = &repos[request.repo].dir;
        let theirs = server::run(git, &setup.home, request.how, repo, &request.input);
        let ours = server::run(
            &Server::Refstore,
            &setup.home,
            request.how,
            repo,
            &request.input,
        );
        let place = Place {
            home: &setup.home,
            repo,
            scratch: &scratch.path().join("packs"),
            ofs_delta: contains(&request.input, b"ofs-delta"),
        };
        let context = Context {
            how: request.how,
            git_version,
            git_succeeded: theirs.success,
            shallow_fetch_before_others: request.shallow_fetch_before_others,
            parents: repos[request.repo].parents(),
            deepen_relative: contains(&request.input, b"deepen-relative"),
            known_pack_differences: Default::default(),
        };
        let result = compare(&place, &context, request.sideband, &theirs, &ours);
        known_pack_differences += context.known_pack_differences.get();
        if let Err(difference) = result {
            failures.push(format!(
                "{}\n  request: {:?}\n{difference}",
                request.label,
                String::from_utf8_lossy(&request.input)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "seed {}: {} of {count} requests answered differently:\n\n{}",
        setup.seed,
        failures.len(),
        failures[..failures.len().min(8)].join("\n\n")
    );
    println!(
        "upload-pack, seed {}: {known_pack_differences} of {count} requests had a known \
         difference (v2-session-grafts or \
         deepen-relative-since-2.54)",
        setup.seed
    );
    count
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Runs the fetch corpus of every seed; the number of requests compared.
fn run_fetch_corpora(git: &Server, git_version: (u32, u32)) -> usize {
    seeds()
        .into_iter()
        .map(|seed| run_fetch_corpus(&setup(seed), git, git_version, requests(FETCH_REQUESTS)))
        .sum()
}

#[test]
fn upload_pack_answers_as_git_does() {
    let (git, version) = git_server(Path::new("git"));
    let count = run_fetch_corpora(&git, version);
    println!(
        "upload-pack: {count} requests of seeds {:?} compared with git {}.{}; deliberate \
         differences:\n{}",
        seeds(),
        version.0,
        version.1,
        differences::describe()
    );
}

/// Needs a git newer than the machine's, which CI does not build, so it is
/// run by hand: `REFSTORE_TEST_GIT_NEW=/path/to/git cargo test -p
/// refstore-protocol --test wire -- --ignored`. Asked to run without
/// one, it fails rather than passing unchecked.
#[test]
#[ignore = "needs REFSTORE_TEST_GIT_NEW=/path/to/git (>= 2.45)"]
fn upload_pack_answers_as_a_newer_git_does() {
    let path = std::env::var_os("REFSTORE_TEST_GIT_NEW")
        .expect("set REFSTORE_TEST_GIT_NEW=/path/to/git (>= 2.45) to compare with a newer git");
    let (git, version) = git_server(Path::new(&path));
    let count = run_fetch_corpora(&git, version);
    println!(
        "upload-pack: {count} requests of seeds {:?} compared with git {}.{}",
        seeds(),
        version.0,
        version.1
    );
}

/// Push requests per seed when the environment does not say.
const PUSH_REQUESTS: usize = 30;

/// The seeds of the push corpus when the environment does not say.
const PUSH_SEEDS: &[u64] = &[3, 4];

#[test]
fn receive_pack_answers_as_git_does() {
    let (git, git_version) = git_server(Path::new("git"));
    let seeds = match std::env::var("REFSTORE_WIRE_SEED") {
        Ok(_) => seeds(),
        Err(_) => PUSH_SEEDS.to_vec(),
    };
    let count: usize = seeds
        .iter()
        .map(|&seed| run_push_corpus(&setup(seed), &git, git_version))
        .sum();
    println!(
        "receive-pack: {count} requests of seeds {seeds:?} compared with git {}.{}",
        git_version.0, git_version.1
    );
}

/// Serves the push corpus of `setup` with `git` and refstore, each
/// pushing into its own copy; the number of requests compared.
fn run_push_corpus(setup: &Setup, git: &Server, git_version: (u32, u32)) -> usize {
    let repos = [&setup.repos[0], &setup.repos[1], &setup.repos[2]];
    let scratch = setup.scratch();
    let mut client = push_requests::Client::new(&setup.home, repos[0], scratch.path());
    let mut rng = Rng::new(setup.seed ^ 0x9054);
    let count = requests(PUSH_REQUESTS);
    let mut failures = Vec::new();
    for n in 0..count {
        let request = push_requests::generate(&mut rng, &setup.home, &repos, &mut client, n);
        let served = &repos[request.repo].dir;
        // Each server pushes into its own copy.
        let copies = scratch.path().join(format!("pushed-{n}"));
        let (theirs_dir, ours_dir) = (copies.join("git"), copies.join("refstore"));
        history::copy_dir(served, &theirs_dir);
        history::copy_dir(served, &ours_dir);
        let theirs = server::run(git, &setup.home, request.how, &theirs_dir, &request.input);
        let ours = server::run(
            &Server::Refstore,
            &setup.home,
            request.how,
            &ours_dir,
            &request.input,
        );
        let place = Place {
            home: &setup.home,
            repo: served,
            scratch: &scratch.path().join("packs"),
            // Answers to pushes hold no pack.
            ofs_delta: true,
        };
        let context = Context {
            how: request.how,
            git_version,
            git_succeeded: theirs.success,
            shallow_fetch_before_others: request.shallow_fetch_before_others,
            parents: Default::default(),
            deepen_relative: false,
            known_pack_differences: Default::default(),
        };
        let mut result = compare(&place, &context, request.sideband, &theirs, &ours);
        if result.is_ok() {
            let refs =
                |dir: &Path| refstore_testsupport::git_ok(&setup.home, dir, &["for-each-ref"]);
            let (theirs_refs, our_refs) = (refs(&theirs_dir), refs(&ours_dir));
            if theirs_refs != our_refs {
                result = Err(format!(
                    "the refs differ afterwards:\n  git:\n{theirs_refs}\n  refstore:\n{our_refs}"
                ));
            }
        }
        if let Err(difference) = result {
            failures.push(format!(
                "{}\n  request: {:?}\n{difference}",
                request.label,
                String::from_utf8_lossy(&request.input[..request.input.len().min(600)])
            ));
        }
        std::fs::remove_dir_all(&copies).unwrap();
    }
    assert!(
        failures.is_empty(),
        "seed {}: {} of {count} requests answered differently:\n\n{}",
        setup.seed,
        failures.len(),
        failures[..failures.len().min(8)].join("\n\n")
    );
    count
}

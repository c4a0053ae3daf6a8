//! The generated corpus of receive-pack requests: advertisements, and
//! pushes of one to four commands (create, fast-forward, non-fast-forward,
//! delete, stale old ids, refused names), atomic or not, with push
//! options, `report-status` or `report-status-v2`, side-band or not; the
//! pack each needs made by `git pack-objects` from a client repository.

use super::fetch_requests::{pkt, Request, FLUSH};
use super::history::Served;
use super::server::Invocation;
use refstore_testsupport::rng::Rng;
use refstore_testsupport::{git_ok, isolate, run_with_input, stderr};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ZERO: &str = "0000000000000000000000000000000000000000";

/// A client repository borrowing the served one's objects, with new
/// commits to push.
pub struct Client {
    dir: PathBuf,
    /// A commit on top of `main`.
    ahead_of_main: String,
    /// A commit on top of `side`.
    ahead_of_side: String,
    /// A commit on top of `main`'s first parent: not a fast-forward.
    beside_main: String,
    /// Packs made so far, by the ids they carry.
    packs: HashMap<Vec<String>, Vec<u8>>,
}

impl Client {
    pub fn new(home: &Path, served: &Served, root: &Path) -> Client {
        let dir = root.join("client");
        git_ok(home, root, &["init", "-q", "--bare", "client"]);
        std::fs::write(
            dir.join("objects/info/alternates"),
            format!("{}\n", served.dir.join("objects").display()),
        )
        .unwrap();
        let main = served.id("refs/heads/main");
        let main_parent = served
            .commits
            .iter()
            .find(|c| c.id == main)
            .and_then(|c| c.parents.first())
            .expect("main has a parent")
            .clone();
        let tips = [
            ("ahead-of-main", main.to_owned()),
            ("ahead-of-side", served.id("refs/heads/side").to_owned()),
            ("beside-main", main_parent),
        ];
        let mut stream = String::new();
        for (i, (branch, parent)) in tips.iter().enumerate() {
            let text = format!("pushed {branch}\n");
            let message = format!("push {branch}\n");
            stream.push_str(&format!(
                "commit refs/heads/{branch}\ncommitter C O Mitter <committer@example.com> {} +0000\n\
                 data {}\n{message}from {parent}\nM 100644 inline pushed/{branch}.txt\ndata {}\n{text}\n",
                1_700_000_000 + i,
                message.len(),
                text.len()
            ));
        }
        let mut cmd = Command::new("git");
        isolate(&mut cmd, home).current_dir(&dir).args([
            "fast-import",
            "--quiet",
            "--date-format=raw",
        ]);
        let out = run_with_input(&mut cmd, stream.as_bytes());
        assert!(out.status.success(), "fast-import: {}", stderr(&out));
        let id = |branch: &str| {
            git_ok(home, &dir, &["rev-parse", &format!("refs/heads/{branch}")])
                .trim()
                .to_owned()
        };
        Client {
            ahead_of_main: id("ahead-of-main"),
            ahead_of_side: id("ahead-of-side"),
            beside_main: id("beside-main"),
            dir,
            packs: HashMap::new(),
        }
    }

    /// The pack a client sends for `new` ids to a server with `served`'s
    /// refs, as `git push` makes it.
    fn pack(&mut self, home: &Path, served: &Served, mut new: Vec<String>) -> Vec<u8> {
        new.sort();
        new.dedup();
        if let Some(pack) = self.packs.get(&new) {
            return pack.clone();
        }
        let mut revs: String = new.iter().map(|id| format!("{id}\n")).collect();
        for id in served.refs.values() {
            revs.push_str(&format!("^{id}\n"));
        }
        let mut cmd = Command::new("git");
        isolate(&mut cmd, home).current_dir(&self.dir).args([
            "pack-objects",
            "--stdout",
            "--revs",
            "--thin",
            "-q",
        ]);
        let out = run_with_input(&mut cmd, revs.as_bytes());
        assert!(out.status.success(), "pack-objects: {}", stderr(&out));
        self.packs.insert(new, out.stdout.clone());
        out.stdout
    }
}

/// The request number `n` of the push corpus.
pub fn generate(
    rng: &mut Rng,
    home: &Path,
    repos: &[&Served; 3],
    client: &mut Client,
    n: usize,
) -> Request {
    if rng.chance(15) {
        return advertisement(rng, n);
    }
    let served = repos[0];
    let mut commands: Vec<(String, String, String)> = Vec::new();
    let mut used = std::collections::HashSet::new();
    let existing: Vec<String> = served.refs.keys().cloned().collect();
    let commits: Vec<String> = served.commits.iter().map(|c| c.id.clone()).collect();
    for k in 0..1 + rng.below(4) {
        let command = match rng.below(9) {
            0 => (
                "refs/heads/main".to_owned(),
                served.id("refs/heads/main").to_owned(),
                client.ahead_of_main.clone(),
            ),
            1 => (
                "refs/heads/side".to_owned(),
                served.id("refs/heads/side").to_owned(),
                client.ahead_of_side.clone(),
            ),
            2 => (
                "refs/heads/main".to_owned(),
                served.id("refs/heads/main").to_owned(),
                client.beside_main.clone(),
            ),
            3 => {
                let old_commit = rng.pick(&commits).clone();
                let new = if rng.chance(50) {
                    client.ahead_of_side.clone()
                } else {
                    old_commit
                };
                (format!("refs/heads/new-{k}"), ZERO.to_owned(), new)
            }
            4 => (
                format!("refs/tags/t-{k}"),
                ZERO.to_owned(),
                rng.pick(&commits).clone(),
            ),
            5 => {
                let name = rng.pick(&existing).clone();
                let old = served.id(&name).to_owned();
                (name, old, ZERO.to_owned())
            }
            6 => {
                // An old id that is not the ref's: the update must fail.
                let name = rng.pick(&existing).clone();
                (
                    name,
                    rng.pick(&commits).clone(),
                    client.ahead_of_main.clone(),
                )
            }
            7 => (
                format!("refs/heads/gone-{k}"),
                rng.pick(&commits).clone(),
                ZERO.to_owned(),
            ),
            _ => (
                "refs/heads/bad..name".to_owned(),
                ZERO.to_owned(),
                rng.pick(&commits).clone(),
            ),
        };
        if used.insert(command.0.clone()) {
            commands.push(command);
        }
    }
    let words = [
        "report-status",
        "report-status-v2",
        "side-band-64k",
        "quiet",
        "atomic",
        "ofs-delta",
        "push-options",
        "agent=wire-test/1.0",
        "object-format=sha1",
    ];
    let capabilities = rng.some(&words, words.len());
    let version = *rng.pick(&[0, 0, 1]);
    let stateless = rng.chance(40);
    let mut input = Vec::new();
    for (i, (name, old, new)) in commands.iter().enumerate() {
        if i == 0 {
            input.extend(pkt(&format!(
                "{old} {new} {name}\0{}",
                capabilities.join(" ")
            )));
        } else {
            input.extend(pkt(&format!("{old} {new} {name}")));
        }
    }
    input.extend(FLUSH);
    let mut options = Vec::new();
    if capabilities.contains(&"push-options") {
        for i in 0..rng.below(3) {
            options.push(format!("option-{i}=value {n}"));
        }
        for option in &options {
            input.extend(pkt(option));
        }
        input.extend(FLUSH);
    }
    let new: Vec<String> = commands
        .iter()
        .map(|(_, _, new)| new.clone())
        .filter(|new| new != ZERO)
        .collect();
    if !new.is_empty() {
        input.extend(client.pack(home, served, new));
    }
    Request {
        label: format!(
            "#{n} push v{version} stateless {stateless} caps [{}] commands {commands:?} options {options:?}",
            capabilities.join(" ")
        ),
        how: Invocation {
            service: "receive-pack",
            stateless_rpc: stateless,
            advertise_refs: false,
            version,
        },
        repo: 0,
        input,
        sideband: capabilities.contains(&"side-band-64k"),
        shallow_fetch_before_others: None,
    }
}

fn advertisement(rng: &mut Rng, n: usize) -> Request {
    let version = *rng.pick(&[0, 1]);
    let repo = rng.below(3);
    let http = rng.chance(50);
    Request {
        label: format!("#{n} receive-pack advertisement v{version} repo {repo} http {http}"),
        how: Invocation {
            service: "receive-pack",
            stateless_rpc: http,
            advertise_refs: http,
            version,
        },
        repo,
        input: if http { Vec::new() } else { FLUSH.to_vec() },
        sideband: false,
        shallow_fetch_before_others: None,
    }
}

//! The repositories the servers answer from, generated from a seed: a
//! history of several branches with merges, annotated tags (one of them a
//! tag of a tag) and lightweight tags, written by `git fast-import` in two
//! stages so that the older objects and refs are packed and the newer ones
//! loose. Beside it, a copy whose `HEAD` is unborn and an empty repository.

use refstore_testsupport::rng::Rng;
use refstore_testsupport::{git_ok, isolate, run_with_input, stderr};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first commit's time; each later commit is an hour on.
pub const EPOCH: i64 = 1_600_000_000;

/// Files the commits change; similar versions make deltas in packs.
const PATHS: [&str; 6] = [
    "README",
    "src/main.c",
    "src/util/list.c",
    "docs/guide.txt",
    "docs/api/ref.txt",
    "data/table.csv",
];

const BRANCHES: [&str; 4] = ["main", "side", "topic/one", "release"];

/// One commit of the history.
#[derive(Debug, Clone)]
pub struct Commit {
    pub id: String,
    pub parents: Vec<String>,
}

/// A served repository and what the requests are made of.
pub struct Served {
    pub dir: PathBuf,
    /// Every ref (`refs/...`) and its id.
    pub refs: BTreeMap<String, String>,
    pub commits: Vec<Commit>,
    /// Ids of trees and blobs, for wants of objects that are no commit.
    pub others: Vec<String>,
}

impl Served {
    /// The parents of every commit, by id.
    pub fn parents(&self) -> std::collections::HashMap<String, Vec<String>> {
        self.commits
            .iter()
            .map(|c| (c.id.clone(), c.parents.clone()))
            .collect()
    }
}

impl Served {
    /// Reads refs, commits and other objects of the repository at `dir`.
    pub fn read(home: &Path, dir: PathBuf) -> Served {
        let mut refs = BTreeMap::new();
        let listing = git_ok(
            home,
            &dir,
            &["for-each-ref", "--format=%(objectname) %(refname)"],
        );
        for line in listing.lines() {
            let mut words = line.split(' ');
            let (id, name) = (words.next().unwrap(), words.next().unwrap());
            refs.insert(name.to_owned(), id.to_owned());
        }
        let mut commits = Vec::new();
        let mut others = Vec::new();
        if !refs.is_empty() {
            let log = git_ok(home, &dir, &["log", "--all", "--format=%H %P"]);
            for line in log.lines() {
                let mut words = line.split(' ').filter(|w| !w.is_empty());
                commits.push(Commit {
                    id: words.next().unwrap().to_owned(),
                    parents: words.map(str::to_owned).collect(),
                });
            }
            let objects = git_ok(home, &dir, &["rev-list", "--objects", "--no-walk", "main"]);
            for line in objects.lines().skip(1).take(4) {
                others.push(line.split(' ').next().unwrap().to_owned());
            }
        }
        Served {
            dir,
            refs,
            commits,
            others,
        }
    }

    /// The id of the ref `name`.
    pub fn id(&self, name: &str) -> &str {
        &self.refs[name]
    }
}

/// Generates the repositories under `root`: `full`, `unborn` (the same
/// refs, `HEAD` naming a branch that does not exist) and `empty`.
pub fn generate(home: &Path, root: &Path, seed: u64) -> (Served, Served, Served) {
    let full = root.join("full");
    git_ok(home, root, &["init", "-q", "--bare", "-b", "main", "full"]);
    for (key, value) in [
        ("uploadpack.allowFilter", "true"),
        ("receive.advertisePushOptions", "true"),
        ("receive.denyNonFastForwards", "true"),
        ("gc.auto", "0"),
    ] {
        git_ok(home, &full, &["config", key, value]);
    }
    let mut history = Stream::new(seed);
    let marks = root.join("marks");
    let first = history.stage(30, true);
    let export = format!("--export-marks={}", marks.display());
    fast_import(home, &full, &first, &[&export]);
    // A tag of a tag, made by git itself (a loose object), dated so that
    // its id is the same on every run.
    let mut tag = Command::new("git");
    isolate(&mut tag, home)
        .current_dir(&full)
        .env("GIT_COMMITTER_DATE", format!("{EPOCH} +0000"))
        .args(["tag", "-a", "-m", "a tag of a tag", "v1-nested", "v1"]);
    let out = run_with_input(&mut tag, b"");
    assert!(out.status.success(), "git tag: {}", stderr(&out));
    git_ok(home, &full, &["pack-refs", "--all"]);
    let packs_before = pack_names(&full);
    let second = history.stage(10, false);
    let import = format!("--import-marks={}", marks.display());
    fast_import(home, &full, &second, &[&import]);
    // The second stage's pack becomes loose objects.
    for pack in pack_names(&full).difference(&packs_before) {
        let pack_path = full.join("objects/pack").join(pack);
        let data = std::fs::read(&pack_path).unwrap();
        std::fs::remove_file(&pack_path).unwrap();
        std::fs::remove_file(pack_path.with_extension("idx")).unwrap();
        let mut cmd = Command::new("git");
        isolate(&mut cmd, home)
            .current_dir(&full)
            .args(["unpack-objects", "-q"]);
        let out = run_with_input(&mut cmd, &data);
        assert!(out.status.success(), "unpack-objects: {}", stderr(&out));
    }

    let unborn = root.join("unborn");
    copy_dir(&full, &unborn);
    git_ok(
        home,
        &unborn,
        &["symbolic-ref", "HEAD", "refs/heads/unborn"],
    );
    git_ok(home, root, &["init", "-q", "--bare", "-b", "main", "empty"]);
    (
        Served::read(home, full),
        Served::read(home, unborn),
        Served::read(home, root.join("empty")),
    )
}

fn fast_import(home: &Path, dir: &Path, stream: &str, extra: &[&str]) {
    let mut cmd = Command::new("git");
    isolate(&mut cmd, home)
        .current_dir(dir)
        .args(["fast-import", "--quiet", "--date-format=raw"])
        .args(extra);
    let out = run_with_input(&mut cmd, stream.as_bytes());
    assert!(out.status.success(), "fast-import: {}", stderr(&out));
}

fn pack_names(dir: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".pack"))
        .collect()
}

/// Copies a directory tree (a repository).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The fast-import stream of the history, made stage by stage.
struct Stream {
    rng: Rng,
    /// Commits so far: the first is mark 1.
    count: usize,
    /// Each branch's tip mark.
    tips: HashMap<&'static str, usize>,
    tags: usize,
}

impl Stream {
    fn new(seed: u64) -> Stream {
        Stream {
            rng: Rng::new(seed),
            count: 0,
            tips: HashMap::new(),
            tags: 0,
        }
    }

    /// `commits` more commits, with tags among them.
    fn stage(&mut self, commits: usize, first: bool) -> String {
        let mut out = String::new();
        let mut started = std::collections::HashSet::new();
        for _ in 0..commits {
            let branch = if self.tips.is_empty() {
                "main"
            } else {
                *self.rng.pick(&BRANCHES)
            };
            self.count += 1;
            let mark = self.count;
            let time = EPOCH + 3600 * mark as i64;
            writeln!(out, "commit refs/heads/{branch}\nmark :{mark}").unwrap();
            writeln!(
                out,
                "committer C O Mitter <committer@example.com> {time} +0000"
            )
            .unwrap();
            let message = format!("commit {mark} on {branch}\n");
            write!(out, "data {}\n{message}", message.len()).unwrap();
            // The first commit of a branch in a stage names its parent:
            // the branch's tip, or for a new branch the newest tip.
            if !started.contains(branch) {
                let from = self.tips.get(branch).copied();
                if let Some(from) = from.or_else(|| self.tips.values().copied().max()) {
                    writeln!(out, "from :{from}").unwrap();
                }
            }
            started.insert(branch);
            if self.rng.chance(20) {
                let others: Vec<usize> = self
                    .tips
                    .iter()
                    .filter(|(b, _)| **b != branch)
                    .map(|(_, m)| *m)
                    .collect();
                if !others.is_empty() {
                    let mut others = others;
                    others.sort();
                    writeln!(out, "merge :{}", self.rng.pick(&others)).unwrap();
                }
            }
            for _ in 0..1 + self.rng.below(3) {
                let path = *self.rng.pick(&PATHS);
                if self.rng.chance(8) && mark > 1 {
                    writeln!(out, "D {path}").unwrap();
                    continue;
                }
                let text: String = (0..60)
                    .map(|l| {
                        let version = if l % 7 == mark % 7 { mark } else { 0 };
                        format!("{path} line {l} version {version}\n")
                    })
                    .collect();
                write!(out, "M 100644 inline {path}\ndata {}\n{text}\n", text.len()).unwrap();
            }
            self.tips.insert(branch, mark);
            if self.rng.chance(25) {
                self.tags += 1;
                let name = format!("v{}", self.tags);
                let message = format!("version {}\n", self.tags);
                writeln!(out, "tag {name}\nfrom :{mark}").unwrap();
                writeln!(out, "tagger T A Gger <tagger@example.com> {time} +0000").unwrap();
                write!(out, "data {}\n{message}", message.len()).unwrap();
            } else if self.rng.chance(15) {
                writeln!(out, "reset refs/tags/light-{mark}\nfrom :{mark}\n").unwrap();
            }
        }
        if first && self.tags == 0 {
            // The tag of a tag needs a `v1`.
            self.tags += 1;
            write!(
                out,
                "tag v1\nfrom :1\ntagger T A Gger <tagger@example.com> {EPOCH} +0000\ndata 3\nv1\n"
            )
            .unwrap();
        }
        out
    }
}

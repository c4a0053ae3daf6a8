//! Housekeeping (`refstore_maint::run`, what `refstore maintenance run`
//! does), checked with git: after many small pushes a geometric repack
//! leaves packs git verifies, a multi-pack-index with reachability bitmaps
//! and a commit-graph git verifies and reads, every object still readable;
//! loose objects are packed and old unreachable ones pruned; cleanup
//! removes what crashes leave and nothing a live process uses. Clones of
//! the result are served by refstore's upload-pack in this process,
//! reached by git through a relay.

mod bitmaps;
mod cleanup;
mod commit_graph;
mod loose;
mod repack;
#[path = "../../../refstore-protocol/tests/support/stdio.rs"]
mod stdio;

use refstore_fs::config::Override;
use refstore_fs::real::RealFs;
use refstore_maint::{Options, Repo, Task};
use refstore_testsupport::{git, git_ok, stderr, Git};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A bare repository `srv.git` that received `pushes` pushes, each kept
/// as its own pack (`receive.unpackLimit=1`), each changing a large file
/// so that packs hold deltas (thin packs completed on receipt).
fn pushed_repo(home: &Path, pushes: usize) -> (PathBuf, PathBuf) {
    let srv = home.join("srv.git");
    let work = home.join("work");
    git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
    git_ok(home, &srv, &["config", "receive.unpackLimit", "1"]);
    git_ok(home, home, &["init", "-q", "work"]);
    let mut big: Vec<String> = (0..3000).map(|n| format!("line {n}")).collect();
    for i in 0..pushes {
        let at = (i * 37) % big.len();
        big[at] = format!("changed {i}");
        std::fs::write(work.join("big"), big.join("\n")).unwrap();
        std::fs::write(work.join(format!("f{i}")), format!("{i}\n")).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        if i % 7 == 3 {
            // A merge, so the commit-graph holds second parents.
            git_ok(
                home,
                &work,
                &["checkout", "-qb", &format!("side{i}"), "HEAD~1"],
            );
            std::fs::write(work.join(format!("s{i}")), "side\n").unwrap();
            git_ok(home, &work, &["add", "-A"]);
            git_ok(home, &work, &["commit", "-qm", "side"]);
            git_ok(home, &work, &["checkout", "-q", "-"]);
            git_ok(
                home,
                &work,
                &["merge", "-q", "--no-edit", &format!("side{i}")],
            );
        }
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    (srv, work)
}

/// Runs housekeeping on `repo` with configuration `config` (`key=value`,
/// as `-c` gives it), as `refstore maintenance run` does: the reports of
/// the tasks that ran, a line `<task>: <summary>` each (what the command
/// prints); `None` if another maintenance or a gc holds the repository.
fn try_maintenance(repo: &Path, config: &[&str], options: &Options) -> Option<String> {
    let overrides: Vec<Override> = config
        .iter()
        .map(|c| {
            let (key, value) = c.split_once('=').unwrap();
            Override {
                key: key.to_owned(),
                value: Some(value.to_owned()),
            }
        })
        .collect();
    let vfs = Arc::new(RealFs::new());
    let opened = refstore_repo::Repository::open(vfs, repo, &overrides).unwrap();
    let repo = Repo::new(opened).unwrap();
    let reports = refstore_maint::run(&repo, options)
        .unwrap_or_else(|e| panic!("maintenance {options:?}: {e}"))?;
    let ran = reports.iter().filter(|report| report.ran);
    Some(
        ran.map(|report| format!("{}: {}\n", report.task.name(), report.summary))
            .collect(),
    )
}

/// Runs `tasks` (every enabled task if none), which must not be skipped:
/// their reports ([`try_maintenance`]).
fn maintenance(repo: &Path, config: &[&str], tasks: &[Task]) -> String {
    let options = Options {
        auto: false,
        tasks: tasks.to_vec(),
    };
    try_maintenance(repo, config, &options).expect("maintenance was skipped")
}

/// Runs every enabled task whose threshold is reached (`--auto`), which
/// must not be skipped: their reports ([`try_maintenance`]).
fn maintenance_auto(repo: &Path, config: &[&str]) -> String {
    let options = Options {
        auto: true,
        tasks: Vec::new(),
    };
    try_maintenance(repo, config, &options).expect("maintenance was skipped")
}

/// A clone of `repo` into `to` that refstore's upload-pack, served in this
/// process, answers: a `file://` URL makes git use its transport rather
/// than copy files. The caller judges the output.
fn clone_through_refstore(home: &Path, repo: &Path, to: &Path) -> Output {
    let relay = stdio::relay();
    let upload_pack = format!("--upload-pack={}", relay.command("upload-pack"));
    let url = format!("file://{}", repo.display());
    git(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            &upload_pack,
            &url,
            to.to_str().unwrap(),
        ],
    )
}

/// Object counts of the visible packs, sorted.
fn pack_counts(home: &Path, repo: &Path) -> Vec<(u64, String)> {
    let mut counts = Vec::new();
    for name in pack_names(repo, "idx") {
        let index = std::fs::read(repo.join("objects/pack").join(&name)).unwrap();
        let shown = Git::new(home, repo).ok_with(&["show-index"], &index);
        counts.push((shown.lines().count() as u64, name));
    }
    counts.sort();
    counts
}

fn pack_names(repo: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(&format!(".{ext}")))
        .collect();
    names.sort();
    names
}

/// Every object with its type and size, and all their contents.
fn all_objects(home: &Path, repo: &Path) -> (String, usize) {
    let list = git_ok(
        home,
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check",
            "--unordered",
        ],
    );
    let mut lines: Vec<&str> = list.lines().collect();
    lines.sort();
    let contents =
        Git::new(home, repo).ok_bytes(&["cat-file", "--batch-all-objects", "--batch"], b"");
    (lines.join("\n"), contents.len())
}

fn assert_git_accepts(home: &Path, repo: &Path) {
    git_ok(home, repo, &["fsck", "--strict", "--no-dangling"]);
    git_ok(home, repo, &["multi-pack-index", "verify"]);
    for name in pack_names(repo, "idx") {
        let path = repo.join("objects/pack").join(name);
        git_ok(home, repo, &["verify-pack", path.to_str().unwrap()]);
    }
    // Git counts as garbage only the files of rolled-up packs waiting to
    // expire, which housekeeping hid by removing their index.
    let waiting = std::fs::read_to_string(repo.join("objects/info/refstore-redundant-packs"))
        .unwrap_or_default();
    let waiting: Vec<&str> = waiting
        .lines()
        .filter_map(|l| l.split(' ').next())
        .collect();
    let hidden_files = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            let stem = name.split('.').next().unwrap_or_default();
            waiting.contains(&stem) && !name.ends_with(".idx")
        })
        .count();
    let counted = git_ok(home, repo, &["count-objects", "-v"]);
    assert!(
        counted
            .lines()
            .any(|l| l == format!("garbage: {hidden_files}")),
        "{counted}"
    );
}

/// Sets the modification time of `path` `by` in the past.
fn age(path: &Path, by: Duration) {
    let file = std::fs::File::open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

/// Writes an object with git (`hash-object -w`, `mktree`, ...) fed
/// `input`: its id.
fn write_object(home: &Path, repo: &Path, args: &[&str], input: &str) -> String {
    Git::new(home, repo)
        .ok_with(args, input.as_bytes())
        .trim()
        .to_owned()
}

fn loose_path(repo: &Path, id: &str) -> PathBuf {
    repo.join("objects").join(&id[..2]).join(&id[2..])
}

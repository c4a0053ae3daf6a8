//! Differential test: generated `update-ref --stdin` transactions (valid and
//! invalid: wrong old values, D/F conflicts among themselves and with loose
//! and packed refs, bad names, bad ids, updates through HEAD, the `start`,
//! `prepare`, `commit` and `abort` verbs in any order) are applied to
//! two copies of one repository, one by `git update-ref`, one by `refstore
//! update-ref`. After every step both agree on success or failure, on the
//! verbs' acknowledgements,
//! `git for-each-ref`, on HEAD and on every reflog; `git fsck` accepts the
//! refstore copy.

mod support;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::Path;
use std::process::Command;
use support::*;

const NAMES: &[&str] = &[
    "refs/heads/main",
    "refs/heads/a",
    "refs/heads/a/b",
    "refs/heads/a/c",
    "refs/heads/c/d/e",
    "refs/heads/c",
    "refs/tags/t",
    "refs/tags/t/x",
    "HEAD",
    "refs/heads/bad..name",
];

#[derive(Debug, Clone)]
enum Cmd {
    Update(usize, usize, Option<usize>),
    Create(usize, usize),
    Delete(usize, Option<usize>),
    Verify(usize, Option<usize>),
    NoDeref,
    /// `start`, `prepare`, `commit` or `abort`.
    Verb(&'static str),
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let name = 0..NAMES.len();
    let id = 0..5usize;
    prop_oneof![
        4 => (name.clone(), id.clone(), proptest::option::of(id.clone())).prop_map(|(n, v, o)| Cmd::Update(n, v, o)),
        3 => (name.clone(), id.clone()).prop_map(|(n, v)| Cmd::Create(n, v)),
        2 => (name.clone(), proptest::option::of(id.clone())).prop_map(|(n, o)| Cmd::Delete(n, o)),
        1 => (name, proptest::option::of(id)).prop_map(|(n, o)| Cmd::Verify(n, o)),
        1 => Just(Cmd::NoDeref),
        2 => prop::sample::select(&["start", "prepare", "commit", "abort"][..]).prop_map(Cmd::Verb),
    ]
}

/// Transactions, each possibly followed by `git pack-refs --all` on both copies.
fn script() -> impl Strategy<Value = Vec<(Vec<Cmd>, bool)>> {
    prop::collection::vec(
        (
            prop::collection::vec(cmd(), 1..5),
            prop::bool::weighted(0.15),
        ),
        40,
    )
}

fn render(cmds: &[Cmd], ids: &[String]) -> String {
    let mut out = String::new();
    for c in cmds {
        let line = match c {
            Cmd::Update(n, v, Some(o)) => format!("update {} {} {}", NAMES[*n], ids[*v], ids[*o]),
            Cmd::Update(n, v, None) => format!("update {} {}", NAMES[*n], ids[*v]),
            Cmd::Create(n, v) => format!("create {} {}", NAMES[*n], ids[*v]),
            Cmd::Delete(n, Some(o)) => format!("delete {} {}", NAMES[*n], ids[*o]),
            Cmd::Delete(n, None) => format!("delete {}", NAMES[*n]),
            Cmd::Verify(n, Some(o)) => format!("verify {} {}", NAMES[*n], ids[*o]),
            Cmd::Verify(n, None) => format!("verify {}", NAMES[*n]),
            Cmd::NoDeref => "option no-deref".to_owned(),
            Cmd::Verb(verb) => verb.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Exit code, standard output and standard error of one `update-ref --stdin`.
fn run_stdin(
    program: &str,
    home: &Path,
    repo: &Path,
    input: &str,
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(program);
    isolate(&mut cmd, home)
        .env("GIT_COMMITTER_DATE", "1700000000 +0100")
        .args(["update-ref", "-m", "step", "--stdin"])
        .current_dir(repo);
    let out = run_with_input(&mut cmd, input.as_bytes());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Everything the two copies must agree on.
fn state(home: &Path, repo: &Path) -> String {
    // A transaction may delete HEAD itself; git then no longer sees a
    // repository, and both copies must say so alike.
    let refs = git(
        home,
        repo,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let mut s = format!(
        "{:?}\n{}{}",
        refs.status.code(),
        stdout(&refs),
        stderr(&refs)
    );
    s.push_str(&std::fs::read_to_string(repo.join(".git/HEAD")).unwrap_or_default());
    let mut logs = Vec::new();
    collect(&repo.join(".git/logs"), &mut logs);
    logs.sort();
    for (path, content) in logs {
        let rel = path.strip_prefix(repo).unwrap().display().to_string();
        s.push_str(&format!("== {rel}\n{content}"));
    }
    s
}

fn collect(dir: &Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
        }
    }
}

fn setup(home: &Path, dir: &Path) -> Vec<String> {
    git_ok(home, dir, &["init", "-q", "-b", "main", "seed"]);
    let seed = dir.join("seed");
    let mut ids = Vec::new();
    for i in 0..3 {
        git_ok(
            home,
            &seed,
            &["commit", "-q", "--allow-empty", "-m", &format!("c{i}")],
        );
        ids.push(
            git_ok(home, &seed, &["rev-parse", "HEAD"])
                .trim()
                .to_owned(),
        );
    }
    ids.push("0".repeat(40));
    ids.push("zzzz".to_owned());
    ids
}

#[test]
fn stdin_transactions_agree_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let ids = setup(home, tmp.path());
    // REFSTORE_DIFF_CASES and REFSTORE_DIFF_SEED widen the search locally;
    // CI runs the default, deterministic cases.
    let cases: usize = std::env::var("REFSTORE_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let rng = match std::env::var("REFSTORE_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(seed) => {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
        }
        None => TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    };
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let (mut ok, mut failed) = (0, 0);
    for case in 0..cases {
        let steps = script().new_tree(&mut runner).unwrap().current();
        let (ours, theirs) = (
            tmp.path().join(format!("ours{case}")),
            tmp.path().join(format!("theirs{case}")),
        );
        for copy in [&ours, &theirs] {
            let status = Command::new("cp")
                .arg("-a")
                .arg(tmp.path().join("seed"))
                .arg(copy)
                .status()
                .unwrap();
            assert!(status.success());
        }
        for (i, (cmds, pack)) in steps.iter().enumerate() {
            let input = render(cmds, &ids);
            let (our_code, our_out, our_err) =
                run_stdin(env!("CARGO_BIN_EXE_refstore"), home, &ours, &input);
            let (git_code, git_out, git_err) = run_stdin("git", home, &theirs, &input);
            assert_eq!(
                (our_code, &our_out),
                (git_code, &git_out),
                "case {case} step {i}: exit codes or output differ for\n{input}refstore: {our_err}git: {git_err}"
            );
            if git_code == Some(0) {
                ok += 1
            } else {
                failed += 1
            }
            let (a, b) = (state(home, &ours), state(home, &theirs));
            if a != b {
                let diff: Vec<String> = a
                    .lines()
                    .zip(b.lines())
                    .filter(|(x, y)| x != y)
                    .take(4)
                    .map(|(x, y)| format!("refstore: {x}\ngit:      {y}"))
                    .collect();
                panic!(
                    "case {case} step {i}: states differ after\n{input}refstore: {our_err}git: {git_err}\n{}\n(lines: {} vs {})",
                    diff.join("\n"),
                    a.lines().count(),
                    b.lines().count()
                );
            }
            // A deleted HEAD (option no-deref + delete HEAD) is put back in
            // both copies, so the next steps run in a repository again.
            for copy in [&ours, &theirs] {
                if !copy.join(".git/HEAD").exists() {
                    std::fs::write(copy.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
                }
            }
            if *pack {
                git_ok(home, &ours, &["pack-refs", "--all"]);
                git_ok(home, &theirs, &["pack-refs", "--all"]);
            }
        }
        git_ok(home, &ours, &["fsck", "--no-progress"]);
        // git reads the reflogs refstore wrote (while HEAD's branch exists).
        if git(home, &ours, &["rev-parse", "-q", "--verify", "HEAD"])
            .status
            .success()
        {
            assert_eq!(
                git_ok(home, &ours, &["log", "-g", "--format=%gs", "HEAD"]),
                git_ok(home, &theirs, &["log", "-g", "--format=%gs", "HEAD"])
            );
        }
    }
    // Both outcomes must be exercised for the comparison to mean much.
    assert!(ok > 10 && failed > 10, "{ok} succeeded, {failed} failed");
}

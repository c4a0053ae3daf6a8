//! Generated trees of repositories, directories, `.git` files and symbolic
//! links (inside the root, outside it, in chains and loops), and request
//! paths as each transport receives them: the directory a transport would
//! open is the one git would open, it lies inside the root, and the rule
//! applied is the rule of that directory. What git would open is worked
//! out independently, through the kernel (`std::fs`), not through
//! refstore's own resolution.

use super::*;
use crate::http::replicate;
use crate::http::route;
use crate::ssh::exec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use refstore_fs::real::RealFs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where generated entries go below the root.
const SLOTS: &[&str] = &[
    "a", "a.git", "b", "b.git", "p/a", "p/a.git", "p/b.git", "q", "q.git",
];

/// What links point at: the slots, then these, then the outside.
const EXTRA_TARGETS: &[&str] = &["p", "."];

/// Repositories and directories outside the root.
const OUTSIDE: &[&str] = &["x.git", "w", "w/.git"];

#[derive(Debug, Clone)]
enum Target {
    /// `SLOTS` then `EXTRA_TARGETS`, by index.
    Inside(usize),
    Outside(usize),
    Itself,
    Dangling,
}

#[derive(Debug, Clone)]
enum Dot {
    Repository,
    File(Target),
    Link(Target, bool),
}

#[derive(Debug, Clone)]
enum Node {
    Absent,
    Bare,
    Plain,
    File,
    WorkTree(Dot),
    /// A symbolic link; `true` for an absolute target.
    Link(Target, bool),
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        4 => (0..SLOTS.len() + EXTRA_TARGETS.len()).prop_map(Target::Inside),
        2 => (0..OUTSIDE.len()).prop_map(Target::Outside),
        1 => Just(Target::Itself),
        1 => Just(Target::Dangling),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    let dot = prop_oneof![
        2 => Just(Dot::Repository),
        1 => target().prop_map(Dot::File),
        1 => (target(), any::<bool>()).prop_map(|(t, a)| Dot::Link(t, a)),
    ];
    prop_oneof![
        2 => Just(Node::Absent),
        2 => Just(Node::Bare),
        1 => Just(Node::Plain),
        1 => Just(Node::File),
        2 => dot.prop_map(Node::WorkTree),
        4 => (target(), any::<bool>()).prop_map(|(t, a)| Node::Link(t, a)),
    ]
}

/// A request: a base name, a suffix, and a decoration of the path.
fn request() -> impl Strategy<Value = String> {
    let base = prop::sample::select(vec![
        "a",
        "b",
        "c",
        "p/a",
        "p/b",
        "q",
        "q/a",
        "q/b",
        "p",
        "x",
        "a.git/.git",
    ]);
    let suffix = prop::sample::select(vec!["", ".git", "/.git", "/", ".git/", "/.git/"]);
    let decoration = prop::sample::select(vec!["", "//", "lead", "dotdot", "dot", "mid//"]);
    (base, suffix, decoration).prop_map(|(base, suffix, decoration)| {
        let path = format!("{base}{suffix}");
        match decoration {
            "//" => format!("//{path}"),
            "lead" => format!("/{path}"),
            "dotdot" => format!("p/../{path}"),
            "dot" => format!("./{path}"),
            "mid//" => path.replacen('/', "//", 1),
            _ => path,
        }
    })
}

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn bare(path: &Path) {
    std::fs::create_dir_all(path.join("objects")).unwrap();
    std::fs::create_dir_all(path.join("refs")).unwrap();
    std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

/// The text of a link or `.git` file at `at` (below the root) to `target`.
fn aim(tree_dir: &Path, root: &Path, at: &str, target: &Target, absolute: bool) -> String {
    let depth = at.matches('/').count();
    let up = "../".repeat(depth);
    match target {
        Target::Inside(i) => {
            let name = SLOTS.iter().chain(EXTRA_TARGETS).nth(*i).unwrap();
            if absolute {
                root.join(name).display().to_string()
            } else {
                format!("{up}{name}")
            }
        }
        Target::Outside(i) => {
            if absolute {
                tree_dir.join("out").join(OUTSIDE[*i]).display().to_string()
            } else {
                format!("{up}../out/{}", OUTSIDE[*i])
            }
        }
        Target::Itself => at.rsplit('/').next().unwrap().to_owned(),
        Target::Dangling => format!("{up}nowhere"),
    }
}

fn build(nodes: &[Node]) -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("p")).unwrap();
    bare(&dir.path().join("out/x.git"));
    bare(&dir.path().join("out/w/.git"));
    for (slot, node) in SLOTS.iter().zip(nodes) {
        let path = root.join(slot);
        match node {
            Node::Absent => {}
            Node::Bare => bare(&path),
            Node::Plain => std::fs::create_dir_all(&path).unwrap(),
            Node::File => std::fs::write(&path, "not a repository\n").unwrap(),
            Node::WorkTree(dot) => {
                std::fs::create_dir_all(&path).unwrap();
                let at = format!("{slot}/.git");
                match dot {
                    Dot::Repository => bare(&path.join(".git")),
                    Dot::File(target) => {
                        let text = aim(dir.path(), &root, &at, target, false);
                        std::fs::write(path.join(".git"), format!("gitdir: {text}\n")).unwrap();
                    }
                    Dot::Link(target, absolute) => symlink(
                        aim(dir.path(), &root, &at, target, *absolute),
                        path.join(".git"),
                    )
                    .unwrap(),
                }
            }
            Node::Link(target, absolute) => {
                symlink(aim(dir.path(), &root, slot, target, *absolute), &path).unwrap()
            }
        }
    }
    Tree {
        root: std::fs::canonicalize(&root).unwrap(),
        _dir: dir,
    }
}

/// What git would do with a decoded request, worked out by the kernel.
#[derive(Debug, PartialEq, Eq)]
enum Expected {
    Refused,
    Opens(PathBuf),
}

fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

fn expected(root: &Path, request: &str) -> Expected {
    let names: Vec<&str> = request.split('/').filter(|n| !n.is_empty()).collect();
    if names.is_empty() || names.iter().any(|n| *n == "." || *n == "..") {
        return Expected::Refused;
    }
    let base = root.join(names.join("/"));
    let with_suffix = PathBuf::from(format!("{}.git", base.display()));
    let candidates = [
        base.join(".git"),
        base.clone(),
        with_suffix.join(".git"),
        with_suffix,
    ];
    for candidate in candidates {
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        let dir = if meta.is_dir() {
            if !is_git_dir(&candidate) {
                continue;
            }
            candidate
        } else {
            let text = std::fs::read_to_string(&candidate).unwrap_or_default();
            let Some(target) = text.trim_end().strip_prefix("gitdir: ") else {
                return Expected::Refused;
            };
            let named = candidate.parent().unwrap().join(target);
            if !is_git_dir(&named) {
                return Expected::Refused;
            }
            named
        };
        let real = std::fs::canonicalize(dir).unwrap();
        return match real.strip_prefix(root) {
            Ok(below) if below != Path::new("") && below != Path::new(".git") => {
                Expected::Opens(real)
            }
            _ => Expected::Refused,
        };
    }
    Expected::Refused
}

/// The rules' name for a git directory below the root.
fn rule_name(root: &Path, git_dir: &Path) -> String {
    let below = git_dir.strip_prefix(root).unwrap();
    let below = if below.file_name().unwrap() == ".git" {
        below.parent().unwrap()
    } else {
        below
    };
    below.to_str().unwrap().to_owned()
}

const RULES: &str = "* read a*\nalice write p/*\nbob read q*\ncarol write *.git\n";

/// What the transports make of one request.
struct Reached {
    transport: &'static str,
    decoded: String,
    decision: Option<Decision>,
}

fn percent_encode_some(path: &str, every: usize) -> String {
    let mut out = String::new();
    for (i, c) in path.chars().enumerate() {
        if every > 0 && i % every == 0 {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn through_transports(
    tree: &Tree,
    request: &str,
    user: Option<&str>,
    every: usize,
) -> Vec<Reached> {
    let rules = AccessRules::parse(RULES).unwrap();
    let vfs = RealFs::new();
    let decide =
        |path: &str, want| authorize(&vfs, &tree.root, Some(&rules), false, user, path, want);
    let encoded = percent_encode_some(request, every);
    let mut reached = Vec::new();
    // HTTP: the advertisement's URL, percent-encoded in part.
    let url = format!("/{encoded}/info/refs?service=git-receive-pack");
    reached.push(Reached {
        transport: "http",
        decoded: request.to_owned(),
        decision: route::route("GET", &url)
            .ok()
            .map(|r| decide(&r.repo, r.service.want())),
    });
    // SSH: the command git's ssh transport sends.
    let command = format!("git-receive-pack '/{}'", request.replace('\'', "'\\''"));
    reached.push(Reached {
        transport: "ssh",
        decoded: request.to_owned(),
        decision: exec::parse(command.as_bytes())
            .ok()
            .map(|c| decide(c.relative(), c.service.want())),
    });
    // The replication endpoint: confined alike, no user rules.
    let url = format!("/_refstore/replicate/{encoded}/packs");
    reached.push(Reached {
        transport: "replication",
        decoded: request.to_owned(),
        decision: replicate::parse(&hyper::Method::GET, &url).map(|(repo, _)| Decision {
            verdict: Verdict::Allowed,
            served: crate::confine::repository(&vfs, &tree.root, &repo).ok(),
        }),
    });
    reached
}

#[test]
fn every_transport_opens_what_git_would_inside_the_root_under_its_rule() {
    let config = Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    };
    let cases = AtomicUsize::new(0);
    let requests = AtomicUsize::new(0);
    let opened = AtomicUsize::new(0);
    let refused_outside = AtomicUsize::new(0);
    let strategy = (
        prop::collection::vec(node(), SLOTS.len()),
        prop::collection::vec(request(), 12),
        prop::sample::select(vec![None, Some("alice"), Some("bob"), Some("carol")]),
        0usize..4,
    );
    let rules = AccessRules::parse(RULES).unwrap();
    TestRunner::new(config)
        .run(&strategy, |(nodes, paths, user, every)| {
            cases.fetch_add(1, Ordering::Relaxed);
            let tree = build(&nodes);
            for request in &paths {
                requests.fetch_add(1, Ordering::Relaxed);
                let expected = expected(&tree.root, request.trim_start_matches('/'));
                for reached in through_transports(&tree, request, user, every) {
                    let context = format!("{} {:?} {nodes:?}", reached.transport, reached.decoded);
                    let served = reached.decision.as_ref().and_then(|d| d.served.clone());
                    match (&expected, served) {
                        (Expected::Opens(dir), Some(served)) => {
                            opened.fetch_add(1, Ordering::Relaxed);
                            prop_assert_eq!(&served.location.git_dir, dir, "{}", context);
                            let real = std::fs::canonicalize(&served.location.git_dir).unwrap();
                            prop_assert_eq!(&real, &served.location.git_dir, "{}", context);
                            prop_assert!(real.starts_with(&tree.root), "{}", context);
                            let name = rule_name(&tree.root, dir);
                            prop_assert_eq!(&served.name, &name, "{}", context);
                            if reached.transport != "replication" {
                                let verdict = &reached.decision.as_ref().unwrap().verdict;
                                let want = Want::Write;
                                prop_assert_eq!(
                                    verdict,
                                    &decide(Some(&rules), false, user, &name, want),
                                    "{}",
                                    context
                                );
                            }
                        }
                        (Expected::Refused, None) => {
                            refused_outside.fetch_add(1, Ordering::Relaxed);
                        }
                        (expected, served) => prop_assert!(
                            false,
                            "{}: expected {:?}, reached {:?}",
                            context,
                            expected,
                            served
                        ),
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let (cases, requests) = (cases.into_inner(), requests.into_inner());
    eprintln!(
        "{cases} generated trees, {requests} request paths, each through 3 transports: \
         {} opened, {} refused",
        opened.into_inner(),
        refused_outside.into_inner()
    );
    assert_eq!(cases, 256);
}

//! `receive.fsckObjects` and `receive.unpackLimit` of `refstore
//! receive-pack`, behind real `git push` over file://: each push goes into
//! a repository served by refstore and one served by git 2.39's
//! receive-pack with the same configuration, and the outcome (exit code,
//! per-ref summary, the `remote:` lines and git's unpack error, the refs)
//! must agree; a refused push must leave `objects/` as it was.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::push_pair::PushPair;
use support::{git, git_ok, isolate, run_with_input, stderr, stdout};

/// A work repository `src` and two bare targets: `ours` served by
/// refstore, `theirs` by git.
struct Setup(PushPair);

impl std::ops::Deref for Setup {
    type Target = PushPair;
    fn deref(&self) -> &PushPair {
        &self.0
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Pushed {
    code: Option<i32>,
    summary: String,
    /// `remote:` lines and the client's `error: remote unpack failed`.
    messages: Vec<String>,
    refs: String,
}

impl Setup {
    fn new() -> Setup {
        let s = Setup(PushPair::new(&["--bare"]));
        s.commit("first");
        s.push(&["main"]);
        s
    }

    fn git(&self, args: &[&str]) -> String {
        git_ok(&self.home, &self.src, args).trim().to_owned()
    }

    fn commit(&self, message: &str) -> String {
        std::fs::write(self.src.join(message), format!("{message}\n")).unwrap();
        self.git(&["add", message]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Writes an object as given, however broken, and returns its id.
    fn literally(&self, kind: &str, content: &[u8]) -> String {
        let out = run_with_input(
            isolate(&mut Command::new("git"), &self.home)
                .args(["hash-object", "-t", kind, "-w", "--stdin", "--literally"])
                .current_dir(&self.src),
            content,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_owned()
    }

    /// A commit on top of `main` with `author` as its author line, set as
    /// the tip of branch `name`; its id.
    fn commit_with_author(&self, name: &str, author: &str, tree: Option<&str>) -> String {
        let parent = self.git(&["rev-parse", "main"]);
        let tree = match tree {
            Some(tree) => tree.to_owned(),
            None => self.git(&["rev-parse", "main^{tree}"]),
        };
        let content = format!(
            "tree {tree}\nparent {parent}\nauthor {author}\ncommitter C O Mitter <c@example.com> 1700000000 +0000\n\n{name}\n"
        );
        let id = self.literally("commit", content.as_bytes());
        self.git(&["update-ref", &format!("refs/heads/{name}"), &id]);
        id
    }

    fn push_into(&self, target: &Path, args: &[&str], ours: bool) -> Pushed {
        let (out, url) = self.push_to(ours, args);
        Pushed {
            code: out.status.code(),
            summary: stdout(&out).replace(&url, "<url>"),
            messages: stderr(&out)
                .lines()
                .filter(|l| l.starts_with("remote:") || l.starts_with("error: remote unpack"))
                .map(|l| l.trim_end().to_owned())
                .collect(),
            refs: git_ok(&self.home, target, &["for-each-ref"]),
        }
    }

    /// Pushes into both and requires the same outcome; checks that a
    /// refused push left `objects/` of ours as it was.
    fn push(&self, args: &[&str]) -> Pushed {
        let before = tree(&self.ours.join("objects"));
        let ours = self.push_into(&self.ours, args, true);
        let theirs = self.push_into(&self.theirs, args, false);
        assert_eq!(ours, theirs, "git push {args:?}");
        if ours.code != Some(0) {
            assert_eq!(tree(&self.ours.join("objects")), before, "{args:?}");
        }
        // Connectivity only: some accepted objects are broken on purpose.
        let fsck = git(
            &self.home,
            &self.ours,
            &["fsck", "--no-progress", "--connectivity-only"],
        );
        assert!(fsck.status.success(), "{}", stderr(&fsck));
        ours
    }
}

/// Every file below `dir` with its size.
fn tree(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let path = entry.path().strip_prefix(dir).unwrap().to_owned();
            if meta.is_dir() {
                pending.push(entry.path());
                files.insert(path, 0);
            } else {
                files.insert(path, meta.len());
            }
        }
    }
    files
}

/// Loose objects and packs in `objects/`.
fn counts(git_dir: &Path) -> (usize, usize) {
    let objects = git_dir.join("objects");
    let mut loose = 0;
    for entry in std::fs::read_dir(&objects).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.len() == 2 {
            loose += std::fs::read_dir(objects.join(&name)).unwrap().count();
        }
    }
    let packs = std::fs::read_dir(objects.join("pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".idx")
        })
        .count();
    (loose, packs)
}

const BAD_AUTHOR: &str = "A U Thor<author@example.com> 1700000000 +0000";

#[test]
fn a_bad_author_line_is_refused_loose_or_packed() {
    let s = Setup::new();
    s.config("receive.fsckObjects", "true");
    let id = s.commit_with_author("bad", BAD_AUTHOR, None);
    for limit in ["100", "1"] {
        s.config("receive.unpackLimit", limit);
        let pushed = s.push(&["bad"]);
        assert_ne!(pushed.code, Some(0));
        assert!(
            pushed
                .summary
                .contains("[remote rejected] (unpacker error)"),
            "{}",
            pushed.summary
        );
        let error = format!(
            "remote: error: object {id}: missingSpaceBeforeEmail: invalid author/committer line - missing space before email"
        );
        assert_eq!(pushed.messages[0], error, "{pushed:?}");
    }
    // Accepted without the check.
    s.config("receive.fsckObjects", "false");
    s.push(&["bad"]);
}

#[test]
fn severities_skip_list_and_transfer_fallback() {
    let s = Setup::new();
    s.config("transfer.fsckObjects", "true");
    s.commit_with_author("bad", BAD_AUTHOR, None);
    assert_ne!(s.push(&["bad"]).code, Some(0));
    // receive.fsckObjects wins over transfer.fsckObjects.
    s.config("receive.fsckObjects", "false");
    assert_eq!(s.push(&["bad:refs/heads/off"]).code, Some(0));
    s.config("receive.fsckObjects", "true");
    // New objects each time: objects the server has are not sent again.
    s.config("receive.fsck.missingSpaceBeforeEmail", "warn");
    s.commit_with_author("warned", BAD_AUTHOR, None);
    let pushed = s.push(&["warned"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
    assert!(pushed
        .messages
        .iter()
        .any(|m| m.starts_with("remote: warning: object")));
    s.config("receive.fsck.missingSpaceBeforeEmail", "ignore");
    s.commit_with_author("ignored", BAD_AUTHOR, None);
    let pushed = s.push(&["ignored"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
    assert!(pushed.messages.is_empty(), "{pushed:?}");

    // A skip list names the object: accepted, whatever its severity.
    let s = Setup::new();
    s.config("receive.fsckObjects", "true");
    let id = s.commit_with_author("bad", BAD_AUTHOR, None);
    for target in [&s.ours, &s.theirs] {
        std::fs::write(target.join("skip"), format!("# known\n{id}\n\n")).unwrap();
    }
    s.config("receive.fsck.skipList", "skip");
    let pushed = s.push(&["bad"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
}

#[test]
fn zero_padded_modes_and_dotgit_trees() {
    let s = Setup::new();
    s.config("receive.fsckObjects", "true");
    let blob = s.literally("blob", b"content\n");
    let raw = hex_to_raw(&blob);
    let entry = |mode: &str, name: &str| {
        let mut e = format!("{mode} {name}\0").into_bytes();
        e.extend_from_slice(&raw);
        e
    };
    let padded = s.literally("tree", &entry("0100644", "file"));
    s.commit_with_author(
        "padded",
        "A <a@example.com> 1700000000 +0000",
        Some(&padded),
    );
    let pushed = s.push(&["padded"]);
    assert_ne!(pushed.code, Some(0));
    assert!(
        pushed
            .messages
            .iter()
            .any(|m| m.contains("zeroPaddedFilemode")),
        "{pushed:?}"
    );
    s.config("receive.fsck.zeroPaddedFilemode", "warn");
    assert_eq!(s.push(&["padded"]).code, Some(0));

    let dotgit = s.literally("tree", &entry("100644", ".GIT"));
    s.commit_with_author(
        "dotgit",
        "A <a@example.com> 1700000000 +0000",
        Some(&dotgit),
    );
    let pushed = s.push(&["dotgit"]);
    assert_ne!(pushed.code, Some(0));
    assert!(
        pushed.messages.iter().any(|m| m.contains("hasDotgit")),
        "{pushed:?}"
    );

    let mut unsorted = entry("100644", "b");
    unsorted.extend(entry("100644", "a"));
    let unsorted = s.literally("tree", &unsorted);
    s.commit_with_author(
        "unsorted",
        "A <a@example.com> 1700000000 +0000",
        Some(&unsorted),
    );
    let pushed = s.push(&["unsorted"]);
    assert_ne!(pushed.code, Some(0));
    assert!(
        pushed.messages.iter().any(|m| m.contains("treeNotSorted")),
        "{pushed:?}"
    );
}

#[test]
fn bad_tags_are_refused() {
    let s = Setup::new();
    s.config("receive.fsckObjects", "true");
    let tip = s.git(&["rev-parse", "main"]);
    let tag = s.literally(
        "tag",
        format!("object {tip}\ntype commit\ntag v1\ntagger T <t@example.com> 01 +0000\n\nm\n")
            .as_bytes(),
    );
    s.git(&["update-ref", "refs/tags/v1", &tag]);
    let pushed = s.push(&["refs/tags/v1"]);
    assert_ne!(pushed.code, Some(0));
    assert!(
        pushed.messages.iter().any(|m| m.contains("zeroPaddedDate")),
        "{pushed:?}"
    );
}

#[test]
fn small_pushes_are_stored_loose_and_bigger_ones_as_packs() {
    let s = Setup::new();
    // Three objects (commit, tree, blob) below the default limit.
    s.commit("second");
    s.push(&["main"]);
    assert_eq!(counts(&s.ours), counts(&s.theirs));
    let (loose, packs) = counts(&s.ours);
    assert_eq!((loose, packs), (6, 0));
    // A limit of 3: the next push of three objects makes a pack.
    s.config("receive.unpackLimit", "3");
    s.commit("third");
    s.push(&["main"]);
    assert_eq!(counts(&s.ours), (6, 1));
    assert_eq!(counts(&s.theirs), (6, 1));
    // transfer.unpackLimit when receive.unpackLimit is not set.
    for target in [&s.ours, &s.theirs] {
        git_ok(
            &s.home,
            target,
            &["config", "--unset", "receive.unpackLimit"],
        );
        git_ok(&s.home, target, &["config", "transfer.unpackLimit", "1000"]);
    }
    for i in 0..5 {
        s.commit(&format!("more {i}"));
    }
    s.push(&["main"]);
    assert_eq!(counts(&s.ours), (21, 1));
    assert_eq!(counts(&s.theirs), (21, 1));
}

fn hex_to_raw(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_thin_packs_base_already_stored_is_not_judged_again() {
    let s = Setup::new();
    s.config("receive.unpackLimit", "1");
    let blob = s.literally("blob", b"content\n");
    let raw = hex_to_raw(&blob);
    let tree_of = |first_mode: &str, last_name: &str| {
        let mut names: Vec<String> = (0..60).map(|i| format!("file{i:03}")).collect();
        names.push(last_name.to_owned());
        let mut data = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mode = if i == 0 { first_mode } else { "100644" };
            data.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            data.extend_from_slice(&raw);
        }
        s.literally("tree", &data)
    };
    // Stored while the server does not check objects.
    let padded = tree_of("0100644", "zz-old");
    s.commit_with_author("main", "A <a@example.com> 1700000000 +0000", Some(&padded));
    assert_eq!(s.push(&["main"]).code, Some(0));
    // A good tree the client may send as a delta against the stored one.
    s.config("receive.fsckObjects", "true");
    let good = tree_of("100644", "zz-new");
    let parent = s.git(&["rev-parse", "main"]);
    let commit = s.literally(
        "commit",
        format!(
            "tree {good}\nparent {parent}\nauthor A <a@example.com> 1700000000 +0000\ncommitter C <c@example.com> 1700000000 +0000\n\nfixed\n"
        )
        .as_bytes(),
    );
    s.git(&["update-ref", "refs/heads/main", &commit]);
    let pushed = s.push(&["main"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
}

#[test]
fn malicious_gitmodules_are_refused() {
    let s = Setup::new();
    s.config("receive.fsckObjects", "true");
    let cases = [
        (
            "name",
            "[submodule \"../../hooks\"]\n\tpath = a\n\turl = ./a\n",
        ),
        (
            "url",
            "[submodule \"a\"]\n\tpath = a\n\turl = -oProxyCommand=touch owned\n",
        ),
        (
            "newline",
            "[submodule \"a\"]\n\tpath = a\n\turl = ./a%0aevil\n",
        ),
        (
            "climb",
            "[submodule \"a\"]\n\tpath = a\n\turl = ../../:host/repo\n",
        ),
        ("path", "[submodule \"a\"]\n\tpath = -x\n\turl = ./a\n"),
        (
            "update",
            "[submodule \"a\"]\n\tpath = a\n\turl = ./a\n\tupdate = !rm -rf /\n",
        ),
        (
            "fine",
            "[submodule \"a\"]\n\tpath = a\n\turl = https://example.com/a.git\n",
        ),
    ];
    let blob_line = |content: &str| {
        let blob = s.literally("blob", content.as_bytes());
        let mut entry = b"100644 .gitmodules\0".to_vec();
        entry.extend_from_slice(&hex_to_raw(&blob));
        entry
    };
    for (name, content) in cases {
        let tree = s.literally("tree", &blob_line(content));
        s.commit_with_author(name, "A <a@example.com> 1700000000 +0000", Some(&tree));
        for limit in ["100", "1"] {
            s.config("receive.unpackLimit", limit);
            let pushed = s.push(&[name]);
            if name == "fine" {
                assert_eq!(pushed.code, Some(0), "{pushed:?}");
                break;
            }
            assert_ne!(pushed.code, Some(0), "{name}");
            assert!(
                pushed.messages.iter().any(|m| m.contains(": gitmodules")),
                "{name}: {pushed:?}"
            );
        }
    }
    // .gitattributes with a line git cannot read.
    let long = format!("{} text\n", "x".repeat(3000));
    let blob = s.literally("blob", long.as_bytes());
    let mut entry = b"100644 .gitattributes\0".to_vec();
    entry.extend_from_slice(&hex_to_raw(&blob));
    let tree = s.literally("tree", &entry);
    s.commit_with_author(
        "attributes",
        "A <a@example.com> 1700000000 +0000",
        Some(&tree),
    );
    let pushed = s.push(&["attributes"]);
    assert_ne!(pushed.code, Some(0));
    assert!(
        pushed
            .messages
            .iter()
            .any(|m| m.contains("gitattributesLineLength")),
        "{pushed:?}"
    );
}

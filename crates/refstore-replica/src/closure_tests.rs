//! The closure walk against generated histories: a node holding a random
//! part of a repository's objects, brought the objects the walk names
//! until nothing is missing, ends up with everything the tips reach and
//! was never asked for an orphan; a node found complete walks nothing.

use super::closure::Closure;
use refstore_odb::Odb;
use refstore_refs::{ObjectFormat, ObjectId};
use refstore_testsupport::Git;
use std::collections::HashSet;
use std::path::Path;

fn git(dir: &Path, args: &[&str], input: &str) -> String {
    Git::at(dir)
        .ok_with(args, input.as_bytes())
        .trim()
        .to_owned()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below as u64) as usize
    }
}

fn id(hex: &str) -> ObjectId {
    ObjectId::from_hex_in(hex.as_bytes(), ObjectFormat::Sha1).unwrap()
}

fn loose_path(git_dir: &Path, hex: &str) -> std::path::PathBuf {
    git_dir.join("objects").join(&hex[..2]).join(&hex[2..])
}

/// A history of loose objects in `source`: commits on random earlier
/// commits, each with a subtree, a file of its own and one shared with
/// another; returns the tips named and the orphaned commits' tips.
fn history(source: &Path, rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let mut commits: Vec<String> = Vec::new();
    let mut blobs: Vec<String> = Vec::new();
    for n in 0..40 {
        let own = git(source, &["hash-object", "-w", "--stdin"], &format!("{n}\n"));
        blobs.push(own.clone());
        let shared = blobs[rng.next(blobs.len())].clone();
        let sub = git(
            source,
            &["mktree"],
            &format!("100644 blob {shared}\tshared\n"),
        );
        let tree = git(
            source,
            &["mktree"],
            &format!("100644 blob {own}\town\n040000 tree {sub}\tsub\n"),
        );
        let mut args = vec!["commit-tree".to_owned(), tree, "-m".into(), n.to_string()];
        if !commits.is_empty() {
            for _ in 0..1 + rng.next(2) {
                args.extend(["-p".into(), commits[rng.next(commits.len())].clone()]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        commits.push(git(source, &args, ""));
    }
    let mut tips = Vec::new();
    let mut orphans = Vec::new();
    for (n, commit) in commits.iter().enumerate().skip(30) {
        match n % 3 {
            0 => orphans.push(commit.clone()),
            _ => tips.push(commit.clone()),
        }
    }
    (tips, orphans)
}

fn reachable(source: &Path, tips: &[String]) -> HashSet<String> {
    let mut args = vec!["rev-list", "--objects"];
    args.extend(tips.iter().map(String::as_str));
    git(source, &args, "")
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_walk_names_what_the_tips_need_and_never_an_orphan() {
    for seed in [1u64, 7, 0x5eed, 0xdead_beef] {
        let mut rng = Rng(seed);
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "--bare", "source.git"], "");
        git(dir.path(), &["init", "-q", "--bare", "node.git"], "");
        let (source, node) = (dir.path().join("source.git"), dir.path().join("node.git"));
        let (tips, orphans) = history(&source, &mut rng);
        let needed = reachable(&source, &tips);
        let only_orphaned: HashSet<String> = reachable(&source, &orphans)
            .difference(&needed)
            .cloned()
            .collect();
        assert!(!only_orphaned.is_empty());
        // The node holds a random part of every object, orphans included.
        let every = reachable(&source, &[tips.clone(), orphans].concat());
        for hex in &every {
            if rng.next(3) == 0 {
                let to = loose_path(&node, hex);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(loose_path(&source, hex), to).unwrap();
            }
        }
        let odb = Odb::open(&node.join("objects"), ObjectFormat::Sha1).unwrap();
        let roots: Vec<ObjectId> = tips.iter().map(|t| id(t)).collect();
        let mut closure = Closure::new(ObjectFormat::Sha1, HashSet::new());
        closure.walk(&odb, roots.clone()).unwrap();
        let mut rounds = 0;
        while !closure.missing().is_empty() {
            for missing in closure.missing() {
                let hex = missing.to_string();
                assert!(needed.contains(&hex), "seed {seed}: asked for {hex}");
                let to = loose_path(&node, &hex);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(loose_path(&source, &hex), to).unwrap();
            }
            closure.resume(&odb).unwrap();
            rounds += 1;
            assert!(rounds < 100, "seed {seed}: the walk does not end");
        }
        for hex in &needed {
            assert!(odb.contains(&id(hex)), "seed {seed}: {hex} never asked for");
        }
        // Found complete, the tips stop the next walk at once.
        let mut again = Closure::new(ObjectFormat::Sha1, roots.iter().copied().collect());
        again.walk(&odb, roots).unwrap();
        assert_eq!((again.read, again.missing().len()), (0, 0), "seed {seed}");
    }
}

//! Generated histories: a small program of operations (commits, some of
//! them dated into the past, branches, merges, tags, commits that bring
//! older objects back at other paths) run on a [`Fixture`]'s source, for
//! property tests that fetch from it through refstore and through git.

use crate::fetch_pair::Fixture;
use crate::git::git;
use proptest::prelude::*;

/// Branches a history grows at most.
pub const BRANCHES: usize = 4;

/// One step of a generated history. Branch numbers are taken modulo the
/// branches that exist at that point.
#[derive(Debug, Clone)]
pub enum Op {
    /// A commit on branch `branch`, dated `back` days before its turn.
    Commit { branch: usize, back: u32 },
    /// A new branch from the tip of `from`.
    Branch { from: usize },
    /// A merge commit of `from` into `into`.
    Merge { from: usize, into: usize },
    /// An annotated tag on the tip of `branch`.
    Tag { branch: usize },
    /// A commit on branch `branch` that brings older trees and blobs back
    /// at other paths ([`Fixture::commit_reusing`]).
    Reuse { branch: usize, back: u32 },
}

/// Any [`Op`], commits the likeliest.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..BRANCHES, prop_oneof![3 => Just(0u32), 1 => 1..3u32])
            .prop_map(|(branch, back)| Op::Commit { branch, back }),
        1 => (0..BRANCHES).prop_map(|from| Op::Branch { from }),
        2 => (0..BRANCHES, 0..BRANCHES).prop_map(|(from, into)| Op::Merge { from, into }),
        1 => (0..BRANCHES).prop_map(|branch| Op::Tag { branch }),
        2 => (0..BRANCHES, prop_oneof![3 => Just(0u32), 1 => 1..3u32])
            .prop_map(|(branch, back)| Op::Reuse { branch, back }),
    ]
}

/// A source repository grown by [`Op`]s, and the names it has given.
pub struct History {
    pub f: Fixture,
    /// `main` and the branches made so far.
    pub branches: Vec<String>,
    /// The annotated tags made so far.
    pub tags: Vec<String>,
    /// The branch checked out.
    current: String,
    /// Operations run so far: names stay unique across [`History::grow`]s.
    steps: usize,
}

impl History {
    /// A source with one commit on `main`, served by refstore through
    /// `upload_pack` ([`Fixture::empty`]).
    pub fn new(upload_pack: &str) -> History {
        let f = Fixture::empty(upload_pack);
        f.commit("c0");
        History {
            f,
            branches: vec!["main".to_owned()],
            tags: Vec::new(),
            current: "main".to_owned(),
            steps: 0,
        }
    }

    /// The branches and then the tags.
    pub fn refs(&self) -> Vec<String> {
        self.branches.iter().chain(&self.tags).cloned().collect()
    }

    /// Runs `ops` on the source.
    pub fn grow(&mut self, ops: &[Op]) {
        for op in ops {
            self.steps += 1;
            let n = self.steps;
            let name = format!("c{n}");
            match *op {
                Op::Commit { branch, back } => {
                    self.checkout_nth(branch);
                    self.f.commit_skewed(&name, back);
                }
                Op::Branch { from } if self.branches.len() < BRANCHES => {
                    let from = self.nth(from);
                    let new = format!("b{}", self.branches.len());
                    self.f
                        .git(&self.f.source, &["checkout", "-q", "-b", &new, &from]);
                    self.branches.push(new.clone());
                    self.current = new;
                }
                Op::Branch { .. } => self.f.commit(&name),
                Op::Merge { from, into } => {
                    let from = self.nth(from);
                    self.checkout_nth(into);
                    let into = self.current.clone();
                    let merged = git(
                        &self.f.home,
                        &self.f.source,
                        &["merge-base", "--is-ancestor", &from, &into],
                    );
                    // Nothing to merge: a commit keeps the step's date.
                    if merged.status.success() {
                        self.f.commit(&name);
                    } else {
                        self.f.merge(&from);
                    }
                }
                Op::Reuse { branch, back } => {
                    self.checkout_nth(branch);
                    self.f.commit_reusing(&name, back);
                }
                Op::Tag { branch } => {
                    let branch = self.nth(branch);
                    let tag = format!("t{n}");
                    self.f
                        .git(&self.f.source, &["tag", "-a", &tag, "-m", &tag, &branch]);
                    self.tags.push(tag);
                }
            }
        }
    }

    /// The branch numbered `n` modulo the branches there are.
    fn nth(&self, n: usize) -> String {
        self.branches[n % self.branches.len()].clone()
    }

    fn checkout_nth(&mut self, n: usize) {
        let name = self.nth(n);
        if self.current != name {
            self.f.git(&self.f.source, &["checkout", "-q", &name]);
            self.current = name;
        }
    }
}

/// `cases` cases unless `REFSTORE_PROPTEST_CASES` or `PROPTEST_CASES`
/// says; every case runs git some dozens of times, so a failure shrinks
/// in bounded time.
pub fn config(cases: u32) -> ProptestConfig {
    let cases = ["REFSTORE_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    }
}

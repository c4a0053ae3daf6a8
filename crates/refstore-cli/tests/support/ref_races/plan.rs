//! The repository of one round: the refs the writer deletes, updates and
//! creates, the refs nobody changes, and the two values they take.

use super::tools::{ok, Format, Tool};
use std::path::{Path, PathBuf};

/// Refs the writer deletes, updates and creates, and refs nobody
/// changes (half packed before the round, half loose).
pub(super) const DELETED: usize = 100;
pub(super) const UPDATED: usize = 100;
pub(super) const CREATED: usize = 50;
pub(super) const STABLE: usize = 20;

/// The refs of a round and the two values they take.
pub(super) struct Plan {
    pub(super) old: String,
    pub(super) new: String,
}

impl Plan {
    pub(super) fn stable(i: usize) -> String {
        format!(
            "refs/heads/stable/{}{i}",
            if i % 2 == 0 { "p" } else { "l" }
        )
    }
    pub(super) fn deleted(i: usize) -> String {
        format!("refs/heads/gone/{i}")
    }
    pub(super) fn updated(i: usize) -> String {
        format!("refs/heads/moved/{i}")
    }
    pub(super) fn created(i: usize) -> String {
        format!("refs/heads/new/{i}")
    }

    /// The writer's transaction.
    pub(super) fn transaction(&self) -> String {
        let mut input = String::new();
        for i in 0..DELETED {
            input.push_str(&format!("delete {} {}\n", Plan::deleted(i), self.old));
        }
        for i in 0..UPDATED {
            let name = Plan::updated(i);
            input.push_str(&format!("update {name} {} {}\n", self.new, self.old));
        }
        for i in 0..CREATED {
            input.push_str(&format!("create {} {}\n", Plan::created(i), self.new));
        }
        input
    }

    /// True if `name` may have `id` at some time of the round.
    pub(super) fn value_ok(&self, name: &str, id: &str) -> bool {
        if name.starts_with("refs/heads/new/") {
            id == self.new
        } else if name.starts_with("refs/heads/moved/") {
            id == self.old || id == self.new
        } else {
            id == self.old
        }
    }

    /// Refs that exist from before the round to after it.
    pub(super) fn throughout() -> impl Iterator<Item = String> {
        (0..STABLE)
            .map(Plan::stable)
            .chain((0..UPDATED).map(Plan::updated))
    }
}

/// Makes the repository of a round: two commits, the stable refs (half
/// packed), and the refs the writer changes, loose or in tables of their
/// own.
pub(super) fn setup(format: Format, home: &Path, root: &Path) -> (PathBuf, Plan) {
    let repo = root.join("r.git");
    let mut init = vec!["init", "-q", "--bare"];
    if format == Format::Reftable {
        init.push("--ref-format=reftable");
    }
    init.push("r.git");
    ok(Tool::Refstore, home, root, &init, "");
    let tree = ok(
        Tool::Refstore,
        home,
        &repo,
        &["hash-object", "-t", "tree", "-w", "--stdin"],
        "",
    );
    let commit = |n: u32| {
        let body = format!(
            "tree {tree}\nauthor A <a@example.com> {n} +0000\n\
             committer C <c@example.com> {n} +0000\n\nvalue {n}\n"
        );
        ok(
            Tool::Refstore,
            home,
            &repo,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            &body,
        )
    };
    let plan = Plan {
        old: commit(1),
        new: commit(2),
    };
    let create = |names: &mut dyn Iterator<Item = String>| {
        let input: String = names
            .map(|n| format!("create {n} {}\n", plan.old))
            .collect();
        ok(
            Tool::Refstore,
            home,
            &repo,
            &["update-ref", "--stdin"],
            &input,
        );
    };
    create(&mut (0..STABLE).step_by(2).map(Plan::stable));
    ok(Tool::Refstore, home, &repo, &["pack-refs", "--all"], "");
    create(&mut (1..STABLE).step_by(2).map(Plan::stable));
    // In a few transactions: on reftable, so many tables to compact.
    let changed: Vec<String> = (0..DELETED)
        .map(Plan::deleted)
        .chain((0..UPDATED).map(Plan::updated))
        .collect();
    for chunk in changed.chunks(40) {
        create(&mut chunk.iter().cloned());
    }
    (repo, plan)
}

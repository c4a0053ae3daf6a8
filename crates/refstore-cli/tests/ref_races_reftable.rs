//! refstore and an independent implementation of reftable as packer (a
//! compaction of the table stack) and writer of one reftable repository at
//! the same time: a compaction racing a transaction that deletes, updates
//! and creates refs, while refstore's `show-ref` and `for-each-ref`,
//! `ls-remote` through `refstore upload-pack` and JGit list the refs
//! throughout, with the checks of [`support::ref_races`].
//!
//! The independent implementations are JGit (always: its
//! `FileReftableDatabase` takes git's `tables.list.lock` and compacts with
//! `compactFully()`), and git 2.45 or later where
//! `REFSTORE_TEST_GIT_REFTABLE` names one (the machine's git 2.39 reads no
//! reftable). Without that variable the git races print that they were
//! skipped and pass: they are an optional extra, the JGit races the ones
//! every run makes.
//!
//! JGit runs with `core.trustTablesListStat = never`: trusting the stat of
//! `tables.list`, as it does by default, its compaction can drop a table
//! another process just added (see `support::ref_races`), which is JGit's
//! fault, not what these races judge.
//!
//! `REFSTORE_STRESS_ROUNDS`, `REFSTORE_STRESS_SECONDS` and
//! `REFSTORE_STRESS_SEED` run it longer or differently.

mod support;
use support::ref_races::{race_and_check, reftable_git, Format, Tool, GIT_REFTABLE_VARIABLE};

fn race(packer: Tool, writer: Tool) {
    race_and_check(Format::Reftable, packer, writer);
}

/// Runs the race with the git `REFSTORE_TEST_GIT_REFTABLE` names, or says
/// it was skipped.
fn race_with_git(packer: Tool, writer: Tool) {
    match reftable_git() {
        Some(_) => race(packer, writer),
        None => eprintln!(
            "skipped: set {GIT_REFTABLE_VARIABLE} to a git of 2.45 or later to race it \
             against refstore on reftable"
        ),
    }
}

#[test]
fn refstore_compacts_while_refstore_writes() {
    race(Tool::Refstore, Tool::Refstore);
}

#[test]
fn refstore_compacts_while_jgit_writes() {
    race(Tool::Refstore, Tool::JGit);
}

#[test]
fn jgit_compacts_while_refstore_writes() {
    race(Tool::JGit, Tool::Refstore);
}

#[test]
fn refstore_compacts_while_git_writes() {
    race_with_git(Tool::Refstore, Tool::GitReftable);
}

#[test]
fn git_compacts_while_refstore_writes() {
    race_with_git(Tool::GitReftable, Tool::Refstore);
}

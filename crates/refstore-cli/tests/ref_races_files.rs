//! refstore and git as packer and writer of one files-format repository
//! at the same time: `pack-refs --all` racing an `update-ref --stdin` that
//! deletes, updates and creates refs, while `show-ref`, `for-each-ref`
//! (both programs') and `ls-remote` through `refstore upload-pack` list
//! the refs throughout. No acknowledged deletion is undone, no
//! acknowledged update lost, no listing misses a ref that exists
//! throughout ([`support::ref_races`]).
//!
//! `REFSTORE_STRESS_ROUNDS`, `REFSTORE_STRESS_SECONDS` and
//! `REFSTORE_STRESS_SEED` run it longer or differently.

mod support;
use support::ref_races::{race_and_check, Format, Tool};

fn race(packer: Tool, writer: Tool) {
    race_and_check(Format::Files, packer, writer);
}

#[test]
fn refstore_packs_while_refstore_writes() {
    race(Tool::Refstore, Tool::Refstore);
}

#[test]
fn refstore_packs_while_git_writes() {
    race(Tool::Refstore, Tool::Git);
}

#[test]
fn git_packs_while_refstore_writes() {
    race(Tool::Git, Tool::Refstore);
}

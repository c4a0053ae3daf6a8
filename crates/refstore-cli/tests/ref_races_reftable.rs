//! refstore as packer (a compaction of the table stack), writer and
//! reader of one reftable repository at the same time (git 2.39 reads no
//! reftable): `pack-refs` racing an `update-ref --stdin` that deletes,
//! updates and creates refs, while `show-ref`, `for-each-ref` and
//! `ls-remote` through `refstore upload-pack` list the refs throughout,
//! with the checks of [`support::ref_races`].
//!
//! `REFSTORE_STRESS_ROUNDS`, `REFSTORE_STRESS_SECONDS` and
//! `REFSTORE_STRESS_SEED` run it longer or differently.

mod support;
use support::ref_races::{run, Format, Race, Reader, Tool};
use support::stress::Budget;

#[test]
fn refstore_compacts_while_refstore_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let race = Race {
        format: Format::Reftable,
        packer: Tool::Refstore,
        writer: Tool::Refstore,
        readers: Reader::all_for(Format::Reftable),
    };
    let budget = Budget::from_env(10, 20);
    let tally = run(&race, &budget, tmp.path());
    eprintln!("{} (seed {})", tally.report(&race), budget.seed);
    assert!(tally.acknowledged > 0, "no write was acknowledged");
    assert_eq!(
        tally.violations(),
        0,
        "{}\n{}",
        tally.report(&race),
        tally.examples.join("\n")
    );
}

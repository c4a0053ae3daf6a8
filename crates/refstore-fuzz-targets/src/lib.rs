//! refstore's fuzz targets as plain functions over bytes: one per parser of
//! untrusted input. `fuzz/fuzz_targets/*.rs` hand them to libFuzzer
//! (nightly, `cargo fuzz run <name>` in `fuzz/`); the smoke test in
//! `tests/smoke.rs` runs them on stable over the committed corpora, the
//! regression inputs and deterministic mutations of both.
//!
//! Every target checks that its parser neither panics nor hangs on any
//! input and allocates no more than the input justifies; where it is cheap,
//! it also checks a round trip (what parses, re-encodes and parses again to
//! the same thing). A broken property panics, which is what both drivers
//! report.
#![deny(missing_docs, unsafe_code)]

mod checks;
pub mod config;
pub mod files;
pub mod protocol;
pub mod reftable;
pub mod update_ref;

/// A fuzz target: its name (also its corpus directory) and its function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    ("pkt_line", protocol::pkt_line),
    ("upload_pack_v2", protocol::upload_pack_v2),
    ("upload_pack_v0", protocol::upload_pack_v0),
    ("receive_pack", protocol::receive_pack),
    ("reftable_table", reftable::reftable_table),
    ("reftable_blocks", reftable::reftable_blocks),
    ("tables_list", reftable::tables_list),
    ("packed_refs", files::packed_refs),
    ("loose_ref", files::loose_ref),
    ("reflog_line", files::reflog_line),
    ("update_ref_stdin", update_ref::update_ref_stdin),
    ("update_ref_stdin_z", update_ref::update_ref_stdin_z),
    ("config", config::config),
];

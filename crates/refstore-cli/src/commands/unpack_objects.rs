//! `refstore unpack-objects`: store the objects of a pack read from
//! standard input as loose objects.
//!
//! Unlike git, which writes each object as it is decoded, the objects are
//! written as one batch (one flush point) once the whole pack is read and
//! its checksum verified: a truncated or corrupt pack stores nothing.
//! Objects the repository already has are skipped, as git does; deltas
//! against them (thin packs) are resolved. Objects at or above
//! `core.bigFileThreshold` are inflated, hashed and deflated again a piece
//! at a time, never held whole, as git streams them; deltas of such objects
//! are refused.

use super::hash_object::loose_writer;
use crate::context::{Fatal, Globals};
use refstore_odb::{big_file_threshold, resolve_pack, IngestLimits, ObjectData};
use std::io::IsTerminal;

/// Arguments of `unpack-objects`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check the pack, but write nothing.
    #[arg(short = 'n')]
    dry_run: bool,
    /// Print no progress.
    #[arg(short = 'q')]
    quiet: bool,
}

/// Runs `unpack-objects`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let format = repo.object_format();
    let odb = repo.objects().map_err(Fatal::new)?;
    let mut writer = loose_writer(&repo, globals);
    let limits = IngestLimits {
        big_file_threshold: big_file_threshold(&repo.config).map_err(Fatal::new)?,
        max_inflated: None,
    };
    let stdin = std::io::stdin().lock();
    let summary = resolve_pack(stdin, format, Some(&odb), &limits, |object| {
        if args.dry_run || odb.contains(&object.id) {
            return Ok(());
        }
        match object.data {
            ObjectData::Whole(data) => writer.write(object.kind, data).map(drop),
            ObjectData::Large(large) => writer.write_large(object.kind, &large).map(drop),
        }
    })
    .map_err(Fatal::new)?;
    writer.commit().map_err(Fatal::new)?;
    if !args.quiet && std::io::stderr().is_terminal() {
        let n = summary.objects;
        eprintln!("Unpacking objects: 100% ({n}/{n}), done.");
    }
    Ok(0)
}

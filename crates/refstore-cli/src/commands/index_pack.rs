//! `refstore index-pack --stdin`: store a pack read from standard input in
//! the repository with its index, completing a thin pack with
//! `--fix-thin`; durable (as `core.fsync`'s `pack` component says) before
//! it is visible.
//!
//! Objects at or above `core.bigFileThreshold` are hashed as they are
//! inflated, never held whole, as git's index-pack does.
//!
//! Only packs on standard input are stored; indexing a pack file in place
//! (`git index-pack <pack-file>`) is not supported.

use crate::context::{Fatal, Globals};
use refstore_fs::config::Component;
use refstore_odb::{big_file_threshold, store_pack, IngestLimits, PackOptions};

/// Arguments of `index-pack`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Read the pack from standard input and store it in the repository.
    #[arg(long)]
    stdin: bool,
    /// Complete a thin pack with the bases it lacks, from the repository.
    #[arg(long, requires = "stdin")]
    fix_thin: bool,
    /// Create a .keep file for the pack (with this message), so that
    /// `git gc` leaves it alone.
    #[arg(long, value_name = "msg", num_args = 0..=1, default_missing_value = "", require_equals = true)]
    keep: Option<String>,
    /// Write the reverse index (`.rev`) too; the default follows
    /// `pack.writeReverseIndex` (true when unset, as in git 2.41 and later).
    #[arg(long, overrides_with = "no_rev_index")]
    rev_index: bool,
    /// Do not write the reverse index.
    #[arg(long)]
    no_rev_index: bool,
}

/// Runs `index-pack`: prints `pack` or (when a .keep file was created)
/// `keep`, a tab and the pack's checksum.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    if !args.stdin {
        return Err(Fatal::new(
            "refstore index-pack stores packs read from standard input only: use --stdin",
        ));
    }
    let repo = globals.open_repo()?;
    let format = repo.object_format();
    let objects = repo.objects_dir();
    let odb = match args.fix_thin {
        true => Some(repo.objects().map_err(Fatal::new)?),
        false => None,
    };
    let keep = args.keep.as_ref().map(|msg| match msg.is_empty() {
        true => Vec::new(),
        false => format!("{msg}\n").into_bytes(),
    });
    let options = PackOptions {
        format,
        method: repo.settings.fsync.method_for(Component::Pack),
        batch_mechanism: repo.settings.fsync.batch_mechanism(),
        thin_bases: odb.as_ref(),
        keep: keep.as_deref(),
        rev_index: match (args.rev_index, args.no_rev_index) {
            (true, _) => true,
            (_, true) => false,
            _ => repo
                .config
                .bool("pack.writeReverseIndex")
                .map_err(Fatal::new)?
                .unwrap_or(true),
        },
        // Objects of core.bigFileThreshold or more are hashed in pieces;
        // as git's index-pack, no bound on the pack's total.
        limits: IngestLimits {
            big_file_threshold: big_file_threshold(&repo.config).map_err(Fatal::new)?,
            max_inflated: None,
        },
    };
    let stored = store_pack(
        globals.vfs().clone(),
        objects,
        std::io::stdin().lock(),
        &options,
    )
    .map_err(Fatal::new)?;
    let label = if stored.keep_path.is_some() {
        "keep"
    } else {
        "pack"
    };
    println!("{label}\t{}", stored.checksum);
    Ok(0)
}

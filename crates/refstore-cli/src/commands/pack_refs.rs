//! `refstore pack-refs`: move loose refs into `packed-refs`; in a reftable
//! repository, compact the stack into one table.

use crate::context::{Fatal, Globals};
use refstore_fs::config::Component;
use refstore_refs::files::pack::PackOptions;

/// Arguments of `pack-refs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pack every ref, not only tags and refs already packed.
    #[arg(long)]
    all: bool,
    /// Keep the loose files of the refs that were packed.
    #[arg(long)]
    no_prune: bool,
}

/// Runs `pack-refs`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = repo.refs().map_err(Fatal::new)?;
    let flush = repo.settings.fsync.method_for(Component::Reference);
    let Some(backend) = store.as_files() else {
        let reftable = store.as_reftable().expect("a store is files or reftable");
        reftable.compact_all(flush).map_err(Fatal::new)?;
        return Ok(0);
    };
    let objects = super::objects::open(&repo)?;
    let options = PackOptions {
        all: args.all,
        prune: !args.no_prune,
        flush,
        lock_timeout: repo.settings.files_ref_lock_timeout,
        packed_refs_timeout: repo.settings.packed_refs_timeout,
    };
    backend
        .pack_refs(&options, &|id| objects.peel(id).ok().flatten())
        .map_err(Fatal::new)?;
    Ok(0)
}

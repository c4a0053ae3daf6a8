//! Which packs an object database has, for [`crate::Packs::open`]: the
//! `.idx` files gix-odb finds in `objects/pack` and its alternates, and
//! those a `multi-pack-index` names.
//!
//! A listing may be stale before it is opened: a repack (git's `repack
//! -d`, refstore's `incremental-repack` once a rolled-up pack expires)
//! deletes packs whose objects it moved, and may replace or remove the
//! `multi-pack-index`, between the moment a reader lists the directory
//! and the moment it opens what it listed. Like git, which re-reads its
//! pack directory when a pack it knew is gone, [`open_fresh`] lists again
//! whenever something listed has vanished, a few times; a pack still
//! missing after that (a `multi-pack-index` naming a pack that is not
//! there) is left out, as git leaves out a pack it cannot open.

use crate::OdbError;
use refstore_hash::ObjectFormat;
use std::path::{Path, PathBuf};

/// How often a listing is read again after something in it vanished.
/// Each retry means a repack deleted packs in the short time between a
/// listing and its opening; several in a row do not happen in practice.
const RELISTS: usize = 8;

/// The `.idx` paths of every pack of the database at `objects_dir`.
///
/// A store of its own, not a shared one: a shared store lists its packs
/// once and would answer again with what it listed then.
pub fn list(objects_dir: &Path, format: ObjectFormat) -> Result<Vec<PathBuf>, OdbError> {
    let open_error = |message: String| OdbError::Open {
        path: objects_dir.to_owned(),
        source: std::io::Error::other(message),
    };
    let store = crate::odb::open_store_to_list(objects_dir, format)?;
    let records = store.structure().map_err(|e| open_error(e.to_string()))?;
    let mut index_paths = Vec::new();
    for record in records {
        match record {
            gix_odb::store::structure::Record::Index { path, .. } => index_paths.push(path),
            gix_odb::store::structure::Record::MultiIndex { path, .. } => {
                let midx = gix_pack::multi_index::File::at(&path, None)
                    .map_err(|e| OdbError::Pack(format!("cannot read {}: {e}", path.display())))?;
                let dir = path.parent().unwrap_or(Path::new("."));
                index_paths.extend(midx.index_names().iter().map(|name| dir.join(name)));
            }
            _ => {}
        }
    }
    Ok(index_paths)
}

/// Lists the packs at `objects_dir` and opens them with `open`, listing
/// again while a failure comes with something listed having vanished.
pub fn open_fresh<T>(
    objects_dir: &Path,
    format: ObjectFormat,
    mut open: impl FnMut(&[PathBuf]) -> Result<T, OdbError>,
) -> Result<T, OdbError> {
    let mut relists = 0;
    loop {
        let listed = match list(objects_dir, format) {
            Ok(listed) => listed,
            // The multi-pack-index was listed, then removed before it
            // was read.
            Err(_) if relists < RELISTS => {
                relists += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let error = match open(&listed) {
            Ok(opened) => return Ok(opened),
            Err(e) => e,
        };
        let present: Vec<PathBuf> = listed.iter().filter(|p| is_whole(p)).cloned().collect();
        if present.len() == listed.len() {
            return Err(error);
        }
        if relists < RELISTS {
            relists += 1;
            continue;
        }
        return open(&present);
    }
}

/// True if a pack's index and data are both there.
fn is_whole(index_path: &Path) -> bool {
    index_path.is_file() && index_path.with_extension("pack").is_file()
}

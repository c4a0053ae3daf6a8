//! Opening a pack's `.idx` so that it costs the resident memory of what
//! is looked up in it, not of the whole file.
//!
//! gix-pack checks a version 2 index when it opens it by reading the whole
//! table of 32-bit offsets (four bytes per object: 3 MB for a pack of
//! git.git's size). Those pages would stay resident while the pack is
//! open, although a small fetch then looks up a few hundred objects: they
//! are given back once the index is open. Pages read again later come
//! back from the page cache.

use crate::OdbError;
use std::path::Path;

/// The index at `path`, mapped, with none of its pages left resident by
/// the opening checks.
pub(crate) fn open_index(
    path: &Path,
    hash: gix_hash::Kind,
) -> Result<gix_pack::index::File, OdbError> {
    let error =
        |e: &dyn std::fmt::Display| OdbError::Pack(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| error(&e))?;
    // SAFETY: as gix-pack maps an index itself: read-only, and an index is
    // never written in place once it has its name (git and refstore write
    // it under a temporary name and rename it).
    #[allow(unsafe_code)]
    let map = unsafe { gix_pack::MMap::map(&file) }.map_err(|e| error(&e))?;
    // The mapping does not move when the value owning it does.
    let (start, len) = (map.as_ptr(), map.len());
    let index =
        gix_pack::index::File::from_data(map, path.to_owned(), hash).map_err(|e| error(&e))?;
    // SAFETY: `start..start + len` is the read-only file mapping that
    // `index` owns and keeps alive until it is dropped, which cannot
    // happen during this call; nobody writes the file (see above).
    #[allow(unsafe_code)]
    unsafe {
        refstore_fs::resident::release_pages(std::slice::from_raw_parts(start, len))
    };
    Ok(index)
}

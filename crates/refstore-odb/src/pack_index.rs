//! Opening a pack's `.idx` so that it costs the resident memory of what
//! is looked up in it, not of the whole file.
//!
//! gix-pack checks a version 2 index when it opens it by reading the whole
//! table of 32-bit offsets (four bytes per object: 3 MB for a pack of
//! git.git's size). Those pages would stay resident while the pack is
//! open, although a small fetch then looks up a few hundred objects: they
//! are given back once the index is open, and the pages of later lookups
//! can be given back between the phases of a request
//! ([`IndexPages::release`]). Pages read again come back from the page
//! cache.

use crate::OdbError;
use std::path::Path;

/// Where an open index is mapped, to give its resident pages back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexPages {
    start: usize,
    len: usize,
}

impl IndexPages {
    /// Drops the index's pages from the resident set.
    ///
    /// # Safety
    ///
    /// The index these pages were opened with must still be open: its
    /// mapping is then read-only and never written (see [`open_index`]).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn release(&self) {
        // SAFETY: by the caller's promise, the range is the live read-only
        // mapping of a file nobody writes.
        #[allow(unsafe_code)]
        unsafe {
            refstore_fs::resident::release_pages(std::slice::from_raw_parts(
                self.start as *const u8,
                self.len,
            ))
        };
    }
}

/// The index at `path`, mapped, with none of its pages left resident by
/// the opening checks; and where it is mapped.
pub(crate) fn open_index(
    path: &Path,
    hash: gix_hash::Kind,
) -> Result<(gix_pack::index::File, IndexPages), OdbError> {
    let error =
        |e: &dyn std::fmt::Display| OdbError::Pack(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| error(&e))?;
    // SAFETY: as gix-pack maps an index itself: read-only, and an index is
    // never written in place once it has its name (git and refstore write
    // it under a temporary name and rename it).
    #[allow(unsafe_code)]
    let map = unsafe { gix_pack::MMap::map(&file) }.map_err(|e| error(&e))?;
    // The mapping does not move when the value owning it does.
    let pages = IndexPages {
        start: map.as_ptr() as usize,
        len: map.len(),
    };
    let index =
        gix_pack::index::File::from_data(map, path.to_owned(), hash).map_err(|e| error(&e))?;
    // SAFETY: `index` owns the mapping and is open for this whole call.
    #[allow(unsafe_code)]
    unsafe {
        pages.release()
    };
    Ok((index, pages))
}

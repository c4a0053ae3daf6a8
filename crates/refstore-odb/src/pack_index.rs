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
use refstore_hash::ObjectFormat;
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
    format: ObjectFormat,
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
    let index = gix_pack::index::File::from_data(map, path.to_owned(), format.gix_kind())
        .map_err(|e| error(&e))?;
    // SAFETY: `index` owns the mapping and is open for this whole call.
    #[allow(unsafe_code)]
    unsafe {
        pages.release()
    };
    Ok((index, pages))
}

#[cfg(test)]
mod tests {
    /// Objects in the test index: its table of 32-bit offsets (128 KiB) is
    /// larger than the run of pages the kernel maps around one fault.
    const OBJECTS: u32 = 32 * 1024;

    /// A version 2 index of `OBJECTS` made-up ids, in a fresh file.
    fn write_index(path: &std::path::Path) -> Vec<[u8; 20]> {
        let ids: Vec<[u8; 20]> = (0..OBJECTS)
            .map(|i| {
                let mut id = [0x5a; 20];
                id[..4].copy_from_slice(&(i << 17).to_be_bytes());
                id
            })
            .collect();
        let mut out = b"\xfftOc\0\0\0\x02".to_vec();
        for byte in 0..=255u8 {
            let count = ids.iter().filter(|id| id[0] <= byte).count() as u32;
            out.extend_from_slice(&count.to_be_bytes());
        }
        ids.iter().for_each(|id| out.extend_from_slice(id));
        (0..OBJECTS).for_each(|i| out.extend_from_slice(&i.to_be_bytes()));
        (0..OBJECTS).for_each(|i| out.extend_from_slice(&(12 + 32 * i).to_be_bytes()));
        out.extend_from_slice(&[0; 40]);
        std::fs::write(path, out).unwrap();
        ids
    }

    #[test]
    fn an_opened_index_keeps_no_page_its_checks_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pack-test.idx");
        let ids = write_index(&path);
        let (index, pages) = super::open_index(&path, refstore_hash::ObjectFormat::Sha1).unwrap();
        // The checks read the whole offset table (OBJECTS * 4 bytes).
        let opened = refstore_fs::resident::mapping_resident_kib(pages.start).unwrap();
        assert!(opened < 64, "{opened} kB resident after opening");
        // Lookups read the pages back as they were.
        for (position, id) in ids.iter().enumerate().step_by(4099) {
            let id = refstore_hash::ObjectId::from_raw(id).unwrap();
            let found = index.lookup(id.as_gix());
            assert_eq!(found, Some(position as u32));
            assert_eq!(
                index.pack_offset_at_index(position as u32),
                12 + 32 * position as u64
            );
        }
        assert!(refstore_fs::resident::mapping_resident_kib(pages.start).unwrap() > opened);
        // SAFETY: `index` is open.
        #[allow(unsafe_code)]
        unsafe {
            pages.release()
        };
        assert!(refstore_fs::resident::mapping_resident_kib(pages.start).unwrap() < 64);
    }
}

//! The large objects of a pack being indexed, set aside from gix-pack's
//! indexer (which inflates every object whole to hash it) and hashed here
//! in pieces; [`crate::idx_v2::add_entries`] then puts them into the index.
//!
//! The indexer takes the pack's checksum from the trailer of the last
//! entry it sees: when that entry is set aside, its trailer moves to the
//! last entry the indexer does see, which is why one entry is held back.

use crate::admit::{stop_with, Stop};
use crate::idx_v2::IndexEntry;
use crate::large::{hash_compressed, IngestLimits};
use crate::{ObjectKind, OdbError};
use gix_pack::data::input::Entry;
use refstore_hash::{ObjectFormat, ObjectId};
use std::cell::RefCell;
use std::rc::Rc;

/// What was set aside: the large objects' index entries and the pack's
/// checksum.
#[derive(Debug, Default)]
pub(crate) struct Aside {
    pub(crate) entries: Vec<IndexEntry>,
    pub(crate) trailer: Option<ObjectId>,
}

/// The entries of `inner` but those of large objects.
pub(crate) struct SetAside<I> {
    inner: I,
    format: ObjectFormat,
    limits: IngestLimits,
    held: Option<Entry>,
    aside: Rc<RefCell<Aside>>,
    stop: Stop,
}

impl<I> SetAside<I> {
    pub(crate) fn new(
        inner: I,
        format: ObjectFormat,
        limits: IngestLimits,
        aside: Rc<RefCell<Aside>>,
        stop: Stop,
    ) -> Self {
        SetAside {
            inner,
            format,
            limits,
            held: None,
            aside,
            stop,
        }
    }

    fn set_aside(&mut self, kind: ObjectKind, entry: &Entry) -> Result<(), OdbError> {
        let compressed = entry.compressed.as_deref().unwrap_or_default();
        let id = hash_compressed(
            self.format,
            kind,
            entry.decompressed_size,
            compressed,
            entry.pack_offset,
        )?;
        let crc32 = entry
            .crc32
            .ok_or_else(|| OdbError::Pack("the pack reader computed no CRC32".into()))?;
        self.aside.borrow_mut().entries.push(IndexEntry {
            id,
            crc32,
            offset: entry.pack_offset,
        });
        Ok(())
    }
}

impl<I> Iterator for SetAside<I>
where
    I: Iterator<Item = gix_error::Result<Entry>>,
{
    type Item = gix_error::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let entry = match self.inner.next() {
                None => {
                    let mut last = self.held.take()?;
                    last.trailer = last
                        .trailer
                        .or_else(|| self.aside.borrow().trailer.map(|id| id.to_gix()));
                    return Some(Ok(last));
                }
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(entry)) => entry,
            };
            if let Some(trailer) = &entry.trailer {
                self.aside.borrow_mut().trailer = Some(ObjectId::from_gix(trailer));
            }
            let large = entry
                .header
                .as_kind()
                .filter(|_| self.limits.is_big(entry.decompressed_size));
            if let Some(kind) = large {
                if let Err(e) = self.set_aside(ObjectKind::from_gix(kind), &entry) {
                    return Some(Err(stop_with(&self.stop, e)));
                }
                continue;
            }
            if let Some(previous) = self.held.replace(entry) {
                return Some(Ok(previous));
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let held = usize::from(self.held.is_some());
        let (_, upper) = self.inner.size_hint();
        (0, upper.map(|u| u + held))
    }
}

//! Walking the records of one section (refs, objs or logs) across its
//! blocks, from a position found by seeking.

use std::marker::PhantomData;

use super::block::{Block, BlockType, Cursor};
use super::blocks::TableBlocks;
use super::error::{Error, Result};
use super::index_record::IndexRecord;
use super::record::Record;

/// Deepest index this reader follows; each level multiplies the blocks
/// reachable by the records of an index block, so real tables stay far
/// below it.
const MAX_INDEX_DEPTH: usize = 16;

/// Records of one kind, in key order, from wherever the iterator was
/// seeked to until the section ends. Fused: after an error it yields
/// nothing more.
pub(crate) struct SectionIter<'t, R> {
    table: &'t TableBlocks,
    block_type: BlockType,
    /// Position of the section's first block, or `None` when the table has
    /// no such section.
    start: Option<u64>,
    /// Root of the section's index, when it has one.
    index_root: Option<u64>,
    state: Option<(Block<'t>, Cursor)>,
    /// Positioned before the section's first record, whose block is read
    /// only when a record is asked for: most iterators are seeked at once.
    at_start: bool,
    /// What is known of the records before the cursor, so that a seek to
    /// a key after them can scan forward from the cursor instead of
    /// starting over from the index: lookups and seeks in ascending order
    /// mostly stay in one block.
    behind: Behind,
    /// Set at the end of the section and after an error.
    done: bool,
    marker: PhantomData<R>,
}

impl<'t, R: Record> SectionIter<'t, R> {
    /// An iterator over the section of `block_type` starting at `start`,
    /// positioned before its first record.
    pub(crate) fn new(
        table: &'t TableBlocks,
        block_type: BlockType,
        start: Option<u64>,
        index_root: Option<u64>,
    ) -> Result<Self> {
        Ok(SectionIter {
            table,
            block_type,
            start,
            index_root,
            state: None,
            at_start: true,
            behind: Behind::Unknown,
            done: false,
            marker: PhantomData,
        })
    }

    /// Goes back to the section's first record.
    pub(crate) fn rewind(&mut self) -> Result<()> {
        self.state = None;
        self.behind = Behind::Unknown;
        self.at_start = false;
        self.done = true;
        if let Some(start) = self.start {
            let block = self.read_block(start)?;
            let cursor = block.cursor();
            self.state = Some((block, cursor));
            self.done = false;
        }
        Ok(())
    }

    fn read_block(&self, position: u64) -> Result<Block<'t>> {
        let block = self.table.block(position)?;
        if block.block_type() != self.block_type {
            return Err(Error::corrupt(
                position,
                format!(
                    "expected a {} block, found a {} block",
                    self.block_type.name(),
                    block.block_type().name()
                ),
            ));
        }
        Ok(block)
    }

    /// Moves to the first record whose key is `>= key`.
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<()> {
        let behind = std::mem::replace(&mut self.behind, Behind::Unknown);
        let result = match self.seek_forward(&behind, key) {
            Ok(true) => Ok(()),
            Ok(false) => self.seek_inner(key),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                let mut remembered = match behind {
                    Behind::Below(buffer) => buffer,
                    _ => Vec::new(),
                };
                remembered.clear();
                remembered.extend_from_slice(key);
                self.behind = Behind::Below(remembered);
            }
            Err(_) => {
                self.state = None;
                self.done = true;
            }
        }
        result
    }

    /// The record with exactly `key`, leaving the iterator positioned at
    /// it (or where it would be) without consuming it, so that lookups of
    /// ascending keys each cost a short scan.
    pub(crate) fn find(&mut self, key: &[u8]) -> Result<Option<R>> {
        self.seek(key)?;
        let Some((block, cursor)) = self.state.as_ref() else {
            return Ok(None);
        };
        let mut probe = cursor.clone();
        match block.next::<R>(&mut probe, &self.table.ctx)? {
            Some((found, record)) if found == key => Ok(Some(record)),
            _ => Ok(None),
        }
    }

    /// Seeks by scanning forward from the cursor, when every record
    /// before it sorts below `key` and the answer lies in the cursor's
    /// block. False when a full seek is needed.
    fn seek_forward(&mut self, behind: &Behind, key: &[u8]) -> Result<bool> {
        if self.at_start {
            return Ok(false);
        }
        let state = self.state.as_mut();
        let allowed = match (behind, &state) {
            (Behind::Below(from), _) => key >= from.as_slice(),
            (Behind::UpToCursorKey, Some((_, cursor))) => key > cursor.key(),
            _ => false,
        };
        if !allowed {
            return Ok(false);
        }
        let Some((block, cursor)) = state else {
            // The previous seek found every key below its own, so below
            // `key` too.
            return Ok(self.done);
        };
        block.scan_to::<R>(cursor, key, &self.table.ctx)?;
        Ok(!block.at_end(cursor))
    }

    fn seek_inner(&mut self, key: &[u8]) -> Result<()> {
        self.state = None;
        self.at_start = false;
        self.done = true;
        let Some(start) = self.start else {
            return Ok(());
        };
        if let Some(root) = self.index_root {
            return self.seek_indexed(root, key);
        }
        let mut position = start;
        loop {
            let block = self.read_block(position)?;
            let cursor = block.seek::<R>(key, &self.table.ctx)?;
            if !block.at_end(&cursor) {
                self.state = Some((block, cursor));
                self.done = false;
                return Ok(());
            }
            match self.following(&block)? {
                Some(next) => position = next,
                None => return Ok(()),
            }
        }
    }

    /// Follows the index from `root` to the block that holds `key` or the
    /// first key after it.
    fn seek_indexed(&mut self, root: u64, key: &[u8]) -> Result<()> {
        let mut position = root;
        for _ in 0..MAX_INDEX_DEPTH {
            let block = self.table.block(position)?;
            match block.block_type() {
                BlockType::Index => {
                    let mut cursor = block.seek::<IndexRecord>(key, &self.table.ctx)?;
                    let Some((_, entry)) =
                        block.next::<IndexRecord>(&mut cursor, &self.table.ctx)?
                    else {
                        // Every key of the section sorts before `key`.
                        return Ok(());
                    };
                    // Indexes are written after the blocks they point to,
                    // so a pointer forward (or to itself) is corrupt and
                    // could loop.
                    if entry.position >= block.position() {
                        return Err(Error::corrupt(
                            block.position(),
                            format!("index block points forward to byte {}", entry.position),
                        ));
                    }
                    position = entry.position;
                }
                found if found == self.block_type => {
                    let cursor = block.seek::<R>(key, &self.table.ctx)?;
                    if block.at_end(&cursor) {
                        return Err(Error::corrupt(
                            position,
                            format!(
                                "the index says this {} block holds keys up to '{}', but its keys end earlier",
                                found.name(),
                                String::from_utf8_lossy(key)
                            ),
                        ));
                    }
                    self.state = Some((block, cursor));
                    self.done = false;
                    return Ok(());
                }
                other => {
                    return Err(Error::corrupt(
                        position,
                        format!(
                            "index points at a {} block inside the {} section",
                            other.name(),
                            self.block_type.name()
                        ),
                    ))
                }
            }
        }
        Err(Error::corrupt(
            root,
            format!("index is deeper than {MAX_INDEX_DEPTH} levels"),
        ))
    }

    /// The position of the block after `block` in this section, or `None`
    /// when the section ends there.
    fn following(&self, block: &Block<'t>) -> Result<Option<u64>> {
        let next = block.next_position();
        if next >= self.table.blocks_end() as u64 {
            return Ok(None);
        }
        let next_block = self.table.block(next)?;
        if next_block.block_type() == self.block_type {
            Ok(Some(next))
        } else {
            self.table
                .check_section_end(self.block_type, next, next_block.block_type())?;
            Ok(None)
        }
    }

    fn advance(&mut self) -> Result<Option<R>> {
        // After a record is returned, the cursor's key is that record's.
        self.behind = Behind::UpToCursorKey;
        if self.at_start {
            self.rewind()?;
        }
        loop {
            let Some((block, cursor)) = self.state.as_mut() else {
                return Ok(None);
            };
            if let Some((_, record)) = block.next::<R>(cursor, &self.table.ctx)? {
                return Ok(Some(record));
            }
            let (block, _) = self.state.take().expect("checked above");
            let next = self.following(&block)?;
            let Some(next) = next else {
                return Ok(None);
            };
            let block = self.read_block(next)?;
            let cursor = block.cursor();
            self.state = Some((block, cursor));
        }
    }
}

/// What a [`SectionIter`] knows of the records before its cursor.
enum Behind {
    /// Nothing: a seek starts from the index.
    Unknown,
    /// They sort below this key (the last seek's, with no record read since).
    Below(Vec<u8>),
    /// They sort at or below the key held by the cursor (the record read
    /// last).
    UpToCursorKey,
}

impl<R: Record> Iterator for SectionIter<'_, R> {
    type Item = Result<R>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                self.state = None;
                Some(Err(e))
            }
        }
    }
}

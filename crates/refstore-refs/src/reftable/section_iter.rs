//! Walking the records of one section (refs, objs or logs) across its
//! blocks, from a position found by seeking.

use std::marker::PhantomData;

use super::block::{Block, BlockType, Cursor};
use super::error::{Error, Result};
use super::index_record::IndexRecord;
use super::reader::Table;
use super::record::Record;

/// Deepest index this reader follows; each level multiplies the blocks
/// reachable by the records of an index block, so real tables stay far
/// below it.
const MAX_INDEX_DEPTH: usize = 16;

/// Records of one kind, in key order, from wherever the iterator was
/// seeked to until the section ends. Fused: after an error it yields
/// nothing more.
pub(crate) struct SectionIter<'t, R> {
    table: &'t Table,
    block_type: BlockType,
    /// Position of the section's first block, or `None` when the table has
    /// no such section.
    start: Option<u64>,
    /// Root of the section's index, when it has one.
    index_root: Option<u64>,
    state: Option<(Block<'t>, Cursor)>,
    /// Set at the end of the section and after an error.
    done: bool,
    marker: PhantomData<R>,
}

impl<'t, R: Record> SectionIter<'t, R> {
    /// An iterator over the section of `block_type` starting at `start`,
    /// positioned before its first record.
    pub(crate) fn new(
        table: &'t Table,
        block_type: BlockType,
        start: Option<u64>,
        index_root: Option<u64>,
    ) -> Result<Self> {
        let mut iter = SectionIter {
            table,
            block_type,
            start,
            index_root,
            state: None,
            done: true,
            marker: PhantomData,
        };
        iter.rewind()?;
        Ok(iter)
    }

    /// Goes back to the section's first record.
    pub(crate) fn rewind(&mut self) -> Result<()> {
        self.state = None;
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
        let result = self.seek_inner(key);
        if result.is_err() {
            self.state = None;
            self.done = true;
        }
        result
    }

    fn seek_inner(&mut self, key: &[u8]) -> Result<()> {
        self.state = None;
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
            let mut probe = cursor.clone();
            if block.next::<R>(&mut probe, &self.table.ctx)?.is_some() {
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
                    let mut probe = cursor.clone();
                    if block.next::<R>(&mut probe, &self.table.ctx)?.is_none() {
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

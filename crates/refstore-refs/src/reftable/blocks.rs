//! A table's bytes seen as blocks: the header and footer decoded, where
//! each block lies, and where each section ends. [`Table`](super::Table)
//! answers lookups on top of it, and the section iterators walk it.

use refstore_fs::Mapped;
use std::sync::Arc;

use super::block::{Block, BlockType};
use super::error::{Error, Result};
use super::header::{Header, Sections};
use super::index_record::IndexRecord;
use super::record::Context;

/// The blocks of one table, with what its header and footer say.
#[derive(Debug, Clone)]
pub(crate) struct TableBlocks {
    /// The table's bytes, usually mapped from its file: a table is never
    /// written after it is named, and a lookup touches only the blocks it
    /// needs (one ref among 100k reads a few pages of a 2.6 MB table).
    data: Arc<Mapped>,
    pub(crate) header: Header,
    pub(crate) sections: Sections,
    pub(crate) ctx: Context,
}

/// A footer's section position, where 0 means "no such section".
pub(crate) fn section_start(value: u64) -> Option<u64> {
    (value != 0).then_some(value)
}

impl TableBlocks {
    /// The blocks of `data`, whose header and footer have been decoded.
    pub(crate) fn new(data: Arc<Mapped>, header: Header, sections: Sections) -> Self {
        TableBlocks {
            ctx: Context {
                hash_len: header.version.object_format().raw_len(),
                min_update_index: header.min_update_index,
            },
            data,
            header,
            sections,
        }
    }

    /// Bytes of the blocks, without header and footer.
    pub(crate) fn blocks_len(&self) -> u64 {
        let version = self.header.version;
        (self.data.len() - version.header_len() - version.footer_len()) as u64
    }

    /// Where the blocks end and the footer begins.
    pub(crate) fn blocks_end(&self) -> usize {
        self.data.len() - self.header.version.footer_len()
    }

    pub(crate) fn block(&self, position: u64) -> Result<Block<'_>> {
        Block::read(
            &self.data,
            position,
            self.blocks_end(),
            self.header.version.header_len(),
            self.header.block_size,
        )
    }

    /// Checks that the section of `section` ends where the footer and the
    /// section's index say it does, so a damaged block type cannot silently
    /// cut a section short. `found` is the type of the block at `at`, the
    /// first one after the section.
    pub(crate) fn check_section_end(
        &self,
        section: BlockType,
        at: u64,
        found: BlockType,
    ) -> Result<()> {
        let s = &self.sections;
        let index_root = match section {
            BlockType::Ref => s.ref_index_position,
            BlockType::Obj => s.obj_index_position,
            BlockType::Log => s.log_index_position,
            BlockType::Index => 0,
        };
        let ends_here = if index_root != 0 {
            // The index follows the section; its last entry names the
            // section's last block.
            found == BlockType::Index && at > self.last_block_by_index(index_root, section)?
        } else {
            let next_section = match section {
                BlockType::Ref => [s.obj_position, s.log_position]
                    .into_iter()
                    .find(|&p| p != 0),
                BlockType::Obj => section_start(s.log_position),
                BlockType::Log | BlockType::Index => None,
            };
            next_section == Some(at)
        };
        if ends_here {
            return Ok(());
        }
        Err(Error::corrupt(
            at,
            format!(
                "a {} block interrupts the {} section",
                found.name(),
                section.name()
            ),
        ))
    }

    /// The position of the last block of `section`, found by following the
    /// last entry of each level of the index at `root`.
    fn last_block_by_index(&self, root: u64, section: BlockType) -> Result<u64> {
        let mut position = root;
        for _ in 0..16 {
            let block = self.block(position)?;
            if block.block_type() == section {
                return Ok(position);
            }
            if block.block_type() != BlockType::Index {
                return Err(Error::corrupt(
                    position,
                    format!(
                        "the {} index leads to a {} block",
                        section.name(),
                        block.block_type().name()
                    ),
                ));
            }
            let mut cursor = block.cursor();
            let mut last = None;
            while let Some((_, entry)) = block.next::<IndexRecord>(&mut cursor, &self.ctx)? {
                last = Some(entry.position);
            }
            match last {
                Some(next) if next < position => position = next,
                _ => {
                    return Err(Error::corrupt(
                        position,
                        "index block has no entries before itself",
                    ))
                }
            }
        }
        Err(Error::corrupt(root, "index is deeper than 16 levels"))
    }
}

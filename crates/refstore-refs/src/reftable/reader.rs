//! Reading a table held in memory: header and footer checks, lookups of
//! refs by name and by object id, and iterators over refs and logs.
//!
//! A table is opened from its bytes; where they come from (a file read
//! through the Vfs, a test) is the caller's business.

use refstore_fs::Mapped;
use std::sync::Arc;

use super::block::BlockType;
use super::blocks::{section_start, TableBlocks};
use super::error::{Error, Result};
use super::header::{self, Header, Sections, Version};
use super::log_record::{log_key, LogRecord};
use super::obj_record::ObjRecord;
use super::ref_record::RefRecord;
use super::section_iter::SectionIter;
use crate::{ObjectFormat, ObjectId};

/// One reftable, opened from its bytes.
#[derive(Debug, Clone)]
pub struct Table {
    blocks: TableBlocks,
    /// The type of the block at position 0, when there is one.
    first_block: Option<BlockType>,
}

impl Table {
    /// Opens a table, checking its header, footer and CRC.
    pub fn new(data: impl Into<Mapped>) -> Result<Table> {
        let data = Arc::new(data.into());
        let (header, sections) = header::decode(&data)?;
        let mut table = Table {
            blocks: TableBlocks::new(data, header, sections),
            first_block: None,
        };
        if table.blocks.blocks_end() > header.version.header_len() {
            let first = table.blocks.block(0)?.block_type();
            let s = &table.blocks.sections;
            // Only a log-only table (nothing in the footer but, possibly, a
            // log index) may start with something other than refs.
            let log_only = s.ref_index_position == 0 && s.obj_position == 0 && s.log_position == 0;
            let valid = match first {
                BlockType::Ref => true,
                BlockType::Log => log_only,
                BlockType::Obj | BlockType::Index => false,
            };
            if !valid {
                return Err(Error::corrupt(
                    header.version.header_len(),
                    format!(
                        "the first block holds {} records, but a table starts with refs (or logs, when it holds nothing else)",
                        first.name()
                    ),
                ));
            }
            table.first_block = Some(first);
        }
        Ok(table)
    }

    /// The header's fields.
    pub fn header(&self) -> &Header {
        &self.blocks.header
    }

    /// The footer's section positions.
    pub fn sections(&self) -> &Sections {
        &self.blocks.sections
    }

    /// Format version.
    pub fn version(&self) -> Version {
        self.blocks.header.version
    }

    /// Hash of the ids stored in the table.
    pub fn object_format(&self) -> ObjectFormat {
        self.blocks.header.version.object_format()
    }

    /// Bytes of the table's blocks, without header and footer: its size
    /// for auto-compaction.
    pub fn blocks_len(&self) -> u64 {
        self.blocks.blocks_len()
    }

    /// Smallest update index of the table.
    pub fn min_update_index(&self) -> u64 {
        self.blocks.header.min_update_index
    }

    /// Largest update index of the table.
    pub fn max_update_index(&self) -> u64 {
        self.blocks.header.max_update_index
    }

    fn ref_section(&self) -> Option<u64> {
        (self.first_block == Some(BlockType::Ref)).then_some(0)
    }

    fn log_section(&self) -> Option<u64> {
        section_start(self.blocks.sections.log_position)
            .or((self.first_block == Some(BlockType::Log)).then_some(0))
    }

    /// Every ref record (deletions included) in name order.
    pub fn refs(&self) -> Result<RefIter<'_>> {
        Ok(RefIter(SectionIter::new(
            &self.blocks,
            BlockType::Ref,
            self.ref_section(),
            section_start(self.blocks.sections.ref_index_position),
        )?))
    }

    /// Ref records from the first whose name is `>= name`.
    pub fn seek_refs(&self, name: &[u8]) -> Result<RefIter<'_>> {
        let mut iter = self.refs()?;
        iter.seek(name)?;
        Ok(iter)
    }

    /// The record of `name` (a deletion record included), if the table has
    /// one.
    pub fn ref_record(&self, name: &[u8]) -> Result<Option<RefRecord>> {
        self.refs()?.find(name)
    }

    /// Every log record (deletions included): by name, newest first.
    pub fn logs(&self) -> Result<LogIter<'_>> {
        Ok(LogIter(SectionIter::new(
            &self.blocks,
            BlockType::Log,
            self.log_section(),
            section_start(self.blocks.sections.log_index_position),
        )?))
    }

    /// The log records of `name`, newest first.
    pub fn logs_for<'t>(
        &'t self,
        name: &'t [u8],
    ) -> Result<impl Iterator<Item = Result<LogRecord>> + 't> {
        let mut iter = self.logs()?;
        iter.seek(name)?;
        Ok(iter.take_while(move |r| r.as_ref().map_or(true, |r| r.name == name)))
    }

    /// The ref records (not deletions) whose value or peeled value is `id`,
    /// in name order. Uses the obj blocks when the table has them, and
    /// scans every ref otherwise.
    pub fn refs_for_object(&self, id: &ObjectId) -> Result<Vec<RefRecord>> {
        let names_id = |r: &RefRecord| r.value.object_ids().any(|x| x == id);
        let Some(obj_start) = section_start(self.blocks.sections.obj_position) else {
            return self.scan_refs_for(names_id);
        };
        let abbrev =
            &id.as_bytes()[..usize::from(self.blocks.sections.obj_id_len).min(id.as_bytes().len())];
        let mut objs = SectionIter::<ObjRecord>::new(
            &self.blocks,
            BlockType::Obj,
            Some(obj_start),
            section_start(self.blocks.sections.obj_index_position),
        )?;
        objs.seek(abbrev)?;
        let record = match objs.next().transpose()? {
            Some(record) if record.abbrev == abbrev => record,
            _ => return Ok(Vec::new()),
        };
        if record.positions.is_empty() {
            return self.scan_refs_for(names_id);
        }
        let mut found = Vec::new();
        for position in record.positions {
            let block = self.blocks.block(position)?;
            if block.block_type() != BlockType::Ref {
                return Err(Error::corrupt(
                    position,
                    format!(
                        "obj record points at a {} block, not a ref block",
                        block.block_type().name()
                    ),
                ));
            }
            let mut cursor = block.cursor();
            while let Some((_, record)) = block.next::<RefRecord>(&mut cursor, &self.blocks.ctx)? {
                if names_id(&record) {
                    found.push(record);
                }
            }
        }
        Ok(found)
    }

    fn scan_refs_for(&self, keep: impl Fn(&RefRecord) -> bool) -> Result<Vec<RefRecord>> {
        let mut found = Vec::new();
        for record in self.refs()? {
            let record = record?;
            if keep(&record) {
                found.push(record);
            }
        }
        Ok(found)
    }
}

/// Ref records in name order; re-seekable.
pub struct RefIter<'t>(SectionIter<'t, RefRecord>);

impl RefIter<'_> {
    /// Moves to the first record whose name is `>= name`.
    pub fn seek(&mut self, name: &[u8]) -> Result<()> {
        self.0.seek(name)
    }

    /// The record of `name` (a deletion record included), if the table
    /// has one. The iterator stays where `name` is, so looking names up
    /// in ascending order costs a short forward scan each.
    pub fn find(&mut self, name: &[u8]) -> Result<Option<RefRecord>> {
        self.0.find(name)
    }
}

impl Iterator for RefIter<'_> {
    type Item = Result<RefRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

/// Log records by name, newest first for each name; re-seekable.
pub struct LogIter<'t>(SectionIter<'t, LogRecord>);

impl LogIter<'_> {
    /// Moves to the newest record of the first name `>= name`.
    pub fn seek(&mut self, name: &[u8]) -> Result<()> {
        self.0.seek(&log_key(name, u64::MAX))
    }

    /// Moves to the record of `name` at `update_index`, or the first one
    /// after it (an older entry of `name`, or a later name).
    pub fn seek_entry(&mut self, name: &[u8], update_index: u64) -> Result<()> {
        self.0.seek(&log_key(name, update_index))
    }

    /// Moves to the first record whose encoded key is `>= key`.
    pub(crate) fn seek_key(&mut self, key: &[u8]) -> Result<()> {
        self.0.seek(key)
    }
}

impl Iterator for LogIter<'_> {
    type Item = Result<LogRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

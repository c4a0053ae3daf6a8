//! Writes one table into memory: ref blocks, the ref index, obj blocks and
//! their index, log blocks and their index, then the footer.
//!
//! Records go in key order: every ref first (sorted by name), then every
//! log record (sorted by name, newest first). The bytes returned by
//! [`Writer::finish`] are the whole table; storing them is the caller's
//! business.
//!
//! Layout choices, all within what the format allows:
//! - aligned tables pad ref, obj and index blocks with NULs to the block
//!   size; log blocks and the log index are never padded;
//! - a ref index is written when there are at least 4 ref blocks (aligned)
//!   or more than one (unaligned); obj blocks only with a ref index (small
//!   tables are scanned instead), and then always with an obj index; a log
//!   index from 2 log blocks on;
//! - an index too large for one block becomes a multi-level index;
//! - a log-only table starts its first log block right after the header, at
//!   position 0 like every first block, so its footer's `log_position` is 0,
//!   as git writes it (readers recognise the section by the first block's
//!   type; JGit 7 does not, and skips the logs of such a table).

use super::block::BlockType;
use super::block_writer::BlockWriter;
use super::error::{Error, Result};
use super::header::{encode_footer, Header, Sections, Version, MAX_BLOCK_SIZE};
use super::index_record::IndexRecord;
use super::log_record::{LogRecord, LogValue};
use super::obj_record::ObjRecord;
use super::record::{common_prefix, Context, Record};
use super::ref_record::RefRecord;
use crate::ObjectId;

/// How a table is laid out (git's `reftable.*` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Block size in bytes (`reftable.blockSize`, default 4096, at most
    /// 16777215). Every ref must fit in one block.
    pub block_size: u32,
    /// Records between restart points (`reftable.restartInterval`, default
    /// 16).
    pub restart_interval: u16,
    /// Write obj blocks mapping ids to ref blocks (`reftable.indexObjects`,
    /// default true).
    pub index_objects: bool,
    /// Pad blocks to `block_size` (default true). Unaligned tables record a
    /// block size of 0 in their header.
    pub align_blocks: bool,
    /// Format version, which fixes the hash.
    pub version: Version,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            block_size: 4096,
            restart_interval: 16,
            index_objects: true,
            align_blocks: true,
            version: Version::V1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Refs,
    Logs,
}

/// Builds a table in memory.
pub struct Writer {
    options: WriteOptions,
    header: Header,
    ctx: Context,
    out: Vec<u8>,
    stage: Stage,
    block: Option<BlockWriter>,
    /// The index records of the finished blocks of the current section.
    index: Vec<IndexRecord>,
    /// (id, position of a ref block naming it), for obj blocks; sorted and
    /// grouped once the refs are done.
    objects: Vec<(ObjectId, u64)>,
    last_key: Option<Vec<u8>>,
    sections: Sections,
}

impl Writer {
    /// Starts a table whose records' update indexes lie in
    /// `min_update_index..=max_update_index`.
    pub fn new(
        options: WriteOptions,
        min_update_index: u64,
        max_update_index: u64,
    ) -> Result<Writer> {
        let header_len = options.version.header_len() as u32;
        if options.block_size > MAX_BLOCK_SIZE || options.block_size < header_len + 64 {
            return Err(Error::InvalidInput(format!(
                "block size {} is outside {}..={MAX_BLOCK_SIZE}",
                options.block_size,
                header_len + 64
            )));
        }
        if options.restart_interval == 0 {
            return Err(Error::InvalidInput(
                "restart interval must be at least 1".into(),
            ));
        }
        if min_update_index > max_update_index {
            return Err(Error::InvalidInput(format!(
                "min_update_index {min_update_index} exceeds max_update_index {max_update_index}"
            )));
        }
        let header = Header {
            version: options.version,
            block_size: if options.align_blocks {
                options.block_size
            } else {
                0
            },
            min_update_index,
            max_update_index,
        };
        let mut out = Vec::new();
        header.encode(&mut out);
        Ok(Writer {
            options,
            header,
            ctx: Context {
                hash_len: options.version.object_format().raw_len(),
                min_update_index,
            },
            out,
            stage: Stage::Refs,
            block: None,
            index: Vec::new(),
            objects: Vec::new(),
            last_key: None,
            sections: Sections::default(),
        })
    }

    /// Adds a ref. Refs come in strictly increasing name order, before any
    /// log record.
    pub fn add_ref(&mut self, record: &RefRecord) -> Result<()> {
        if self.stage != Stage::Refs {
            return Err(Error::InvalidInput(format!(
                "ref '{}' added after log records; add every ref first",
                String::from_utf8_lossy(&record.name)
            )));
        }
        self.check_update_index(&record.name, record.update_index)?;
        for id in record.value.object_ids() {
            self.check_id_format(&record.name, id)?;
        }
        let key = record.key();
        self.check_order(&key)?;
        let position = self.add(BlockType::Ref, record, &key)?;
        if self.options.index_objects {
            for id in record.value.object_ids() {
                self.objects.push((*id, position));
            }
        }
        Ok(())
    }

    /// Adds a log record. Log records come in strictly increasing key order:
    /// by name, and for one name newest (highest update index) first.
    pub fn add_log(&mut self, record: &LogRecord) -> Result<()> {
        self.check_update_index(&record.name, record.update_index)?;
        if let LogValue::Update(entry) = &record.value {
            self.check_id_format(&record.name, &entry.old_id)?;
            self.check_id_format(&record.name, &entry.new_id)?;
        }
        if self.stage == Stage::Refs {
            self.finish_refs()?;
            self.stage = Stage::Logs;
            self.last_key = None;
        }
        let key = record.key();
        self.check_order(&key)?;
        self.add(BlockType::Log, record, &key)?;
        Ok(())
    }

    /// Finishes the table and returns its bytes.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        match self.stage {
            Stage::Refs => self.finish_refs()?,
            Stage::Logs => self.finish_logs()?,
        }
        encode_footer(&self.header, &self.sections, &mut self.out);
        Ok(self.out)
    }

    fn check_update_index(&self, name: &[u8], update_index: u64) -> Result<()> {
        if update_index < self.header.min_update_index
            || update_index > self.header.max_update_index
        {
            return Err(Error::InvalidInput(format!(
                "record of '{}' has update index {update_index}, outside the table's {}..={}",
                String::from_utf8_lossy(name),
                self.header.min_update_index,
                self.header.max_update_index
            )));
        }
        Ok(())
    }

    fn check_id_format(&self, name: &[u8], id: &ObjectId) -> Result<()> {
        if id.format() != self.options.version.object_format() {
            return Err(Error::InvalidInput(format!(
                "'{}' names a {} id in a {} table",
                String::from_utf8_lossy(name),
                id.format().name(),
                self.options.version.object_format().name()
            )));
        }
        Ok(())
    }

    fn check_order(&mut self, key: &[u8]) -> Result<()> {
        if let Some(previous) = &self.last_key {
            if key <= previous.as_slice() {
                return Err(Error::OutOfOrder {
                    key: String::from_utf8_lossy(key).into_owned(),
                    previous: String::from_utf8_lossy(previous).into_owned(),
                });
            }
        }
        self.last_key = Some(key.to_vec());
        Ok(())
    }

    /// Position the next block will have: the first block is at 0 and
    /// shares its bytes with the file header.
    fn next_block_position(&self) -> u64 {
        if self.out.len() == self.header.version.header_len() {
            0
        } else {
            self.out.len() as u64
        }
    }

    fn new_block(&self, block_type: BlockType) -> BlockWriter {
        BlockWriter::new(
            block_type,
            self.header_off(),
            self.options.block_size as usize,
            usize::from(self.options.restart_interval),
        )
    }

    /// File header bytes the next block shares (only the first block does).
    fn header_off(&self) -> usize {
        if self.next_block_position() == 0 {
            self.header.version.header_len()
        } else {
            0
        }
    }

    /// Adds a record to the current block of `block_type`, starting a new
    /// block when it is full. Returns the position of the block it went to.
    fn add<R: Record>(&mut self, block_type: BlockType, record: &R, key: &[u8]) -> Result<u64> {
        if self.block.is_none() {
            self.block = Some(self.new_block(block_type));
        }
        let block = self.block.as_mut().expect("just set");
        match block.add(record, key, &self.ctx) {
            Ok(true) => return Ok(self.next_block_position()),
            Ok(false) => self.flush_block(block_type)?,
            // Log blocks may exceed the block size (they are deflated); a
            // log record too large for a normal block gets one of its own.
            Err(Error::EntryTooBig { .. }) if block_type == BlockType::Log => {
                self.block = Some(BlockWriter::new(
                    block_type,
                    self.header_off(),
                    MAX_BLOCK_SIZE as usize,
                    1,
                ));
                self.block
                    .as_mut()
                    .expect("just set")
                    .add(record, key, &self.ctx)?;
                let position = self.next_block_position();
                self.flush_block(block_type)?;
                return Ok(position);
            }
            Err(e) => return Err(e),
        }
        let mut block = self.new_block(block_type);
        if !block.add(record, key, &self.ctx)? {
            unreachable!("an empty block either takes a record or reports it too big");
        }
        self.block = Some(block);
        Ok(self.next_block_position())
    }

    /// Writes out the current block (padded unless it holds logs) and
    /// records its index entry.
    fn flush_block(&mut self, block_type: BlockType) -> Result<()> {
        let Some(block) = self.block.take() else {
            return Ok(());
        };
        if block.is_empty() {
            return Ok(());
        }
        let position = self.next_block_position();
        let last_key = block.last_key().to_vec();
        let bytes = block.finish();
        self.out.extend_from_slice(&bytes);
        self.pad(position, block_type);
        self.index.push(IndexRecord { last_key, position });
        Ok(())
    }

    fn pad(&mut self, position: u64, block_type: BlockType) {
        let is_log_section = block_type == BlockType::Log || self.stage == Stage::Logs;
        if self.options.align_blocks && !is_log_section {
            let end = position as usize + self.options.block_size as usize;
            self.out.resize(end.max(self.out.len()), 0);
        }
    }

    /// Ends the ref section: last block, ref index, obj blocks and index.
    fn finish_refs(&mut self) -> Result<()> {
        self.flush_block(BlockType::Ref)?;
        let ref_blocks = std::mem::take(&mut self.index);
        let needs_index = if self.options.align_blocks {
            ref_blocks.len() >= 4
        } else {
            ref_blocks.len() > 1
        };
        if !needs_index {
            return Ok(());
        }
        self.sections.ref_index_position = self.write_index(ref_blocks)?;
        if !self.options.index_objects || self.objects.is_empty() {
            return Ok(());
        }
        let mut objects = std::mem::take(&mut self.objects);
        objects.sort_unstable();
        objects.dedup();
        let obj_id_len = abbreviation_len(objects.iter().map(|(id, _)| id), self.ctx.hash_len);
        self.sections.obj_id_len = obj_id_len as u8;
        self.sections.obj_position = self.next_block_position();
        fn abbrev(id: &ObjectId, len: usize) -> &[u8] {
            &id.as_bytes()[..len]
        }
        for group in objects.chunk_by(|a, b| abbrev(&a.0, obj_id_len) == abbrev(&b.0, obj_id_len)) {
            // Only ids sharing more than 30 bytes share an abbreviation;
            // their positions merge, and readers compare full ids anyway.
            let mut positions: Vec<u64> = group.iter().map(|&(_, position)| position).collect();
            positions.sort_unstable();
            positions.dedup();
            let record = ObjRecord {
                abbrev: abbrev(&group[0].0, obj_id_len).to_vec(),
                positions,
            };
            let key = record.abbrev.clone();
            match self.add(BlockType::Obj, &record, &key) {
                Ok(_) => {}
                // Too many positions for one block: store none, which tells
                // readers to scan every ref for this id.
                Err(Error::EntryTooBig { .. }) => {
                    let bare = ObjRecord {
                        abbrev: record.abbrev,
                        positions: Vec::new(),
                    };
                    self.add(BlockType::Obj, &bare, &key)?;
                }
                Err(e) => return Err(e),
            }
        }
        self.flush_block(BlockType::Obj)?;
        let obj_blocks = std::mem::take(&mut self.index);
        self.sections.obj_index_position = self.write_index(obj_blocks)?;
        Ok(())
    }

    /// Ends the log section: last block, then the log index.
    fn finish_logs(&mut self) -> Result<()> {
        self.flush_block(BlockType::Log)?;
        let log_blocks = std::mem::take(&mut self.index);
        if let Some(first) = log_blocks.first() {
            self.sections.log_position = first.position;
        }
        if log_blocks.len() >= 2 {
            self.sections.log_index_position = self.write_index(log_blocks)?;
        }
        Ok(())
    }

    /// Writes an index over `entries` (one record per block), adding levels
    /// until the top level fits one block. Returns the root's position.
    fn write_index(&mut self, mut entries: Vec<IndexRecord>) -> Result<u64> {
        loop {
            for entry in &entries {
                self.add(BlockType::Index, entry, &entry.last_key)?;
            }
            self.flush_block(BlockType::Index)?;
            let level = std::mem::take(&mut self.index);
            if level.len() == 1 {
                return Ok(level[0].position);
            }
            entries = level;
        }
    }
}

/// The shortest abbreviation length (at least 2 bytes) that keeps all `ids`
/// (sorted; repeats allowed) apart.
fn abbreviation_len<'a>(ids: impl Iterator<Item = &'a ObjectId>, hash_len: usize) -> usize {
    let mut longest_shared = 0;
    let mut previous: Option<&ObjectId> = None;
    for id in ids {
        if let Some(previous) = previous.filter(|p| *p != id) {
            longest_shared = longest_shared.max(common_prefix(previous.as_bytes(), id.as_bytes()));
        }
        previous = Some(id);
    }
    // The footer has five bits for the length: at most 31.
    (longest_shared + 1).clamp(2, hash_len.min(31))
}

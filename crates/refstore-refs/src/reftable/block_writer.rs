//! Builds one block: records with prefix-compressed keys, a restart point
//! every `restart_interval` records (a record stored with its full key, where
//! a reader's binary search can land), and the restart table at the end.
//! Log blocks are zlib-deflated after their 4-byte block header.

use std::io::Write;

use super::block::{BlockType, MAX_RESTARTS};
use super::error::{Error, Result};
use super::record::{encode_key, Context, Record};

/// A block under construction.
pub(crate) struct BlockWriter {
    block_type: BlockType,
    /// Bytes of the file header sharing this block (first block only).
    header_off: usize,
    /// Largest block length (file header included) before deflation.
    capacity: usize,
    restart_interval: usize,
    /// The block from its type byte on (the file header is not in it).
    buf: Vec<u8>,
    /// Restart offsets, from the start of the block (file header included).
    restarts: Vec<u32>,
    entries: usize,
    last_key: Vec<u8>,
    scratch: Vec<u8>,
}

impl BlockWriter {
    /// Starts a block of `block_type` holding at most `capacity` bytes.
    pub(crate) fn new(
        block_type: BlockType,
        header_off: usize,
        capacity: usize,
        restart_interval: usize,
    ) -> Self {
        let mut buf = Vec::with_capacity(capacity.min(1 << 16));
        buf.extend_from_slice(&[block_type.byte(), 0, 0, 0]);
        BlockWriter {
            block_type,
            header_off,
            capacity,
            restart_interval: restart_interval.max(1),
            buf,
            restarts: Vec::new(),
            entries: 0,
            last_key: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// True when no record was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The key of the last record added.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Bytes the block would take (before deflation) if `extra` more record
    /// bytes and `extra_restarts` restart points were added.
    fn len_with(&self, extra: usize, extra_restarts: usize) -> usize {
        self.header_off + self.buf.len() + extra + 3 * (self.restarts.len() + extra_restarts) + 2
    }

    /// Adds `record` (whose key is `key`) if it fits, returning false when
    /// the block is full. An empty block that cannot hold the record is an
    /// error: no block of this size ever could.
    pub(crate) fn add<R: Record>(&mut self, record: &R, key: &[u8], ctx: &Context) -> Result<bool> {
        let restart = self.entries % self.restart_interval == 0;
        self.scratch.clear();
        let previous: &[u8] = if restart { &[] } else { &self.last_key };
        encode_key(previous, key, record.value_type(), &mut self.scratch);
        record.encode_value(ctx, &mut self.scratch);
        let needed = self.len_with(self.scratch.len(), usize::from(restart));
        if needed > self.capacity || (restart && self.restarts.len() == MAX_RESTARTS) {
            if self.is_empty() {
                return Err(Error::EntryTooBig {
                    key: String::from_utf8_lossy(key).into_owned(),
                    needed,
                    block_size: self.capacity as u32,
                });
            }
            return Ok(false);
        }
        if restart {
            self.restarts
                .push((self.header_off + self.buf.len()) as u32);
        }
        self.buf.extend_from_slice(&self.scratch);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.entries += 1;
        Ok(true)
    }

    /// Finishes the block: appends the restart table, fills in the length
    /// and, for log blocks, deflates the records. Returns the block's bytes
    /// (without the file header), unpadded.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        for restart in &self.restarts {
            self.buf.extend_from_slice(&restart.to_be_bytes()[1..]);
        }
        self.buf
            .extend_from_slice(&(self.restarts.len() as u16).to_be_bytes());
        let block_len = (self.header_off + self.buf.len()) as u32;
        self.buf[1..4].copy_from_slice(&block_len.to_be_bytes()[1..]);
        if self.block_type != BlockType::Log {
            return self.buf;
        }
        let mut encoder = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(self.buf.len() / 2),
            flate2::Compression::default(),
        );
        encoder.write_all(&self.buf[4..]).expect("writing to a Vec");
        let deflated = encoder.finish().expect("writing to a Vec");
        let mut out = Vec::with_capacity(4 + deflated.len());
        out.extend_from_slice(&self.buf[..4]);
        out.extend_from_slice(&deflated);
        out
    }
}

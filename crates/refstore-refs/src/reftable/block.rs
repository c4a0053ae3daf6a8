//! Reading one block: its type, length, restart table, and the records
//! between, with binary search over the restart points.
//!
//! ```text
//! block_type uint24(block_len) records... uint24(restart_offset)+ uint16(restart_count) padding?
//! ```
//!
//! Offsets inside a block count from the block's start; the first block of
//! a file shares its bytes with the file header, so its offsets count from
//! the start of the file. Log blocks are deflated after the 4-byte block
//! header and are inflated here before use.

use std::borrow::Cow;

use super::error::{Error, Result};
use super::record::{decode_key, Context, Record};

/// Most restart points a block can list (the count is a `uint16`).
pub(crate) const MAX_RESTARTS: usize = 0xffff;

/// The kinds of block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockType {
    /// `r`: ref records.
    Ref,
    /// `o`: obj records.
    Obj,
    /// `g`: log records, deflated.
    Log,
    /// `i`: index records.
    Index,
}

impl BlockType {
    /// The type byte.
    pub(crate) fn byte(self) -> u8 {
        match self {
            BlockType::Ref => b'r',
            BlockType::Obj => b'o',
            BlockType::Log => b'g',
            BlockType::Index => b'i',
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            b'r' => BlockType::Ref,
            b'o' => BlockType::Obj,
            b'g' => BlockType::Log,
            b'i' => BlockType::Index,
            _ => return None,
        })
    }

    /// What the block holds, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BlockType::Ref => "ref",
            BlockType::Obj => "obj",
            BlockType::Log => "log",
            BlockType::Index => "index",
        }
    }
}

/// A parsed block.
#[derive(Debug, Clone)]
pub(crate) struct Block<'a> {
    /// The block from its start (file header included for the first block)
    /// to `block_len`; inflated for log blocks.
    data: Cow<'a, [u8]>,
    block_type: BlockType,
    /// Position of the block in the file.
    position: u64,
    /// Where the records start.
    records_start: usize,
    /// Where the restart table starts (the records end).
    restarts_start: usize,
    restart_count: usize,
    /// Position of the block that follows this one.
    next_position: u64,
}

impl<'a> Block<'a> {
    /// Reads the block at `position` of `table`, whose blocks end at `limit`
    /// (the footer). `header_len` is the file header's size, which the block
    /// at position 0 shares; `block_size` is the table's alignment (0 when
    /// unaligned).
    pub(crate) fn read(
        table: &'a [u8],
        position: u64,
        limit: usize,
        header_len: usize,
        block_size: u32,
    ) -> Result<Block<'a>> {
        let start = usize::try_from(position)
            .ok()
            .filter(|&p| p < limit)
            .ok_or_else(|| {
                Error::corrupt(position, format!("a block position {position} lies outside the table's blocks (which end at byte {limit})"))
            })?;
        // The block at position 0 shares its bytes with the file header
        // (whatever its type: a log-only file starts with a log block).
        let header_off = if start == 0 { header_len } else { 0 };
        let type_at = start + header_off;
        if type_at + 4 > limit {
            return Err(Error::corrupt(
                type_at,
                "block header runs past the end of the table's blocks",
            ));
        }
        let block_type = BlockType::from_byte(table[type_at]).ok_or_else(|| {
            Error::corrupt(
                type_at,
                format!("unknown block type {:#04x}", table[type_at]),
            )
        })?;
        let block_len = u32::from_be_bytes([
            0,
            table[type_at + 1],
            table[type_at + 2],
            table[type_at + 3],
        ]) as usize;
        let min_len = header_off + 4 + 2;
        if block_len < min_len {
            return Err(Error::corrupt(
                type_at,
                format!(
                    "{} block length {block_len} is too small to hold a restart count",
                    block_type.name()
                ),
            ));
        }
        let (data, next_position) = if block_type == BlockType::Log {
            let (inflated, consumed) =
                inflate(table, type_at + 4, limit, block_len - header_off - 4)?;
            let mut data = Vec::with_capacity(block_len);
            data.extend_from_slice(&table[start..type_at + 4]);
            data.extend_from_slice(&inflated);
            (Cow::Owned(data), (type_at + 4 + consumed) as u64)
        } else {
            let end = start + block_len;
            if end > limit {
                return Err(Error::corrupt(
                    type_at,
                    format!("{} block of {block_len} bytes runs past the end of the table's blocks (byte {limit})", block_type.name()),
                ));
            }
            let aligned = start + block_size as usize;
            let padded = block_size as usize > block_len && end < limit && table[end] == 0;
            if padded && aligned > limit {
                return Err(Error::corrupt(
                    end,
                    "block padding runs past the end of the table's blocks",
                ));
            }
            let next = if padded { aligned } else { end };
            (Cow::Borrowed(&table[start..end]), next as u64)
        };
        let restart_count = u16::from_be_bytes([data[block_len - 2], data[block_len - 1]]) as usize;
        let restarts_start = (block_len - 2)
            .checked_sub(3 * restart_count)
            .filter(|&s| s >= header_off + 4)
            .ok_or_else(|| {
                Error::corrupt(
                    position + block_len as u64 - 2,
                    format!(
                        "{restart_count} restart points do not fit a block of {block_len} bytes"
                    ),
                )
            })?;
        if restart_count == 0 {
            return Err(Error::corrupt(
                position + block_len as u64 - 2,
                "block has no restart points, so it holds no records",
            ));
        }
        let block = Block {
            data,
            block_type,
            position: start as u64,
            records_start: header_off + 4,
            restarts_start,
            restart_count,
            next_position,
        };
        let mut previous = 0;
        for i in 0..restart_count {
            let offset = block.restart(i);
            if offset < block.records_start || offset >= restarts_start || offset <= previous {
                return Err(Error::corrupt(
                    block.position + (restarts_start + 3 * i) as u64,
                    format!(
                        "restart offset {offset} is out of order or outside the block's records"
                    ),
                ));
            }
            previous = offset;
        }
        Ok(block)
    }

    /// The block's type.
    pub(crate) fn block_type(&self) -> BlockType {
        self.block_type
    }

    /// The block's position in the file.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// Position of the next block in the file.
    pub(crate) fn next_position(&self) -> u64 {
        self.next_position
    }

    fn restart(&self, i: usize) -> usize {
        let at = self.restarts_start + 3 * i;
        u32::from_be_bytes([0, self.data[at], self.data[at + 1], self.data[at + 2]]) as usize
    }

    /// A cursor at the block's first record.
    pub(crate) fn cursor(&self) -> Cursor {
        Cursor {
            offset: self.records_start,
            key: Vec::new(),
        }
    }

    /// A cursor at the first record whose key is `>= key`, found by binary
    /// search over the restart points and a scan from the last restart point
    /// not after `key`. The cursor is at the end when every key is smaller.
    pub(crate) fn seek<R: Record>(&self, key: &[u8], ctx: &Context) -> Result<Cursor> {
        // Find the first restart point whose key is greater than `key`.
        let (mut lo, mut hi) = (0, self.restart_count);
        let mut restart_key = Vec::new();
        while lo < hi {
            let mid = (lo + hi) / 2;
            let offset = self.restart(mid);
            restart_key.clear();
            decode_key(&self.data, offset, self.restarts_start, &mut restart_key)
                .map_err(|e| relocate(e, self.position))?;
            if restart_key.as_slice() > key {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut cursor = match lo {
            0 => self.cursor(),
            i => Cursor {
                offset: self.restart(i - 1),
                key: restart_key,
            },
        };
        cursor.key.clear();
        self.scan_to::<R>(&mut cursor, key, ctx)?;
        Ok(cursor)
    }

    /// Moves `cursor` forward to the first record whose key is `>= key`,
    /// or to the end of the block. Keys only are decoded: the records
    /// passed over are checked but not built.
    pub(crate) fn scan_to<R: Record>(
        &self,
        cursor: &mut Cursor,
        key: &[u8],
        ctx: &Context,
    ) -> Result<()> {
        let mut before = Vec::with_capacity(cursor.key.len());
        loop {
            if cursor.offset >= self.restarts_start {
                return Ok(());
            }
            let at = cursor.offset;
            let had_key = at > self.records_start && !cursor.key.is_empty();
            before.clone_from(&cursor.key);
            let (value_type, value_start) =
                decode_key(&self.data, at, self.restarts_start, &mut cursor.key)
                    .map_err(|e| relocate(e, self.position))?;
            if had_key && cursor.key <= before {
                return Err(out_of_order(
                    self.position as usize + at,
                    &cursor.key,
                    &before,
                ));
            }
            if cursor.key.as_slice() >= key {
                cursor.offset = at;
                std::mem::swap(&mut cursor.key, &mut before);
                return Ok(());
            }
            let used = R::value_len(
                &cursor.key,
                value_type,
                &self.data[value_start..self.restarts_start],
                value_start,
                ctx,
            )
            .map_err(|e| relocate(e, self.position))?;
            cursor.offset = value_start + used;
        }
    }

    /// True if `cursor` is past the block's last record.
    pub(crate) fn at_end(&self, cursor: &Cursor) -> bool {
        cursor.offset >= self.restarts_start
    }

    /// Decodes the record at `cursor` and moves past it; `None` at the end
    /// of the block. Returns the record's key with the record.
    pub(crate) fn next<R: Record>(
        &self,
        cursor: &mut Cursor,
        ctx: &Context,
    ) -> Result<Option<(Vec<u8>, R)>> {
        if cursor.offset >= self.restarts_start {
            return Ok(None);
        }
        let at = cursor.offset;
        let file_at = |offset: usize| self.position as usize + offset;
        let had_key = cursor.offset > self.records_start && !cursor.key.is_empty();
        let previous = had_key.then(|| cursor.key.clone());
        let (value_type, value_start) =
            decode_key(&self.data, at, self.restarts_start, &mut cursor.key)
                .map_err(|e| relocate(e, self.position))?;
        if let Some(previous) = previous {
            if cursor.key <= previous {
                return Err(out_of_order(file_at(at), &cursor.key, &previous));
            }
        }
        let (record, used) = R::decode(
            cursor.key.clone(),
            value_type,
            &self.data[value_start..self.restarts_start],
            value_start,
            ctx,
        )
        .map_err(|e| relocate(e, self.position))?;
        cursor.offset = value_start + used;
        Ok(Some((cursor.key.clone(), record)))
    }
}

/// The error for a key at file position `at` that does not sort after the
/// key before it.
fn out_of_order(at: usize, key: &[u8], previous: &[u8]) -> Error {
    Error::corrupt(
        at,
        format!(
            "key '{}' does not sort after the previous key '{}'",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(previous)
        ),
    )
}

/// Turns an in-block offset in `error` into a file position.
fn relocate(error: Error, block_position: u64) -> Error {
    match error {
        Error::Corrupt { offset, what } => Error::Corrupt {
            offset: offset.saturating_add(block_position),
            what,
        },
        other => other,
    }
}

/// Inflates a log block's records starting at `table[from..limit]` into
/// exactly `expected` bytes, returning them and the deflated bytes used.
fn inflate(table: &[u8], from: usize, limit: usize, expected: usize) -> Result<(Vec<u8>, usize)> {
    let mut inflater = flate2::Decompress::new(true);
    let mut out = Vec::with_capacity(expected);
    let status = inflater
        .decompress_vec(
            &table[from..limit],
            &mut out,
            flate2::FlushDecompress::Finish,
        )
        .map_err(|e| Error::corrupt(from, format!("log block does not inflate: {e}")))?;
    if status != flate2::Status::StreamEnd || out.len() != expected {
        return Err(Error::corrupt(
            from,
            format!(
                "log block inflates to {} bytes{}, but its header says {expected}",
                out.len(),
                if status == flate2::Status::StreamEnd {
                    ""
                } else {
                    " and more"
                }
            ),
        ));
    }
    Ok((out, inflater.total_in() as usize))
}

/// A position inside a block and the key of the record before it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cursor {
    offset: usize,
    key: Vec<u8>,
}

impl Cursor {
    /// The key of the record before the cursor (empty at a restart point).
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }
}

//! Log (reflog) records, keyed by `name '\0' reverse_int64(update_index)`
//! so that a ref's entries sort together, newest first.

use super::error::{Error, Result};
use super::record::{Context, Record, ValueReader};
use super::varint;
use crate::ObjectId;

/// One reflog entry's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogEntry {
    /// The value before the update (the null id for a creation).
    pub old_id: ObjectId,
    /// The value after the update (the null id for a deletion).
    pub new_id: ObjectId,
    /// The committer's name.
    pub committer_name: Vec<u8>,
    /// The committer's email, without `<>`.
    pub email: Vec<u8>,
    /// Seconds since the epoch.
    pub time: u64,
    /// Time zone offset in minutes east of GMT (`+0230` is 150).
    pub tz_offset: i16,
    /// The reflog message, possibly empty.
    pub message: Vec<u8>,
}

/// What a log record holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LogValue {
    /// A tombstone hiding the entry of the same key in older tables.
    Deletion,
    /// A reflog entry.
    Update(LogEntry),
}

/// One log record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogRecord {
    /// The ref the entry belongs to.
    pub name: Vec<u8>,
    /// The update index of the transaction that made the entry; unique per
    /// ref.
    pub update_index: u64,
    /// The entry, or a tombstone.
    pub value: LogValue,
}

/// The key of the log record of `name` at `update_index`.
pub(crate) fn log_key(name: &[u8], update_index: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 9);
    key.extend_from_slice(name);
    key.push(0);
    key.extend_from_slice(&(u64::MAX - update_index).to_be_bytes());
    key
}

impl Record for LogRecord {
    fn key(&self) -> Vec<u8> {
        log_key(&self.name, self.update_index)
    }

    fn value_type(&self) -> u8 {
        match self.value {
            LogValue::Deletion => 0,
            LogValue::Update(_) => 1,
        }
    }

    fn encode_value(&self, _ctx: &Context, out: &mut Vec<u8>) {
        let LogValue::Update(entry) = &self.value else {
            return;
        };
        out.extend_from_slice(entry.old_id.as_bytes());
        out.extend_from_slice(entry.new_id.as_bytes());
        for string in [&entry.committer_name, &entry.email] {
            varint::put(out, string.len() as u64);
            out.extend_from_slice(string);
        }
        varint::put(out, entry.time);
        out.extend_from_slice(&entry.tz_offset.to_be_bytes());
        varint::put(out, entry.message.len() as u64);
        out.extend_from_slice(&entry.message);
    }

    fn decode(
        mut key: Vec<u8>,
        value_type: u8,
        value: &[u8],
        offset: usize,
        ctx: &Context,
    ) -> Result<(Self, usize)> {
        if key.len() < 9 || key[key.len() - 9] != 0 {
            return Err(Error::corrupt(
                offset,
                format!(
                    "log key '{}' does not end in '\\0' and an 8-byte update index",
                    String::from_utf8_lossy(&key)
                ),
            ));
        }
        let reversed = u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"));
        key.truncate(key.len() - 9);
        let mut input = ValueReader::new(value, offset);
        let value = match value_type {
            0 => LogValue::Deletion,
            1 => {
                let old_id = input.object_id(ctx.hash_len, "log old id")?;
                let new_id = input.object_id(ctx.hash_len, "log new id")?;
                let committer_name = input.string("log committer name")?.to_vec();
                let email = input.string("log committer email")?.to_vec();
                let time = input.varint()?;
                let tz = input.bytes(2, "log time zone")?;
                let tz_offset = i16::from_be_bytes([tz[0], tz[1]]);
                let message = input.string("log message")?.to_vec();
                LogValue::Update(LogEntry {
                    old_id,
                    new_id,
                    committer_name,
                    email,
                    time,
                    tz_offset,
                    message,
                })
            }
            other => {
                return Err(Error::corrupt(
                    offset,
                    format!(
                        "log record of '{}' has reserved type {other}",
                        String::from_utf8_lossy(&key)
                    ),
                ))
            }
        };
        Ok((
            LogRecord {
                name: key,
                update_index: u64::MAX - reversed,
                value,
            },
            input.consumed(),
        ))
    }
}

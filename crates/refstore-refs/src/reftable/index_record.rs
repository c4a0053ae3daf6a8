//! Index records: the last key of a block and that block's position. They
//! form the ref, obj and log indexes, possibly over several levels.

use super::error::{Error, Result};
use super::record::{Context, Record, ValueReader};
use super::varint;

/// Points at the block whose last key is `last_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexRecord {
    /// The last key of the block.
    pub last_key: Vec<u8>,
    /// The block's position from the start of the file.
    pub position: u64,
}

impl Record for IndexRecord {
    fn key(&self) -> Vec<u8> {
        self.last_key.clone()
    }

    fn value_type(&self) -> u8 {
        0
    }

    fn encode_value(&self, _ctx: &Context, out: &mut Vec<u8>) {
        varint::put(out, self.position);
    }

    fn decode(
        key: Vec<u8>,
        value_type: u8,
        value: &[u8],
        offset: usize,
        _ctx: &Context,
    ) -> Result<(Self, usize)> {
        if value_type != 0 {
            return Err(Error::corrupt(
                offset,
                format!("index record has value type {value_type}, expected 0"),
            ));
        }
        let mut input = ValueReader::new(value, offset);
        let position = input.varint()?;
        Ok((
            IndexRecord {
                last_key: key,
                position,
            },
            input.consumed(),
        ))
    }
}

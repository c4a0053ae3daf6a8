//! Obj records: an abbreviated object id and the positions of the ref
//! blocks holding refs that point at it (directly or as a peeled tag).

use super::error::{Error, Result};
use super::record::{Context, Record, ValueReader};
use super::varint;

/// The refs blocks of one abbreviated id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjRecord {
    /// The id's first `obj_id_len` bytes.
    pub abbrev: Vec<u8>,
    /// Ascending ref block positions; empty when the writer left them out
    /// (too many to fit a block), which tells readers to scan every ref.
    pub positions: Vec<u64>,
}

impl Record for ObjRecord {
    fn key(&self) -> Vec<u8> {
        self.abbrev.clone()
    }

    fn value_type(&self) -> u8 {
        match self.positions.len() {
            n @ 1..=7 => n as u8,
            _ => 0,
        }
    }

    fn encode_value(&self, _ctx: &Context, out: &mut Vec<u8>) {
        if self.value_type() == 0 {
            varint::put(out, self.positions.len() as u64);
        }
        let mut prior = 0;
        for &position in &self.positions {
            varint::put(out, position - prior);
            prior = position;
        }
    }

    fn decode(
        key: Vec<u8>,
        value_type: u8,
        value: &[u8],
        offset: usize,
        _ctx: &Context,
    ) -> Result<(Self, usize)> {
        let mut input = ValueReader::new(value, offset);
        let count = match value_type {
            0 => input.varint()?,
            n => u64::from(n),
        };
        // Each delta takes at least a byte: a larger count is corrupt, and
        // checking it first keeps a damaged count from allocating wildly.
        if count > value.len() as u64 {
            return Err(Error::corrupt(
                offset,
                format!("obj record claims {count} positions, more than its block holds"),
            ));
        }
        let mut positions = Vec::with_capacity(count as usize);
        let mut prior = 0u64;
        for _ in 0..count {
            let at = offset + input.consumed();
            let delta = input.varint()?;
            let position = prior
                .checked_add(delta)
                .ok_or_else(|| Error::corrupt(at, "obj record position overflows"))?;
            positions.push(position);
            prior = position;
        }
        Ok((
            ObjRecord {
                abbrev: key,
                positions,
            },
            input.consumed(),
        ))
    }
}

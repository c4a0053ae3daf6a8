//! What every record shares: a key stored with prefix compression against
//! the previous record of its block, a 3-bit value type, and a value whose
//! encoding depends on the kind of record.
//!
//! ```text
//! varint( prefix_length )
//! varint( (suffix_length << 3) | value_type )
//! suffix
//! value
//! ```

use super::error::{Error, Result};
use super::varint;

/// What decoding and encoding values needs to know about the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// Length of a raw object id (20 or 32).
    pub hash_len: usize,
    /// The table's `min_update_index`, the base of ref update-index deltas.
    pub min_update_index: u64,
}

/// A kind of record (ref, log, obj, index): how its key and value are
/// stored. Blocks hold records of one kind.
pub(crate) trait Record: Sized {
    /// The record's key, compared bytewise to order records.
    fn key(&self) -> Vec<u8>;
    /// The 3-bit value type stored next to the suffix length.
    fn value_type(&self) -> u8;
    /// Appends the encoded value.
    fn encode_value(&self, ctx: &Context, out: &mut Vec<u8>);
    /// Decodes a record from its key, value type and the bytes that follow
    /// its suffix, returning the record and the bytes its value took.
    /// `offset` is where `value` starts, for error messages.
    fn decode(
        key: Vec<u8>,
        value_type: u8,
        value: &[u8],
        offset: usize,
        ctx: &Context,
    ) -> Result<(Self, usize)>;

    /// The bytes a value of `value_type` takes at the start of `value`,
    /// checked as [`Record::decode`] checks them but without building the
    /// record: seeking skips over records it does not return.
    fn value_len(
        key: &[u8],
        value_type: u8,
        value: &[u8],
        offset: usize,
        ctx: &Context,
    ) -> Result<usize> {
        Self::decode(key.to_vec(), value_type, value, offset, ctx).map(|(_, used)| used)
    }
}

/// Appends a record's key part, compressed against `previous` (pass an empty
/// key at restart points).
pub(crate) fn encode_key(previous: &[u8], key: &[u8], value_type: u8, out: &mut Vec<u8>) {
    let prefix = common_prefix(previous, key);
    let suffix = &key[prefix..];
    varint::put(out, prefix as u64);
    varint::put(out, ((suffix.len() as u64) << 3) | u64::from(value_type));
    out.extend_from_slice(suffix);
}

/// Decodes a record's key part from `data[pos..end]`, updating `key` (which
/// holds the previous key) in place. Returns the value type and the position
/// after the suffix.
pub(crate) fn decode_key(
    data: &[u8],
    pos: usize,
    end: usize,
    key: &mut Vec<u8>,
) -> Result<(u8, usize)> {
    let (prefix, used) = varint::get(&data[pos..end], pos)?;
    let mut at = pos + used;
    let (suffix_and_type, used) = varint::get(&data[at..end], at)?;
    at += used;
    if prefix > key.len() as u64 {
        return Err(Error::corrupt(
            pos,
            format!(
                "record shares {prefix} bytes with a previous key of only {} bytes",
                key.len()
            ),
        ));
    }
    let suffix_len = suffix_and_type >> 3;
    if suffix_len > (end - at) as u64 {
        return Err(Error::corrupt(
            pos,
            format!("record key suffix of {suffix_len} bytes runs past the end of its block"),
        ));
    }
    let suffix_len = suffix_len as usize;
    key.truncate(prefix as usize);
    key.extend_from_slice(&data[at..at + suffix_len]);
    Ok(((suffix_and_type & 7) as u8, at + suffix_len))
}

/// Length of the longest common prefix of `a` and `b`.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A cursor over a record's value bytes, turning every short read into a
/// corruption error at the right offset.
pub(crate) struct ValueReader<'a> {
    data: &'a [u8],
    pos: usize,
    offset: usize,
}

impl<'a> ValueReader<'a> {
    /// Starts reading `data`, which begins at `offset` in the table.
    pub(crate) fn new(data: &'a [u8], offset: usize) -> Self {
        ValueReader {
            data,
            pos: 0,
            offset,
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }

    /// Reads a varint.
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let (value, used) = varint::get(&self.data[self.pos..], self.offset + self.pos)?;
        self.pos += used;
        Ok(value)
    }

    /// Reads `len` raw bytes; `what` names them in the error.
    pub(crate) fn bytes(&mut self, len: usize, what: &str) -> Result<&'a [u8]> {
        if self.data.len() - self.pos < len {
            return Err(Error::corrupt(
                self.offset + self.pos,
                format!("{what} of {len} bytes runs past the end of its block"),
            ));
        }
        let bytes = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    /// Reads a varint length followed by that many bytes.
    pub(crate) fn string(&mut self, what: &str) -> Result<&'a [u8]> {
        let at = self.offset + self.pos;
        let len = self.varint()?;
        let len = usize::try_from(len)
            .map_err(|_| Error::corrupt(at, format!("{what} length {len} is absurd")))?;
        self.bytes(len, what)
    }

    /// Reads a raw object id.
    pub(crate) fn object_id(&mut self, hash_len: usize, what: &str) -> Result<crate::ObjectId> {
        let raw = self.bytes(hash_len, what)?;
        Ok(crate::ObjectId::from_raw(raw).expect("hash_len is 20 or 32"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_compression_round_trips() {
        let mut out = Vec::new();
        encode_key(b"refs/heads/main", b"refs/heads/maint", 1, &mut out);
        assert_eq!(out[0], 15);
        let mut key = b"refs/heads/main".to_vec();
        let (value_type, end) = decode_key(&out, 0, out.len(), &mut key).unwrap();
        assert_eq!((value_type, end), (1, out.len()));
        assert_eq!(key, b"refs/heads/maint");
    }

    #[test]
    fn impossible_prefixes_and_suffixes_are_errors() {
        let mut out = Vec::new();
        encode_key(b"abcdef", b"abcdeg", 0, &mut out);
        let mut short = b"ab".to_vec();
        assert!(decode_key(&out, 0, out.len(), &mut short).is_err());
        let mut key = b"abcdef".to_vec();
        assert!(decode_key(&out, 0, out.len() - 1, &mut key).is_err());
    }
}

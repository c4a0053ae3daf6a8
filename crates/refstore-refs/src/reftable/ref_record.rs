//! Ref records: a name, the update index that last changed it, and its
//! value (deletion, one id, id and peeled id, or symbolic target).

use super::error::{Error, Result};
use super::record::{Context, Record, ValueReader};
use super::varint;
use crate::ObjectId;

/// The value a ref record stores.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RefValue {
    /// A tombstone: the ref was deleted (it hides the ref in older tables).
    Deletion,
    /// A direct ref.
    Object(ObjectId),
    /// An annotated tag with the object it finally points at.
    Peeled {
        /// The tag object.
        target: ObjectId,
        /// The peeled value (`^{}`).
        peeled: ObjectId,
    },
    /// A symbolic ref: the full name of its target.
    Symbolic(Vec<u8>),
}

impl RefValue {
    /// The ids this value names (for the object index).
    pub fn object_ids(&self) -> impl Iterator<Item = &ObjectId> {
        let (a, b) = match self {
            RefValue::Object(id) => (Some(id), None),
            RefValue::Peeled { target, peeled } => (Some(target), Some(peeled)),
            RefValue::Deletion | RefValue::Symbolic(_) => (None, None),
        };
        a.into_iter().chain(b)
    }
}

/// One ref as a table stores it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefRecord {
    /// The full ref name.
    pub name: Vec<u8>,
    /// The update index (transaction number) that set this value.
    pub update_index: u64,
    /// The value.
    pub value: RefValue,
}

impl Record for RefRecord {
    fn key(&self) -> Vec<u8> {
        self.name.clone()
    }

    fn value_type(&self) -> u8 {
        match self.value {
            RefValue::Deletion => 0,
            RefValue::Object(_) => 1,
            RefValue::Peeled { .. } => 2,
            RefValue::Symbolic(_) => 3,
        }
    }

    fn encode_value(&self, ctx: &Context, out: &mut Vec<u8>) {
        // The writer checked update_index >= min_update_index.
        varint::put(out, self.update_index - ctx.min_update_index);
        match &self.value {
            RefValue::Deletion => {}
            RefValue::Object(id) => out.extend_from_slice(id.as_bytes()),
            RefValue::Peeled { target, peeled } => {
                out.extend_from_slice(target.as_bytes());
                out.extend_from_slice(peeled.as_bytes());
            }
            RefValue::Symbolic(target) => {
                varint::put(out, target.len() as u64);
                out.extend_from_slice(target);
            }
        }
    }

    fn decode(
        key: Vec<u8>,
        value_type: u8,
        value: &[u8],
        offset: usize,
        ctx: &Context,
    ) -> Result<(Self, usize)> {
        let mut input = ValueReader::new(value, offset);
        let delta = input.varint()?;
        let update_index = ctx
            .min_update_index
            .checked_add(delta)
            .ok_or_else(|| Error::corrupt(offset, "ref update index overflows 64 bits"))?;
        let value = match value_type {
            0 => RefValue::Deletion,
            1 => RefValue::Object(input.object_id(ctx.hash_len, "ref value")?),
            2 => RefValue::Peeled {
                target: input.object_id(ctx.hash_len, "ref value")?,
                peeled: input.object_id(ctx.hash_len, "peeled ref value")?,
            },
            3 => RefValue::Symbolic(input.string("symbolic ref target")?.to_vec()),
            other => {
                return Err(Error::corrupt(
                    offset,
                    format!(
                        "ref '{}' has reserved value type {other}",
                        String::from_utf8_lossy(&key)
                    ),
                ))
            }
        };
        Ok((
            RefRecord {
                name: key,
                update_index,
                value,
            },
            input.consumed(),
        ))
    }
    fn value_len(
        _key: &[u8],
        value_type: u8,
        value: &[u8],
        offset: usize,
        ctx: &Context,
    ) -> Result<usize> {
        let mut input = ValueReader::new(value, offset);
        input.varint()?;
        match value_type {
            0 => {}
            1 => {
                input.bytes(ctx.hash_len, "ref value")?;
            }
            2 => {
                input.bytes(ctx.hash_len, "ref value")?;
                input.bytes(ctx.hash_len, "peeled ref value")?;
            }
            3 => {
                input.string("symbolic ref target")?;
            }
            other => {
                return Err(Error::corrupt(
                    offset,
                    format!("ref has reserved value type {other}"),
                ))
            }
        }
        Ok(input.consumed())
    }
}

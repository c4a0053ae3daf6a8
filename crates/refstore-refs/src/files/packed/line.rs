//! The text of a `packed-refs` file, line by line: what its header says
//! ([`Traits`]), how a `<hex id> <name>` line splits and is checked, and
//! the error naming a bad line. Both readers, the parsed table and the
//! in-place [`Scan`](super::Scan), build on these.

use crate::value::Peeled;
use crate::{ObjectFormat, ObjectId, RefName};

/// Why a file that claims the `sorted` trait is refused.
pub(super) const NOT_SORTED: &str = "the file says it is sorted but is not";

/// A line of `packed-refs` that is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl std::fmt::Display for PackedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// What the header line says about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traits {
    /// `fully-peeled`: every annotated tag has its `^` line.
    pub fully_peeled: bool,
    /// `peeled`: every annotated tag below `refs/tags/` has its `^` line.
    pub tags_peeled: bool,
    /// `sorted`: the refs are in byte order.
    pub sorted: bool,
}

impl Traits {
    const PREFIX: &'static [u8] = b"# pack-refs with:";

    /// The traits of `text` and where its first ref line starts.
    pub fn of(text: &[u8]) -> (Traits, usize) {
        if !text.starts_with(Self::PREFIX) {
            return (Traits::default(), 0);
        }
        let end = memchr_newline(text).map_or(text.len(), |i| i + 1);
        let words = &text[Self::PREFIX.len()..end];
        let has = |t: &[u8]| words.split(|&b| b == b' ' || b == b'\n').any(|w| w == t);
        let traits = Traits {
            fully_peeled: has(b"fully-peeled"),
            tags_peeled: has(b"peeled"),
            sorted: has(b"sorted"),
        };
        (traits, end)
    }

    /// What a ref line tells about its peeled value, given its `^` line.
    pub(super) fn peeled(&self, name: &[u8], peeled: Option<ObjectId>) -> Peeled {
        match peeled {
            Some(id) => Peeled::Tag(id),
            None if self.fully_peeled || (self.tags_peeled && name.starts_with(b"refs/tags/")) => {
                Peeled::NotATag
            }
            None => Peeled::Unknown,
        }
    }
}

/// Parses `<hex id> <name>` (the name starts after the id and a space),
/// checking both; returns the id.
pub(super) fn parse_ref_line(line: &[u8], format: ObjectFormat) -> Result<ObjectId, &'static str> {
    let (id, name) = split_ref_line(line, format)?;
    RefName::validate(name).map_err(|_| INVALID_NAME)?;
    Ok(id)
}

/// Why a ref line's name is refused.
pub(super) const INVALID_NAME: &str = "invalid reference name";

/// Splits `<hex id> <name>` into the id and the name, which is not checked.
pub(super) fn split_ref_line(
    line: &[u8],
    format: ObjectFormat,
) -> Result<(ObjectId, &[u8]), &'static str> {
    let hex_len = format.hex_len();
    if line.len() < hex_len + 2 || line[hex_len] != b' ' {
        return Err("not '<object id> <refname>'");
    }
    let id = parse_id(&line[..hex_len], format).ok_or("bad object id")?;
    Ok((id, &line[hex_len + 1..]))
}

pub(super) fn parse_id(hex: &[u8], format: ObjectFormat) -> Option<ObjectId> {
    ObjectId::from_hex_any_case(hex, format).ok()
}

pub(super) fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

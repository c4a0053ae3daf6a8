//! Object ids and the repository's object format (SHA-1 or SHA-256).
//!
//! Ids given in full hex are parsed as ids, never looked up as abbreviations:
//! ref storage has no business resolving ambiguity, and skipping it saves
//! large transactions a lookup per id.

use crate::hex::{self, Case};
use std::fmt;
use std::str::FromStr;

/// The hash function of a repository (`extensions.objectFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ObjectFormat {
    /// SHA-1, 20-byte ids (the default).
    #[default]
    Sha1,
    /// SHA-256, 32-byte ids.
    Sha256,
}

impl ObjectFormat {
    /// Length of a raw id in bytes.
    pub const fn raw_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 20,
            ObjectFormat::Sha256 => 32,
        }
    }

    /// Length of a hex id in characters.
    pub const fn hex_len(self) -> usize {
        self.raw_len() * 2
    }

    /// The name git uses in config and capabilities (`sha1`, `sha256`).
    pub const fn name(self) -> &'static str {
        match self {
            ObjectFormat::Sha1 => "sha1",
            ObjectFormat::Sha256 => "sha256",
        }
    }

    /// Parses a git object-format name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "sha1" => Some(ObjectFormat::Sha1),
            "sha256" => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }

    /// The number git's binary files (commit-graph, multi-pack-index)
    /// name the format by in their headers: 1 for SHA-1, 2 for SHA-256.
    pub const fn file_id(self) -> u8 {
        match self {
            ObjectFormat::Sha1 => 1,
            ObjectFormat::Sha256 => 2,
        }
    }

    /// gitoxide's name for the format.
    pub const fn gix_kind(self) -> gix_hash::Kind {
        match self {
            ObjectFormat::Sha1 => gix_hash::Kind::Sha1,
            ObjectFormat::Sha256 => gix_hash::Kind::Sha256,
        }
    }

    /// The all-zero id, which git uses for "does not exist".
    pub const fn null_id(self) -> ObjectId {
        ObjectId {
            format: self,
            bytes: [0; 32],
        }
    }
}

/// An object id of either format.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    format: ObjectFormat,
    bytes: [u8; 32],
}

impl PartialOrd for ObjectFormat {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectFormat {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.raw_len().cmp(&other.raw_len())
    }
}

/// Why a string or byte slice is not an object id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseOidError {
    /// Neither 40 nor 64 hex characters (or not the expected one of them).
    #[error("'{0}' is not a full object id")]
    Length(String),
    /// A character outside `[0-9a-f]`.
    #[error("'{0}' is not a valid object id: it has a character that is not lower-case hex")]
    NotHex(String),
}

impl ObjectId {
    /// Builds an id from raw bytes; `None` unless `raw` has 20 or 32 bytes.
    #[inline]
    pub fn from_raw(raw: &[u8]) -> Option<Self> {
        let format = match raw.len() {
            20 => ObjectFormat::Sha1,
            32 => ObjectFormat::Sha256,
            _ => return None,
        };
        let mut bytes = [0; 32];
        bytes[..raw.len()].copy_from_slice(raw);
        Some(ObjectId { format, bytes })
    }

    /// Parses a full hex id of the given format. Upper-case hex is rejected,
    /// as git does for ids stored in refs.
    pub fn from_hex_in(hex: &[u8], format: ObjectFormat) -> Result<Self, ParseOidError> {
        Self::decode(hex, format, Case::Lower)
    }

    /// Parses a full hex id of the given format in either case, as git
    /// reads ids from ref files (`packed-refs`, loose refs).
    pub fn from_hex_any_case(hex: &[u8], format: ObjectFormat) -> Result<Self, ParseOidError> {
        Self::decode(hex, format, Case::Any)
    }

    /// Decodes `hex` ([`hex::decode`]): ids are parsed by the million
    /// when a large `packed-refs` is read.
    fn decode(hex: &[u8], format: ObjectFormat, case: Case) -> Result<Self, ParseOidError> {
        if hex.len() != format.hex_len() {
            return Err(ParseOidError::Length(
                String::from_utf8_lossy(hex).into_owned(),
            ));
        }
        let mut bytes = [0; 32];
        let valid = match format {
            ObjectFormat::Sha1 => hex::decode::<20>(hex, case, &mut bytes),
            ObjectFormat::Sha256 => hex::decode::<32>(hex, case, &mut bytes),
        };
        if !valid {
            return Err(ParseOidError::NotHex(
                String::from_utf8_lossy(hex).into_owned(),
            ));
        }
        Ok(ObjectId { format, bytes })
    }

    /// Parses a full hex id of either length.
    pub fn from_hex(hex: &[u8]) -> Result<Self, ParseOidError> {
        match hex.len() {
            40 => Self::from_hex_in(hex, ObjectFormat::Sha1),
            64 => Self::from_hex_in(hex, ObjectFormat::Sha256),
            _ => Err(ParseOidError::Length(
                String::from_utf8_lossy(hex).into_owned(),
            )),
        }
    }

    /// The format this id belongs to.
    #[inline]
    pub fn format(&self) -> ObjectFormat {
        self.format
    }

    /// The raw bytes (20 or 32).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.format.raw_len()]
    }

    /// The same id as gitoxide's borrowed id type, for calls into gix
    /// crates (pack indexes, object lookups).
    #[inline]
    pub fn as_gix(&self) -> &gix_hash::oid {
        gix_hash::oid::from_bytes_unchecked(self.as_bytes())
    }

    /// The same id as gitoxide's owned id type.
    pub fn to_gix(&self) -> gix_hash::ObjectId {
        self.as_gix().to_owned()
    }

    /// An id read by a gix crate (always 20 or 32 bytes, so this cannot
    /// fail).
    #[inline]
    pub fn from_gix(id: &gix_hash::oid) -> Self {
        Self::from_raw(id.as_bytes()).expect("gix ids are 20 or 32 bytes")
    }

    /// True for the all-zero id.
    pub fn is_null(&self) -> bool {
        self.bytes.iter().all(|&b| b == 0)
    }

    /// Appends the lower-case hex form to `out`.
    pub fn write_hex(&self, out: &mut Vec<u8>) {
        let mut buf = [0; 64];
        out.extend_from_slice(self.encode_hex(&mut buf));
    }

    /// The lower-case hex form, written into `buf` (large enough for either
    /// format) without allocating.
    pub fn encode_hex<'b>(&self, buf: &'b mut [u8; 64]) -> &'b [u8] {
        let raw = self.as_bytes();
        for (pair, &b) in buf.chunks_exact_mut(2).zip(raw) {
            pair.copy_from_slice(&HEX_PAIRS[b as usize]);
        }
        &buf[..raw.len() * 2]
    }

    /// The lower-case hex form.
    pub fn to_hex(&self) -> String {
        let mut out = Vec::with_capacity(self.format.hex_len());
        self.write_hex(&mut out);
        String::from_utf8(out).expect("hex digits are ASCII")
    }
}

/// The two hex digits of every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0; 2]; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = [DIGITS[b >> 4], DIGITS[b & 15]];
        b += 1;
    }
    table
};

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.to_hex())
    }
}

impl FromStr for ObjectId {
    type Err = ParseOidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_hex(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_both_formats() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        let id: ObjectId = sha1.parse().unwrap();
        assert_eq!(id.format(), ObjectFormat::Sha1);
        assert_eq!(id.to_hex(), sha1);
        assert_eq!(id.as_bytes().len(), 20);
        let sha256 = "ab".repeat(32);
        let id: ObjectId = sha256.parse().unwrap();
        assert_eq!(id.format(), ObjectFormat::Sha256);
        assert_eq!(id.to_hex(), sha256);
        assert_eq!(ObjectId::from_raw(id.as_bytes()), Some(id));
    }

    #[test]
    fn rejects_short_upper_case_and_non_hex() {
        assert!(matches!(
            "abc".parse::<ObjectId>(),
            Err(ParseOidError::Length(_))
        ));
        assert!(matches!(
            "0123456789ABCDEF0123456789abcdef01234567".parse::<ObjectId>(),
            Err(ParseOidError::NotHex(_))
        ));
        assert!(matches!(
            ObjectId::from_hex_in(&[b'g'; 40], ObjectFormat::Sha1),
            Err(ParseOidError::NotHex(_))
        ));
        assert!(ObjectId::from_hex_in(&[b'0'; 64], ObjectFormat::Sha1).is_err());
    }

    #[test]
    fn every_byte_value_round_trips_and_case_rules_hold() {
        let raw: Vec<u8> = (0..=255u8).collect();
        for chunk in raw.chunks(20) {
            let mut bytes = chunk.to_vec();
            bytes.resize(20, 0xa5);
            let id = ObjectId::from_raw(&bytes).unwrap();
            let hex = id.to_hex();
            let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, expected);
            assert_eq!(ObjectId::from_hex(hex.as_bytes()), Ok(id));
            let upper = hex.to_uppercase();
            assert_eq!(
                ObjectId::from_hex_any_case(upper.as_bytes(), ObjectFormat::Sha1),
                Ok(id)
            );
            if upper != hex {
                assert!(ObjectId::from_hex(upper.as_bytes()).is_err());
            }
        }
        for bad in [b'g', b'G', b'/', b':', b'@', b'`', 0x80, 0xff, 0] {
            let mut hex = [b'0'; 40];
            hex[17] = bad;
            assert!(ObjectId::from_hex_any_case(&hex, ObjectFormat::Sha1).is_err());
        }
    }

    #[test]
    fn null_ids() {
        assert!(ObjectFormat::Sha1.null_id().is_null());
        assert_eq!(ObjectFormat::Sha256.null_id().to_hex(), "0".repeat(64));
        assert!(!"0123456789abcdef0123456789abcdef01234567"
            .parse::<ObjectId>()
            .unwrap()
            .is_null());
    }

    #[test]
    fn gix_ids_are_the_same_ids() {
        for hex in [
            "0123456789abcdef0123456789abcdef01234567".to_owned(),
            "cd".repeat(32),
        ] {
            let ours: ObjectId = hex.parse().unwrap();
            let theirs = ours.to_gix();
            assert_eq!(theirs.to_string(), hex);
            assert_eq!(theirs.kind().len_in_bytes(), ours.format().raw_len());
            assert_eq!(ObjectId::from_gix(&theirs), ours);
            assert_eq!(ours.as_gix(), theirs.as_ref());
        }
    }
}

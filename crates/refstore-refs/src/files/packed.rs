//! The `packed-refs` file: many references in one sorted text file.
//!
//! ```text
//! # pack-refs with: peeled fully-peeled sorted
//! <hex id> <name>
//! ^<hex id>            (the peeled value of the line above)
//! ```
//!
//! The file is parsed in one pass into a sorted table of records that keep
//! their names in the file's own buffer, so a million refs cost one
//! allocation for the text and one for the table; lookups are binary
//! searches. A file that says it is `sorted` can also be read in place by
//! [`Scan`], which seeks by binary search over the text and parses only the
//! lines it visits: the cheapest way to show every ref once.

use crate::value::{Peeled, Ref, Target};
use crate::{ObjectFormat, ObjectId, RefName};
use std::ops::Range;

mod scan;
mod snapshot;
pub use scan::{PackedView, Scan};
pub use snapshot::PackedSnapshot;

/// The header git writes (and refstore too).
pub const HEADER: &[u8] = b"# pack-refs with: peeled fully-peeled sorted \n";

/// Why a file that claims the `sorted` trait is refused.
const NOT_SORTED: &str = "the file says it is sorted but is not";

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

#[derive(Debug, Clone)]
struct Record {
    name: Range<usize>,
    id: ObjectId,
    peeled: Option<ObjectId>,
}

/// A parsed `packed-refs` file.
#[derive(Debug, Clone)]
pub struct PackedRefs {
    text: Vec<u8>,
    records: Vec<Record>,
    traits: Traits,
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
    fn peeled(&self, name: &[u8], peeled: Option<ObjectId>) -> Peeled {
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
fn parse_ref_line(line: &[u8], format: ObjectFormat) -> Result<ObjectId, &'static str> {
    let (id, name) = split_ref_line(line, format)?;
    RefName::validate(name).map_err(|_| INVALID_NAME)?;
    Ok(id)
}

/// Why a ref line's name is refused.
const INVALID_NAME: &str = "invalid reference name";

/// Splits `<hex id> <name>` into the id and the name, which is not checked.
fn split_ref_line(line: &[u8], format: ObjectFormat) -> Result<(ObjectId, &[u8]), &'static str> {
    let hex_len = format.hex_len();
    if line.len() < hex_len + 2 || line[hex_len] != b' ' {
        return Err("not '<object id> <refname>'");
    }
    let id = parse_id(&line[..hex_len], format).ok_or("bad object id")?;
    Ok((id, &line[hex_len + 1..]))
}

fn parse_id(hex: &[u8], format: ObjectFormat) -> Option<ObjectId> {
    ObjectId::from_hex_any_case(hex, format).ok()
}

impl PackedRefs {
    /// An empty file (no `packed-refs` on disk).
    pub fn empty() -> Self {
        PackedRefs {
            text: Vec::new(),
            records: Vec::new(),
            traits: Traits {
                fully_peeled: true,
                tags_peeled: true,
                sorted: true,
            },
        }
    }

    /// Parses the file's content.
    pub fn parse(text: Vec<u8>, format: ObjectFormat) -> Result<Self, PackedError> {
        let mut records: Vec<Record> = Vec::new();
        let (traits, body) = Traits::of(&text);
        let hex_len = format.hex_len();
        let mut start = body;
        let mut line_no = usize::from(body > 0);
        while start < text.len() {
            line_no += 1;
            let end = memchr_newline(&text[start..]).map_or(text.len(), |i| start + i);
            let line = &text[start..end];
            let bad = |reason| PackedError {
                line: line_no,
                reason,
            };
            if let Some(hex) = line.strip_prefix(b"^") {
                let last = records.last_mut().ok_or(bad("peeled line without a ref"))?;
                if last.peeled.is_some() {
                    return Err(bad("two peeled lines for one ref"));
                }
                last.peeled = Some(parse_id(hex, format).ok_or(bad("bad peeled object id"))?);
            } else {
                let id = parse_ref_line(line, format).map_err(bad)?;
                records.push(Record {
                    name: start + hex_len + 1..end,
                    id,
                    peeled: None,
                });
            }
            start = end + 1;
        }
        let mut packed = PackedRefs {
            text,
            records,
            traits,
        };
        let in_order = packed
            .records
            .windows(2)
            .all(|w| packed.text[w[0].name.clone()] < packed.text[w[1].name.clone()]);
        if !in_order {
            if traits.sorted {
                return Err(PackedError {
                    line: 0,
                    reason: NOT_SORTED,
                });
            }
            let text = &packed.text;
            packed
                .records
                .sort_by(|a, b| text[a.name.clone()].cmp(&text[b.name.clone()]));
        }
        Ok(packed)
    }

    /// Number of refs.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True if there are no refs.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// True if the file records peeled values for every annotated tag.
    pub fn is_fully_peeled(&self) -> bool {
        self.traits.fully_peeled
    }

    /// The ref at position `i` in sorted order, borrowed.
    pub fn view(&self, i: usize) -> Option<PackedView<'_>> {
        self.records.get(i).map(|r| {
            let name = self.name_of(r);
            PackedView {
                name,
                id: r.id,
                peeled: self.traits.peeled(name, r.peeled),
            }
        })
    }

    fn name_of(&self, r: &Record) -> &[u8] {
        &self.text[r.name.clone()]
    }

    /// Index of the first record whose name is `>= name`.
    pub fn seek(&self, name: &[u8]) -> usize {
        self.records.partition_point(|r| self.name_of(r) < name)
    }

    /// The file's content, as parsed.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The ref called `name`, if packed.
    pub fn find(&self, name: &[u8]) -> Option<Ref> {
        let i = self.seek(name);
        self.records
            .get(i)
            .filter(|r| self.name_of(r) == name)
            .map(|r| self.to_ref(r))
    }

    /// The ref at position `i` in sorted order.
    pub fn get(&self, i: usize) -> Option<Ref> {
        self.records.get(i).map(|r| self.to_ref(r))
    }

    /// The name at position `i`, without building a `Ref`.
    pub fn name_at(&self, i: usize) -> Option<&[u8]> {
        self.records.get(i).map(|r| self.name_of(r))
    }

    fn to_ref(&self, r: &Record) -> Ref {
        Ref {
            name: RefName::from_trusted(self.name_of(r)),
            target: Target::Object(r.id),
            peeled: r.peeled,
        }
    }

    /// All refs in order.
    pub fn iter(&self) -> impl Iterator<Item = Ref> + '_ {
        self.records.iter().map(|r| self.to_ref(r))
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

/// Writes a `packed-refs` file for refs given in sorted order.
pub fn write(refs: impl IntoIterator<Item = (RefName, ObjectId, Option<ObjectId>)>) -> Vec<u8> {
    let mut out = HEADER.to_vec();
    for (name, id, peeled) in refs {
        id.write_hex(&mut out);
        out.push(b' ');
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
        if let Some(p) = peeled {
            out.push(b'^');
            p.write_hex(&mut out);
            out.push(b'\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn round_trip_and_lookup() {
        let refs = vec![
            (
                RefName::new("refs/heads/a").unwrap(),
                A.parse().unwrap(),
                None,
            ),
            (
                RefName::new("refs/tags/v1").unwrap(),
                B.parse().unwrap(),
                Some(A.parse().unwrap()),
            ),
        ];
        let text = write(refs);
        assert_eq!(
            String::from_utf8(text.clone()).unwrap(),
            format!("# pack-refs with: peeled fully-peeled sorted \n{A} refs/heads/a\n{B} refs/tags/v1\n^{A}\n")
        );
        let packed = PackedRefs::parse(text, ObjectFormat::Sha1).unwrap();
        assert!(packed.is_fully_peeled());
        assert_eq!(packed.len(), 2);
        let tag = packed.find(b"refs/tags/v1").unwrap();
        assert_eq!(tag.peeled, Some(A.parse().unwrap()));
        assert!(packed.find(b"refs/tags/v0").is_none());
        assert_eq!(packed.seek(b"refs/heads/b"), 1);
    }

    #[test]
    fn unsorted_files_without_the_trait_are_sorted() {
        let text = format!("{A} refs/z\n{B} refs/a\n").into_bytes();
        let packed = PackedRefs::parse(text, ObjectFormat::Sha1).unwrap();
        let names: Vec<_> = packed.iter().map(|r| r.name.to_string()).collect();
        assert_eq!(names, ["refs/a", "refs/z"]);
        let lying = format!("# pack-refs with: sorted \n{A} refs/z\n{B} refs/a\n").into_bytes();
        assert!(PackedRefs::parse(lying, ObjectFormat::Sha1).is_err());
    }

    #[test]
    fn bad_lines_name_the_line() {
        for (text, line) in [
            (format!("{A} refs/a\n^zz\n"), 2),
            (format!("^{A}\n"), 1),
            (format!("{A}refs/a\n"), 1),
            (format!("{A} refs/a..b\n"), 1),
            (format!("{A} refs/a\n^{A}\n^{A}\n"), 3),
        ] {
            let err = PackedRefs::parse(text.into_bytes(), ObjectFormat::Sha1).unwrap_err();
            assert_eq!(err.line, line);
        }
    }
}

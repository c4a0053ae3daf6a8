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

use crate::value::{Ref, Target};
use crate::{ObjectFormat, ObjectId, RefName};
use std::ops::Range;

mod line;
mod scan;
mod snapshot;
use line::{memchr_newline, parse_id, parse_ref_line, NOT_SORTED};
pub use line::{PackedError, Traits};
pub use scan::{PackedView, Scan};
pub use snapshot::PackedSnapshot;

/// The header git writes (and refstore too).
pub const HEADER: &[u8] = b"# pack-refs with: peeled fully-peeled sorted \n";

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

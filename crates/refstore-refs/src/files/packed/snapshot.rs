//! `packed-refs` as a transaction consults it: the refs it updates and the
//! names in their way, usually a handful among a million. A file that says
//! it is `sorted` is looked up in place by binary search over its mapped
//! text (as git does), so such a transaction parses the lines it visits and
//! not the whole file; a file without the trait is parsed whole.

use super::{PackedError, PackedRefs, Scan, Traits};
use crate::value::{Ref, Target};
use crate::{ObjectFormat, RefName};
use refstore_fs::Mapped;

/// The bytes of `packed-refs` (about a dozen lines) that make parsing the
/// whole file as cheap as one lookup in place.
const BYTES_PER_LOOKUP: usize = 1024;

/// The `packed-refs` file read once, before any lock is taken.
#[derive(Debug)]
pub enum PackedSnapshot {
    /// A sorted file, searched in place.
    Sorted {
        /// The file's content.
        text: Mapped,
        /// The repository's object format.
        format: ObjectFormat,
    },
    /// A file parsed whole (it does not claim to be sorted, or there is none).
    Parsed(PackedRefs),
}

impl PackedSnapshot {
    /// The snapshot of `text`, the content of `packed-refs`, for about
    /// `lookups` lookups. A lookup in place costs a binary search and the
    /// lines it visits, a parse about a thousandth of that per line: past
    /// a lookup for every dozen lines or so, parsing once is cheaper.
    pub fn new(text: Mapped, format: ObjectFormat, lookups: usize) -> Result<Self, PackedError> {
        let in_place_is_cheaper = lookups.saturating_mul(BYTES_PER_LOOKUP) < text.len();
        if in_place_is_cheaper && Traits::of(&text).0.sorted {
            Ok(PackedSnapshot::Sorted { text, format })
        } else {
            PackedRefs::parse(text.to_vec(), format).map(PackedSnapshot::Parsed)
        }
    }

    /// The snapshot of `packed-refs` read again as `text`, and whether it
    /// may have changed. A snapshot searched in place costs nothing to
    /// replace and is not compared (it is large next to the transaction,
    /// whose few lookups are cheaper to repeat); a parsed one is parsed
    /// again only when its bytes differ.
    pub fn refreshed(
        self,
        text: Mapped,
        format: ObjectFormat,
        lookups: usize,
    ) -> Result<(Self, bool), PackedError> {
        match self {
            PackedSnapshot::Parsed(packed) if packed.text() == &text[..] => {
                Ok((PackedSnapshot::Parsed(packed), false))
            }
            _ => Ok((PackedSnapshot::new(text, format, lookups)?, true)),
        }
    }

    /// The ref called `name`, if packed.
    pub fn find(&self, name: &[u8]) -> Result<Option<Ref>, PackedError> {
        match self {
            PackedSnapshot::Parsed(packed) => Ok(packed.find(name)),
            PackedSnapshot::Sorted { text, format } => {
                // Every other name that starts with `name` sorts after it:
                // only the first line of the range can be the ref.
                let mut scan = Scan::new(text, *format, name).expect("checked sorted");
                if let Some(view) = scan.next().transpose()? {
                    if view.name == name {
                        return Ok(Some(Ref {
                            name: RefName::from_trusted(view.name),
                            target: Target::Object(view.id),
                            peeled: view.peeled.id(),
                        }));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The first packed name that starts with `prefix`, if any.
    pub fn first_with_prefix(&self, prefix: &[u8]) -> Result<Option<Vec<u8>>, PackedError> {
        match self {
            PackedSnapshot::Parsed(packed) => Ok(packed
                .name_at(packed.seek(prefix))
                .filter(|name| name.starts_with(prefix))
                .map(<[u8]>::to_vec)),
            PackedSnapshot::Sorted { text, format } => {
                let mut scan = Scan::new(text, *format, prefix).expect("checked sorted");
                Ok(scan.next().transpose()?.map(|view| view.name.to_vec()))
            }
        }
    }
}

impl From<PackedRefs> for PackedSnapshot {
    fn from(packed: PackedRefs) -> Self {
        PackedSnapshot::Parsed(packed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "1111111111111111111111111111111111111111";
    const TAG: &str = "2222222222222222222222222222222222222222";

    fn file(names: &[&str]) -> Vec<u8> {
        let mut text = super::super::HEADER.to_vec();
        for name in names {
            let id = if name.starts_with("refs/tags/") {
                TAG
            } else {
                ID
            };
            text.extend_from_slice(format!("{id} {name}\n").as_bytes());
            if name.starts_with("refs/tags/") {
                text.extend_from_slice(format!("^{ID}\n").as_bytes());
            }
        }
        text
    }

    #[test]
    fn lookups_in_place_agree_with_a_parsed_file() {
        let names = [
            "refs/heads/a",
            "refs/heads/a-b",
            "refs/heads/a/b",
            "refs/heads/main",
            "refs/tags/v1",
            "refs/tags/v1.0",
        ];
        let text = file(&names);
        let format = ObjectFormat::Sha1;
        let in_place = PackedSnapshot::new(Mapped::owned(text.clone()), format, 0).unwrap();
        assert!(matches!(in_place, PackedSnapshot::Sorted { .. }));
        let parsed = PackedSnapshot::new(Mapped::owned(text.clone()), format, usize::MAX).unwrap();
        assert!(matches!(parsed, PackedSnapshot::Parsed(_)));
        let probes = [
            "refs/heads/a",
            "refs/heads/a/",
            "refs/heads/a-",
            "refs/heads/b",
            "refs/heads/",
            "refs/tags/v1",
            "refs/tags/v1/",
            "refs/tags/v0",
            "refs/zzz",
        ];
        for probe in probes {
            let probe = probe.as_bytes();
            assert_eq!(
                in_place.find(probe).unwrap(),
                parsed.find(probe).unwrap(),
                "{}",
                String::from_utf8_lossy(probe)
            );
            assert_eq!(
                in_place.first_with_prefix(probe).unwrap(),
                parsed.first_with_prefix(probe).unwrap(),
                "{}",
                String::from_utf8_lossy(probe)
            );
        }
        let tag = in_place.find(b"refs/tags/v1").unwrap().unwrap();
        assert_eq!(tag.peeled.map(|p| p.to_string()), Some(ID.to_owned()));
        assert_eq!(
            in_place.first_with_prefix(b"refs/heads/a/").unwrap(),
            Some(b"refs/heads/a/b".to_vec())
        );
    }

    #[test]
    fn a_damaged_line_on_the_way_is_an_error_in_place() {
        let mut text = file(&["refs/heads/a", "refs/heads/b"]);
        let at = text.windows(12).position(|w| w == b"refs/heads/b").unwrap();
        text[at + 11] = b'~';
        let snapshot = PackedSnapshot::new(Mapped::owned(text), ObjectFormat::Sha1, 0).unwrap();
        assert!(snapshot.find(b"refs/heads/a").unwrap().is_some());
        assert!(snapshot.find(b"refs/heads/b").is_err());
    }
}

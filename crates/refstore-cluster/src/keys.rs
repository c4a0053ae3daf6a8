//! Where a repository's refs live in etcd, and how a ref's value is
//! written there.
//!
//! Every key of one repository starts with `<prefix>repos/<name>/`, the
//! name's `%` and `/` escaped so that one repository's keys never fall in
//! another's range:
//!
//! - `…/r/<refname>`: a ref (`HEAD` and other root refs included). Its value
//!   is `<hex id>`, `<hex id> ^<hex peeled id>` for an annotated tag whose
//!   peeled value is recorded, or `ref: <refname>` for a symbolic ref.
//! - `…/s`: the repository's stamp, written by every transaction. Its
//!   `mod_revision` is the revision of the repository's last change, the
//!   one number a node compares with its cache (see [`crate::cache`]).
//!   It sorts right after the `r/` range, so one watch covers both.
//! - `…/log/<time>-<node>-<n>`: one record per transaction, the reflog lines
//!   of its updates (`<refname> <old> <new> <signature>\t<message>`).
//!
//! Apart from them, `<prefix>records/<name>` (the name escaped alike) holds
//! each repository's record ([`crate::records`]): whether the cluster holds
//! it, its formats and its HEAD. Records sit outside every repository's
//! range, so the whole list is one small range, and one watch covers it.

use refstore_refs::value::{Peeled, Target};
use refstore_refs::{ObjectFormat, ObjectId, RefName};

/// The keys of one repository.
#[derive(Debug, Clone)]
pub struct RepoKeys {
    base: Vec<u8>,
}

impl RepoKeys {
    /// The keys of the repository `name` under `prefix`.
    pub fn new(prefix: &str, name: &str) -> RepoKeys {
        let mut base = prefix.as_bytes().to_vec();
        base.extend_from_slice(b"repos/");
        escape_into(name, &mut base);
        base.push(b'/');
        RepoKeys { base }
    }

    /// Every key of the repository: `[start, end)`.
    pub fn all(&self) -> (Vec<u8>, Vec<u8>) {
        (self.base.clone(), range_end(&self.base))
    }

    /// The key of ref `name`.
    pub fn reference(&self, name: &[u8]) -> Vec<u8> {
        let mut key = self.refs_prefix();
        key.extend_from_slice(name);
        key
    }

    /// The start of the refs' range.
    pub fn refs_prefix(&self) -> Vec<u8> {
        let mut key = self.base.clone();
        key.extend_from_slice(b"r/");
        key
    }

    /// The ref name of a key of the refs' range.
    pub fn ref_name<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.strip_prefix(self.base.as_slice())?.strip_prefix(b"r/")
    }

    /// The refs whose names start with `prefix`: `[start, end)`.
    pub fn refs_starting_with(&self, prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let start = self.reference(prefix);
        let end = range_end(&start);
        (start, end)
    }

    /// The stamp key.
    pub fn stamp(&self) -> Vec<u8> {
        let mut key = self.base.clone();
        key.push(b's');
        key
    }

    /// The range a watch covers: the refs and the stamp.
    pub fn watched(&self) -> (Vec<u8>, Vec<u8>) {
        let mut end = self.stamp();
        end.push(0);
        (self.refs_prefix(), end)
    }

    /// The key of a transaction's log record.
    pub fn log(&self, id: &str) -> Vec<u8> {
        let mut key = self.base.clone();
        key.extend_from_slice(b"log/");
        key.extend_from_slice(id.as_bytes());
        key
    }
}

/// Appends `name` with its `%` and `/` escaped, so that no name is a
/// prefix of another's keys.
fn escape_into(name: &str, out: &mut Vec<u8>) {
    for &b in name.as_bytes() {
        match b {
            b'%' => out.extend_from_slice(b"%25"),
            b'/' => out.extend_from_slice(b"%2F"),
            b => out.push(b),
        }
    }
}

/// The keys of the repositories' records: `<prefix>records/<name>`.
#[derive(Debug, Clone)]
pub struct RecordKeys {
    base: Vec<u8>,
}

impl RecordKeys {
    /// The records of the cluster whose keys start with `prefix`.
    pub fn new(prefix: &str) -> RecordKeys {
        let mut base = prefix.as_bytes().to_vec();
        base.extend_from_slice(b"records/");
        RecordKeys { base }
    }

    /// Every record: `[start, end)`.
    pub fn all(&self) -> (Vec<u8>, Vec<u8>) {
        (self.base.clone(), range_end(&self.base))
    }

    /// The record of the repository `name`.
    pub fn record(&self, name: &str) -> Vec<u8> {
        let mut key = self.base.clone();
        escape_into(name, &mut key);
        key
    }

    /// The repository name of a record's key; `None` for a key outside
    /// the records or one not escaped as [`RecordKeys::record`] escapes.
    pub fn name_of(&self, key: &[u8]) -> Option<String> {
        let escaped = key.strip_prefix(self.base.as_slice())?;
        let mut name = Vec::with_capacity(escaped.len());
        let mut rest = escaped;
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'%' {
                match tail.get(..2)? {
                    b"25" => name.push(b'%'),
                    b"2F" => name.push(b'/'),
                    _ => return None,
                }
                rest = &tail[2..];
            } else {
                name.push(b);
                rest = tail;
            }
        }
        String::from_utf8(name).ok()
    }
}

/// The first key after every key that starts with `prefix`.
pub fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Only a prefix of 0xff bytes has no end: etcd's "to the last key".
    vec![0]
}

/// A ref's value as kept in etcd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// What the ref holds.
    pub target: Target,
    /// What is recorded of its peeled value.
    pub peeled: Peeled,
}

/// Why a stored value cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cluster: ref '{}' holds an unreadable value in etcd: {reason}", String::from_utf8_lossy(.name))]
pub struct BadValue {
    /// The ref.
    pub name: Vec<u8>,
    /// What is wrong.
    pub reason: String,
}

impl Value {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 * 64 + 2);
        match &self.target {
            Target::Object(id) => {
                id.write_hex(&mut out);
                if let Peeled::Tag(peeled) = self.peeled {
                    out.extend_from_slice(b" ^");
                    peeled.write_hex(&mut out);
                }
            }
            Target::Symbolic(name) => {
                out.extend_from_slice(b"ref: ");
                out.extend_from_slice(name.as_bytes());
            }
        }
        out
    }

    /// Reads the stored form of ref `name`.
    pub fn decode(name: &[u8], raw: &[u8], format: ObjectFormat) -> Result<Value, BadValue> {
        let bad = |reason: String| BadValue {
            name: name.to_vec(),
            reason,
        };
        if let Some(to) = raw.strip_prefix(b"ref: ") {
            let to = RefName::new(to).map_err(|e| bad(e.to_string()))?;
            return Ok(Value {
                target: Target::Symbolic(to),
                peeled: Peeled::Unknown,
            });
        }
        let (id, peeled) = match raw.iter().position(|&b| b == b' ') {
            Some(space) => (&raw[..space], Some(&raw[space + 1..])),
            None => (raw, None),
        };
        let id = ObjectId::from_hex_in(id, format).map_err(|e| bad(e.to_string()))?;
        let peeled = match peeled {
            None => Peeled::Unknown,
            Some(p) => {
                let hex = p
                    .strip_prefix(b"^")
                    .ok_or_else(|| bad("the peeled value lacks its '^'".into()))?;
                Peeled::Tag(ObjectId::from_hex_in(hex, format).map_err(|e| bad(e.to_string()))?)
            }
        };
        Ok(Value {
            target: Target::Object(id),
            peeled,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_do_not_share_ranges() {
        let a = RepoKeys::new("/refstore/", "a");
        let nested = RepoKeys::new("/refstore/", "a/r");
        let (start, end) = a.all();
        let key = nested.reference(b"refs/heads/main");
        assert!(!(key >= start && key < end), "{key:?}");
        assert_eq!(nested.reference(b"HEAD"), b"/refstore/repos/a%2Fr/r/HEAD");
        assert_eq!(
            a.ref_name(&a.reference(b"refs/x/y")),
            Some(&b"refs/x/y"[..])
        );
    }

    #[test]
    fn record_keys_name_their_repository_and_lie_outside_every_repository() {
        let records = RecordKeys::new("/refstore/");
        for name in ["a.git", "team/r.git", "100%.git", "x%2F.git", "é/ü.git"] {
            let key = records.record(name);
            assert_eq!(records.name_of(&key).as_deref(), Some(name));
            let (start, end) = records.all();
            assert!(key >= start && key < end);
            let (start, end) = RepoKeys::new("/refstore/", name).all();
            assert!(!(key >= start && key < end));
        }
        assert_eq!(records.name_of(b"/refstore/records/a%zz"), None);
        assert_eq!(records.name_of(b"/other/records/a"), None);
    }

    #[test]
    fn the_watch_covers_refs_and_stamp_but_not_logs() {
        let keys = RepoKeys::new("/p/", "repo.git");
        let (start, end) = keys.watched();
        let inside = |k: &[u8]| k >= start.as_slice() && k < end.as_slice();
        assert!(inside(&keys.reference(b"refs/heads/main")));
        assert!(inside(&keys.reference(b"HEAD")));
        assert!(inside(&keys.stamp()));
        assert!(!inside(&keys.log("1-n1-0")));
    }

    #[test]
    fn values_round_trip() {
        let format = ObjectFormat::Sha1;
        let id = ObjectId::from_hex(&[b'a'; 40]).unwrap();
        let peeled = ObjectId::from_hex(&[b'b'; 40]).unwrap();
        let values = [
            Value {
                target: Target::Object(id),
                peeled: Peeled::Unknown,
            },
            Value {
                target: Target::Object(id),
                peeled: Peeled::Tag(peeled),
            },
            Value {
                target: Target::Symbolic(RefName::new("refs/heads/main").unwrap()),
                peeled: Peeled::Unknown,
            },
        ];
        for value in values {
            let raw = value.encode();
            assert_eq!(Value::decode(b"refs/x", &raw, format).unwrap(), value);
        }
        let error = Value::decode(b"refs/x", b"zz", format).unwrap_err();
        assert!(error
            .to_string()
            .starts_with("cluster: ref 'refs/x' holds an unreadable value"));
    }
}

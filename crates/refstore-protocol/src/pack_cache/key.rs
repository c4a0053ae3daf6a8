//! The key of a cached pack: a SHA-256 digest over a canonical encoding of
//! everything the pack is computed from (see the module documentation of
//! [`crate::pack_cache`] for the list and why it is complete).
//!
//! The encoding is unambiguous: a domain string with the format's
//! version, then fields in a fixed order, each a tag byte and a
//! length-prefixed value; sets of ids are sorted and deduplicated first,
//! so the order a client lists its wants or haves in does not matter, and
//! an id cannot slide from one field into the next.

use refstore_refs::ObjectId;

/// What every key's encoding starts with: bump the version when what a
/// pack is computed from changes, so entries of the old kind are missed.
const DOMAIN: &[u8] = b"refstore pack cache key v1\0";

/// The digest naming one cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey(pub [u8; 32]);

impl CacheKey {
    /// The digest in lowercase hex, as entries are named.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The key named by `hex`, if it is one.
    pub fn from_hex(hex: &str) -> Option<CacheKey> {
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(CacheKey(out))
    }
}

/// The fields of a key, each with a tag of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Field {
    /// The repository's identity (its resolved git directory).
    Repository = 1,
    /// The object format's name.
    ObjectFormat = 2,
    /// Every commit the pack walk starts from.
    Wants = 3,
    /// Every commit the client is known to have.
    Common = 4,
    /// Commits the client has whose parents are sent (deepened shallows).
    Edges = 5,
    /// Commits the walk sees without parents (the shallow boundary).
    Grafts = 6,
    /// Annotated tags offered to `include-tag` (empty without it).
    Tags = 7,
    /// The filter, encoded canonically (empty without one).
    Filter = 8,
    /// Capabilities that change the pack's bytes, one flag byte each.
    Capabilities = 9,
}

/// Builds a key field by field.
pub struct KeyBuilder {
    hasher: gix_hash::Hasher,
}

impl Default for KeyBuilder {
    fn default() -> Self {
        KeyBuilder::new()
    }
}

impl KeyBuilder {
    /// An empty key.
    pub fn new() -> Self {
        let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha256);
        hasher.update(DOMAIN);
        KeyBuilder { hasher }
    }

    /// Adds `field` with the value `bytes`.
    pub fn bytes(&mut self, field: Field, bytes: &[u8]) -> &mut Self {
        self.hasher.update(&[field as u8]);
        self.hasher.update(&(bytes.len() as u64).to_be_bytes());
        self.hasher.update(bytes);
        self
    }

    /// Adds `field` with the set `ids` (order and repeats do not count).
    pub fn ids(&mut self, field: Field, ids: &[ObjectId]) -> &mut Self {
        let mut sorted: Vec<&ObjectId> = ids.iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut value = Vec::with_capacity(8 + sorted.len() * 33);
        value.extend_from_slice(&(sorted.len() as u64).to_be_bytes());
        for id in sorted {
            let raw = id.as_bytes();
            value.push(raw.len() as u8);
            value.extend_from_slice(raw);
        }
        self.bytes(field, &value)
    }

    /// The digest.
    pub fn finish(self) -> CacheKey {
        let digest = self
            .hasher
            .try_finalize()
            .expect("SHA-256 has no collision detection to fail");
        let mut out = [0u8; 32];
        out.copy_from_slice(digest.as_bytes());
        CacheKey(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_other_names() {
        let mut builder = KeyBuilder::new();
        builder.bytes(Field::Repository, b"/srv/a.git");
        let key = builder.finish();
        assert_eq!(CacheKey::from_hex(&key.to_hex()), Some(key));
        assert_eq!(CacheKey::from_hex("xyz"), None);
        assert_eq!(CacheKey::from_hex(&"g".repeat(64)), None);
    }

    #[test]
    fn lengths_keep_fields_apart() {
        // Moving a byte from one field to the next changes the key.
        let key = |a: &[u8], b: &[u8]| {
            let mut builder = KeyBuilder::new();
            builder.bytes(Field::Repository, a).bytes(Field::Filter, b);
            builder.finish()
        };
        assert_ne!(key(b"ab", b"c"), key(b"a", b"bc"));
        assert_eq!(key(b"ab", b"c"), key(b"ab", b"c"));
    }
}

//! git's reachability bitmaps (`pack-<hash>.bitmap`, version 1), read.
//!
//! A bitmap file belongs to one pack (or to a multi-pack index) and
//! numbers its objects in pack order: bit `i` is the `i`-th object by
//! offset. It holds four type bitmaps (which objects are commits, trees,
//! blobs, tags), then for selected commits the set of every object
//! reachable from them, each EWAH-compressed ([`crate::ewah`]) and
//! possibly stored as the XOR with an earlier entry's set. Optional
//! sections follow: pseudo-merges (not used here), a lookup table (not
//! needed: the entries are few and their headers are read once), and a
//! cache of path-name hashes, one per object in index order.
//!
//! The layout: `BITM`, version 1 (2 bytes), flags (2 bytes), the entry
//! count (4 bytes), the checksum of the pack it belongs to; the type
//! bitmaps; the entries, each the index position of its commit (4 bytes),
//! how many entries back its XOR base is (1 byte, 0 for none), flags
//! (1 byte) and its EWAH stream; the optional sections; and a checksum of
//! everything before it.
//!
//! [`PackBitmap::parse`] checks all of it (the trailing checksum, that it
//! belongs to the given pack, that the type bitmaps give every object
//! exactly one type, the entries' bounds) so that a damaged or stale file
//! is an error the caller can fall back from, never a wrong object set.

use crate::ewah::{self, Bitmap};
use crate::{ObjectKind, OdbError};
use refstore_hash::ObjectId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const FULL_DAG: u16 = 0x1;
const HASH_CACHE: u16 = 0x4;
const LOOKUP_TABLE: u16 = 0x10;
const PSEUDO_MERGES: u16 = 0x20;
/// git never XORs an entry with one further back than this.
const MAX_XOR_OFFSET: usize = 160;
/// Decoded entry bitmaps kept for XOR chains that share bases.
const CACHED_ENTRIES: usize = 256;

/// One commit's stored bitmap.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The entry whose set this one is XORed with.
    xor_base: Option<usize>,
    /// Where its EWAH stream starts in the file.
    ewah_at: usize,
}

/// A parsed `.bitmap` file.
pub struct PackBitmap {
    data: refstore_fs::Mapped,
    objects: u32,
    types: [Bitmap; 4],
    entries: Vec<Entry>,
    /// Entry number by the index position of its commit.
    by_position: HashMap<u32, usize>,
    /// Where the name-hash cache starts, if the file has one.
    hash_cache_at: Option<usize>,
    decoded: Mutex<HashMap<usize, Arc<Bitmap>>>,
}

impl std::fmt::Debug for PackBitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackBitmap")
            .field("objects", &self.objects)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl PackBitmap {
    /// Parses and checks `data`, the bitmap of a pack (or multi-pack
    /// index) of `objects` objects whose checksum is `checksum`.
    pub fn parse(
        data: refstore_fs::Mapped,
        objects: u32,
        checksum: &ObjectId,
    ) -> Result<PackBitmap, OdbError> {
        let bytes: &[u8] = &data;
        let header = Header::read(bytes, checksum)?;
        let sections = EndSections::find(&header, objects)?;
        let (types, entries_at) =
            read_type_bitmaps(bytes, header.len, sections.entries_end, objects)?;
        let entries = read_entries(
            bytes,
            entries_at..sections.entries_end,
            header.entry_count,
            objects,
        )?;
        if header.flags & PSEUDO_MERGES == 0 && entries.end != sections.entries_end {
            return Err(corrupt("bytes between its entries and its end sections"));
        }
        Ok(PackBitmap {
            data,
            objects,
            types,
            entries: entries.list,
            by_position: entries.by_position,
            hash_cache_at: sections.hash_cache_at,
            decoded: Mutex::new(HashMap::new()),
        })
    }

    /// How many objects the bitmap numbers.
    pub fn objects(&self) -> u32 {
        self.objects
    }

    /// How many commits have a stored bitmap.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// The objects of `kind`.
    pub fn of_kind(&self, kind: ObjectKind) -> &Bitmap {
        &self.types[match kind {
            ObjectKind::Commit => 0,
            ObjectKind::Tree => 1,
            ObjectKind::Blob => 2,
            ObjectKind::Tag => 3,
        }]
    }

    /// The kind of the object at bit `bit`.
    pub fn kind_at(&self, bit: usize) -> Option<ObjectKind> {
        [
            ObjectKind::Commit,
            ObjectKind::Tree,
            ObjectKind::Blob,
            ObjectKind::Tag,
        ]
        .into_iter()
        .find(|&kind| self.of_kind(kind).get(bit))
    }

    /// True if the commit at index position `position` has a stored
    /// bitmap.
    pub fn has_commit(&self, position: u32) -> bool {
        self.by_position.contains_key(&position)
    }

    /// The index positions of the commits with a stored bitmap, in the
    /// file's order.
    pub fn commit_positions(&self) -> impl Iterator<Item = u32> + '_ {
        let mut positions: Vec<(usize, u32)> =
            self.by_position.iter().map(|(&p, &n)| (n, p)).collect();
        positions.sort_unstable();
        positions.into_iter().map(|(_, p)| p)
    }

    /// Every object reachable from the commit at index position
    /// `position`, if it has a stored bitmap.
    pub fn reachable_from(&self, position: u32) -> Result<Option<Arc<Bitmap>>, OdbError> {
        let Some(&n) = self.by_position.get(&position) else {
            return Ok(None);
        };
        self.decode_entry(n).map(Some)
    }

    /// The name hash git recorded for the object at index position
    /// `position` (of the path it was first met at), if the file has a
    /// name-hash cache.
    pub fn name_hash(&self, position: u32) -> Option<u32> {
        let at = self.hash_cache_at? + 4 * position as usize;
        let bytes = self.data.get(at..at + 4)?;
        Some(u32::from_be_bytes(bytes.try_into().expect("four bytes")))
    }

    /// Decodes entry `n`, resolving its XOR chain; decoded entries are
    /// remembered.
    fn decode_entry(&self, n: usize) -> Result<Arc<Bitmap>, OdbError> {
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        // The chain back to a decoded entry or one stored whole.
        let mut chain = vec![n];
        let mut base = None;
        while let Some(&last) = chain.last() {
            if let Some(bitmap) = decoded.get(&last) {
                base = Some(bitmap.clone());
                chain.pop();
                break;
            }
            match self.entries[last].xor_base {
                Some(earlier) => chain.push(earlier),
                None => break,
            }
        }
        let mut current = base;
        while let Some(m) = chain.pop() {
            // git states whole words of bits: only set bits are checked.
            let (mut bitmap, _, _) = ewah::decode(&self.data[self.entries[m].ewah_at..])
                .map_err(|e| OdbError::Pack(format!("corrupt bitmap: entry {m}: {e}")))?;
            if bitmap.bit_len() > self.objects as usize {
                return Err(OdbError::Pack(format!(
                    "corrupt bitmap: entry {m} has more bits than objects"
                )));
            }
            if let Some(base) = &current {
                bitmap.xor_assign(base);
            }
            let bitmap = Arc::new(bitmap);
            if decoded.len() >= CACHED_ENTRIES {
                decoded.clear();
            }
            decoded.insert(m, bitmap.clone());
            current = Some(bitmap);
        }
        Ok(current.expect("the chain has at least its own entry"))
    }
}

/// The error for a bitmap file that is not what it should be.
fn corrupt(what: impl std::fmt::Display) -> OdbError {
    OdbError::Pack(format!("corrupt bitmap: {what}"))
}

/// A bitmap file's header, checked, with its trailing checksum.
struct Header {
    flags: u16,
    entry_count: usize,
    /// Its length: where the type bitmaps start.
    len: usize,
    /// Where the trailing checksum starts.
    body_end: usize,
}

impl Header {
    /// Reads and checks the header of `bytes`, and that the file ends with
    /// the checksum of the rest and belongs to the pack `checksum` names.
    fn read(bytes: &[u8], checksum: &ObjectId) -> Result<Header, OdbError> {
        let format = checksum.format();
        let hash_len = format.raw_len();
        let len = 12 + hash_len;
        if bytes.len() < len + hash_len {
            return Err(corrupt("too short"));
        }
        if &bytes[..4] != b"BITM" {
            return Err(corrupt("no BITM signature"));
        }
        let version = u16::from_be_bytes([bytes[4], bytes[5]]);
        if version != 1 {
            return Err(corrupt(format_args!("unsupported version {version}")));
        }
        let flags = u16::from_be_bytes([bytes[6], bytes[7]]);
        if flags & FULL_DAG == 0 {
            return Err(corrupt("not a full-closure bitmap"));
        }
        let entry_count = u32::from_be_bytes(bytes[8..12].try_into().expect("four bytes")) as usize;
        if &bytes[12..len] != checksum.as_bytes() {
            return Err(corrupt("it belongs to another pack"));
        }
        let body_end = bytes.len() - hash_len;
        let mut hasher = gix_hash::hasher(format.gix_kind());
        hasher.update(&bytes[..body_end]);
        let computed = hasher
            .try_finalize()
            .map_err(|e| corrupt(format_args!("cannot hash it: {e}")))?;
        if computed.as_slice() != &bytes[body_end..] {
            return Err(corrupt("its trailing checksum does not match"));
        }
        Ok(Header {
            flags,
            entry_count,
            len,
            body_end,
        })
    }
}

/// Where the optional sections at the end of a bitmap file are, found from
/// the back.
struct EndSections {
    /// Where the name-hash cache starts, if the file has one.
    hash_cache_at: Option<usize>,
    /// Where the entries must end: the first end section, or the checksum.
    entries_end: usize,
}

impl EndSections {
    fn find(header: &Header, objects: u32) -> Result<EndSections, OdbError> {
        let mut tail = header.body_end;
        let hash_cache_at = if header.flags & HASH_CACHE != 0 {
            tail = tail
                .checked_sub(objects as usize * 4)
                .ok_or_else(|| corrupt("too short for its name-hash cache"))?;
            Some(tail)
        } else {
            None
        };
        if header.flags & LOOKUP_TABLE != 0 {
            tail = tail
                .checked_sub(header.entry_count * 16)
                .ok_or_else(|| corrupt("too short for its lookup table"))?;
        }
        if tail < header.len {
            return Err(corrupt("too short"));
        }
        Ok(EndSections {
            hash_cache_at,
            entries_end: tail,
        })
    }
}

/// Reads the four type bitmaps starting at `at` and checks that they give
/// each of the `objects` objects exactly one type; where they end.
fn read_type_bitmaps(
    bytes: &[u8],
    mut at: usize,
    entries_end: usize,
    objects: u32,
) -> Result<([Bitmap; 4], usize), OdbError> {
    let mut types: [Bitmap; 4] = Default::default();
    for (n, name) in ["commits", "trees", "blobs", "tags"].iter().enumerate() {
        let (bitmap, _, len) = ewah::decode(&bytes[at..entries_end])
            .map_err(|e| corrupt(format_args!("the {name} type bitmap: {e}")))?;
        if bitmap.bit_len() > objects as usize {
            return Err(corrupt(format_args!(
                "the {name} type bitmap has more bits than objects"
            )));
        }
        types[n] = bitmap;
        at += len;
    }
    let mut union = Bitmap::new();
    for (n, bitmap) in types.iter().enumerate() {
        for other in &types[n + 1..] {
            let mut both = bitmap.clone();
            both.and_assign(other);
            if !both.is_empty() {
                return Err(corrupt("an object has two types"));
            }
        }
        union.or_assign(bitmap);
    }
    if union != Bitmap::full(objects as usize) {
        return Err(corrupt("the type bitmaps do not cover the pack"));
    }
    Ok((types, at))
}

/// The entries of a bitmap file, read and bounds-checked (their EWAH
/// streams only measured).
struct Entries {
    /// By number, in the file's order.
    list: Vec<Entry>,
    /// Entry number by the index position of its commit.
    by_position: HashMap<u32, usize>,
    /// Where the last one ends.
    end: usize,
}

/// Reads the `entry_count` entries from `span` of `bytes`.
fn read_entries(
    bytes: &[u8],
    span: std::ops::Range<usize>,
    entry_count: usize,
    objects: u32,
) -> Result<Entries, OdbError> {
    let (mut at, end) = (span.start, span.end);
    let mut entries = Vec::with_capacity(entry_count.min(1 << 20));
    let mut by_position = HashMap::with_capacity(entry_count.min(1 << 20));
    for n in 0..entry_count {
        let head = bytes
            .get(at..at + 6)
            .filter(|_| at + 6 <= end)
            .ok_or_else(|| corrupt(format_args!("entry {n} is truncated")))?;
        let position = u32::from_be_bytes(head[..4].try_into().expect("four bytes"));
        let xor_offset = head[4] as usize;
        if position >= objects {
            return Err(corrupt(format_args!(
                "entry {n} names object {position} of {objects}"
            )));
        }
        if xor_offset > n || xor_offset > MAX_XOR_OFFSET {
            return Err(corrupt(format_args!(
                "entry {n} is XORed with a missing entry"
            )));
        }
        let ewah_at = at + 6;
        let len = ewah::stream_len(&bytes[ewah_at..end])
            .map_err(|e| corrupt(format_args!("entry {n}: {e}")))?;
        at = ewah_at + len;
        if by_position.insert(position, n).is_some() {
            return Err(corrupt(format_args!("two entries for object {position}")));
        }
        entries.push(Entry {
            xor_base: (xor_offset > 0).then(|| n - xor_offset),
            ewah_at,
        });
    }
    Ok(Entries {
        list: entries,
        by_position,
        end: at,
    })
}

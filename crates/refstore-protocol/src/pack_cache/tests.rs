//! The cache's entries on the real filesystem: one writer and its
//! followers, publication, damage, leftovers and bounds.

use super::key::{Field, KeyBuilder};
use super::*;
use proptest::prelude::*;
use refstore_hash::ObjectFormat;
use std::io::{self, Write};
use std::sync::Arc;

fn cache_in(dir: &std::path::Path, max_size: u64) -> Arc<PackCache> {
    let bounds = Bounds {
        max_size,
        max_age: Duration::from_secs(3600),
    };
    Arc::new(PackCache::open(Arc::new(refstore_fs::real::RealFs::new()), dir, bounds).unwrap())
}

fn key(n: u64) -> key::CacheKey {
    let mut builder = KeyBuilder::new();
    builder.bytes(Field::Repository, &n.to_be_bytes());
    builder.finish()
}

/// A pack-shaped stream of `len` body bytes: header, body, SHA-1 trailer.
fn pack(len: usize, seed: u8) -> Vec<u8> {
    let mut bytes = b"PACK\0\0\0\x02\0\0\0\x01".to_vec();
    bytes.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&bytes);
    bytes.extend_from_slice(hasher.try_finalize().unwrap().as_bytes());
    bytes
}

fn miss(cache: &Arc<PackCache>, k: key::CacheKey) -> Fill {
    match cache.lookup(k, ObjectFormat::Sha1) {
        Lookup::Miss(fill) => *fill,
        _ => panic!("expected a miss"),
    }
}

fn read_all(lookup: Lookup) -> Result<Vec<u8>, String> {
    let mut reader = match lookup {
        Lookup::Hit(reader) | Lookup::Follow(reader) => reader,
        _ => return Err("no entry".into()),
    };
    let mut out = Vec::new();
    reader.copy_to(&mut out).map_err(|e| format!("{e:?}"))?;
    Ok(out)
}

/// Writes `bytes` through a tee in pieces of `piece`.
fn produce(fill: &mut Fill, client: &mut dyn Write, bytes: &[u8], piece: usize) -> io::Result<()> {
    let mut tee = fill.tee(client);
    for chunk in bytes.chunks(piece) {
        tee.write_all(chunk)?;
    }
    tee.flush()
}

#[test]
fn a_finished_entry_is_served_as_written_and_damage_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(5000, 1);
    let mut fill = miss(&cache, key(1));
    let mut client = Vec::new();
    produce(&mut fill, &mut client, &bytes, 777).unwrap();
    assert!(fill.finish());
    assert_eq!(client, bytes);
    let lookup = cache.lookup(key(1), ObjectFormat::Sha1);
    assert!(matches!(lookup, Lookup::Hit(_)));
    assert_eq!(read_all(lookup).unwrap(), bytes);

    // One flipped byte anywhere in the pack: not served, computed again.
    let path = cache.entry_path(&key(1));
    let mut stored = std::fs::read(&path).unwrap();
    stored[100] ^= 1;
    std::fs::write(&path, &stored).unwrap();
    assert!(matches!(
        cache.lookup(key(1), ObjectFormat::Sha1),
        Lookup::Miss(_)
    ));
    assert!(!path.exists(), "the damaged entry is removed");
}

#[test]
fn an_incomplete_pack_is_never_published() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(3000, 2);
    let mut fill = miss(&cache, key(2));
    produce(&mut fill, &mut Vec::new(), &bytes[..bytes.len() - 1], 500).unwrap();
    assert!(!fill.finish());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(matches!(
        cache.lookup(key(2), ObjectFormat::Sha1),
        Lookup::Miss(_)
    ));
}

#[test]
fn followers_read_the_entry_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(200_000, 3);
    let mut fill = miss(&cache, key(3));
    let followers: Vec<_> = (0..4)
        .map(|_| match cache.lookup(key(3), ObjectFormat::Sha1) {
            Lookup::Follow(reader) => std::thread::spawn(move || read_all(Lookup::Follow(reader))),
            _ => panic!("expected to follow"),
        })
        .collect();
    let mut client = Vec::new();
    produce(&mut fill, &mut client, &bytes, 4096).unwrap();
    assert!(fill.finish());
    for follower in followers {
        assert_eq!(follower.join().unwrap().unwrap(), bytes);
    }
}

/// A client that takes `limit` bytes, then fails.
struct Disconnecting {
    limit: usize,
    got: usize,
}

impl Write for Disconnecting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.got + buf.len() > self.limit {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
        }
        self.got += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_producer_whose_client_leaves_finishes_for_its_followers() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(100_000, 4);
    let mut fill = miss(&cache, key(4));
    let Lookup::Follow(reader) = cache.lookup(key(4), ObjectFormat::Sha1) else {
        panic!("expected to follow");
    };
    let follower = std::thread::spawn(move || read_all(Lookup::Follow(reader)));
    let mut client = Disconnecting {
        limit: 10_000,
        got: 0,
    };
    produce(&mut fill, &mut client, &bytes, 4096).unwrap();
    assert!(fill.client_gone());
    assert!(fill.finish());
    assert_eq!(follower.join().unwrap().unwrap(), bytes);
    assert_eq!(
        read_all(cache.lookup(key(4), ObjectFormat::Sha1)).unwrap(),
        bytes
    );
}

#[test]
fn a_producer_alone_whose_client_leaves_abandons_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(100_000, 5);
    let mut fill = miss(&cache, key(5));
    let mut client = Disconnecting {
        limit: 10_000,
        got: 0,
    };
    assert!(produce(&mut fill, &mut client, &bytes, 4096).is_err());
    assert!(!fill.finish());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn followers_of_a_failed_producer_fail_rather_than_end_early() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let bytes = pack(100_000, 6);
    let mut fill = miss(&cache, key(6));
    let Lookup::Follow(reader) = cache.lookup(key(6), ObjectFormat::Sha1) else {
        panic!("expected to follow");
    };
    let follower = std::thread::spawn(move || read_all(Lookup::Follow(reader)));
    produce(&mut fill, &mut Vec::new(), &bytes[..50_000], 4096).unwrap();
    drop(fill); // the computation failed
    let err = follower.join().unwrap().unwrap_err();
    assert!(err.contains("failed"), "{err}");
    assert!(matches!(
        cache.lookup(key(6), ObjectFormat::Sha1),
        Lookup::Miss(_)
    ));
}

#[test]
fn leftovers_of_dead_writers_are_removed_at_start_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path(), 1 << 20);
    let live = miss(&cache, key(7));
    let dead = dir
        .path()
        .join(format!("{}dead_AAAAAA", store::TEMP_PREFIX));
    std::fs::write(&dead, b"PACK partial").unwrap();
    let other = cache_in(dir.path(), 1 << 20);
    assert!(!dead.exists());
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "the live writer's file stays");
    drop((live, other));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// However many distinct packs of whatever sizes are cached, what
    /// stays fits the bound, and the most recent one that fits stays.
    #[test]
    fn the_size_bound_holds(sizes in prop::collection::vec(0usize..40_000, 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        let max_size = 100_000;
        let cache = cache_in(dir.path(), max_size);
        for (n, size) in sizes.iter().enumerate() {
            let bytes = pack(*size, n as u8);
            let mut fill = miss(&cache, key(1000 + n as u64));
            produce(&mut fill, &mut Vec::new(), &bytes, 8192).unwrap();
            fill.finish();
            let total: u64 = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().len())
                .sum();
            prop_assert!(total <= max_size, "{} bytes cached", total);
            let last = cache.lookup(key(1000 + n as u64), ObjectFormat::Sha1);
            prop_assert!(matches!(last, Lookup::Hit(_)));
        }
    }
}

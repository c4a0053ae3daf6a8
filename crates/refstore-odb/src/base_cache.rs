//! A cache of inflated pack entries, for reading many objects stored as
//! deltas: without one, every object at depth n of a delta chain costs n
//! inflations and delta applications, since each read resolves its chain
//! from the start. Git keeps such a cache too (`core.deltaBaseCacheLimit`).
//!
//! Direct-mapped: an entry goes in the slot its pack and offset hash to,
//! replacing what was there, so lookups and insertions cost one hash and
//! no bookkeeping. The total size of the cached data is capped; an entry
//! larger than an eighth of the cap is never cached.

use gix_pack::cache::DecodeEntry;

/// One cached entry.
#[derive(Clone)]
struct Slot {
    pack: u32,
    offset: u64,
    kind: gix_object::Kind,
    compressed_size: usize,
    data: Vec<u8>,
}

/// A size-capped cache of inflated pack entries for gix-pack's decoder.
pub struct DeltaBaseCache {
    /// The inflate state reads through this cache use: made once, as
    /// setting one up costs more than inflating a small commit.
    pub(crate) inflate: Option<gix_zlib::Inflate>,
    /// Buffers reads through this cache reuse: the offsets of a delta
    /// chain, and an inflated delta.
    pub(crate) chain: Vec<u64>,
    pub(crate) delta: Vec<u8>,
    /// Boxed, so that the empty table is zeroed memory the system gives
    /// without touching it: a small fetch uses few of its slots, and
    /// filling a table of whole slots cost more than the fetch.
    slots: Vec<Option<Box<Slot>>>,
    bytes: usize,
    cap: usize,
    /// Where [`make_room`](Self::make_room) goes on emptying slots.
    hand: usize,
}

impl DeltaBaseCache {
    /// A cache of up to `cap` bytes of data in `slots` slots.
    pub fn new(slots: usize, cap: usize) -> Self {
        DeltaBaseCache {
            inflate: None,
            chain: Vec::new(),
            delta: Vec::new(),
            slots: vec![None; slots.max(1)],
            bytes: 0,
            cap,
            hand: 0,
        }
    }

    fn slot(&self, pack: u32, offset: u64) -> usize {
        // Fibonacci hashing of the two numbers.
        let key = offset ^ (u64::from(pack) << 48);
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) as usize % self.slots.len()
    }
}

/// Where [`Packs::read_held`](crate::Packs::read_held) left the object it
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// In this slot of the cache: [`DeltaBaseCache::held`] lends it.
    Cached(usize),
    /// In the caller's buffer.
    Out,
}

impl DeltaBaseCache {
    /// Takes the entry at `offset` of `pack` out of the cache: a delta
    /// applied to it makes a new buffer, and the base goes back with
    /// [`keep`](Self::keep), so cached data is never copied.
    pub(crate) fn take(&mut self, pack: u32, offset: u64) -> Option<(gix_object::Kind, Vec<u8>)> {
        let n = self.slot(pack, offset);
        if !matches!(&self.slots[n], Some(slot) if slot.pack == pack && slot.offset == offset) {
            return None;
        }
        let slot = self.slots[n].take().expect("just matched");
        self.bytes -= slot.data.capacity();
        Some((slot.kind, slot.data))
    }

    /// Keeps `data` as the entry at `offset` of `pack`, replacing what its
    /// slot held: the slot, or the data back if it does not fit.
    pub(crate) fn keep(
        &mut self,
        pack: u32,
        offset: u64,
        kind: gix_object::Kind,
        data: Vec<u8>,
    ) -> Result<usize, Vec<u8>> {
        if data.capacity() > self.cap / 8 {
            return Err(data);
        }
        let n = self.slot(pack, offset);
        if let Some(old) = self.slots[n].take() {
            self.bytes -= old.data.capacity();
        }
        self.make_room(data.capacity());
        self.bytes += data.capacity();
        self.slots[n] = Some(Box::new(Slot {
            pack,
            offset,
            kind,
            compressed_size: 0,
            data,
        }));
        Ok(n)
    }

    /// Empties slots, going round the table from where it last stopped,
    /// until `bytes` more fit under the cap: when the cache is full, the
    /// entries put longest ago (roughly) make way, instead of new entries
    /// being turned away while old ones no read wants stay.
    fn make_room(&mut self, bytes: usize) {
        while self.bytes + bytes > self.cap && self.bytes > 0 {
            if let Some(old) = self.slots[self.hand].take() {
                self.bytes -= old.data.capacity();
            }
            self.hand = (self.hand + 1) % self.slots.len();
        }
    }

    /// The most bytes of data the cache holds.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// The data in slot `n`, as [`Held::Cached`] names it (empty if the
    /// slot has been emptied since).
    pub fn held(&self, n: usize) -> &[u8] {
        self.slots
            .get(n)
            .and_then(|slot| slot.as_deref())
            .map_or(&[], |slot| &slot.data)
    }
}

impl Default for DeltaBaseCache {
    /// 64 MiB in 16384 slots.
    fn default() -> Self {
        DeltaBaseCache::new(16384, 64 << 20)
    }
}

impl DecodeEntry for DeltaBaseCache {
    fn put(
        &mut self,
        pack: u32,
        offset: u64,
        data: &[u8],
        kind: gix_object::Kind,
        compressed_size: usize,
    ) {
        if data.len() > self.cap / 8 {
            return;
        }
        let n = self.slot(pack, offset);
        let mut slot = match self.slots[n].take() {
            Some(old) => {
                self.bytes -= old.data.capacity();
                old
            }
            None => Box::new(Slot {
                pack,
                offset,
                kind,
                compressed_size,
                data: Vec::new(),
            }),
        };
        // The memory held is what counts: a slot's buffer is reused, but
        // not when it is far larger than what it would now hold.
        if slot.data.capacity() > 2 * data.len() {
            slot.data = Vec::new();
        }
        slot.data.clear();
        slot.data.extend_from_slice(data);
        self.make_room(slot.data.capacity());
        self.bytes += slot.data.capacity();
        slot.pack = pack;
        slot.offset = offset;
        slot.kind = kind;
        slot.compressed_size = compressed_size;
        self.slots[n] = Some(slot);
    }

    fn get(
        &mut self,
        pack: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix_object::Kind, usize)> {
        let n = self.slot(pack, offset);
        let slot = self.slots[n].as_ref()?;
        if slot.pack != pack || slot.offset != offset {
            return None;
        }
        out.clear();
        out.extend_from_slice(&slot.data);
        Some((slot.kind, slot.compressed_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_until_replaced_and_the_cap_holds() {
        let mut cache = DeltaBaseCache::new(4, 64);
        let mut out = Vec::new();
        cache.put(0, 12, b"tree", gix_object::Kind::Tree, 5);
        assert_eq!(
            cache.get(0, 12, &mut out),
            Some((gix_object::Kind::Tree, 5))
        );
        assert_eq!(out, b"tree");
        assert_eq!(cache.get(1, 12, &mut out), None);
        // Too large for the cap's eighth: not kept.
        cache.put(0, 40, &[0; 9], gix_object::Kind::Blob, 3);
        assert_eq!(cache.get(0, 40, &mut out), None);
        for offset in 100..200 {
            cache.put(0, offset, &[1; 8], gix_object::Kind::Blob, 3);
            assert!(cache.bytes <= 64);
        }
    }

    #[test]
    fn the_cap_bounds_the_memory_held_not_only_the_data() {
        // Every slot first holds a large entry, then a small one: the
        // buffers that held the large ones must not stay behind.
        let mut cache = DeltaBaseCache::new(64, 8 << 10);
        for offset in 0..64 {
            cache.put(0, offset, &[7; 1 << 10], gix_object::Kind::Blob, 3);
            cache.put(0, offset, &[7; 16], gix_object::Kind::Blob, 3);
        }
        let held: usize = cache
            .slots
            .iter()
            .flatten()
            .map(|s| s.data.capacity())
            .sum();
        assert!(held <= 8 << 10, "{held} bytes held");
        assert_eq!(held, cache.bytes);
    }

    #[test]
    fn taken_entries_leave_the_cache_and_kept_ones_are_lent() {
        let mut cache = DeltaBaseCache::new(4, 64);
        let n = cache
            .keep(0, 12, gix_object::Kind::Tree, b"tree".to_vec())
            .unwrap();
        assert_eq!(cache.held(n), b"tree");
        assert_eq!(cache.take(0, 13), None);
        assert_eq!(
            cache.take(0, 12),
            Some((gix_object::Kind::Tree, b"tree".to_vec()))
        );
        assert_eq!(cache.take(0, 12), None);
        assert_eq!(cache.bytes, 0);
        // Larger than an eighth of the cap: handed back.
        assert_eq!(
            cache.keep(0, 1, gix_object::Kind::Blob, vec![0; 9]),
            Err(vec![0; 9])
        );
    }
}

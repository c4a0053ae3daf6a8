//! A small seeded generator (splitmix64) for generated test inputs: they
//! are the same on every run, and a seed printed by a failure reproduces
//! them.

/// The generator's state.
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A delay of up to `max_ms` milliseconds.
    pub fn delay(&mut self, max_ms: u64) -> std::time::Duration {
        std::time::Duration::from_micros(self.next_u64() % (max_ms * 1000 + 1))
    }

    /// True with probability `percent` in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Up to `max` distinct items of `items`, in a random order.
    pub fn some<T: Clone>(&mut self, items: &[T], max: usize) -> Vec<T> {
        let mut indices: Vec<usize> = (0..items.len()).collect();
        for i in (1..indices.len()).rev() {
            indices.swap(i, self.below(i + 1));
        }
        let n = self.below(max.min(items.len()) + 1);
        indices[..n].iter().map(|&i| items[i].clone()).collect()
    }
}

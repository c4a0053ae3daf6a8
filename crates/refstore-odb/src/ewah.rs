//! Bit sets and git's EWAH compression of them, the form every bitmap of a
//! `.bitmap` file is stored in.
//!
//! [`Bitmap`] is a plain, uncompressed bit set (bit `i` is bit `i % 64` of
//! word `i / 64`), which is what set operations want. EWAH, as git and
//! JGit store it (the JavaEWAH serialisation): the number of bits (32-bit),
//! the number of 64-bit words that follow (32-bit), the words, and the
//! position of the last run-length word (32-bit), all big-endian. The
//! words form chunks: a run-length word, whose bit 0 is the repeated bit,
//! bits 1..=32 how many words of it are repeated and bits 33..=63 how many
//! literal words follow it, then those literal words.
//!
//! [`decode`] checks what it reads against the lengths the stream states,
//! so a damaged stream is an error, never a panic or a bit set larger
//! than it says; [`encode`] writes what git reads.

/// A set of bit positions, uncompressed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
}

/// Why an EWAH stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt EWAH bitmap: {0}")]
pub struct EwahError(pub(crate) &'static str);

impl Bitmap {
    /// An empty set.
    pub fn new() -> Bitmap {
        Bitmap::default()
    }

    /// A set of the positions `0..bits`, all of them.
    pub fn full(bits: usize) -> Bitmap {
        let mut words = vec![u64::MAX; bits / 64];
        if bits % 64 != 0 {
            words.push((1u64 << (bits % 64)) - 1);
        }
        Bitmap { words }
    }

    /// The set's words, bit `i` in bit `i % 64` of word `i / 64`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Adds `bit`.
    pub fn set(&mut self, bit: usize) {
        let word = bit / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (bit % 64);
    }

    /// True if `bit` is in the set.
    pub fn get(&self, bit: usize) -> bool {
        self.words
            .get(bit / 64)
            .is_some_and(|word| word & (1 << (bit % 64)) != 0)
    }

    /// Adds every bit of `other`.
    pub fn or_assign(&mut self, other: &Bitmap) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word |= other;
        }
    }

    /// Removes every bit of `other`.
    pub fn and_not_assign(&mut self, other: &Bitmap) {
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word &= !other;
        }
    }

    /// Keeps only the bits `other` has too.
    pub fn and_assign(&mut self, other: &Bitmap) {
        self.words.truncate(other.words.len());
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word &= other;
        }
    }

    /// Flips every bit `other` has.
    pub fn xor_assign(&mut self, other: &Bitmap) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word ^= other;
        }
    }

    /// How many bits are set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// True if no bit is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// One more than the highest bit set; 0 for an empty set.
    pub fn bit_len(&self) -> usize {
        match self.words.iter().rposition(|&w| w != 0) {
            Some(n) => n * 64 + 64 - self.words[n].leading_zeros() as usize,
            None => 0,
        }
    }

    /// The bits set, in increasing order.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(n, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    n * 64 + bit
                })
            })
        })
    }
}

impl FromIterator<usize> for Bitmap {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Bitmap {
        let mut bitmap = Bitmap::new();
        for bit in iter {
            bitmap.set(bit);
        }
        bitmap
    }
}

/// The longest run one run-length word holds.
const MAX_RUN: u64 = (1 << 32) - 1;
/// The most literal words one run-length word announces.
const MAX_LITERALS: u64 = (1 << 31) - 1;

/// Decodes the EWAH stream at the start of `bytes`: the bit set, the
/// number of bits it states, and how many bytes it took.
pub fn decode(bytes: &[u8]) -> Result<(Bitmap, usize, usize), EwahError> {
    let (bits, words_at, word_count) = header(bytes)?;
    let end = words_at + word_count * 8 + 4;
    let word = |n: usize| {
        let at = words_at + n * 8;
        u64::from_be_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
    };
    let rlw_at = u32::from_be_bytes(bytes[end - 4..end].try_into().expect("four bytes")) as usize;
    if word_count > 0 && rlw_at >= word_count {
        return Err(EwahError("the last run-length word is beyond the words"));
    }
    let max_words = bits.div_ceil(64);
    let mut out: Vec<u64> = Vec::with_capacity(max_words);
    let mut n = 0;
    while n < word_count {
        let rlw = word(n);
        n += 1;
        let run = ((rlw >> 1) & MAX_RUN) as usize;
        let literals = (rlw >> 33) as usize;
        if run > max_words - out.len() || literals > word_count - n {
            return Err(EwahError("more words than the stream holds"));
        }
        out.resize(out.len() + run, if rlw & 1 == 1 { u64::MAX } else { 0 });
        if literals > max_words - out.len() {
            return Err(EwahError("more words than its bit count allows"));
        }
        out.extend((n..n + literals).map(word));
        n += literals;
    }
    if bits % 64 != 0 && out.len() == max_words {
        let last = out[max_words - 1];
        if last >> (bits % 64) != 0 {
            return Err(EwahError("bits set beyond its bit count"));
        }
    }
    Ok((Bitmap { words: out }, bits, end))
}

/// The stream's length in bytes, without decoding it.
pub fn stream_len(bytes: &[u8]) -> Result<usize, EwahError> {
    let (_, words_at, word_count) = header(bytes)?;
    Ok(words_at + word_count * 8 + 4)
}

/// The bit count, where the words start and how many there are; checks
/// that the whole stream is within `bytes`.
fn header(bytes: &[u8]) -> Result<(usize, usize, usize), EwahError> {
    let short = || EwahError("truncated");
    let head = bytes.get(..8).ok_or_else(short)?;
    let bits = u32::from_be_bytes(head[..4].try_into().expect("four bytes")) as usize;
    let word_count = u32::from_be_bytes(head[4..].try_into().expect("four bytes")) as usize;
    let end = word_count
        .checked_mul(8)
        .and_then(|n| n.checked_add(12))
        .ok_or_else(short)?;
    if end > bytes.len() {
        return Err(short());
    }
    Ok((bits, 8, word_count))
}

/// Appends the EWAH stream of `bitmap` to `out`; its bit count is one
/// more than its highest bit.
pub fn encode(bitmap: &Bitmap, out: &mut Vec<u8>) {
    let bits = bitmap.bit_len();
    let words = &bitmap.words[..bits.div_ceil(64)];
    let mut stream: Vec<u64> = Vec::new();
    let mut last_rlw;
    let mut n = 0;
    // An empty set still has its run-length word, as git writes it.
    loop {
        let mut rlw = 0u64;
        if n < words.len() && (words[n] == 0 || words[n] == u64::MAX) {
            let clean = words[n];
            let mut run = 0;
            while n < words.len() && words[n] == clean && run < MAX_RUN {
                run += 1;
                n += 1;
            }
            rlw = (run << 1) | u64::from(clean == u64::MAX);
        }
        let start = n;
        while n < words.len()
            && words[n] != 0
            && words[n] != u64::MAX
            && ((n - start) as u64) < MAX_LITERALS
        {
            n += 1;
        }
        rlw |= ((n - start) as u64) << 33;
        last_rlw = stream.len();
        stream.push(rlw);
        stream.extend_from_slice(&words[start..n]);
        if n >= words.len() {
            break;
        }
    }
    out.extend_from_slice(&(bits as u32).to_be_bytes());
    out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
    for word in &stream {
        out.extend_from_slice(&word.to_be_bytes());
    }
    out.extend_from_slice(&(last_rlw as u32).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_literals_roundtrip() {
        let mut bitmap = Bitmap::full(64 * 5);
        bitmap.set(64 * 9 + 3);
        bitmap.set(64 * 10 + 1);
        let mut bytes = Vec::new();
        encode(&bitmap, &mut bytes);
        // Two chunks: a run of five full words, then a run of four zero
        // words with two literals.
        let (decoded, bits, used) = decode(&bytes).unwrap();
        assert_eq!(
            decoded.ones().collect::<Vec<_>>(),
            bitmap.ones().collect::<Vec<_>>()
        );
        assert_eq!(bits, 64 * 10 + 2);
        assert_eq!(used, bytes.len());
        assert_eq!(bytes[4..8], 4u32.to_be_bytes());
    }

    #[test]
    fn empty_set_has_one_run_length_word() {
        let mut bytes = Vec::new();
        encode(&Bitmap::new(), &mut bytes);
        assert_eq!(
            bytes,
            [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        let (decoded, bits, _) = decode(&bytes).unwrap();
        assert!(decoded.is_empty());
        assert_eq!(bits, 0);
    }

    #[test]
    fn damaged_streams_are_errors() {
        let mut bytes = Vec::new();
        encode(&(0..1000).step_by(3).collect(), &mut bytes);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // A run longer than the bit count.
        let mut long = bytes.clone();
        long[8 + 3] = 0xff;
        assert!(decode(&long).is_err());
    }
}

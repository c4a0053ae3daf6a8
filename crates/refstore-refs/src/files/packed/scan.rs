//! Reading a sorted `packed-refs` in place: a binary search over the text
//! finds the first ref of a prefix, then lines are parsed one at a time as
//! they are visited. Nothing is allocated per ref, and lines outside the
//! prefix are never parsed (git reads the file the same way, so damage
//! there shows only to commands that read those refs).

use super::line::{
    memchr_newline, parse_id, split_ref_line, PackedError, Traits, INVALID_NAME, NOT_SORTED,
};
use crate::value::Peeled;
use crate::RefName;
use crate::{ObjectFormat, ObjectId};
use std::ops::ControlFlow;

/// A packed ref, borrowing its name from the file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedView<'t> {
    /// The full name.
    pub name: &'t [u8],
    /// The object it names.
    pub id: ObjectId,
    /// What the file says about its peeled value.
    pub peeled: Peeled,
}

/// The refs of a `sorted` file whose names start with a prefix, in order.
/// Yields an error, then nothing, at the first bad line it reaches.
#[derive(Debug)]
pub struct Scan<'t> {
    text: &'t [u8],
    /// Where the first ref line starts (after the header).
    body: usize,
    /// The start of the next line to read.
    pos: usize,
    traits: Traits,
    format: ObjectFormat,
    prefix: &'t [u8],
    previous: Option<&'t [u8]>,
    done: bool,
}

impl<'t> Scan<'t> {
    /// The refs of `text` starting with `prefix`; `None` when the file does
    /// not say it is sorted (parse it with
    /// [`PackedRefs::parse`](super::PackedRefs::parse) instead).
    pub fn new(text: &'t [u8], format: ObjectFormat, prefix: &'t [u8]) -> Option<Self> {
        let (traits, body) = Traits::of(text);
        if !traits.sorted {
            return None;
        }
        let mut scan = Scan {
            text,
            body,
            pos: body,
            traits,
            format,
            prefix,
            previous: None,
            done: false,
        };
        scan.pos = scan.seek(prefix);
        Some(scan)
    }

    /// The line starting at `start`, without its LF, and the start of the
    /// next line.
    fn line_at(&self, start: usize) -> (&'t [u8], usize) {
        let rest = &self.text[start..];
        match memchr_newline(rest) {
            Some(i) => (&rest[..i], start + i + 1),
            None => (rest, self.text.len()),
        }
    }

    /// The start of the line holding byte `at`.
    fn line_start(&self, at: usize) -> usize {
        self.text[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    }

    /// The start of the first ref line whose name is `>= prefix`. `lo` is
    /// always the start of a ref line and `hi` shrinks to a ref line's
    /// start, so each step narrows the range.
    fn seek(&self, prefix: &[u8]) -> usize {
        let name_offset = self.format.hex_len() + 1;
        let (mut lo, mut hi) = (self.body, self.text.len());
        while lo < hi {
            let mut record = self.line_start(lo + (hi - lo) / 2).max(lo);
            if self.text[record] == b'^' && record > lo {
                // A peeled line belongs to the ref line before it.
                record = self.line_start(record - 1).max(lo);
            }
            let (line, mut next) = self.line_at(record);
            let name = line.get(name_offset..).unwrap_or(line);
            if name < prefix {
                if self.text.get(next) == Some(&b'^') {
                    next = self.line_at(next).1;
                }
                lo = next;
            } else {
                hi = record;
            }
        }
        lo
    }

    /// A [`PackedError`] for the line starting at `start`.
    fn error_at(&self, start: usize, reason: &'static str) -> PackedError {
        let line = self.text[..start].iter().filter(|&&b| b == b'\n').count() + 1;
        PackedError { line, reason }
    }

    /// Shows `visit` the remaining refs in order, until it breaks. Unlike
    /// the iterator, the view goes from the line to `visit` without being
    /// wrapped and moved on the way, which matters at a million refs.
    pub fn try_for_each(
        &mut self,
        mut visit: impl FnMut(PackedView<'t>) -> ControlFlow<()>,
    ) -> Result<(), PackedError> {
        while !self.done {
            match self.read() {
                Ok(Some(view)) => {
                    if visit(view).is_break() {
                        break;
                    }
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn read(&mut self) -> Result<Option<PackedView<'t>>, PackedError> {
        if self.pos >= self.text.len() {
            return Ok(None);
        }
        let start = self.pos;
        let (line, next) = self.line_at(start);
        if line.first() == Some(&b'^') {
            let reason = if start == self.body {
                "peeled line without a ref"
            } else {
                "two peeled lines for one ref"
            };
            return Err(self.error_at(start, reason));
        }
        let (id, name) = split_ref_line(line, self.format).map_err(|r| self.error_at(start, r))?;
        // The bytes a name shares with the one before need no second check.
        let known = match self.previous {
            Some(previous) => {
                let shared = common_prefix_len(previous, name);
                if shared == name.len() || previous.get(shared) > name.get(shared) {
                    return Err(PackedError {
                        line: 0,
                        reason: NOT_SORTED,
                    });
                }
                shared
            }
            None => 0,
        };
        RefName::validate_continuing(name, known)
            .map_err(|_| self.error_at(start, INVALID_NAME))?;
        if !name.starts_with(self.prefix) {
            return Ok(None);
        }
        self.previous = Some(name);
        self.pos = next;
        let mut peeled = None;
        if self.text.get(next) == Some(&b'^') {
            let (line, after) = self.line_at(next);
            let id = parse_id(&line[1..], self.format)
                .ok_or_else(|| self.error_at(next, "bad peeled object id"))?;
            peeled = Some(id);
            self.pos = after;
        }
        Ok(Some(PackedView {
            name,
            id,
            peeled: self.traits.peeled(name, peeled),
        }))
    }
}

/// How many leading bytes `a` and `b` share, compared eight at a time.
fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= len {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("eight bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..len]
        .iter()
        .zip(&b[i..len])
        .take_while(|(x, y)| x == y)
        .count()
}

impl<'t> Iterator for Scan<'t> {
    type Item = Result<PackedView<'t>, PackedError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.read().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::common_prefix_len;

    #[test]
    fn common_prefixes_across_word_boundaries() {
        let base = b"refs/heads/branch-0123456789";
        for cut in 0..=base.len() {
            let mut other = base.to_vec();
            if cut < base.len() {
                other[cut] ^= 1;
            }
            assert_eq!(common_prefix_len(base, &other), cut);
            assert_eq!(common_prefix_len(&base[..cut], base), cut);
        }
    }
}

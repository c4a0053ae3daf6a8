//! Admission of a pack's entries as they are read: the bound on the total
//! size its objects inflate to, and the refusal of deltas of objects at
//! or above `core.bigFileThreshold` (see [`crate::large`]).
//!
//! Each entry counts the size of the object it makes: a whole object its
//! own size, a delta the size of its result (a small delta can announce a
//! large result; it is counted before anything applies it). A pack is
//! refused at the first entry that crosses the bound, so a pack of zlib
//! bombs costs at most one entry's inflation beyond it, never memory.

use crate::large::{delta_sizes, IngestLimits};
use crate::OdbError;
use flate2::Decompress;
use gix_pack::data::entry::Header;
use gix_pack::data::input::Entry;
use std::cell::RefCell;
use std::rc::Rc;

/// Where a stage of the pack pipeline leaves the reason it stopped, as
/// gix-pack carries only its own errors; the reader of the pipeline's
/// error looks here first.
pub(crate) type Stop = Rc<RefCell<Option<OdbError>>>;

/// Ends the pipeline with `error`, kept in `stop` for the caller.
pub(crate) fn stop_with(stop: &Stop, error: OdbError) -> gix_error::Error {
    let text = error.to_string();
    *stop.borrow_mut() = Some(error);
    gix_hash::io::from_std_io(std::io::Error::other(text))
}

/// The entries of `inner`, each admitted or the pack refused.
pub(crate) struct Admit<I> {
    inner: I,
    limits: IngestLimits,
    inflated: u64,
    /// Reads the sizes of deltas.
    inflater: Decompress,
    stop: Stop,
    stopped: bool,
}

impl<I> Admit<I> {
    pub(crate) fn new(inner: I, limits: IngestLimits, stop: Stop) -> Self {
        Admit {
            inner,
            limits,
            inflated: 0,
            inflater: Decompress::new(true),
            stop,
            stopped: false,
        }
    }

    fn admit(&mut self, entry: &Entry) -> Result<(), OdbError> {
        let size = match entry.header {
            Header::OfsDelta { .. } | Header::RefDelta { .. } => {
                let compressed = entry.compressed.as_deref().unwrap_or_default();
                match delta_sizes(&mut self.inflater, compressed) {
                    Some((base, result)) if self.limits.is_big(base.max(result)) => {
                        return Err(OdbError::Refused(format!(
                            "delta at offset {} has a base of {base} bytes and a result of \
                             {result} bytes; deltas of objects of core.bigFileThreshold ({} \
                             bytes) or more are refused",
                            entry.pack_offset, self.limits.big_file_threshold
                        )));
                    }
                    Some((_, result)) => result,
                    // Refused where it is applied.
                    None => entry.decompressed_size,
                }
            }
            _ => entry.decompressed_size,
        };
        self.inflated = self.inflated.saturating_add(size);
        match self.limits.max_inflated {
            Some(max) if self.inflated > max => Err(OdbError::Refused(format!(
                "pack inflates beyond {max} bytes (refstore.maxPushInflated)"
            ))),
            _ => Ok(()),
        }
    }
}

impl<I> Iterator for Admit<I>
where
    I: Iterator<Item = gix_error::Result<Entry>>,
{
    type Item = gix_error::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        let entry = match self.inner.next()? {
            Ok(entry) => entry,
            Err(e) => return Some(Err(e)),
        };
        match self.admit(&entry) {
            Ok(()) => Some(Ok(entry)),
            Err(refusal) => {
                self.stopped = true;
                Some(Err(stop_with(&self.stop, refusal)))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

//! Admission of a pack's entries as they are read: the bound on the total
//! size its objects inflate to, and the refusal of deltas of objects at
//! or above `core.bigFileThreshold` (see [`crate::large`]).
//!
//! Each entry counts the size of the object it makes: a whole object its
//! own size, a delta the size of its result (a small delta can announce a
//! large result; it is counted before anything applies it). An entry is
//! judged by the size its header announces before it is inflated, and
//! [`crate::entries`] inflates none beyond that size: so a pack of zlib
//! bombs is refused at the first entry that would cross the bound, having
//! cost neither memory nor more inflation than the bound allows.

use crate::OdbError;
use gix_pack::data::entry::Header;
use std::cell::RefCell;
use std::rc::Rc;

use crate::large::IngestLimits;

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

/// The error `stop` holds, else `error` described.
pub(crate) fn stopped(stop: &Stop, error: &gix_error::Error) -> OdbError {
    let held = stop.borrow_mut().take();
    held.unwrap_or_else(|| OdbError::Pack(crate::error::describe(error)))
}

/// Words every refusal of a delta of a large object holds, so that a
/// caller that lowered the threshold can tell it from other refusals
/// (errors reach it as text).
pub const LARGE_DELTA_REFUSED: &str = "deltas of objects of core.bigFileThreshold";

/// Whether the error text `reason` is a refusal of a delta of a large
/// object.
pub fn refuses_large_delta(reason: &str) -> bool {
    reason.contains(LARGE_DELTA_REFUSED)
}

/// What the entries read so far inflate to, against the limits.
#[derive(Debug)]
pub(crate) struct Admission {
    limits: IngestLimits,
    inflated: u64,
}

impl Admission {
    pub(crate) fn new(limits: IngestLimits) -> Self {
        Admission {
            limits,
            inflated: 0,
        }
    }

    /// Judges an entry by the size its header announces, before it is
    /// inflated.
    pub(crate) fn before(&self, announced: u64) -> Result<(), OdbError> {
        self.within(self.inflated.saturating_add(announced))
    }

    /// Counts an inflated entry; for a delta, `prefix` is the start of
    /// what it inflated to, which announces its base and result sizes.
    pub(crate) fn after(
        &mut self,
        header: &Header,
        size: u64,
        prefix: &[u8],
        offset: u64,
    ) -> Result<(), OdbError> {
        let size = match header {
            Header::OfsDelta { .. } | Header::RefDelta { .. } => match delta_sizes(prefix) {
                // A delta that large itself would be held whole too.
                Some((base, result)) if self.limits.is_big(base.max(result).max(size)) => {
                    return Err(OdbError::Refused(format!(
                        "delta at offset {offset} of {size} bytes has a base of {base} bytes \
                         and a result of {result} bytes; {LARGE_DELTA_REFUSED} \
                         ({} bytes) or more are refused",
                        self.limits.big_file_threshold
                    )));
                }
                Some((_, result)) => result,
                // Refused where it is applied.
                None => size,
            },
            _ => size,
        };
        self.inflated = self.inflated.saturating_add(size);
        self.within(self.inflated)
    }

    fn within(&self, total: u64) -> Result<(), OdbError> {
        match self.limits.max_inflated {
            Some(max) if total > max => Err(OdbError::Refused(format!(
                "pack inflates beyond {max} bytes (refstore.maxPushInflated)"
            ))),
            _ => Ok(()),
        }
    }
}

/// The base and result sizes a delta announces at its start; `None` if
/// `prefix` does not hold them.
fn delta_sizes(prefix: &[u8]) -> Option<(u64, u64)> {
    let mut input = prefix;
    let base = crate::delta::read_size(&mut input).ok()?;
    let result = crate::delta::read_size(&mut input).ok()?;
    Some((base, result))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u64) -> IngestLimits {
        IngestLimits {
            big_file_threshold: 1000,
            max_inflated: Some(max),
        }
    }

    #[test]
    fn counts_objects_and_delta_results_against_the_bound() {
        let mut admission = Admission::new(limits(700));
        admission.after(&Header::Blob, 400, b"", 12).unwrap();
        assert!(admission.before(300).is_ok());
        assert!(admission.before(301).is_err());
        // Base 300 (0xac 0x02), result 5: counts 5, not its 9 bytes.
        let delta = Header::OfsDelta { base_distance: 1 };
        let prefix = [0xac, 0x02, 0x05, 0x05, b'h'];
        admission.after(&delta, 9, &prefix, 40).unwrap();
        let error = admission.after(&Header::Blob, 296, b"", 60).unwrap_err();
        assert_eq!(
            error.to_string(),
            "pack inflates beyond 700 bytes (refstore.maxPushInflated)"
        );
    }

    #[test]
    fn refuses_deltas_of_large_objects() {
        let mut admission = Admission::new(limits(1 << 20));
        let delta = Header::OfsDelta { base_distance: 1 };
        // Base 1000 (0xe8 0x07), result 5.
        let error = admission
            .after(&delta, 9, &[0xe8, 0x07, 0x05], 40)
            .unwrap_err();
        assert!(error.to_string().contains("base of 1000 bytes"), "{error}");
        assert!(refuses_large_delta(&error.to_string()), "{error}");
        // So is a delta as large itself, whatever it makes.
        let error = admission
            .after(&delta, 1000, &[0x05, 0x05], 60)
            .unwrap_err();
        assert!(error.to_string().contains("of 1000 bytes"), "{error}");
        // A prefix too short to say is left to the resolver.
        admission.after(&delta, 1, &[0x80], 50).unwrap();
    }
}

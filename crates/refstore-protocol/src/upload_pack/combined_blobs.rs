//! How a blob is judged under a `combine:` filter with `sparse:oid=`
//! parts, when the walk may meet it at several paths: as git judges it.
//!
//! Each part of git's combined filter remembers the blobs it has judged
//! for good, and answers "left out" when it meets one again; the blob is
//! sent only at a meeting where every part sends it. A size or type part
//! judges a blob for good at its first meeting, a sparse part once a path
//! includes it, a `tree:` part at each meeting nearer a root than the
//! ones before. So a small blob first met where the patterns leave it
//! out is not sent even if a later path would include it.

use super::filter::{Filter, Place};
use super::UploadPackError;
use refstore_hash::IdHasher;
use refstore_refs::ObjectId;
use std::collections::HashMap;

/// What the parts of a combined filter remember of the blobs they met.
pub(crate) struct CombinedBlobs {
    /// For each part, the blobs judged for good, with the depth they were
    /// met at (0 when depth does not matter).
    judged: Vec<HashMap<ObjectId, u64, IdHasher>>,
}

impl CombinedBlobs {
    /// Memory for a combined filter of `parts` parts.
    pub(crate) fn new(parts: usize) -> CombinedBlobs {
        CombinedBlobs {
            judged: (0..parts).map(|_| HashMap::default()).collect(),
        }
    }

    /// Whether `blob`, met at `depth` and `place`, is sent now.
    pub(crate) fn judge(
        &mut self,
        parts: &[Filter],
        blob: ObjectId,
        depth: u64,
        place: &Place<'_>,
        size: &mut dyn FnMut() -> Result<u64, UploadPackError>,
    ) -> Result<bool, UploadPackError> {
        let mut sent = true;
        for (part, judged) in parts.iter().zip(&mut self.judged) {
            if judged.get(&blob).is_some_and(|&at| at <= depth) {
                sent = false;
                continue;
            }
            let sends = part.blob(depth, place, size)?;
            let remember = match part {
                Filter::TreeDepth(_) => Some(depth),
                Filter::Sparse { .. } => sends.then_some(0),
                Filter::Combine(_) | Filter::SparseOid(_) => None,
                Filter::BlobNone | Filter::BlobLimit(_) | Filter::ObjectType(_) => Some(0),
            };
            if let Some(at) = remember {
                judged.insert(blob, at);
            }
            sent &= sends;
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upload_pack::sparse_patterns::SparsePatterns;
    use std::sync::Arc;

    fn parts() -> Vec<Filter> {
        vec![
            Filter::Sparse {
                slot: 0,
                patterns: Arc::new(SparsePatterns::parse(b"/copy/\n", false)),
            },
            Filter::BlobLimit(1024),
        ]
    }

    fn place<'a>(path: &'a [u8], included: &'a [bool]) -> Place<'a> {
        Place { path, included }
    }

    #[test]
    fn a_blob_first_met_where_a_part_leaves_it_out_is_not_sent() {
        let blob = refstore_refs::ObjectFormat::Sha1.null_id();
        let parts = parts();
        let mut memory = CombinedBlobs::new(parts.len());
        let size = &mut || Ok(5);
        let elsewhere = place(b"a/same", &[false]);
        assert!(!memory.judge(&parts, blob, 2, &elsewhere, size).unwrap());
        let included = place(b"copy/mid", &[true]);
        assert!(!memory.judge(&parts, blob, 2, &included, size).unwrap());

        // Met first where the patterns include it, it is sent.
        let mut memory = CombinedBlobs::new(parts.len());
        assert!(memory.judge(&parts, blob, 2, &included, size).unwrap());
    }
}

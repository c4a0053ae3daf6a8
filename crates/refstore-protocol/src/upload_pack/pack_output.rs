//! Writing the pack: gitoxide's pack-output pipeline (count, entries,
//! bytes) over the chosen objects, streamed into side-band 1 with progress
//! on band 2.
//!
//! Entries already stored as deltas in a pack whose base is sent too are
//! copied as they are; the others are deflated afresh, and trees and blobs
//! among them become deltas against an earlier version of their path where
//! that is smaller ([`DeltaSearch`]). Packs are never thin: gix-pack would
//! keep deltas against any base outside the pack, not only against objects
//! the client is known to have.

use super::delta_search::DeltaSearch;
use super::graph::Graph;
use super::walk::PackContents;
use super::UploadPackError;
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use crate::pkt_line::PacketWriter;
use gix_pack::data::output;
use std::io::Write;
use std::sync::atomic::AtomicBool;

/// How the client wants the pack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackRequest {
    /// Progress messages are sent on band 2 (no `no-progress`).
    pub progress: bool,
}

/// What was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackSummary {
    /// Objects in the pack.
    pub objects: usize,
    /// Of those, sent as deltas.
    pub deltas: usize,
}

/// Sends a pack of `contents` on side-band `mode` of `out`, with progress
/// unless `request` turns it off, and ends the stream with its flush-pkt. A
/// failure is also reported to the client on band 3.
pub(crate) fn send_pack<W: Write>(
    graph: &Graph,
    contents: PackContents,
    request: PackRequest,
    mode: SidebandMode,
    out: &mut PacketWriter<W>,
) -> Result<PackSummary, UploadPackError> {
    let mut band = SidebandWriter::new(out, mode);
    let result = count(graph, contents.ids).and_then(|counts| {
        if request.progress {
            let message = format!("Enumerating objects: {}, done.\n", counts.len());
            band.write_progress(message.as_bytes())?;
        }
        encode(graph, counts, &contents.paths, &mut band)
    });
    match result {
        Ok(summary) => {
            if request.progress {
                let message = format!("Total {} (delta {})\n", summary.objects, summary.deltas);
                band.write_progress(message.as_bytes())?;
            }
            band.finish()?;
            Ok(summary)
        }
        Err(err) => {
            // The client is reading a pack: only band 3 reaches it.
            let message = format!("{}\n", err.client_message());
            band.write_error(message.as_bytes())?;
            Err(err)
        }
    }
}

/// Sends a pack of `contents` unframed, for a client that asked for no
/// side-band: the pack is the last thing on the connection.
pub(crate) fn send_raw_pack(
    graph: &Graph,
    contents: PackContents,
    out: &mut dyn Write,
) -> Result<PackSummary, UploadPackError> {
    let counts = count(graph, contents.ids)?;
    encode(graph, counts, &contents.paths, out)
}

fn failed(e: gix_error::Error) -> UploadPackError {
    UploadPackError::objects("cannot write the pack", e)
}

/// Looks up where each object is stored (gix-pack's count step).
fn count(
    graph: &Graph,
    ids: Vec<gix_hash::ObjectId>,
) -> Result<Vec<output::Count>, UploadPackError> {
    let db = graph.handle();
    let never_interrupted = AtomicBool::new(false);
    let (counts, _) = output::count::objects_unthreaded(
        &db,
        &mut ids.into_iter().map(Ok),
        &gix_utils::progress::Discard,
        &never_interrupted,
        output::count::objects::ObjectExpansion::AsIs,
    )
    .map_err(failed)?;
    Ok(counts)
}

/// Encodes the counted objects as a pack into `out`, pairing versions of
/// one path (`paths`) as deltas.
fn encode(
    graph: &Graph,
    counts: Vec<output::Count>,
    paths: &std::collections::HashMap<gix_hash::ObjectId, u64>,
    out: &mut dyn Write,
) -> Result<PackSummary, UploadPackError> {
    let objects = counts.len();
    let object_count = u32::try_from(objects).map_err(|_| {
        UploadPackError::Objects(format!("{objects} objects do not fit in one pack"))
    })?;
    let entries = output::entry::iter_from_counts(
        counts,
        graph.handle(),
        Box::new(gix_utils::progress::Discard),
        output::entry::iter_from_counts::Options {
            // The machine serves other clients: one thread per fetch.
            thread_limit: Some(1),
            mode: output::entry::iter_from_counts::Mode::PackCopyAndBaseObjects,
            allow_thin_pack: false,
            chunk_size: 64,
            version: gix_pack::data::Version::V2,
            compression: gix_zlib::Compression::DEFAULT,
        },
    )
    .map_err(failed)?;
    let mut deltas = 0;
    let mut search = DeltaSearch::new(graph.handle(), paths);
    let entries = gix_parallel::InOrderIter::from(entries).map(|chunk| {
        let mut entries: Vec<output::Entry> = chunk?;
        search
            .process(&mut entries)
            .map_err(gix_error::Error::from_error)?;
        deltas += entries
            .iter()
            .filter(|e| !matches!(e.kind, output::entry::Kind::Base(_)))
            .count();
        Ok(entries)
    });
    // Entries arrive as many small writes (a header, then data): gather
    // them into full side-band packets.
    let buffered =
        std::io::BufWriter::with_capacity(SidebandMode::SideBand64k.max_content_len(), out);
    let mut bytes = output::bytes::FromEntriesIter::new(
        entries,
        buffered,
        object_count,
        gix_pack::data::Version::V2,
        graph.hash_kind(),
    );
    for written in bytes.by_ref() {
        written.map_err(failed)?;
    }
    bytes
        .into_write()
        .flush()
        .map_err(|e| UploadPackError::Packet(e.into()))?;
    Ok(PackSummary { objects, deltas })
}

//! Writing the pack for the chosen objects, streamed into side-band 1 with
//! progress on band 2 in git's words.
//!
//! Stored pack entries are sent as they are stored wherever that is valid:
//! a whole object always, a delta when its base is sent too (an offset
//! delta gets the distance of the new layout; a reference delta becomes
//! an offset delta). Their compressed bytes are copied without being
//! inflated, after checking them against the CRC32 the pack's `.idx`
//! records, as git's pack-objects does when it reuses; a damaged entry is
//! sent from another copy (another pack, a loose object) compressed afresh,
//! or the fetch fails with an error on band 3, never with a damaged pack.
//! A base is always written before its deltas, whatever order the walk
//! gave.
//!
//! Objects that are not stored in a pack (loose) and stored deltas whose
//! base is not sent are inflated and compressed afresh; trees and blobs
//! among them become deltas against an earlier version of their path where
//! that is smaller ([`DeltaSearch`]).
//!
//! A pack is thin only when the client asked for it (`thin-pack`): then a
//! stored delta whose base the client has is copied as a reference delta
//! against it, and trees and blobs with a version on the client (see
//! `thin.rs`), stored whole or compressed afresh, are also tried as deltas
//! against that version. Otherwise every base is in the pack.
//!
//! Where the objects begin with entries of a stored pack in the order it
//! stores them (a count with bitmaps lists them so), with holes where the
//! pack holds objects not sent, those entries are sent first as they are
//! stored, the holes closed and offset deltas' distances rewritten, and so
//! are those of the packs a multi-pack index numbers after it, as git's
//! pack reuse does ([`reuse`] chooses them, [`verbatim`] copies them);
//! when one pack is sent whole, the new pack is the stored one, checksum
//! included.
//!
//! [`plan`] decides how each object is sent, reading only entry headers;
//! [`write`] writes the pack that plan describes.

mod plan;
mod request;
mod reuse;
mod verbatim;
mod write;

pub(crate) use request::PackRequest;
pub(crate) use write::PackSummary;

use super::contents::PackContents;
use super::graph::Graph;
use super::UploadPackError;
use crate::pack_cache::Fill;
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use crate::pkt_line::PacketWriter;
use std::io::Write;

/// Sends a pack of `contents` on side-band `mode` of `out`, with progress
/// unless `request` turns it off, and ends the stream with its flush-pkt. A
/// failure is also reported to the client on band 3. With `cache`, the
/// pack's bytes also go into that pack cache entry.
pub(crate) fn send_pack<W: Write>(
    graph: &Graph,
    mut contents: PackContents,
    request: PackRequest,
    mode: SidebandMode,
    out: &mut PacketWriter<W>,
    cache: Option<&mut Fill>,
) -> Result<PackSummary, UploadPackError> {
    let mut band = SidebandWriter::new(out, mode);
    let result = plan::plan(graph, &mut contents, request).and_then(|plan| {
        contents.forget_lookups();
        if request.progress {
            let n = contents.ids.len();
            let mut message = format!(
                "Enumerating objects: {n}, done.\nCounting objects: 100% ({n}/{n}), done.\n"
            );
            if plan.fresh_for_delta > 0 {
                let f = plan.fresh_for_delta;
                message.push_str(&format!("Compressing objects: 100% ({f}/{f}), done.\n"));
            }
            band.write_progress(message.as_bytes())?;
        }
        match cache {
            Some(fill) => write::write(graph, &contents, plan, request, &mut fill.tee(&mut band)),
            None => write::write(graph, &contents, plan, request, &mut band),
        }
    });
    match result {
        Ok(summary) => {
            if request.progress {
                let message = format!(
                    "Total {} (delta {}), reused {} (delta {}), pack-reused {}\n",
                    summary.objects,
                    summary.deltas,
                    summary.reused,
                    summary.reused_deltas,
                    summary.pack_reused
                );
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
/// side-band: the pack is the last thing on the connection. With `cache`,
/// its bytes also go into that pack cache entry.
pub(crate) fn send_raw_pack(
    graph: &Graph,
    mut contents: PackContents,
    request: PackRequest,
    out: &mut dyn Write,
    cache: Option<&mut Fill>,
) -> Result<PackSummary, UploadPackError> {
    let plan = plan::plan(graph, &mut contents, request)?;
    contents.forget_lookups();
    match cache {
        Some(fill) => write::write(graph, &contents, plan, request, &mut fill.tee(out)),
        None => write::write(graph, &contents, plan, request, out),
    }
}

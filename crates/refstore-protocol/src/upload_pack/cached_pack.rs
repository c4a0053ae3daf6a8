//! Sending a fetch's pack, through the pack cache where it is on
//! ([`crate::pack_cache`]): a request whose pack is cached, or being
//! written for an identical request, is sent those bytes without walking
//! anything; otherwise the pack is computed, and where the cache is on,
//! written into a new entry as it is sent.
//!
//! The cache holds the pack's bytes only: each request frames them for its
//! own connection (side-band or raw), and progress messages are those of
//! the request that computes the pack.

use super::filtered_walk;
use super::graph::Graph;
use super::pack_key::{pack_key, PackInputs};
use super::pack_output::{self, PackRequest};
use super::{walk, Session, UploadPackError};
use crate::pack_cache::{self, CopyError, EntryReader, Fill, Lookup};
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use std::io::Write;

/// Sends the pack `inputs` make, in side-band packets of `mode` or, with
/// none, raw as the last thing on the connection. `progress`: progress
/// messages on band 2.
pub(super) fn send(
    session: &mut Session<'_>,
    graph: &mut Graph,
    inputs: PackInputs<'_>,
    progress: bool,
    mode: Option<SidebandMode>,
) -> Result<(), UploadPackError> {
    let request = PackRequest {
        progress,
        thin: inputs.thin,
        ofs_delta: inputs.ofs_delta,
    };
    let repo = session.repo;
    let lookup = pack_cache::for_repository(repo).and_then(|cache| {
        let key = pack_key(&repo.location.git_dir, repo.object_format(), &inputs)?;
        Some(cache.lookup(key, repo.object_format()))
    });
    let observe = |outcome| {
        if let Some(observer) = refstore_fs::observe::observer() {
            observer.pack_cache_lookup(outcome);
        }
    };
    match lookup {
        Some(Lookup::Hit(reader)) => {
            observe("hit");
            send_cached(session, reader, mode)
        }
        Some(Lookup::Follow(reader)) => {
            observe("follow");
            send_cached(session, reader, mode)
        }
        Some(Lookup::Miss(mut fill)) => {
            observe("miss");
            let result = compute(session, graph, &inputs, request, mode, Some(fill.as_mut()));
            fill.finish();
            result
        }
        Some(Lookup::Uncached) | None => compute(session, graph, &inputs, request, mode, None),
    }
}

/// Walks for the pack's objects and writes the pack, into `fill` too.
fn compute(
    session: &mut Session<'_>,
    graph: &mut Graph,
    inputs: &PackInputs<'_>,
    request: PackRequest,
    mode: Option<SidebandMode>,
    fill: Option<&mut Fill>,
) -> Result<(), UploadPackError> {
    let PackInputs {
        wants,
        common,
        edges,
        tags,
        filter,
        shallow_thin,
        ..
    } = *inputs;
    let edges = walk::ShallowEdges {
        unshallowed: edges,
        aggressive: shallow_thin,
    };
    let contents = match filter {
        Some(filter) => filtered_walk::pack_contents(graph, wants, common, tags, filter, edges),
        None => walk::pack_contents(graph, wants, common, tags, edges),
    };
    session.pack_started = true;
    let contents = match (contents, mode) {
        (Ok(contents), _) => contents,
        (Err(err), Some(mode)) => {
            // The client reads side-band packets already (v2's packfile
            // section has begun; v0's pack follows the NAK): only band 3
            // reaches it, as when git's pack-objects fails there.
            let mut band = SidebandWriter::new(session.out(), mode);
            band.write_error(format!("{}\n", err.client_message()).as_bytes())?;
            return Err(err);
        }
        (Err(err), None) => {
            session.pack_started = false;
            return Err(err);
        }
    };
    match mode {
        Some(mode) => {
            pack_output::send_pack(graph, contents, request, mode, session.out(), fill)?;
        }
        None => {
            let packets = session.output.take().expect("the output is still there");
            let mut out = packets.into_inner()?;
            pack_output::send_raw_pack(graph, contents, request, &mut out, fill)?;
            out.flush().map_err(|e| UploadPackError::Packet(e.into()))?;
        }
    }
    Ok(())
}

/// Sends a cached entry's pack.
fn send_cached(
    session: &mut Session<'_>,
    mut reader: EntryReader,
    mode: Option<SidebandMode>,
) -> Result<(), UploadPackError> {
    session.pack_started = true;
    let client_error = |e: std::io::Error| UploadPackError::Packet(e.into());
    match mode {
        Some(mode) => {
            let mut band = SidebandWriter::new(session.out(), mode);
            match reader.copy_to(&mut band) {
                Ok(_) => band.finish()?,
                Err(CopyError::Client(e)) => return Err(client_error(e)),
                Err(CopyError::Entry(message)) => {
                    band.write_error(format!("{message}\n").as_bytes())?;
                    return Err(UploadPackError::Objects(message));
                }
            }
        }
        None => {
            let packets = session.output.take().expect("the output is still there");
            let mut out = packets.into_inner()?;
            match reader.copy_to(&mut out) {
                Ok(_) => out.flush().map_err(client_error)?,
                Err(CopyError::Client(e)) => return Err(client_error(e)),
                // The client sees the pack end early and fails.
                Err(CopyError::Entry(message)) => return Err(UploadPackError::Objects(message)),
            }
        }
    }
    Ok(())
}

//! upload-pack, the serving side of `git fetch`, `git clone` and
//! `git ls-remote`, for any transport that gives it the client's bytes and
//! a place for its answer.
//!
//! - Protocol v0 and v1: the ref advertisement (`advertisement.rs`), then
//!   the client's wants and capabilities, a negotiation of `have` lines
//!   (`multi_ack`, `multi_ack_detailed` or neither) and a pack.
//! - Protocol v2: a capability advertisement, then `ls-refs` and `fetch`
//!   commands (`v2/`).
//!
//! The pack holds what is reachable from the wants and not from the
//! commits both sides have: counted with git's reachability bitmaps where
//! the repository has them (`bitmap_walk.rs`), walked otherwise
//! (`walk.rs`, commits from the commit-graph where it covers them),
//! written inside side-band packets
//! (`pack_output.rs`, `pack_writer.rs`): stored entries are copied without
//! being inflated wherever they are valid in the new pack (a whole object,
//! or a delta whose base is sent too), checked against their pack index's
//! CRC32; other trees and blobs are compressed afresh, as deltas against
//! the previous version of their path where that is smaller
//! (`delta_search.rs`). A client that asks for a thin pack (`thin-pack`)
//! also gets deltas against the versions it has of what is sent
//! (`thin.rs`).
//!
//! [`Options`] carries git's `--stateless-rpc` and `--advertise-refs`: over
//! HTTP one request is answered per call, and the advertisement is its own
//! call. Shallow clones and fetches (`shallow`, `deepen`, `deepen-since`,
//! `deepen-not`, `deepen-relative`) move the boundary of the client's
//! history (`shallow.rs`). Partial clones (`filter`, when
//! `uploadpack.allowFilter` is set) get a pack without what their filter
//! leaves out (`filter.rs`, `filtered_walk.rs`). Not supported: hidden refs
//! and namespaces.
//!
//! A client's invalid request gets an `ERR` packet (or a band-3 message
//! once the pack has started) in git's wording, and the call returns the
//! error for the transport to log and exit non-zero.

mod advertisement;
mod bitmap_walk;
mod combined_blobs;
mod contents;
mod delta_search;
mod error;
pub(crate) mod filter;
mod filtered_walk;
mod graph;
mod negotiation;
mod pack_output;
mod pack_writer;
mod refs;
pub(crate) mod request;
mod shallow;
mod sparse;
mod sparse_oid;
mod thin;
mod tree_scan;
pub(crate) mod v0;
pub(crate) mod v2;
mod versions;
mod walk;
mod wants;

pub use error::UploadPackError;

use crate::pkt_line::{Dialect, PacketReader, PacketWriter};
use crate::{ProtocolVersion, Repository};
use std::io::{BufReader, Read, Write};
use std::sync::Arc;

/// How a transport runs upload-pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Answer one request and return, as over HTTP: no advertisement first
    /// (git's `--stateless-rpc`).
    pub stateless_rpc: bool,
    /// Only write the advertisement (git's `--advertise-refs`).
    pub advertise_refs: bool,
    /// The protocol version the client asked for.
    pub version: ProtocolVersion,
}

/// Serves one fetch (or one request of it, with `stateless_rpc`) of `repo`,
/// reading the client's packets from `input` and writing the answer to
/// `output`.
pub fn upload_pack(
    repo: &Repository,
    options: &Options,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> Result<(), UploadPackError> {
    let dialect = match options.version {
        ProtocolVersion::V2 => Dialect::V2,
        ProtocolVersion::V0 | ProtocolVersion::V1 => Dialect::V0,
    };
    // The same bound as HTTP puts on one request, on everything a client
    // sends in the session (stdio, SSH).
    let limit = crate::limits::Limits::from_config(&repo.config)
        .map_err(|e| UploadPackError::Objects(format!("bad configuration: {e}")))?
        .max_fetch_request;
    let input: Box<dyn Read + '_> = Box::new(crate::limits::Limited::new(input, limit));
    let output: Box<dyn Write + '_> = Box::new(output);
    let mut session = Session {
        repo,
        options: *options,
        input: PacketReader::new(BufReader::new(input), dialect).fail_on_err_packets(false),
        output: Some(PacketWriter::new(output)),
        pack_started: false,
        packs: None,
    };
    let result = match options.version {
        ProtocolVersion::V2 => v2::serve(&mut session),
        ProtocolVersion::V0 | ProtocolVersion::V1 => v0::serve(&mut session),
    };
    if let Err(err) = &result {
        session.report(err);
        session.drain_after(err);
    }
    result
}

/// One connection's state, shared by the protocol versions.
pub(crate) struct Session<'a> {
    repo: &'a Repository,
    options: Options,
    input: PacketReader<BufReader<Box<dyn Read + 'a>>>,
    /// Taken when a raw pack (no side-band) ends the connection.
    output: Option<PacketWriter<Box<dyn Write + 'a>>>,
    /// Once pack data flows, errors go on band 3, not in `ERR` packets.
    pack_started: bool,
    /// The repository's packs as stored, opened on first use and shared by
    /// the commands of the connection: each opening maps and checks every
    /// pack index.
    packs: Option<Arc<refstore_odb::Packs>>,
}

impl<'a> Session<'a> {
    /// The packet writer.
    fn out(&mut self) -> &mut PacketWriter<Box<dyn Write + 'a>> {
        self.output
            .as_mut()
            .expect("the output is taken only by the last write of a session")
    }

    /// The repository's packs, as stored.
    fn packs(&mut self) -> Result<Arc<refstore_odb::Packs>, UploadPackError> {
        if let Some(packs) = &self.packs {
            return Ok(packs.clone());
        }
        let packs =
            refstore_odb::Packs::open(self.repo.objects.objects_dir(), self.repo.object_format())
                .map_err(|e| UploadPackError::objects("cannot open the packs", e))?;
        Ok(self.packs.insert(Arc::new(packs)).clone())
    }

    /// Drops the packs opened so far, so that the next [`packs`](Self::packs)
    /// sees packs stored since.
    fn forget_packs(&mut self) {
        self.packs = None;
    }

    /// Tells the client why its request failed, when it can still hear it.
    fn report(&mut self, err: &UploadPackError) {
        let tell_client = matches!(
            err,
            UploadPackError::Request(_) | UploadPackError::Refs(_) | UploadPackError::Objects(_)
        ) || matches!(err, UploadPackError::Packet(e) if !matches!(e, crate::pkt_line::Error::Io(_)));
        if !tell_client || self.pack_started {
            return;
        }
        if let Some(out) = self.output.as_mut() {
            // The connection may be gone; the error is returned either way.
            // Without a newline, as git writes its `ERR` packets.
            let _ = out.write_data(format!("ERR {}", err.client_message()).as_bytes());
            let _ = out.flush_buffered();
        }
    }

    /// After refusing a request, reads what the client still sends of it
    /// (a v0 client sends `done` right after its wants) before hanging up:
    /// a client whose write fails on a closed pipe dies before it reads
    /// the `ERR` packet that says why. The client hangs up once it has
    /// read that packet; a bounded number of packets is read at most.
    fn drain_after(&mut self, err: &UploadPackError) {
        if !matches!(err, UploadPackError::Request(_)) || self.pack_started {
            return;
        }
        for _ in 0..1024 {
            match self.input.read() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
}

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
//! (`pack_output/`, `pack_writer.rs`): stored entries are copied without
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
mod cached_pack;
mod combined_blobs;
mod contents;
mod delta_search;
mod error;
pub(crate) mod filter;
mod filtered_walk;
mod graph;
mod negotiation;
mod pack_key;
mod pack_output;
mod pack_writer;
mod refs;
pub(crate) mod request;
mod session;
mod shallow;
mod sparse;
mod sparse_oid;
mod sparse_patterns;
mod thin;
mod tree_scan;
pub(crate) mod v0;
pub(crate) mod v2;
mod versions;
mod walk;
mod wants;

pub use error::UploadPackError;
pub use session::Options;

use crate::pkt_line::{Dialect, PacketReader, PacketWriter};
use crate::{ProtocolVersion, Repository};
use session::Session;
use std::io::{BufReader, Read, Write};

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
    let input = PacketReader::new(BufReader::new(input), dialect).fail_on_err_packets(false);
    let mut session = Session::new(repo, *options, input, PacketWriter::new(output));
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

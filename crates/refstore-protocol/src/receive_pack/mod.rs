//! receive-pack, the serving side of `git push`, for any transport that
//! gives it the client's bytes and a place for its answer (protocol v0;
//! git has no v2 for pushes, and a client that asks for v1 accepts a v0
//! answer).
//!
//! A push flows through, in order:
//!
//! 1. the ref advertisement (`advertisement.rs`);
//! 2. the command list, capabilities and push options (`commands.rs`);
//! 3. the pack, stored durably with its index and a `.keep` file, thin
//!    packs completed, then the connectivity check of the new tips
//!    (`ingest.rs`);
//! 4. git's per-ref policies, then all accepted updates in one transaction
//!    with one flush point (`update.rs`), atomic or per ref;
//! 5. the `.keep` file released, and the status report (`report.rs`).
//!
//! Nothing refers to the new pack until its refs are committed, so a push
//! that fails at any stage leaves every ref as it was. A malformed request
//! (bad framing, an invalid id, a command line of the wrong shape) ends
//! the call with an error before anything is stored; a bad pack and
//! refused refs are reported to the client, and the call succeeds.
//!
//! Not supported: shallow pushes, signed pushes (`push-cert`), hooks,
//! hidden refs and namespaces. Push options are read and ignored, as git
//! does without hooks to pass them to.

mod advertisement;
pub(crate) mod commands;
mod error;
mod fast_forward;
mod ingest;
mod report;
mod update;

pub use error::ReceivePackError;

use crate::pkt_line::{Dialect, PacketReader, PacketWriter};
use crate::Repository;
use std::io::{BufReader, Read, Write};

/// How a transport runs receive-pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Serve one request and return, as over HTTP: no advertisement first
    /// (git's `--stateless-rpc`).
    pub stateless_rpc: bool,
    /// Only write the advertisement (git's `--advertise-refs`).
    pub advertise_refs: bool,
}

/// Serves one push into `repo`, reading the client's packets and pack from
/// `input` and writing the advertisement and report to `output`.
pub fn receive_pack(
    repo: &Repository,
    options: &Options,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> Result<(), ReceivePackError> {
    let mut out = PacketWriter::new(output);
    if options.advertise_refs || !options.stateless_rpc {
        advertisement::write(&mut out, repo)?;
        if options.advertise_refs {
            return Ok(());
        }
    }
    let mut reader =
        PacketReader::new(BufReader::new(input), Dialect::V0).fail_on_err_packets(false);
    let request = commands::read(&mut reader, repo.object_format())?;
    if request.commands.is_empty() {
        return Ok(());
    }
    let mut input = reader.into_inner();
    let mut messages = Vec::new();
    let mut results: Vec<Option<String>> = vec![None; request.commands.len()];
    let unpack = if request.expects_pack() {
        ingest::receive(repo, &mut input)
    } else {
        Ok(None)
    };
    let unpack = match unpack {
        Ok(pack) => {
            let applied = connect_and_apply(repo, &request, &mut results, &mut messages);
            // The refs are written (or refused): the pack no longer needs
            // protection from gc, whatever happened.
            if let Some(pack) = &pack {
                if let Err(e) = pack.release_keep(repo.vfs.as_ref()) {
                    messages.push(format!("warning: cannot remove {}: {e}", display(pack)));
                }
            }
            applied?;
            Ok(())
        }
        Err(reason) => {
            messages.push(format!("error: unpack failed: {reason}"));
            for result in &mut results {
                *result = Some("unpacker error".to_owned());
            }
            Err(reason)
        }
    };
    report::write(
        &mut out,
        &request.capabilities,
        &report::Report {
            unpack,
            commands: &request.commands,
            results: &results,
            messages: &messages,
        },
    )
}

/// Checks the connectivity of the new tips, then applies the commands
/// that passed, recording each command's outcome in `results`.
fn connect_and_apply(
    repo: &Repository,
    request: &commands::Request,
    results: &mut [Option<String>],
    messages: &mut Vec<String>,
) -> Result<(), ReceivePackError> {
    let connected = ingest::check_connected(repo, &request.commands, messages)?;
    for (result, missing) in results.iter_mut().zip(connected) {
        *result = missing.map(str::to_owned);
    }
    update::apply(
        repo,
        &request.commands,
        request.capabilities.atomic,
        results,
        messages,
    )
}

/// The `.keep` file of a pack, for messages.
fn display(pack: &refstore_odb::StoredPack) -> String {
    pack.keep_path
        .as_deref()
        .unwrap_or(&pack.pack_path)
        .display()
        .to_string()
}

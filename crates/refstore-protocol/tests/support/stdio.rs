//! upload-pack and receive-pack served inside the test process, as the
//! `refstore upload-pack` and `receive-pack` commands serve them over
//! standard input and output: the repository opened as they open it, the
//! protocol version taken from `GIT_PROTOCOL`. Tests feed them bytes
//! directly ([`upload_pack`], [`receive_pack`]), and the real git client
//! reaches them through a [`Relay`] ([`relay`]).
#![allow(dead_code)] // each test binary uses a different part

use refstore_protocol::{receive_pack, upload_pack, ProtocolVersion, Repository};
use refstore_testsupport::relay::{Call, Relay};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

/// How one call is served.
#[derive(Debug, Clone, Copy, Default)]
pub struct How {
    /// Answer one request, as over HTTP (`--stateless-rpc`).
    pub stateless_rpc: bool,
    /// Only advertise (`--advertise-refs`).
    pub advertise_refs: bool,
    /// The protocol version the client asked for.
    pub version: ProtocolVersion,
}

impl How {
    /// The version of a `GIT_PROTOCOL` value, as the commands read it.
    pub fn from_git_protocol(value: Option<&str>) -> How {
        How {
            version: ProtocolVersion::from_git_protocol(value),
            ..How::default()
        }
    }
}

/// The repository at `dir` opened to be served, or the message the
/// commands give when it cannot be.
pub fn open(dir: &Path) -> Result<Repository, String> {
    let vfs = Arc::new(refstore_fs::real::RealFs::new());
    refstore_repo::Repository::open(vfs, dir, &[])
        .and_then(Repository::serve)
        .map_err(|e| e.to_string())
}

/// upload-pack on the repository at `dir`; the error as the command
/// prints it after `fatal: `.
pub fn upload_pack(
    dir: &Path,
    how: How,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> Result<(), String> {
    let repo = open(dir)?;
    let options = upload_pack::Options {
        stateless_rpc: how.stateless_rpc,
        advertise_refs: how.advertise_refs,
        version: how.version,
    };
    upload_pack::upload_pack(&repo, &options, input, output).map_err(|e| e.to_string())
}

/// receive-pack into the repository at `dir`; the error as the command
/// prints it after `fatal: `.
pub fn receive_pack(
    dir: &Path,
    how: How,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> Result<(), String> {
    let repo = open(dir)?;
    let options = receive_pack::Options {
        stateless_rpc: how.stateless_rpc,
        advertise_refs: how.advertise_refs,
        version: how.version,
    };
    receive_pack::receive_pack(&repo, &options, input, output)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Serves a call git made through the relay: `<service> <repository>`,
/// as git starts a server for a local or `file://` URL.
fn serve(call: &Call, input: &mut dyn Read, output: &mut dyn Write) -> Result<(), String> {
    if call.args.len() != 1 {
        return Err(format!("unexpected arguments {:?}", call.args));
    }
    let how = How::from_git_protocol(call.git_protocol.as_deref());
    let dir = call.repository();
    match call.service.as_str() {
        "upload-pack" => upload_pack(&dir, how, input, output),
        "receive-pack" => receive_pack(&dir, how, input, output),
        other => Err(format!("no service {other}")),
    }
}

/// A relay serving git's calls in this process, for as long as it is
/// kept: git reaches it with [`Relay::command`] (`--upload-pack=<command>`).
pub fn relay() -> Relay {
    Relay::start(serve)
}

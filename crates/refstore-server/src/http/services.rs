//! The two services as smart HTTP runs them: stateless, one round per
//! request, the advertisement on its own endpoint.

use super::route::Service;
use refstore_protocol::receive_pack;
use refstore_protocol::repository::Repository;
use refstore_protocol::upload_pack;
use refstore_protocol::version::ProtocolVersion;
use std::io::{Read, Write};

/// The protocol version a `Git-Protocol` header asks for (v0 without one).
pub fn version(header: Option<&str>) -> ProtocolVersion {
    ProtocolVersion::from_git_protocol(header)
}

/// True for protocol v2, whose advertisement has no `# service=` header.
pub fn is_v2(version: ProtocolVersion) -> bool {
    version == ProtocolVersion::V2
}

/// Writes the advertisement of `service`.
pub fn advertise(
    repo: &Repository,
    service: Service,
    version: ProtocolVersion,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut nothing: &[u8] = &[];
    match service {
        Service::UploadPack => upload_pack::upload_pack(
            repo,
            &upload_pack::Options {
                stateless_rpc: true,
                advertise_refs: true,
                version,
            },
            &mut nothing,
            out,
        )
        .map_err(|e| e.to_string()),
        Service::ReceivePack => receive_pack::receive_pack(
            repo,
            &receive_pack::Options {
                stateless_rpc: true,
                advertise_refs: true,
                version,
            },
            &mut nothing,
            out,
        )
        .map(|_| ())
        .map_err(|e| e.to_string()),
    }
}

/// One round of upload-pack.
pub fn upload_pack(
    repo: &Repository,
    version: ProtocolVersion,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<(), String> {
    let options = upload_pack::Options {
        stateless_rpc: true,
        advertise_refs: false,
        version,
    };
    upload_pack::upload_pack(repo, &options, input, out).map_err(|e| e.to_string())
}

/// A push: commands, pack, report; how many refs it updated. The error
/// stays typed: a malformed request is the client's fault and is answered
/// as such.
pub fn receive_pack(
    repo: &Repository,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<usize, receive_pack::ReceivePackError> {
    // No advertisement, so nothing depends on the version.
    let options = receive_pack::Options {
        stateless_rpc: true,
        ..receive_pack::Options::default()
    };
    receive_pack::receive_pack(repo, &options, input, out)
}

//! One upload-pack connection: how the transport runs it ([`Options`]),
//! the client's packets and the answer's writer, and what its commands
//! share (the packs as stored, whether pack data has started).

use super::UploadPackError;
use crate::pkt_line::{PacketReader, PacketWriter};
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

/// One connection's state, shared by the protocol versions.
pub(crate) struct Session<'a> {
    pub(super) repo: &'a Repository,
    pub(super) options: Options,
    pub(super) input: PacketReader<BufReader<Box<dyn Read + 'a>>>,
    /// Taken when a raw pack (no side-band) ends the connection.
    pub(super) output: Option<PacketWriter<Box<dyn Write + 'a>>>,
    /// Once pack data flows, errors go on band 3, not in `ERR` packets.
    pub(super) pack_started: bool,
    /// The repository's packs as stored, opened on first use and shared by
    /// the commands of the connection: each opening maps and checks every
    /// pack index.
    packs: Option<Arc<refstore_odb::Packs>>,
}

impl<'a> Session<'a> {
    /// A session of `repo` reading the client's packets from `input` and
    /// writing its answers to `output`.
    pub(super) fn new(
        repo: &'a Repository,
        options: Options,
        input: PacketReader<BufReader<Box<dyn Read + 'a>>>,
        output: PacketWriter<Box<dyn Write + 'a>>,
    ) -> Self {
        Session {
            repo,
            options,
            input,
            output: Some(output),
            pack_started: false,
            packs: None,
        }
    }

    /// The packet writer.
    pub(super) fn out(&mut self) -> &mut PacketWriter<Box<dyn Write + 'a>> {
        self.output
            .as_mut()
            .expect("the output is taken only by the last write of a session")
    }

    /// The repository's packs, as stored.
    pub(super) fn packs(&mut self) -> Result<Arc<refstore_odb::Packs>, UploadPackError> {
        if let Some(packs) = &self.packs {
            return Ok(packs.clone());
        }
        let packs = refstore_odb::shared::shared_packs(
            self.repo.objects.objects_dir(),
            self.repo.object_format(),
        )
        .map_err(|e| UploadPackError::objects("cannot open the packs", e))?;
        Ok(self.packs.insert(packs).clone())
    }

    /// Drops the packs opened so far, so that the next [`packs`](Self::packs)
    /// sees packs stored since.
    pub(super) fn forget_packs(&mut self) {
        self.packs = None;
    }

    /// Tells the client why its request failed, when it can still hear it.
    pub(super) fn report(&mut self, err: &UploadPackError) {
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
    pub(super) fn drain_after(&mut self, err: &UploadPackError) {
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

//! The protocol v0/v1 ref advertisement: every offered ref with its id,
//! the server's capabilities after a NUL on the first line, annotated tags
//! followed by their peeled `^{}` lines.
//!
//! All of it is written into one [`PacketWriter`] buffer, which goes out
//! in `write(2)` calls of up to 64 KiB; each line is written straight into
//! that buffer, with nothing allocated per ref.

use super::refs::{Head, OfferedView, Offering, RefSnapshot};
use super::UploadPackError;
use crate::pkt_line::PacketWriter;
use refstore_refs::ObjectFormat;
use std::io::Write;

/// The capabilities a v0 server always offers; the others depend on the
/// repository and its configuration ([`Offered`]).
const CAPABILITIES: &str = "multi_ack thin-pack side-band side-band-64k ofs-delta shallow \
     deepen-since deepen-not deepen-relative no-progress include-tag multi_ack_detailed";

/// The capabilities the configuration turns on.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offered {
    /// `allow-tip-sha1-in-want`.
    pub tip: bool,
    /// `allow-reachable-sha1-in-want`.
    pub reachable: bool,
    /// `filter` (partial clone).
    pub filter: bool,
    /// `no-done`: offered in an advertisement made on its own
    /// (`--advertise-refs`, as over HTTP), whose clients all read it.
    pub no_done: bool,
}

/// The `agent` value this server sends.
pub(crate) fn agent() -> String {
    format!("refstore/{}", env!("CARGO_PKG_VERSION"))
}

/// Writes the advertisement of `snapshot`, preceded by `version 1` when
/// `version_line` is set, and ends it with a flush-pkt.
pub(crate) fn write<W: Write>(
    out: &mut PacketWriter<W>,
    snapshot: &RefSnapshot,
    format: ObjectFormat,
    version_line: bool,
    offered: Offered,
) -> Result<(), UploadPackError> {
    let mut lines = Lines::start(out, &snapshot.head, format, version_line, offered)?;
    for offered in snapshot.offered() {
        lines.offer(out, offered.view())?;
    }
    lines.finish(out)
}

/// Like [`write`], streaming the refs from `offering` as the store shows
/// them: nothing is kept per ref, for requests that only want the
/// advertisement (`--advertise-refs`).
pub(crate) fn write_streaming<W: Write>(
    out: &mut PacketWriter<W>,
    offering: &mut Offering<'_>,
    format: ObjectFormat,
    version_line: bool,
    offered: Offered,
) -> Result<(), UploadPackError> {
    let head = offering.head()?;
    let mut lines = Lines::start(out, &head, format, version_line, offered)?;
    if let Head::Present(head) = &head {
        lines.offer(out, head.view())?;
    }
    offering.visit(&[], &mut |offered| lines.offer(out, offered))?;
    lines.finish(out)
}

/// The advertisement's lines, written as refs are offered.
struct Lines {
    /// The capabilities, until the first line has carried them.
    capabilities: Option<Vec<u8>>,
    format: ObjectFormat,
}

impl Lines {
    /// Writes the version line if asked and prepares the capabilities.
    fn start<W: Write>(
        out: &mut PacketWriter<W>,
        head: &Head,
        format: ObjectFormat,
        version_line: bool,
        offered: Offered,
    ) -> Result<Self, UploadPackError> {
        if version_line {
            out.write_text("version 1")?;
        }
        // In git's order.
        let mut capabilities = CAPABILITIES.as_bytes().to_vec();
        if offered.tip {
            capabilities.extend_from_slice(b" allow-tip-sha1-in-want");
        }
        if offered.reachable {
            capabilities.extend_from_slice(b" allow-reachable-sha1-in-want");
        }
        if offered.no_done {
            capabilities.extend_from_slice(b" no-done");
        }
        if let (Head::Present(_), Some(target)) = (head, head.target()) {
            capabilities.extend_from_slice(b" symref=HEAD:");
            capabilities.extend_from_slice(target.as_bytes());
        }
        if offered.filter {
            capabilities.extend_from_slice(b" filter");
        }
        capabilities.extend_from_slice(b" object-format=");
        capabilities.extend_from_slice(format.name().as_bytes());
        capabilities.extend_from_slice(b" agent=");
        capabilities.extend_from_slice(agent().as_bytes());
        Ok(Lines {
            capabilities: Some(capabilities),
            format,
        })
    }

    /// `<id> <name>`, with the capabilities on the first line, and the
    /// `^{}` line of an annotated tag.
    fn offer<W: Write>(
        &mut self,
        out: &mut PacketWriter<W>,
        offered: OfferedView<'_>,
    ) -> Result<(), UploadPackError> {
        let mut hex = [0; 64];
        let hex = offered.id.encode_hex(&mut hex);
        match self.capabilities.take() {
            Some(capabilities) => {
                out.write_parts(&[hex, b" ", offered.name, b"\0", &capabilities, b"\n"])?
            }
            None => out.write_parts(&[hex, b" ", offered.name, b"\n"])?,
        }
        if let Some(peeled) = &offered.peeled {
            let mut hex = [0; 64];
            let hex = peeled.encode_hex(&mut hex);
            out.write_parts(&[hex, b" ", offered.name, b"^{}\n"])?;
        }
        Ok(())
    }

    /// Ends the advertisement with a flush-pkt.
    fn finish<W: Write>(self, out: &mut PacketWriter<W>) -> Result<(), UploadPackError> {
        if let Some(capabilities) = self.capabilities {
            // Nothing to offer: the capabilities still need a line to ride on.
            let mut hex = [0; 64];
            let hex = self.format.null_id().encode_hex(&mut hex);
            out.write_parts(&[hex, b" capabilities^{}\0", &capabilities, b"\n"])?;
        }
        out.write_flush()?;
        Ok(())
    }
}

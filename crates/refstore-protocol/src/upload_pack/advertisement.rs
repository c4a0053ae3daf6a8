//! The protocol v0/v1 ref advertisement: every offered ref with its id,
//! the server's capabilities after a NUL on the first line, annotated tags
//! followed by their peeled `^{}` lines.
//!
//! All of it is written into one [`PacketWriter`] buffer and sent by the
//! closing flush-pkt, so even a million refs take one `write(2)` per 64 KiB.

use super::refs::RefSnapshot;
use super::UploadPackError;
use crate::pkt_line::PacketWriter;
use refstore_refs::ObjectFormat;
use std::io::Write;

/// The capabilities a v0 server offers, apart from `symref`,
/// `object-format` and `agent`, which depend on the repository.
const CAPABILITIES: &str = "multi_ack thin-pack side-band side-band-64k ofs-delta no-progress \
     include-tag multi_ack_detailed allow-tip-sha1-in-want allow-reachable-sha1-in-want";

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
) -> Result<(), UploadPackError> {
    if version_line {
        out.write_text("version 1")?;
    }
    let mut capabilities = String::from(CAPABILITIES);
    if let (super::refs::Head::Present(_), Some(target)) = (&snapshot.head, snapshot.head_target())
    {
        capabilities.push_str(" symref=HEAD:");
        capabilities.push_str(&String::from_utf8_lossy(target.as_bytes()));
    }
    capabilities.push_str(" object-format=");
    capabilities.push_str(format.name());
    capabilities.push_str(" agent=");
    capabilities.push_str(&agent());

    let mut first = Some(capabilities.as_bytes());
    let mut hex = Vec::with_capacity(format.hex_len());
    for offered in snapshot.offered() {
        hex.clear();
        offered.id.write_hex(&mut hex);
        match first.take() {
            Some(capabilities) => out.write_parts(&[
                &hex,
                b" ",
                offered.name.as_bytes(),
                b"\0",
                capabilities,
                b"\n",
            ])?,
            None => out.write_parts(&[&hex, b" ", offered.name.as_bytes(), b"\n"])?,
        }
        if let Some(peeled) = &offered.peeled {
            hex.clear();
            peeled.write_hex(&mut hex);
            out.write_parts(&[&hex, b" ", offered.name.as_bytes(), b"^{}\n"])?;
        }
    }
    if let Some(capabilities) = first {
        // Nothing to offer: the capabilities still need a line to ride on.
        hex.clear();
        format.null_id().write_hex(&mut hex);
        out.write_parts(&[&hex, b" capabilities^{}\0", capabilities, b"\n"])?;
    }
    out.write_flush()?;
    Ok(())
}

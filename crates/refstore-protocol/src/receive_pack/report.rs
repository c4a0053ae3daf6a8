//! The answer to a push: the messages for the user not sent yet (see
//! [`Relay`]), then the status
//! report (`unpack ok` or `unpack <reason>`, one `ok <ref>` or
//! `ng <ref> <reason>` per command, a flush-pkt), itself inside side-band 1
//! when negotiated, then what `post-receive` and `post-update` print, and
//! the flush-pkt that ends the side-band stream. Without report-status the
//! client gets no report.

use super::commands::{Capabilities, Command};
use super::relay::Relay;
use super::ReceivePackError;
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use crate::pkt_line::PacketWriter;
use std::io::Write;

/// What happened to the pack and to each command.
pub(crate) struct Report<'a> {
    /// `Err(reason)` if the pack could not be stored.
    pub unpack: Result<(), String>,
    /// The commands, in the order received.
    pub commands: &'a [Command],
    /// For each command: `None` if applied, else git's reason.
    pub results: &'a [Option<String>],
}

/// Sends the messages still pending and the status report as
/// `capabilities` ask, at once: hooks that run after the report
/// (`post-receive`) may print more before [`finish`] ends the answer.
pub(crate) fn write<W: Write>(
    relay: &mut Relay<'_, W>,
    capabilities: &Capabilities,
    report: &Report<'_>,
    messages: &mut Vec<String>,
) -> Result<(), ReceivePackError> {
    relay.messages(messages)?;
    if capabilities.report_status || capabilities.report_status_v2 {
        if relay.side_band() {
            let mut packets = PacketWriter::new(Vec::new());
            write_status(&mut packets, report)?;
            let status = packets.into_inner()?;
            let mut band = SidebandWriter::new(relay.packets(), SidebandMode::SideBand64k);
            band.write_data(&status)?;
        } else {
            write_status(relay.packets(), report)?;
        }
    }
    Ok(relay.packets().flush_buffered()?)
}

/// Ends the answer: sends the last messages, and ends the side-band
/// stream with its flush-pkt.
pub(crate) fn finish<W: Write>(
    relay: &mut Relay<'_, W>,
    messages: &mut Vec<String>,
) -> Result<(), ReceivePackError> {
    relay.messages(messages)?;
    if relay.side_band() {
        relay.packets().write_flush()?;
    }
    Ok(relay.packets().flush_buffered()?)
}

/// Writes the status report as pkt-lines, ended by a flush-pkt.
fn write_status<W: Write>(
    packets: &mut PacketWriter<W>,
    report: &Report<'_>,
) -> Result<(), ReceivePackError> {
    match &report.unpack {
        Ok(()) => packets.write_text("unpack ok")?,
        Err(reason) => packets.write_parts(&[b"unpack ", reason.as_bytes(), b"\n"])?,
    }
    for (command, result) in report.commands.iter().zip(report.results) {
        match result {
            None => packets.write_parts(&[b"ok ", &command.name, b"\n"])?,
            Some(reason) => {
                packets.write_parts(&[b"ng ", &command.name, b" ", reason.as_bytes(), b"\n"])?
            }
        }
    }
    packets.write_flush()?;
    Ok(())
}

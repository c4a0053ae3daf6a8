//! The answer to a push: the messages for the user (on side-band 2 as
//! `remote:` lines when side-band-64k was negotiated), then the status
//! report (`unpack ok` or `unpack <reason>`, one `ok <ref>` or
//! `ng <ref> <reason>` per command, a flush-pkt), itself inside side-band 1
//! when negotiated. Without report-status the client gets no report.

use super::commands::{Capabilities, Command};
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
    /// Messages for the user (`error: ...`, `warning: ...`).
    pub messages: &'a [String],
}

/// Writes `report` as `capabilities` ask.
pub(crate) fn write<W: Write>(
    out: &mut PacketWriter<W>,
    capabilities: &Capabilities,
    report: &Report<'_>,
) -> Result<(), ReceivePackError> {
    let wants_status = capabilities.report_status || capabilities.report_status_v2;
    if !capabilities.side_band_64k {
        // No channel to the user but the server's standard error, as with
        // git's receive-pack.
        for message in report.messages {
            eprintln!("{message}");
        }
        if wants_status {
            write_status(out, report)?;
        }
        return Ok(out.flush_buffered()?);
    }
    let status = if wants_status {
        let mut packets = PacketWriter::new(Vec::new());
        write_status(&mut packets, report)?;
        Some(packets.into_inner()?)
    } else {
        None
    };
    let mut band = SidebandWriter::new(out, SidebandMode::SideBand64k);
    for message in report.messages {
        band.write_progress(format!("{message}\n").as_bytes())?;
    }
    if let Some(status) = status {
        band.write_data(&status)?;
    }
    band.finish()?;
    Ok(())
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
